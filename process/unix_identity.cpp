#include "process/unix_identity.hpp"

#include <grp.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>

namespace det::process {

int become(const unix_identity& who) noexcept {
  // Groups first and uid last: once the uid is not root's, neither can be changed any more.
  if (::setgroups(0, nullptr) != 0) return errno;
  if (::setresgid(who.gid, who.gid, who.gid) != 0) return errno;
  if (::setresuid(who.uid, who.uid, who.uid) != 0) return errno;
  return 0;
}

int become_in_vfork_child(const unix_identity& who) noexcept {
  if (::syscall(SYS_setgroups, 0, nullptr) != 0) return errno;
  if (::syscall(SYS_setresgid, who.gid, who.gid, who.gid) != 0) return errno;
  if (::syscall(SYS_setresuid, who.uid, who.uid, who.uid) != 0) return errno;
  return 0;
}

}  // namespace det::process
