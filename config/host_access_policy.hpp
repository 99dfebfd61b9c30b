#pragma once
// What users' configs may take from an agent's host, as the admin allows it in master.toml's
// `[security]`: the host paths that bind mounts, checkpoint storage and an image task's work_dir
// may name, and the Linux capabilities `add_capabilities` may add. The master checks each
// experiment and task against it when it is submitted; with rootful podman, a mount of `/` or
// CAP_SYS_ADMIN is root on the agent's host.

#include <string>
#include <vector>

namespace det::config {

struct experiment_config;
struct task_config;

struct host_access_policy {
  /// `security.allowed_host_paths`: absolute directories beneath which user configs may name host
  /// paths, besides the master's checkpoint storage root. Empty (the default): only that root.
  std::vector<std::string> allowed_host_paths;
  /// `security.allowed_capabilities`: capabilities `add_capabilities` may name, as podman takes
  /// them ("NET_ADMIN"; "CAP_" and case do not matter; "ALL" allows all). Empty (the default): none.
  std::vector<std::string> allowed_capabilities;
};

/// A capability as podman takes it, in one spelling: upper case, without "CAP_".
std::string capability_name(const std::string& name);

/// What `config` asks of the host beyond `policy`, as a sentence naming each key, its value and the
/// master.toml setting (several joined by "; "); "" when it asks for nothing more. `storage_root` is
/// the master's checkpoint storage root, which host paths may always name.
std::string host_access_refusal(const host_access_policy& policy, const std::string& storage_root,
                                const experiment_config& config);
std::string host_access_refusal(const host_access_policy& policy, const std::string& storage_root,
                                const task_config& config);

}  // namespace det::config
