#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

namespace det::config {

/// A Go-style duration of whole days, hours, minutes and seconds ("25s", "1m30s", "7d"), in
/// seconds; nullopt when `text` is not one.
std::optional<int64_t> parse_duration_s(std::string_view text);

} // namespace det::config
