#pragma once
// `det shell start|open`: an OpenSSH session with a shell on the cluster, through the master's
// proxy (ssh's ProxyCommand is `det tunnel`), with the shell's own key and its sshd's host key
// checked.

#include <string>
#include <vector>

#include "tools/cli_task.hpp"

namespace det::tools {

class rest_client;

/// Starts a shell and, unless `detach` (which prints its id), opens it.
int start_shell(rest_client& master, const task_launch& launch, bool detach);
/// Waits until the shell answers, then runs ssh into it: interactive, or `command` when given;
/// returns ssh's exit status.
int open_shell(rest_client& master, const std::string& id, const std::vector<std::string>& command);

} // namespace det::tools
