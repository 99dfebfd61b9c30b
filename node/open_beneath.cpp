#include "node/open_beneath.hpp"

#include <fcntl.h>
#include <linux/openat2.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>

#include "auth/untrusted_names.hpp"

namespace det::runtime {

unique_fd::~unique_fd() {
  if (fd_ >= 0) ::close(fd_);
}

unique_fd& unique_fd::operator=(unique_fd&& other) noexcept {
  if (this != &other) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = other.release();
  }
  return *this;
}

namespace {

// The fallback for kernels without openat2: each directory with O_NOFOLLOW | O_DIRECTORY, the
// file with O_NOFOLLOW, each relative to the one before, so no component can be a link.
unique_fd open_component_by_component(int root, const std::string& relative) {
  unique_fd dir(::dup(root));
  size_t start = 0;
  for (;;) {
    auto end = relative.find('/', start);
    const bool last = end == std::string::npos;
    auto part = relative.substr(start, last ? std::string::npos : end - start);
    int flags = O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | (last ? 0 : O_DIRECTORY);
    unique_fd next(::openat(dir.get(), part.c_str(), flags));
    if (!next || last) return next;
    dir = std::move(next);
    start = end + 1;
  }
}

}  // namespace

unique_fd open_beneath(const std::string& root, const std::string& relative) {
  if (!auth::is_plain_relative_path(relative)) {
    errno = EINVAL;
    return unique_fd();
  }
  unique_fd base(::open(root.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!base) return base;
  open_how how{};
  // O_NONBLOCK: a FIFO a trial left in its checkpoint must not block the opening thread.
  how.flags = O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY;
  how.resolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS;
  unique_fd file(static_cast<int>(::syscall(SYS_openat2, base.get(), relative.c_str(), &how, sizeof how)));
  if (!file && (errno == ENOSYS || errno == EPERM))  // an old kernel, or a seccomp filter that blocks it
    file = open_component_by_component(base.get(), relative);
  if (!file) return file;
  struct stat st {};
  if (::fstat(file.get(), &st) != 0 || !S_ISREG(st.st_mode)) {
    errno = EISDIR;
    return unique_fd();
  }
  return file;
}

unique_fd create_beneath(const std::string& root, const std::string& relative_directory, const std::string& name) {
  if (!auth::is_plain_relative_path(relative_directory) || name.empty() || name.find('/') != std::string::npos ||
      name == "." || name == "..") {
    errno = EINVAL;
    return unique_fd();
  }
  unique_fd dir(::open(root.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  size_t start = 0;
  while (dir && start <= relative_directory.size()) {
    auto end = relative_directory.find('/', start);
    if (end == std::string::npos) end = relative_directory.size();
    const auto part = relative_directory.substr(start, end - start);
    // Made when missing; then opened with O_NOFOLLOW, which fails on a link that was there before
    // or was put there between the two calls.
    if (::mkdirat(dir.get(), part.c_str(), 0755) != 0 && errno != EEXIST) return unique_fd();
    dir = unique_fd(::openat(dir.get(), part.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
    start = end + 1;
  }
  if (!dir) return dir;
  return unique_fd(::openat(dir.get(), name.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC | O_NOCTTY, 0644));
}

}  // namespace det::runtime
