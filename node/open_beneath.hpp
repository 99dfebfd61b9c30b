#pragma once
// Opening (or creating) a file that a user named, beneath a directory the master owns, without
// following any symlink: a trial writes its checkpoint's directory itself, so a name in it may be a link to
// the master's data (its agent token, its TLS key). openat2(RESOLVE_BENEATH |
// RESOLVE_NO_SYMLINKS) where the kernel has it (Linux 5.6), else one O_NOFOLLOW component at a
// time.

#include <string>

namespace det::runtime {

/// A file descriptor closed when it goes; -1 for none.
class unique_fd {
 public:
  explicit unique_fd(int fd = -1) : fd_(fd) {}
  ~unique_fd();
  unique_fd(unique_fd&& other) noexcept : fd_(other.release()) {}
  unique_fd& operator=(unique_fd&& other) noexcept;
  unique_fd(const unique_fd&) = delete;
  unique_fd& operator=(const unique_fd&) = delete;

  int get() const { return fd_; }
  int release() {
    int fd = fd_;
    fd_ = -1;
    return fd;
  }
  explicit operator bool() const { return fd_ >= 0; }

 private:
  int fd_;
};

/// Creates file `name` for writing in directory `relative_directory` (a plain relative path)
/// beneath `root`, making the directories it lacks, never through a symlink and never over an
/// existing file: the master writes Core API trials' event files beneath a directory those
/// trials write too. Returns the descriptor, or an invalid one with errno set (ELOOP for a link,
/// EEXIST, ...).
unique_fd create_beneath(const std::string& root, const std::string& relative_directory, const std::string& name);

/// Opens regular file `relative` (a plain relative path) beneath directory `root` for reading,
/// refusing any symlink on the way (`root` itself may be one: the operator chose it). Returns
/// the descriptor, or an invalid one with errno set (ELOOP or EXDEV for a link, ENOENT, ...).
unique_fd open_beneath(const std::string& root, const std::string& relative);

}  // namespace det::runtime
