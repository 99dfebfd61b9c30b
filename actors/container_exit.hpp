#pragma once
// The messages about a container that the master's actors build: how it ended, as a sentence for
// the trial's logs and exit reason, an end without a container, and the kill.

#include <csignal>
#include <cstdint>
#include <cstring>
#include <string>

#include "messages/interfaces.hpp"

namespace det {

inline std::string describe_exit(const pb::ContainerExited& e) {
  if (!e.message().empty())
    return e.message();
  if (e.signal() != 0) {
    const char* name = sigabbrev_np(e.signal());
    return "the worker was killed by signal " + std::to_string(e.signal()) +
           (name ? " (SIG" + std::string(name) + ")" : "");
  }
  return "the worker exited with code " + std::to_string(e.exit_code());
}

/// Exit code 0, no signal, nothing to say, and not lost with its agent.
inline bool ended_well(const pb::ContainerExited& e) {
  return !e.transient() && e.signal() == 0 && e.exit_code() == 0 && e.message().empty();
}

/// An end the master reports itself: the container never started, or was lost (`transient`:
/// with its agent, which counts no restart).
inline pb::ContainerExited exit_without_container(const std::string& allocation_id, const std::string& agent_id,
                                                  const std::string& why, bool transient) {
  pb::ContainerExited exited;
  exited.set_allocation_id(allocation_id);
  exited.set_agent_id(agent_id);
  exited.set_exit_code(-1);
  exited.set_message(why);
  exited.set_transient(transient);
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
