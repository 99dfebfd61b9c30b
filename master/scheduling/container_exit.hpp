#pragma once
// The messages about a container that the master's actors build: how it ended, as a sentence for
// the trial's logs and exit reason, an end without a container, and the kill.

#include <csignal>
#include <cstdint>
#include <string>

#include "messages/cluster.pb.h"
#include "process/process_exit.hpp"

namespace det {

inline std::string describe_exit(const pb::ContainerExited& e) {
  if (!e.message().empty())
    return e.message();
  return "the worker " + process::describe({e.exit_code(), e.signal()});
}

/// The process exited by itself with code 0.
inline bool ended_well(const pb::ContainerExited& e) {
  return e.cause() == pb::EXIT_CAUSE_EXITED && e.signal() == 0 && e.exit_code() == 0;
}

/// An end the master reports itself (`cause` is not EXIT_CAUSE_EXITED): the container never
/// started, could never be placed, or was lost with its agent.
inline pb::ContainerExited exit_without_container(const std::string& allocation_id, const std::string& agent_id,
                                                  const std::string& why, pb::ExitCause cause) {
  pb::ContainerExited exited;
  exited.set_allocation_id(allocation_id);
  exited.set_agent_id(agent_id);
  exited.set_cause(cause);
  exited.set_exit_code(-1);
  exited.set_message(why);
  return exited;
}

/// SIGKILL, or `signal` with SIGKILL after grace_s (0: the agent's 30 s).
inline pb::KillContainer kill_container(const std::string& allocation_id, int32_t signal = SIGKILL,
                                        int64_t grace_s = 0) {
  pb::KillContainer kill;
  kill.set_allocation_id(allocation_id);
  kill.set_signal(signal);
  kill.set_grace_s(grace_s);
  return kill;
}

}  // namespace det
