#pragma once
// The det CLI's connection to the master's REST API: JSON bodies printed from
// and parsed into the generated det.pb messages, errors turned into sentences.

#include <chrono>
#include <memory>
#include <stdexcept>
#include <string>

namespace google::protobuf {
class Message;
} // namespace google::protobuf

namespace det::tools {

/// A call to the master that failed; what() is a sentence for the user.
class rest_error : public std::runtime_error {
public:
  enum class kind {
    unreachable, ///< no HTTP exchange happened (refused, timed out, broken connection)
    http,        ///< the master answered with a 4xx/5xx status
    bad_reply,   ///< a 2xx reply whose body is not the expected message
  };

  rest_error(kind which, int status, const std::string& what);

  kind which() const noexcept { return which_; }
  /// HTTP status; 0 unless which() == kind::http.
  int status() const noexcept { return status_; }

private:
  kind which_;
  int status_;
};

/// How long a command that follows or waits (det experiment wait, --follow, logs -f) rides out a
/// master restart: see rest_client::retry_unreachable_for.
constexpr std::chrono::seconds master_restart_window{60};

/// `text` percent-encoded for a query string.
std::string url_encoded(const std::string& text);

/// One keep-alive connection to the master at a URL like http://127.0.0.1:8080.
class rest_client {
public:
  explicit rest_client(std::string master_url);
  ~rest_client();
  rest_client(const rest_client&) = delete;
  rest_client& operator=(const rest_client&) = delete;

  const std::string& master_url() const noexcept;

  /// Sends `token` as the bearer token from now on (the saved login's is sent by default).
  void use_token(const std::string& token);
  /// The bearer token it sends ("" when logged out): det tunnel shows it to the proxy.
  const std::string& token() const noexcept;

  /// Lets GET requests ride out a master restart: for up to `window`, an
  /// unreachable master is retried once a second (a note goes to stderr) instead
  /// of failing. Zero, the default, fails at once.
  void retry_unreachable_for(std::chrono::seconds window);

  /// GET `path` (with its query string) and parse the JSON reply into `reply`.
  void get(const std::string& path, google::protobuf::Message& reply);

  /// POST `body` as JSON to `path` and parse the JSON reply into `reply`.
  void post(const std::string& path, const google::protobuf::Message& body,
            google::protobuf::Message& reply);

  /// PATCH `body` as JSON to `path` and parse the JSON reply into `reply`.
  void patch(const std::string& path, const google::protobuf::Message& body, google::protobuf::Message& reply);

  /// DELETE `path` and parse the JSON reply into `reply`.
  void del(const std::string& path, google::protobuf::Message& reply);

  /// GET `path` and return the body as it is (a file); errors as for get().
  std::string get_bytes(const std::string& path);

  template <class Reply>
  Reply get(const std::string& path) {
    Reply reply;
    get(path, reply);
    return reply;
  }

  /// Every row of a route paged by `offset` and `limit`, `page` rows a request, merged into one
  /// reply; `rows(reply)` counts a page's rows. `path` may already carry a query.
  template <class Reply, class Rows>
  Reply get_every_page(const std::string& path, int32_t page, Rows rows) {
    Reply all;
    const char* joiner = path.find('?') == std::string::npos ? "?" : "&";
    for (int64_t offset = 0;; offset += page) {
      auto one = get<Reply>(path + joiner + "offset=" + std::to_string(offset) + "&limit=" + std::to_string(page));
      const auto n = rows(one);
      all.MergeFrom(one);
      if (n < page) return all;
    }
  }

private:
  struct impl;
  std::unique_ptr<impl> impl_;
};

} // namespace det::tools
