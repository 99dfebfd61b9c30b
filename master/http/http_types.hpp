#pragma once
// What the gateway's routes see of HTTP: a request (its path's regex matches, query parameters,
// headers and body) and the response they fill in, and the router that picks a route by method
// and path. The server (master/http/http_server.cpp) moves the bytes; the routes never see a socket.

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "master/http/deferred_response.hpp"
#include "node/open_beneath.hpp"
#include "master/http/route_pattern.hpp"

namespace det::runtime {

/// Header names compare without case, as HTTP says.
struct case_insensitive_less {
  bool operator()(const std::string& a, const std::string& b) const;
};

struct http_request {
  std::string method;
  std::string path;    ///< without the query string, percent-decoded
  std::string target;  ///< as the client sent it, query included
  std::string body;
  std::string remote_addr;
  std::multimap<std::string, std::string, case_insensitive_less> headers;
  std::multimap<std::string, std::string> params;  ///< the query's, decoded
  std::vector<route_capture> matches;              ///< the route's pattern against `path`: the path, then its groups

  std::string get_header_value(const std::string& name) const;
  bool has_param(const std::string& name) const;
  std::string get_param_value(const std::string& name, std::size_t index = 0) const;
  std::size_t get_param_value_count(const std::string& name) const;
  /// The value of cookie `name`, or "".
  std::string cookie(const std::string& name) const;
};

/// A response body made piece by piece while the client stays (a page's live updates). The
/// server asks for the next piece on a handler thread, sends a non-empty piece as a chunk at
/// once and asks again; after an empty one it waits `poll_interval` first. nullopt ends the
/// response. A client that goes away ends it at the next piece sent.
class response_stream {
 public:
  static constexpr int poll_interval_ms = 100;
  virtual ~response_stream() = default;
  virtual std::optional<std::string> next() = 0;
};

struct http_response {
  int status = 200;
  std::string body;
  std::string content_type;
  std::vector<std::pair<std::string, std::string>> headers;
  /// A file to send as the body instead of `body` (a web UI asset), streamed from disk.
  std::string file_path;
  /// An open file to send as the body (a checkpoint's, opened beneath the storage root).
  std::shared_ptr<unique_fd> file;
  /// A body made as it goes, sent chunked, instead of `body`.
  std::shared_ptr<response_stream> stream;
  /// Set by defer(): the response is the one this finishes, later, and not this one.
  std::shared_ptr<deferred_response> deferred;
  /// Where defer()'s CPU-heavy answers are made: the server's handler threads.
  offload_function offload;

  /// Makes this response one that is finished later (with an actor's answer, say) and returns
  /// what finishes it; the route returns at once and frees its thread.
  std::shared_ptr<deferred_response> defer() {
    deferred = std::make_shared<deferred_response>(offload);
    return deferred;
  }

  void set_content(std::string text, const std::string& type) {
    body = std::move(text);
    content_type = type;
  }
  void set_header(const std::string& name, const std::string& value) { headers.emplace_back(name, value); }
};

/// A route: it fills in the response, or defers it (http_response::defer) and finishes it later.
using http_handler = std::function<void(const http_request&, http_response&)>;

/// Routes by method and a pattern (master/http/route_pattern.hpp) that must match the whole path
/// (httplib's convention, which the route files were written for); the first route added wins.
class http_router {
 public:
  void Get(const std::string& pattern, http_handler handler) { add("GET", pattern, std::move(handler)); }
  void Post(const std::string& pattern, http_handler handler) { add("POST", pattern, std::move(handler)); }
  void Put(const std::string& pattern, http_handler handler) { add("PUT", pattern, std::move(handler)); }
  void Patch(const std::string& pattern, http_handler handler) { add("PATCH", pattern, std::move(handler)); }
  void Delete(const std::string& pattern, http_handler handler) { add("DELETE", pattern, std::move(handler)); }

  /// Answers `req` with its route (404 naming the method and path when none matches; 500 with the
  /// sentence when the route throws).
  void dispatch(http_request& req, http_response& res) const;

 private:
  struct route {
    std::string method;
    std::string pattern_text;  // names the route in the request-duration histogram
    route_pattern pattern;
    http_handler handler;
  };
  void add(std::string method, const std::string& pattern, http_handler handler);
  std::vector<route> routes_;
};

/// `text` with %XX sequences decoded, and '+' as a space when `plus_is_space` (query strings).
std::string percent_decoded(const std::string& text, bool plus_is_space);

} // namespace det::runtime
