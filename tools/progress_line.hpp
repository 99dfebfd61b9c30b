#pragma once
// A status line for `--follow`: redrawn in place on a terminal, and on a pipe
// or file printed as plain lines no more often than every few seconds, so that
// logs of a long run stay readable.

#include <chrono>
#include <iosfwd>
#include <string>

namespace det::tools {

class progress_line {
public:
  /// `terminal`: redraw with a carriage return, cut to `width` columns.
  progress_line(std::ostream& out, bool terminal, size_t width,
                std::chrono::steady_clock::duration plain_interval);

  /// The line for standard output, as isatty and the terminal's size say.
  static progress_line for_stdout();

  /// Shows `text` as the current status.
  void show(const std::string& text);

  /// Ends a redrawn line so that what follows starts on a fresh one.
  void finish();

private:
  std::ostream& out_;
  bool terminal_;
  size_t width_;
  std::chrono::steady_clock::duration plain_interval_;
  std::chrono::steady_clock::time_point last_plain_{};
  std::string last_text_;
  size_t drawn_ = 0; // characters on the terminal line now
};

} // namespace det::tools
