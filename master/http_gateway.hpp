#pragma once
// The REST API (Determined's /api/v1 paths, JSON printed from the protobuf
// messages). Each request is answered by asking the master's actors; every route but login,
// GET /api/v1/master and the Core API's (which carry their run's token) needs a user's bearer token
// or the web UI's session cookie. Task services are served by a listener of their own
// (master/tasks/task_proxy.hpp), on an origin apart from the web UI's.

#include <memory>
#include <optional>
#include <string>

#include "master/local_interfaces.hpp"
#include "auth/tls_files.hpp"

namespace det::runtime {

class http_gateway {
public:
  /// Sessions from POST /api/v1/auth/login last `session_lifespan_s`; access tokens at most
  /// `max_token_lifespan_s` (security.max_token_lifespan). With `tls` it serves HTTPS
  /// only, with tls->cert and tls->key (clients are not asked for certificates: they sign in).
  /// The web UI's pages and assets come from `webui_directory`. `proxy_host` is master.toml's
  /// ("*.SUFFIX": a host per task) or "".
  http_gateway(caf::actor_system& sys, master_handles handles, master_front_actor front,
               int actor_port, int64_t session_lifespan_s, int64_t max_token_lifespan_s,
               const std::optional<auth::tls_files>& tls, std::string webui_directory, std::string proxy_host);
  ~http_gateway();

  /// Binds the proxy listener (`proxy_port`) and the REST API (`port`) on `address` and serves
  /// them on threads of their own; returns the bound ports (useful with 0). Throws
  /// std::runtime_error with a sentence if either cannot bind.
  struct bound_ports {
    int http = 0;
    int proxy = 0;
  };
  bound_ports start(const std::string& address, int port, int proxy_port);
  void stop();

private:
  struct impl;
  std::unique_ptr<impl> impl_;
};

} // namespace det::runtime
