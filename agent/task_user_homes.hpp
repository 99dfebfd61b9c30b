#pragma once
// The homes an agent gives the Unix users it runs det users' work as: a directory per user that
// only that user can enter (0700, owned by it), which is HOME for its runs and holds its copies
// of the files its runs must read but may not reach where the agent keeps them (the agent's TLS
// certificate and key). All of them live in one directory of the agent's, removed when it stops.

#include <filesystem>
#include <map>
#include <optional>
#include <string>

#include "auth/tls_files.hpp"
#include "process/unix_identity.hpp"

namespace det::runtime {

class task_user_homes {
 public:
  /// Makes the agent's directory of homes under the temporary directory; `tls` are the files
  /// each home gets a copy of. Throws std::runtime_error with a sentence when it cannot.
  explicit task_user_homes(std::optional<auth::tls_files> tls);
  ~task_user_homes();
  task_user_homes(const task_user_homes&) = delete;
  task_user_homes& operator=(const task_user_homes&) = delete;

  struct home {
    std::filesystem::path path;
    std::optional<auth::tls_files> tls;  // its copies of the agent's TLS files
  };

  /// `who`'s home, made (with its copies) the first time. Throws std::runtime_error with a
  /// sentence when it cannot be made.
  const home& of(const process::unix_identity& who);

  /// This machine's /etc/passwd with a line for `who` named `name` (home: its home, shell
  /// /bin/sh) unless it has one for its uid already: what a shell's sshd sees as /etc/passwd
  /// (process::spawn_request::passwd_file). Written anew each time, as the machine's may change.
  std::string passwd_file(const process::unix_identity& who, const std::string& name);

 private:
  std::filesystem::path root_;
  std::optional<auth::tls_files> tls_;
  std::map<uid_t, home> homes_;
};

}  // namespace det::runtime
