#pragma once
// Where a trial or task runs: Determined's `[environment]` keys (determined-platform §6.1),
// `[[bind_mounts]]`, and the resource limits of `[resources]` (shm_size, and det's own
// memory_limit and cpu_limit). Shared by experiment and task configs.

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace det::config {

struct bind_mount {
  std::string host_path;
  std::string container_path;
  bool read_only = false;
};

/// `environment.registry_auth`: credentials for `podman pull`.
struct registry_auth {
  std::string username;
  std::string password;
  std::string server;  // serveraddress: the registry they are for; "" for any
};

struct environment_config {
  /// An OCI image per slot type (Determined's string or {cpu, cuda} table); "" runs without one.
  std::string cpu_image;
  std::string cuda_image;
  /// `environment_variables`: "NAME=VALUE" lists (or a NAME = "VALUE" table), per slot type.
  std::vector<std::pair<std::string, std::string>> cpu_variables;
  std::vector<std::pair<std::string, std::string>> cuda_variables;
  bool force_pull_image = false;
  std::optional<registry_auth> auth;
  std::vector<std::string> add_capabilities;
  std::vector<std::string> drop_capabilities;
  std::vector<bind_mount> bind_mounts;
  /// `resources.shm_size` in bytes; 0: the container runtime's default.
  int64_t shm_size_bytes = 0;
  /// `resources.memory_limit` in bytes; 0: none. A run that exceeds it is killed and says so.
  int64_t memory_limit_bytes = 0;
  /// `resources.cpu_limit` in CPUs (fractions allowed); 0: none.
  double cpu_limit = 0;

  const std::string& image(bool cuda) const { return cuda ? cuda_image : cpu_image; }
  const std::vector<std::pair<std::string, std::string>>& variables(bool cuda) const {
    return cuda ? cuda_variables : cpu_variables;
  }
  bool uses_image() const { return !cpu_image.empty() || !cuda_image.empty(); }
};

/// "256 MiB", "1.5 GiB": a byte count for sentences.
std::string describe_bytes(int64_t bytes);

}  // namespace det::config
