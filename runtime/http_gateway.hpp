#pragma once
// The REST API (Determined's /api/v1 paths, JSON printed from the protobuf
// messages). Each request is answered by asking the master's actors; every route but login,
// GET /api/v1/master and the Core API's (which carry their run's token) needs a user's bearer token.

#include <memory>
#include <optional>
#include <string>

#include "actors/local_interfaces.hpp"
#include "auth/tls_files.hpp"

namespace det::runtime {

class http_gateway {
public:
  /// Sessions from POST /api/v1/auth/login last `session_lifespan_s`; access tokens at most
  /// `max_token_lifespan_s` (security.max_token_lifespan). With `tls` it serves HTTPS
  /// only, with tls->cert and tls->key (clients are not asked for certificates: they sign in).
  /// The web UI's pages and assets come from `webui_directory`.
  http_gateway(caf::actor_system& sys, master_handles handles, master_front_actor front,
               int actor_port, int64_t session_lifespan_s, int64_t max_token_lifespan_s,
               const std::optional<auth::tls_files>& tls, std::string webui_directory);
  ~http_gateway();

  /// Binds and serves on a thread of its own; returns the bound port (useful
  /// with port 0). Throws std::runtime_error with a sentence if it cannot bind.
  int start(const std::string& address, int port);
  void stop();

private:
  struct impl;
  std::unique_ptr<impl> impl_;
};

} // namespace det::runtime
