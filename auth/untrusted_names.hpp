#pragma once
// Names that come from users and trials but become paths on the master: a checkpoint's uuid (its
// directory) and its files' names. Checked where they are recorded and where they are opened.

#include <string>

namespace det::auth {

/// Whether `text` is a UUID as det writes them: 8-4-4-4-12 hexadecimal digits.
bool is_uuid(const std::string& text);

/// Whether `name` is a plain relative path: non-empty parts separated by single '/', none of
/// them "." or "..", no NUL, at most 4096 bytes.
bool is_plain_relative_path(const std::string& name);

}  // namespace det::auth
