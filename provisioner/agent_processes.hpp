#pragma once
// The det-node agents running on this machine, found by their command lines in /proc: the process
// provider's instances, which outlive a killed master and so cannot be remembered by pid.

#include <sys/types.h>

#include <map>
#include <set>
#include <string>
#include <vector>

namespace det::provisioner {

/// A process whose command line is a det-node agent's (`det-node --role=agent ...`).
struct agent_process {
  pid_t pid = 0;
  pid_t parent = 0;
  std::vector<std::string> argv;
  std::string gpus;  // its CUDA_VISIBLE_DEVICES
};

/// Every process on this machine with an agent's command line. A child an agent is starting shows
/// among them until its exec: posix_spawn's child shares its parent's memory, command line
/// included, until then.
std::vector<agent_process> agent_processes();

/// The agents of `pool` whose --id= is among `ids`, by id. Of the processes with one id, the agent
/// is the one whose parent is not among them: the others are children it is starting, which a
/// SIGTERM meant for the agent must not reach.
std::map<std::string, agent_process> pool_agents(const std::vector<agent_process>& processes, const std::string& pool,
                                                 const std::set<std::string>& ids);

}  // namespace det::provisioner
