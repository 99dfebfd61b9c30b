#pragma once
// How a container ended, as a sentence for the trial's logs and exit reason.

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

}  // namespace det
