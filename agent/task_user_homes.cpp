#include "agent/task_user_homes.hpp"

#include <pwd.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <system_error>

namespace det::runtime {

namespace {

std::runtime_error failure(const std::string& what, const std::filesystem::path& path, int error) {
  return std::runtime_error("cannot " + what + " " + path.string() + ": " + std::strerror(error));
}

void hand_to(const std::filesystem::path& path, const process::unix_identity& who, mode_t mode) {
  if (::chown(path.c_str(), who.uid, who.gid) != 0) throw failure("give its user", path, errno);
  if (::chmod(path.c_str(), mode) != 0) throw failure("set the mode of", path, errno);
}

// A copy of `from` in `dir` that `who` alone reads.
std::string private_copy(const std::string& from, const std::filesystem::path& dir, const char* name,
                         const process::unix_identity& who) {
  const auto to = dir / name;
  std::error_code error;
  std::filesystem::copy_file(from, to, std::filesystem::copy_options::overwrite_existing, error);
  if (error) throw std::runtime_error("cannot copy " + from + " for uid " + std::to_string(who.uid) + ": " + error.message());
  hand_to(to, who, 0400);
  return to.string();
}

}  // namespace

task_user_homes::task_user_homes(std::optional<auth::tls_files> tls) : tls_(std::move(tls)) {
  auto pattern = (std::filesystem::temp_directory_path() / "det-homes-XXXXXX").string();
  if (!::mkdtemp(pattern.data())) throw failure("create", pattern, errno);
  root_ = pattern;
  // Every user passes through to its own home, and lists nobody else's.
  if (::chmod(root_.c_str(), 0711) != 0) throw failure("set the mode of", root_, errno);
}

task_user_homes::~task_user_homes() {
  std::error_code ignored;
  std::filesystem::remove_all(root_, ignored);
}

const task_user_homes::home& task_user_homes::of(const process::unix_identity& who) {
  if (auto found = homes_.find(who.uid); found != homes_.end()) return found->second;
  home made{root_ / std::to_string(who.uid), std::nullopt};
  std::error_code error;
  std::filesystem::create_directory(made.path, error);
  if (error) throw std::runtime_error("cannot create " + made.path.string() + ": " + error.message());
  hand_to(made.path, who, 0700);
  if (tls_)
    made.tls = auth::tls_files{private_copy(tls_->cert, made.path, ".det-tls-cert.pem", who),
                               private_copy(tls_->key, made.path, ".det-tls-key.pem", who),
                               private_copy(tls_->ca, made.path, ".det-master-ca.pem", who)};
  return homes_.emplace(who.uid, std::move(made)).first->second;
}

std::string task_user_homes::passwd_file(const process::unix_identity& who, const std::string& name) {
  const auto& path = of(who).path;
  std::ifstream machine{"/etc/passwd"};
  std::ostringstream text;
  text << machine.rdbuf();
  std::string lines = text.str();
  if (!lines.empty() && lines.back() != '\n') lines += '\n';
  if (::getpwuid(who.uid) == nullptr)
    lines += name + ":x:" + std::to_string(who.uid) + ":" + std::to_string(who.gid) + "::" + path.string() + ":/bin/sh\n";
  // Root's, beside the homes: the user reads it, and cannot change what its processes see.
  const auto file = root_ / ("passwd-" + std::to_string(who.uid));
  const auto partial = root_ / ("passwd-" + std::to_string(who.uid) + ".partial");
  {
    std::ofstream out{partial};
    out << lines;
    if (!out.flush()) throw std::runtime_error("cannot write " + partial.string());
  }
  std::error_code error;
  std::filesystem::rename(partial, file, error);  // whole, for a sshd starting meanwhile
  if (error) throw std::runtime_error("cannot write " + file.string() + ": " + error.message());
  ::chmod(file.c_str(), 0644);
  return file.string();
}

}  // namespace det::runtime
