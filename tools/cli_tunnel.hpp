#pragma once
// `det tunnel ID`: this process's stdin and stdout carried over a WebSocket to a task's TCP service
// through the master's proxy listener, as ssh's ProxyCommand for `det shell open`. The master hands
// out a single-use URL on the proxy's origin for that task (POST /api/v1/tasks/ID/proxy_ticket);
// the user's own token never goes to the proxy. It works wherever the master's ports are reachable,
// agents or not.

#include <string>

namespace det::tools {

class rest_client;

/// Runs until either side closes; returns 0, or 1 with a sentence on stderr. The ticket's URL is
/// http:// or https://HOST:PORT/proxy/ID/?det_proxy_token=T; an https:// one is checked against
/// DET_MASTER_CERT_FILE (else the system's CAs).
int run_tunnel(rest_client& master, const std::string& task_id);

} // namespace det::tools
