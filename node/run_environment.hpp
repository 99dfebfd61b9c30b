#pragma once
// A config's environment as it travels to the agent (pb::RunEnvironment in StartContainer).

#include "config/environment_config.hpp"
#include "messages/cluster.pb.h"

namespace det {

inline pb::RunEnvironment run_environment_of(const config::environment_config& env) {
  pb::RunEnvironment out;
  out.set_cpu_image(env.cpu_image);
  out.set_cuda_image(env.cuda_image);
  for (const auto& [name, value] : env.cpu_variables) (*out.mutable_cpu_env())[name] = value;
  for (const auto& [name, value] : env.cuda_variables) (*out.mutable_cuda_env())[name] = value;
  out.set_force_pull_image(env.force_pull_image);
  if (env.auth) {
    out.set_registry_username(env.auth->username);
    out.set_registry_password(env.auth->password);
    out.set_registry_server(env.auth->server);
  }
  for (const auto& c : env.add_capabilities) out.add_add_capabilities(c);
  for (const auto& c : env.drop_capabilities) out.add_drop_capabilities(c);
  for (const auto& m : env.bind_mounts) {
    auto* mount = out.add_bind_mounts();
    mount->set_host_path(m.host_path);
    mount->set_container_path(m.container_path);
    mount->set_read_only(m.read_only);
  }
  out.set_shm_size_bytes(env.shm_size_bytes);
  out.set_memory_limit_bytes(env.memory_limit_bytes);
  out.set_cpu_limit(env.cpu_limit);
  return out;
}

}  // namespace det
