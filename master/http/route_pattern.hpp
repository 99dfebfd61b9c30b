#pragma once
// The route patterns of the REST gateway, matched without std::regex: libstdc++'s regex recurses
// once per character of the path, so a long enough path exhausted the master's stack. A pattern
// is the subset of regex syntax the routes are written in (literals, \d, ., [classes], + * ? {n}
// {n,m}, capturing groups and alternation); matching recurses once per pattern element, never
// per character of the path.

#include <bitset>
#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace det::runtime {

/// One captured part of a path; .str() as std::sub_match has it, for the route files.
struct route_capture : std::string {
  std::string str() const { return *this; }
};

/// A route's pattern, compiled once; it must match the whole path.
class route_pattern {
 public:
  /// Throws std::invalid_argument for syntax outside the subset (a bug in a route file).
  explicit route_pattern(std::string_view pattern);

  /// Whether `path` matches; on a match, `captures` holds the whole path then each group's text.
  bool match(std::string_view path, std::vector<route_capture>& captures) const;

  struct element;
  using sequence = std::vector<element>;

 private:
  std::vector<sequence> alternatives_;
  std::size_t groups_ = 0;
};

struct route_pattern::element {
  enum class kind { literal, char_class, group } what = kind::literal;
  char literal = 0;
  std::bitset<256> chars;  // of a char_class
  std::size_t min = 1, max = 1;
  std::vector<sequence> alternatives;  // of a group
  std::size_t group = 0;               // its capture's index (1-based)
};

} // namespace det::runtime
