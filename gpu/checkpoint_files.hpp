#pragma once
// A checkpoint's directory on the checkpoint storage: <root>/<uuid>/ holding the trial's files and
// metadata.json. Written under a temporary name and renamed into place, so that a directory with
// the checkpoint's name is always complete.

#include "gpu/harness.hpp"

#include <cstdint>
#include <map>
#include <string>

namespace det::harness {

/// A checkpoint being written: files go into dir(); commit() finishes it.
class checkpoint_writer {
 public:
  /// Creates <root>/<uuid>.partial/ for a new random uuid. Throws std::runtime_error with a
  /// sentence when the directory cannot be made.
  explicit checkpoint_writer(const std::string& root);
  ~checkpoint_writer();
  checkpoint_writer(const checkpoint_writer&) = delete;
  checkpoint_writer& operator=(const checkpoint_writer&) = delete;

  const std::string& dir() const { return partial_; }
  /// Writes metadata.json (format, progress, files and sizes) and renames the directory to
  /// <root>/<uuid>/. `format` names the trial's layout, e.g. "det.mlp/1".
  saved_checkpoint commit(const std::string& format, const progress& at);

 private:
  std::string root_;
  std::string uuid_;
  std::string partial_;
  bool committed_ = false;
};

/// What metadata.json of a checkpoint says.
struct checkpoint_metadata {
  std::string uuid;
  std::string format;
  progress at;
};

/// Reads <dir>/metadata.json. Throws std::runtime_error naming the checkpoint when the directory
/// or its metadata is missing or corrupt, or its format is not `format`.
checkpoint_metadata read_checkpoint(const std::string& dir, const std::string& format);

} // namespace det::harness
