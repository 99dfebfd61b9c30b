#include "auth/untrusted_names.hpp"

#include <cctype>

namespace det::auth {

bool is_uuid(const std::string& text) {
  if (text.size() != 36) return false;
  for (size_t i = 0; i < text.size(); ++i) {
    const bool dash = i == 8 || i == 13 || i == 18 || i == 23;
    if (dash ? text[i] != '-' : !std::isxdigit(static_cast<unsigned char>(text[i]))) return false;
  }
  return true;
}

bool is_plain_relative_path(const std::string& name) {
  if (name.empty() || name.size() > 4096 || name.front() == '/' || name.back() == '/') return false;
  if (name.find('\0') != std::string::npos || name.find("//") != std::string::npos) return false;
  for (size_t start = 0; start <= name.size();) {
    auto end = name.find('/', start);
    if (end == std::string::npos) end = name.size();
    auto part = name.substr(start, end - start);
    if (part == "." || part == "..") return false;
    start = end + 1;
  }
  return true;
}

}  // namespace det::auth
