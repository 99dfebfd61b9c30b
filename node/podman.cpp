#include "node/podman.hpp"

#include <unistd.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <thread>

#include "config/environment_config.hpp"
#include "process/captured_run.hpp"
#include "node/node.hpp"

namespace det::runtime {

namespace {

constexpr auto podman_call_limit = std::chrono::minutes(10);  // a pull of a large image

std::vector<std::string> podman(std::initializer_list<std::string> args) {
  std::vector<std::string> argv{"podman", "--runtime", "runc"};
  argv.insert(argv.end(), args);
  return argv;
}

std::string containers_conf() {
  auto dir = std::filesystem::temp_directory_path() / ("det-podman-" + std::to_string(::getuid()));
  auto file = dir / "containers.conf";
  if (!std::filesystem::exists(file)) {
    std::filesystem::create_directories(dir);
    // Named by process and thread: an agent's slow-work threads may write it at once too.
    auto partial = dir / ("containers.conf." + std::to_string(::getpid()) + "." +
                          std::to_string(std::hash<std::thread::id>{}(std::this_thread::get_id())));
    {
      std::ofstream out(partial);
      out << "# Written by det: podman's default ulimits need CAP_SYS_RESOURCE to set.\n"
             "[containers]\n"
             "default_ulimits = []\n";
    }
    std::filesystem::rename(partial, file);  // whole, even when two processes write it at once
  }
  return file.string();
}

}  // namespace

std::string container_name(const std::string& allocation_id, int rank) {
  return "det-" + allocation_id + "-" + std::to_string(rank);
}

std::string python_client_directory() {
  const auto client = std::filesystem::path(worker_executable()).parent_path().parent_path() / "share/det/python";
  return client.lexically_normal().string();
}

std::map<std::string, std::string> podman_environment() {
  if (const char* own = std::getenv("CONTAINERS_CONF"); own && *own) return {};
  return {{"CONTAINERS_CONF", containers_conf()}};
}

void ensure_image(const std::string& image, const pb::RunEnvironment& environment) {
  if (!environment.force_pull_image()) {
    auto exists = process::run_captured(podman({"image", "exists", image}), podman_environment(), podman_call_limit);
    if (exists.succeeded()) return;
  }
  std::vector<std::string> pull = podman({"pull", "--quiet"});
  if (!environment.registry_username().empty())
    pull.push_back("--creds=" + environment.registry_username() + ":" + environment.registry_password());
  pull.push_back(image);
  process::captured_output pulled;
  try {
    pulled = process::run_captured(pull, podman_environment(), podman_call_limit);
  } catch (const std::exception& e) {
    throw image_unavailable("cannot pull the image " + image + ": " + e.what());
  }
  if (!pulled.succeeded()) throw image_unavailable("cannot pull the image " + image + ": podman pull " + pulled.failure());
}

std::vector<std::string> podman_run_argv(const container_request& request) {
  std::vector<std::string> argv = podman({"run", "--name", request.name, "--network", "host", "--init",
                                          "--pull", "never", "--workdir", request.workdir});
  auto mount = [&](const std::string& host, const std::string& inside, bool read_only) {
    argv.push_back("--volume=" + host + ":" + inside + (read_only ? ":ro" : ""));
  };
  mount(request.workdir, request.workdir, false);
  for (const auto& m : request.mounts) mount(m.host_path(), m.container_path(), m.read_only());
  for (const auto& [name, value] : request.env) argv.push_back("--env=" + name);
  if (request.user) argv.push_back("--user=" + std::to_string(request.user->uid) + ":" + std::to_string(request.user->gid));
  for (const auto& gpu : request.gpus) argv.push_back("--device=nvidia.com/gpu=" + gpu);
  if (const auto* env = request.environment) {
    for (const auto& m : env->bind_mounts()) mount(m.host_path(), m.container_path(), m.read_only());
    if (!request.cgroup_parent.empty()) {
      argv.push_back("--cgroup-parent=" + request.cgroup_parent);
    } else {
      if (env->memory_limit_bytes() > 0) {
        argv.push_back("--memory=" + std::to_string(env->memory_limit_bytes()));
        argv.push_back("--memory-swap=" + std::to_string(env->memory_limit_bytes()));  // no swap on top
      }
      if (env->cpu_limit() > 0) argv.push_back("--cpus=" + std::to_string(env->cpu_limit()));
    }
    if (env->shm_size_bytes() > 0) argv.push_back("--shm-size=" + std::to_string(env->shm_size_bytes()));
    for (const auto& c : env->add_capabilities()) argv.push_back("--cap-add=" + c);
    for (const auto& c : env->drop_capabilities()) argv.push_back("--cap-drop=" + c);
  }
  argv.push_back(request.image);
  argv.insert(argv.end(), request.argv.begin(), request.argv.end());
  return argv;
}

std::map<std::string, std::string> podman_run_environment(const container_request& request) {
  auto env = podman_environment();
  for (const auto& [name, value] : request.env) env[name] = value;
  return env;
}

void remove_container(const std::string& name) {
  try {
    process::run_captured(podman({"rm", "--force", "--ignore", "--time", "0", name}), podman_environment(),
                          std::chrono::minutes(1));
  } catch (const std::exception&) {
    // podman itself is missing: there is no container either
  }
}

std::string memory_limit_sentence(const std::string& what, int64_t bytes) {
  return "the " + what + " exceeded its memory limit of " + config::describe_bytes(bytes);
}

}  // namespace det::runtime
