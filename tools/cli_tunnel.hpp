#pragma once
// `det tunnel ID`: this process's stdin and stdout carried over a WebSocket to a task's TCP service
// through the master's proxy (/proxy/ID/), as ssh's ProxyCommand for `det shell open`. It works
// wherever the master's REST port is reachable, agents or not.

#include <string>

namespace det::tools {

/// Runs until either side closes; returns 0, or 1 with a sentence on stderr. `token` is the
/// user's bearer token; an https:// master is checked against DET_MASTER_CERT_FILE (else the
/// system's CAs).
int run_tunnel(const std::string& master_url, const std::string& token, const std::string& task_id);

} // namespace det::tools
