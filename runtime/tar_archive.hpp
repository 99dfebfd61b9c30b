#pragma once
// The model directory a user submits travels as a POSIX ustar archive: `det submit CONFIG DIR`
// packs it, the worker unpacks it into the trial's working directory.

#include <cstddef>
#include <string>

namespace det::runtime {

/// Packs the regular files and directories under `dir` (paths relative to it, sorted, symbolic
/// links followed), stopping with std::runtime_error once the archive would exceed `max_bytes`
/// or when a path is too long for ustar (255 bytes).
std::string pack_directory(const std::string& dir, std::size_t max_bytes);

/// Unpacks an archive pack_directory made into `into`, which it creates. Throws
/// std::runtime_error for a corrupt archive or an entry that would land outside `into`.
void unpack_archive(const std::string& archive, const std::string& into);

} // namespace det::runtime
