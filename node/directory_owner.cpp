#include "node/directory_owner.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>
#include <system_error>

namespace det::runtime {

namespace {

void give(const std::filesystem::path& path, const process::unix_identity& who) {
  if (::lchown(path.c_str(), who.uid, who.gid) != 0)
    throw std::runtime_error("cannot give " + path.string() + " to uid " + std::to_string(who.uid) + ": " +
                             std::strerror(errno));
}

}  // namespace

void give_directory_to(const std::filesystem::path& dir, const process::unix_identity& who) {
  std::error_code error;
  for (auto it = std::filesystem::recursive_directory_iterator(dir, error); !error && it != std::filesystem::end(it);
       it.increment(error))
    give(it->path(), who);
  if (error) throw std::runtime_error("cannot read " + dir.string() + ": " + error.message());
  give(dir, who);
  if (::chmod(dir.c_str(), 0700) != 0)
    throw std::runtime_error("cannot set the mode of " + dir.string() + ": " + std::strerror(errno));
}

}  // namespace det::runtime
