#pragma once
// Handing a directory the agent made for a run (a task's fresh directory with its unpacked
// context) to the Unix user the run is: owned by it throughout, and only it may enter the top.

#include <filesystem>

#include "process/unix_identity.hpp"

namespace det::runtime {

/// Gives `dir` and everything in it to `who` (links themselves, never what they point to), and
/// makes `dir` 0700. Throws std::runtime_error with a sentence naming the path that failed.
void give_directory_to(const std::filesystem::path& dir, const process::unix_identity& who);

}  // namespace det::runtime
