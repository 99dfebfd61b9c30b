#pragma once
// Files that hold secrets (the admin password, the agent token, the CLI's logins): written
// readable by their owner only, and read back a line at a time.

#include <optional>
#include <string>

namespace det::auth {

/// Writes `text` to `path` with mode 0600, replacing it atomically. A temporary file made with
/// O_EXCL cannot lend a leftover's mode or owner. Throws std::runtime_error naming the path.
void write_private_file(const std::string& path, const std::string& text);

/// The first line of `path`, or nullopt when it cannot be read or the line is empty.
std::optional<std::string> read_first_line(const std::string& path);

} // namespace det::auth
