#include "tools/progress_line.hpp"

#include <iostream>

#include <sys/ioctl.h>
#include <unistd.h>

namespace det::tools {

progress_line::progress_line(std::ostream& out, bool terminal, size_t width,
                             std::chrono::steady_clock::duration plain_interval)
    : out_(out), terminal_(terminal), width_(width), plain_interval_(plain_interval) {}

progress_line progress_line::for_stdout() {
  bool terminal = isatty(STDOUT_FILENO) == 1;
  size_t width = 80;
  winsize ws{};
  if (terminal && ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 0)
    width = ws.ws_col;
  return progress_line(std::cout, terminal, width, std::chrono::seconds(5));
}

void progress_line::show(const std::string& text) {
  if (terminal_) {
    // One column short of the width: writing the last column makes some
    // terminals wrap, and the next carriage return would then miss the line.
    std::string line = text.substr(0, width_ > 1 ? width_ - 1 : width_);
    size_t pad = drawn_ > line.size() ? drawn_ - line.size() : 0;
    out_ << '\r' << line << std::string(pad, ' ') << std::flush;
    drawn_ = line.size();
    return;
  }
  auto now = std::chrono::steady_clock::now();
  bool first = last_plain_ == std::chrono::steady_clock::time_point{};
  if (text == last_text_ || (!first && now - last_plain_ < plain_interval_))
    return;
  out_ << text << '\n' << std::flush;
  last_text_ = text;
  last_plain_ = now;
}

void progress_line::finish() {
  if (terminal_ && drawn_ > 0)
    out_ << '\n' << std::flush;
  drawn_ = 0;
}

} // namespace det::tools
