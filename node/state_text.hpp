#pragma once
// The text an actor answers `inspect` with: one "key: value" line per field,
// first the actor's own mailbox length (read by the actor itself, the only
// thread allowed to look at its mailbox).

#include <sstream>
#include <string>
#include <string_view>

namespace det {

class state_text {
public:
  template <class Self>
  explicit state_text(Self* self) {
    os_ << "mailbox: " << self->mailbox().size() << "\n";
  }

  template <class T>
  state_text& add(std::string_view key, const T& value) {
    os_ << key << ": " << value << "\n";
    return *this;
  }

  std::string str() const { return os_.str(); }

private:
  std::ostringstream os_;
};

} // namespace det
