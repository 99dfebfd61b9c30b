#include "storage/shared_checkpoint_root.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

namespace det::storage {

namespace {

constexpr mode_t shared_mode = S_ISVTX | 0777;

// "" or why `dir` could not be made shared.
std::string make_shared(const std::filesystem::path& dir) {
  std::error_code error;
  std::filesystem::create_directories(dir, error);
  if (error) return "cannot create " + dir.string() + ": " + error.message();
  struct stat info {};
  if (::stat(dir.c_str(), &info) != 0) return "cannot read " + dir.string() + ": " + std::strerror(errno);
  // A directory an admin made for the purpose (or another user's) is left as it is.
  if (info.st_uid != ::geteuid() || (info.st_mode & 07777) == shared_mode) return "";
  if (::chmod(dir.c_str(), shared_mode) != 0)
    return "cannot make " + dir.string() + " writable by every user's trials: " + std::strerror(errno);
  return "";
}

}  // namespace

std::string prepare_shared_checkpoint_root(const std::string& root) {
  const std::filesystem::path base{root};
  for (const auto& dir : {base, base / "tensorboard", base / "tensorboard" / "experiment"})
    if (auto why = make_shared(dir); !why.empty()) return why;
  return "";
}

std::string let_everyone_through(const std::string& dir) {
  struct stat info {};
  if (::stat(dir.c_str(), &info) != 0) return "cannot read " + dir + ": " + std::strerror(errno);
  if ((info.st_mode & S_IXOTH) != 0) return "";
  if (::chmod(dir.c_str(), (info.st_mode & 07777) | S_IXOTH) != 0)
    return "cannot let trials pass through " + dir + " to their checkpoints: " + std::strerror(errno);
  return "";
}

}  // namespace det::storage
