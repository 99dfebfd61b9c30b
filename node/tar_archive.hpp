#pragma once
// The model directory a user submits travels as a tar archive (ustar, with pax records where
// ustar falls short): `det submit CONFIG DIR` packs it, the worker unpacks it into the trial's
// working directory. libarchive reads and writes it.

#include <cstddef>
#include <string>

namespace det::runtime {

/// Packs the regular files and directories under `dir` (paths relative to it, sorted, links to
/// files followed, links to directories left out), stopping with std::runtime_error once the
/// archive would exceed `max_bytes`.
std::string pack_directory(const std::string& dir, std::size_t max_bytes);

/// Unpacks a tar archive, plain as pack_directory makes it or gzip-compressed, into `into`, which
/// it creates. Throws std::runtime_error with a sentence for a corrupt archive, or an entry that
/// would land outside `into` or is neither a file, a directory nor a link.
void unpack_archive(const std::string& archive, const std::string& into);

} // namespace det::runtime
