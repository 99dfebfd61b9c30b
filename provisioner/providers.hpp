#pragma once
// The provider types, each in its own file; make_provider picks one.

#include "provisioner/instance_provider.hpp"

namespace det::provisioner {

std::unique_ptr<instance_provider> make_process_provider(const config::provider_config& config, provider_context context);
std::unique_ptr<instance_provider> make_command_provider(const config::provider_config& config, provider_context context);
std::unique_ptr<instance_provider> make_slurm_provider(const config::provider_config& config, provider_context context);

}  // namespace det::provisioner
