#pragma once
// A trial run's working directory: a fresh temporary directory holding the experiment's model
// definition, unpacked from the archive the trial spec carries, and removed when the run is done.

#include <filesystem>

namespace det::pb {
class TrialSpec;
}

namespace det::runtime {

/// The trial's working directory, holding the experiment's model definition; removed when the
/// worker is done with it.
class run_directory {
 public:
  /// Creates it and unpacks the spec's model definition there; throws std::runtime_error with a
  /// sentence if either fails.
  explicit run_directory(const pb::TrialSpec& spec);
  ~run_directory();
  run_directory(const run_directory&) = delete;
  run_directory& operator=(const run_directory&) = delete;

  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
};

} // namespace det::runtime
