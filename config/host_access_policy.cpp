#include "config/host_access_policy.hpp"

#include "config/experiment_config.hpp"
#include "config/task_config.hpp"

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <system_error>

namespace det::config {

namespace {

namespace fs = std::filesystem;

constexpr std::string_view paths_setting = "security.allowed_host_paths in master.toml";
constexpr std::string_view capabilities_setting = "security.allowed_capabilities in master.toml";

// An absolute path without `.`, `..` or a trailing slash, with the links that exist on the master's
// machine followed: a link planted beneath an allowed directory (a trial writes into the storage
// root) must not lead out of it.
fs::path resolved(const std::string& path) {
  std::error_code error;
  fs::path out = fs::weakly_canonical(path, error);
  if (error) out = fs::path{path}.lexically_normal();
  if (!out.has_filename() && out != out.root_path()) out = out.parent_path();
  return out;
}

bool lies_beneath(const fs::path& path, const fs::path& root) {
  return std::mismatch(root.begin(), root.end(), path.begin(), path.end()).first == root.end();
}

bool host_path_allowed(const host_access_policy& policy, const std::string& storage_root, const std::string& path) {
  if (path.empty() || path.front() != '/') return false;  // relative to whatever directory the agent runs in
  const fs::path wanted = resolved(path);
  if (lies_beneath(wanted, resolved(storage_root))) return true;
  return std::any_of(policy.allowed_host_paths.begin(), policy.allowed_host_paths.end(),
                     [&](const std::string& allowed) { return lies_beneath(wanted, resolved(allowed)); });
}

void check_host_path(const host_access_policy& policy, const std::string& storage_root, const std::string& key,
                     const std::string& path, std::vector<std::string>& refusals) {
  if (!host_path_allowed(policy, storage_root, path))
    refusals.push_back(key + " " + path + " is outside the host paths this master allows (" +
                       std::string(paths_setting) + ")");
}

bool capability_allowed(const host_access_policy& policy, const std::string& capability) {
  const std::string wanted = capability_name(capability);
  return std::any_of(policy.allowed_capabilities.begin(), policy.allowed_capabilities.end(),
                     [&](const std::string& allowed) {
                       const std::string name = capability_name(allowed);
                       return name == "ALL" || name == wanted;
                     });
}

// What every config's `[environment]` and `[[bind_mounts]]` may ask for.
void check_environment(const host_access_policy& policy, const std::string& storage_root,
                       const environment_config& environment, std::vector<std::string>& refusals) {
  for (size_t i = 0; i < environment.bind_mounts.size(); ++i)
    check_host_path(policy, storage_root, "bind_mounts[" + std::to_string(i) + "].host_path",
                    environment.bind_mounts[i].host_path, refusals);
  for (size_t i = 0; i < environment.add_capabilities.size(); ++i)
    if (!capability_allowed(policy, environment.add_capabilities[i]))
      refusals.push_back("environment.add_capabilities[" + std::to_string(i) + "] " + environment.add_capabilities[i] +
                         " is not a capability this master lets users add (" + std::string(capabilities_setting) +
                         ")");
}

std::string joined(const std::vector<std::string>& refusals) {
  std::string out;
  for (const auto& refusal : refusals) out += (out.empty() ? "" : "; ") + refusal;
  return out;
}

// The key that placed the experiment's checkpoints where they go, as the user wrote it.
std::string checkpoint_storage_key(const checkpoint_storage_config& storage) {
  if (storage.host_path.empty()) return "checkpoint_storage.storage_path";
  return storage.type == "directory" ? "checkpoint_storage.container_path" : "checkpoint_storage.host_path";
}

}  // namespace

std::string capability_name(const std::string& name) {
  std::string upper = name;
  std::transform(upper.begin(), upper.end(), upper.begin(), [](unsigned char c) { return std::toupper(c); });
  return upper.rfind("CAP_", 0) == 0 ? upper.substr(4) : upper;
}

std::string host_access_refusal(const host_access_policy& policy, const std::string& storage_root,
                                const experiment_config& config) {
  std::vector<std::string> refusals;
  check_environment(policy, storage_root, config.environment, refusals);
  // The whole directory is mounted read-write into the trial's image, so storage_path's `..` counts too.
  const auto& storage = config.checkpoint_storage;
  if (!storage.host_path.empty() || !storage.storage_path.empty())
    check_host_path(policy, storage_root, checkpoint_storage_key(storage), storage.root(storage_root), refusals);
  return joined(refusals);
}

std::string host_access_refusal(const host_access_policy& policy, const std::string& storage_root,
                                const task_config& config) {
  std::vector<std::string> refusals;
  check_environment(policy, storage_root, config.environment, refusals);
  // In an image, work_dir is bind-mounted read-write; outside one it is only where the process starts.
  if (config.environment.uses_image() && !config.work_dir.empty())
    check_host_path(policy, storage_root, "work_dir", config.work_dir, refusals);
  return joined(refusals);
}

}  // namespace det::config
