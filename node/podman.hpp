#pragma once
// Running a process in an OCI image with Debian's podman, in the foreground of whoever starts it:
// Core API trials (by their worker) and tasks (by the agent) whose config names an image.
//
// Facts of the machines det runs on (podman 4.3, root, cgroup v1 "hybrid"): the runc runtime
// works where podman's default crun does not, and podman's default ulimits fail setrlimit without
// CAP_SYS_RESOURCE, so det runs podman with --runtime runc and a containers.conf that clears
// them (CONTAINERS_CONF), unless the user's environment names a containers.conf of its own.
// --init (Debian's catatonit) makes signals reach a process that has no handler for them: as
// the container's PID 1 it would ignore a stop's SIGTERM. podman does not say whether a
// container was OOM-killed (its inspect says false), so det holds the container's limits in a
// cgroup of its own as the container's parent (node/cgroup_limits.hpp).

#include <map>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "messages/cluster.pb.h"
#include "process/unix_identity.hpp"

namespace det::runtime {

/// An image that cannot be had: the run cannot start, and would not on a retry either.
class image_unavailable : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

struct container_request {
  std::string name;                           // det-<allocation id>
  std::string image;
  std::vector<std::string> argv;              // run in the image; a program name is found on its PATH
  std::map<std::string, std::string> env;     // exactly what the process gets besides the image's own
  std::string workdir;                        // bind-mounted at the same path, and the working directory
  std::vector<pb::BindMount> mounts;          // more host paths, e.g. the checkpoint directory
  std::vector<std::string> gpus;              // CUDA device UUIDs or indices, passed through by CDI
  const pb::RunEnvironment* environment = nullptr;  // limits, capabilities and the config's mounts
  /// A cgroup (cgroup_limits::parent_path) that holds the limits, which det can then tell were
  /// exceeded; "" : podman's own --memory and --cpus.
  std::string cgroup_parent;
  /// The Unix user the process runs as in the container (podman --user): its owner's; nullopt:
  /// the image's own user.
  std::optional<process::unix_identity> user;
};

/// Where det's Python clients (det_core.py, the `determined` package) are inside a container.
inline const std::string python_client_mount = "/run/det/python";

/// Their directory beside the binaries (share/det/python), which runs' PYTHONPATH names.
std::string python_client_directory();

/// The name of the container (and of its cgroup) of worker `rank` of allocation `allocation_id`:
/// the workers of a run that spans agents may share a machine.
std::string container_name(const std::string& allocation_id, int rank);

/// The environment podman runs with (CONTAINERS_CONF, written once per machine user).
std::map<std::string, std::string> podman_environment();

/// Makes sure `environment`'s image for `image` is present: pulled when missing or when
/// force_pull_image, with registry_auth's credentials. Throws image_unavailable naming the image.
void ensure_image(const std::string& image, const pb::RunEnvironment& environment);

/// podman run ... for `request`, to run in the foreground: its exit status is the process's
/// (125-127 podman's own failures); SIGTERM to it reaches the process. The variables are named
/// only (--env=NAME): their values, tokens among them, would be in podman's command line, which
/// every user on the machine can read; podman takes them from its environment instead.
std::vector<std::string> podman_run_argv(const container_request& request);

/// The environment podman runs `request` with: podman_environment() and the request's variables.
std::map<std::string, std::string> podman_run_environment(const container_request& request);

/// Removes the container, running or not; quiet when there is none.
void remove_container(const std::string& name);

/// "the trial exceeded its memory limit of 256 MiB": `what` is "trial" or "task".
std::string memory_limit_sentence(const std::string& what, int64_t bytes);

}  // namespace det::runtime
