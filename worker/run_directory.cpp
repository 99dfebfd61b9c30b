// A trial run's working directory (run_directory.hpp).

#include "worker/run_directory.hpp"

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <string>
#include <system_error>

#include "messages/trial.pb.h"
#include "node/tar_archive.hpp"

namespace det::runtime {

// mkdtemp: a fresh directory only this user can enter, whatever else is in /tmp.
run_directory::run_directory(const pb::TrialSpec& spec) {
  auto pattern = (std::filesystem::temp_directory_path() / ("det-trial-" + spec.allocation_id() + "-XXXXXX")).string();
  if (!::mkdtemp(pattern.data()))
    throw std::runtime_error("cannot create the trial's working directory " + pattern + ": " + std::strerror(errno));
  path_ = pattern;
  if (spec.model_definition().empty())
    return;
  try {
    unpack_archive(spec.model_definition(), path_.string());
  } catch (...) {  // no destructor runs for a constructor that throws
    std::error_code ignored;
    std::filesystem::remove_all(path_, ignored);
    throw;
  }
}

run_directory::~run_directory() {
  std::error_code ignored;
  std::filesystem::remove_all(path_, ignored);
}

} // namespace det::runtime
