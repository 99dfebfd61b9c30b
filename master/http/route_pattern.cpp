#include "master/http/route_pattern.hpp"

#include <functional>
#include <limits>
#include <stdexcept>

namespace det::runtime {

namespace {

using element = route_pattern::element;
using sequence = route_pattern::sequence;
constexpr std::size_t unbounded = std::numeric_limits<std::size_t>::max();

class parser {
 public:
  explicit parser(std::string_view text) : text_(text) {}

  std::vector<sequence> alternatives() {
    std::vector<sequence> out{sequence{}};
    while (pos_ < text_.size() && text_[pos_] != ')') {
      if (text_[pos_] == '|') {
        ++pos_;
        out.emplace_back();
        continue;
      }
      out.back().push_back(quantified(atom()));
    }
    return out;
  }

  bool done() const { return pos_ == text_.size(); }
  std::size_t groups() const { return groups_; }

 private:
  [[noreturn]] void fail(const std::string& why) const {
    throw std::invalid_argument("route pattern " + std::string(text_) + ": " + why);
  }

  char next() {
    if (pos_ >= text_.size()) fail("ends too early");
    return text_[pos_++];
  }

  element atom() {
    element e;
    char c = next();
    if (c == '(') {
      e.what = element::kind::group;
      e.group = ++groups_;
      e.alternatives = alternatives();
      if (next() != ')') fail("a group is not closed");
    } else if (c == '.') {
      e.what = element::kind::char_class;
      e.chars.set();
    } else if (c == '[') {
      e.what = element::kind::char_class;
      e.chars = char_class();
    } else if (c == '\\') {
      char escaped = next();
      if (escaped == 'd') {
        e.what = element::kind::char_class;
        for (char d = '0'; d <= '9'; ++d) e.chars.set(static_cast<unsigned char>(d));
      } else {
        e.literal = escaped;
      }
    } else if (c == '*' || c == '+' || c == '?' || c == '{') {
      fail("a quantifier follows nothing");
    } else {
      e.literal = c;
    }
    return e;
  }

  std::bitset<256> char_class() {
    std::bitset<256> set;
    bool negated = pos_ < text_.size() && text_[pos_] == '^';
    if (negated) ++pos_;
    bool first = true;
    for (char c = next(); c != ']' || first; c = next(), first = false) {
      if (c == '\\') c = next();
      if (pos_ + 1 < text_.size() && text_[pos_] == '-' && text_[pos_ + 1] != ']') {
        ++pos_;
        char last = next();
        if (last == '\\') last = next();
        for (int x = static_cast<unsigned char>(c); x <= static_cast<unsigned char>(last); ++x) set.set(x);
      } else {
        set.set(static_cast<unsigned char>(c));
      }
    }
    return negated ? ~set : set;
  }

  std::size_t number() {
    std::size_t n = 0;
    bool any = false;
    while (pos_ < text_.size() && text_[pos_] >= '0' && text_[pos_] <= '9') {
      n = n * 10 + static_cast<std::size_t>(text_[pos_++] - '0');
      any = true;
    }
    if (!any) fail("a count is not a number");
    return n;
  }

  element quantified(element e) {
    if (pos_ >= text_.size()) return e;
    char c = text_[pos_];
    if (c != '+' && c != '*' && c != '?' && c != '{') return e;
    if (e.what != element::kind::char_class) fail("only a character class may repeat");
    ++pos_;
    if (c == '+') {
      e.min = 1, e.max = unbounded;
    } else if (c == '*') {
      e.min = 0, e.max = unbounded;
    } else if (c == '?') {
      e.min = 0, e.max = 1;
    } else {
      e.min = e.max = number();
      if (text_[pos_] == ',') {
        ++pos_;
        e.max = number();
      }
      if (next() != '}') fail("a count is not closed");
    }
    return e;
  }

  std::string_view text_;
  std::size_t pos_ = 0;
  std::size_t groups_ = 0;
};

class matcher {
 public:
  matcher(std::string_view path, std::vector<route_capture>& captures) : path_(path), captures_(captures) {}

  /// Whether `seq` from element `i` matches at `pos` with `then` accepting where it ends. The
  /// recursion goes one element deeper at a time: its depth is the pattern's size.
  bool sequence_at(const sequence& seq, std::size_t i, std::size_t pos, const std::function<bool(std::size_t)>& then) {
    if (i == seq.size()) return then(pos);
    const auto& e = seq[i];
    switch (e.what) {
      case element::kind::literal:
        return pos < path_.size() && path_[pos] == e.literal && sequence_at(seq, i + 1, pos + 1, then);
      case element::kind::char_class: {
        std::size_t run = 0;
        while (run < e.max && pos + run < path_.size() && e.chars.test(static_cast<unsigned char>(path_[pos + run])))
          ++run;
        for (std::size_t length = run + 1; length-- > e.min;)  // longest first, as regex's greedy repetition
          if (sequence_at(seq, i + 1, pos + length, then)) return true;
        return false;
      }
      case element::kind::group:
        for (const auto& alternative : e.alternatives) {
          bool matched = sequence_at(alternative, 0, pos, [&](std::size_t end) {
            auto saved = captures_[e.group];
            captures_[e.group].assign(path_.substr(pos, end - pos));
            if (sequence_at(seq, i + 1, end, then)) return true;
            captures_[e.group] = std::move(saved);
            return false;
          });
          if (matched) return true;
        }
        return false;
    }
    return false;
  }

 private:
  std::string_view path_;
  std::vector<route_capture>& captures_;
};

} // namespace

route_pattern::route_pattern(std::string_view pattern) {
  parser p(pattern);
  alternatives_ = p.alternatives();
  if (!p.done()) throw std::invalid_argument("route pattern " + std::string(pattern) + ": an unopened ')'");
  groups_ = p.groups();
}

bool route_pattern::match(std::string_view path, std::vector<route_capture>& captures) const {
  captures.assign(groups_ + 1, route_capture{});
  matcher m(path, captures);
  for (const auto& alternative : alternatives_)
    if (m.sequence_at(alternative, 0, 0, [&](std::size_t end) { return end == path.size(); })) {
      captures[0].assign(path);
      return true;
    }
  return false;
}

} // namespace det::runtime
