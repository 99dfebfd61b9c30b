#pragma once
// The master's HTTP server: Boost.Beast on Asio, HTTP/1.1 with keep-alive, HTTPS with the TLS
// settings, request bodies bounded. Connections cost no thread while they wait; a request's route
// runs on a pool of handler threads, and a route that defers its response (an actor's answer to
// come: master/http/actor_ask.hpp) frees its thread at once, the connection waiting on none. The master runs
// two: the REST API and web UI, and the proxy listener, whose paths under /proxy/{task}/ are
// relayed to the task's service (HTTP, WebSocket, or a TCP stream carried by a WebSocket) once the
// gateway says where it is and that the caller may reach it.

#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "auth/tls_files.hpp"
#include "master/http/http_types.hpp"

namespace det::runtime {

/// Where one request under /proxy/ goes, as the gateway decided.
struct proxy_target {
  /// Set: the request is answered with this instead of relayed (a refusal, a redirect).
  std::optional<http_response> answer;
  std::string host;
  int port = 0;
  bool raw_tcp = false;    ///< the service is a TCP stream (a shell's sshd) carried in WebSocket binary frames
  std::string set_cookie;  ///< a Set-Cookie header for the relayed HTTP response, or ""
  /// The Cookie and Authorization headers the service gets ("": none), det's own taken out.
  std::string forwarded_cookie;
  std::string forwarded_authorization;
};
/// The gateway's hooks answer through `done`, once, from any thread (an actor's answer to come):
/// the connection waits for it holding no thread. They are called on the connection's own
/// thread, and must not block.
/// Where a request under /proxy/ goes.
using proxy_resolver = std::function<void(const http_request&, std::function<void(proxy_target)> done)>;
/// A question about a request whose header has arrived (its body has not).
using request_check = std::function<void(const http_request&, std::function<void(bool)> done)>;

class http_server {
 public:
  /// With `tls`, serves HTTPS only with tls->cert and tls->key; throws a sentence if they do not load.
  /// `may_send_large_body` says whether a request's caller is authenticated, and so may send a
  /// body of more than unauthenticated_body_bytes. With `proxy`, paths under /proxy/ are relayed
  /// where it says; without, they are routes like any other. `purpose` names what it serves in
  /// start()'s error ("the REST API").
  /// `max_body_bytes` is the largest body an authenticated caller may send (master.toml's
  /// security.max_upload_size); three of them is the most it holds at once over all connections.
  http_server(std::string purpose, const http_router& router, proxy_resolver proxy, request_check may_send_large_body,
              std::size_t max_body_bytes, const std::optional<auth::tls_files>& tls);
  ~http_server();
  http_server(const http_server&) = delete;
  http_server& operator=(const http_server&) = delete;

  /// Binds and serves on threads of its own; returns the bound port (useful with port 0).
  /// Throws std::runtime_error with a sentence if it cannot bind.
  int start(const std::string& address, int port);
  void stop();

  /// The largest body it reads before the caller is authenticated (a login, a preview).
  static constexpr std::size_t unauthenticated_body_bytes = std::size_t{64} << 10;
  /// The largest request header (a path, a query, cookies).
  static constexpr std::size_t header_bytes = std::size_t{16} << 10;

 private:
  struct impl;
  std::unique_ptr<impl> impl_;
};

} // namespace det::runtime
