#include "config/duration.hpp"

#include <cctype>
#include <string>

namespace det::config {

std::optional<int64_t> parse_duration_s(std::string_view text) {
  int64_t total = 0;
  size_t i = 0;
  if (text.empty()) return std::nullopt;
  while (i < text.size()) {
    size_t digits_end = i;
    while (digits_end < text.size() && std::isdigit(static_cast<unsigned char>(text[digits_end]))) ++digits_end;
    if (digits_end == i || digits_end == text.size() || digits_end - i > 9) return std::nullopt;
    int64_t amount = std::stoll(std::string(text.substr(i, digits_end - i)));
    switch (text[digits_end]) {
      case 'd': total += amount * 86400; break;
      case 'h': total += amount * 3600; break;
      case 'm': total += amount * 60; break;
      case 's': total += amount; break;
      default: return std::nullopt;
    }
    i = digits_end + 1;
  }
  return total;
}

} // namespace det::config
