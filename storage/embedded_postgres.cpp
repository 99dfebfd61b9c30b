#include "storage/embedded_postgres.hpp"

#include <pwd.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <filesystem>
#include <fstream>
#include <pqxx/pqxx>
#include <sstream>
#include <stdexcept>
#include <thread>
#include <vector>

#include <libpq-fe.h>

#include "auth/credentials.hpp"
#include "auth/private_file.hpp"
#include "storage/child_process.hpp"
#include "storage/libpq_calls.hpp"

namespace det::storage {

namespace fs = std::filesystem;

namespace {

// The socket lives in a directory private to this server, so a fixed port cannot clash with another one.
constexpr int port = 5432;
// pg_ctl status exit code for "no server running"; 0 means one is.
constexpr int pg_ctl_not_running = 3;
// The superuser's password, 0600 in the master's data directory, in libpq's password-file format
// ("*:*:*:postgres:SECRET"): conninfo() names the file (passfile=) rather than holding the secret, so
// the password is in no connection string, and hence in no error message or log line that quotes one.
constexpr const char* password_file_name = "postgres-password";
constexpr const char* password_line_prefix = "*:*:*:postgres:";
// Only the unix socket is served (listen_addresses=''), and only with the password.
constexpr const char* scram_only_hba =
    "# Written by det: the master connects over the unix socket with the password kept in its data directory\n"
    "# (postgres-password, 0600). Nothing is trusted.\n"
    "local all all scram-sha-256\n";

// $PGBIN, else the PostgreSQL a release archive carries beside det-node (scripts/package.sh puts it in
// pgsql/bin next to bin/), else the system's.
std::string pg_bin() {
  const char* from_env = std::getenv("PGBIN");
  if (from_env && *from_env) return from_env;
  std::error_code error;
  const fs::path self = fs::read_symlink("/proc/self/exe", error);
  const fs::path bundled = (self.parent_path().parent_path() / "pgsql" / "bin").lexically_normal();
  if (!error && fs::exists(bundled / "initdb", error)) return bundled.string();
  return "/usr/lib/postgresql/15/bin";
}

std::string log_tail(const std::string& path, std::size_t lines = 20) {
  std::ifstream in{path};
  std::deque<std::string> tail;
  for (std::string line; std::getline(in, line);) {
    tail.push_back(line);
    if (tail.size() > lines) tail.pop_front();
  }
  if (tail.empty()) return "(" + path + " is empty or missing)";
  std::string text = "The end of " + path + ":";
  for (const auto& line : tail) text += "\n  " + line;
  return text;
}

// libpq conninfo values need quotes only when they hold spaces, quotes or backslashes.
std::string conninfo_value(const std::string& value) {
  if (value.find_first_of(" '\\") == std::string::npos) return value;
  std::string quoted = "'";
  for (char c : value) {
    if (c == '\'' || c == '\\') quoted += '\\';
    quoted += c;
  }
  return quoted + "'";
}

// The superuser's connection to `dbname` over the socket under DIR/run, with the password file under DIR.
std::string conninfo_of(const std::string& dir, const std::string& dbname) {
  return "host=" + conninfo_value(dir + "/run") + " port=" + std::to_string(port) + " user=postgres dbname=" + dbname +
         " passfile=" + conninfo_value(dir + "/" + password_file_name);
}

// pg_ctl passes -o through /bin/sh.
std::string shell_quoted(const std::string& value) {
  std::string quoted = "'";
  for (char c : value) quoted += c == '\'' ? std::string{"'\\''"} : std::string(1, c);
  return quoted + "'";
}

// initdb and postgres refuse to run as root; as root they run as the postgres system user.
struct server_user {
  bool switch_user = false;
  uid_t uid = 0;
  gid_t gid = 0;
  std::string runuser;

  static server_user for_this_process() {
    server_user user;
    if (::geteuid() != 0) return user;
    const passwd* pw = ::getpwnam("postgres");
    if (!pw)
      throw std::runtime_error(
          "Running as root, but there is no `postgres` system user to run PostgreSQL as (initdb refuses root); "
          "install the postgresql-15 package, which creates it, or run as another user.");
    user.switch_user = true;
    user.uid = pw->pw_uid;
    user.gid = pw->pw_gid;
    user.runuser = find_executable("runuser");
    if (user.runuser.empty())
      throw std::runtime_error("Running as root needs `runuser` (util-linux) to start PostgreSQL as `postgres`, "
                               "and it was not found.");
    return user;
  }

  std::vector<std::string> command(std::vector<std::string> argv) const {
    if (!switch_user) return argv;
    argv.insert(argv.begin(), {runuser, "-u", "postgres", "--"});
    return argv;
  }

  void give(const fs::path& path) const {
    if (switch_user && ::chown(path.c_str(), uid, gid) != 0)
      throw std::runtime_error("Could not hand " + path.string() + " to the postgres user: " + std::strerror(errno) +
                               ".");
  }

  bool can_traverse(const fs::path& dir) const {
    struct stat st {};
    if (::stat(dir.c_str(), &st) == 0 && (st.st_mode & S_IXOTH)) return true;
    return run_process(command({"/usr/bin/test", "-x", dir.string()}), "/", "/dev/null") == 0;
  }

  // The server must reach DIR; grant exactly that (execute, not read) on each ancestor that blocks it.
  void ensure_traversable(const fs::path& dir) const {
    if (!switch_user) return;
    fs::path walked;
    for (const auto& part : dir) {
      walked /= part;
      if (can_traverse(walked)) continue;
      const std::string setfacl = find_executable("setfacl");
      // A node without setfacl (the portable release on a minimal system): the data directory
      // itself, which the master owns, lets others through without listing it; what it holds
      // that is secret is 0600, and the cluster and socket directories are the server's, 0700.
      if (setfacl.empty() && walked == dir && ::chmod(walked.c_str(), 0711) == 0) continue;
      if (setfacl.empty())
        throw std::runtime_error("PostgreSQL runs as the `postgres` user, which cannot enter " + walked.string() +
                                 "; install the `acl` package (apt-get install acl) so that it can be granted access, "
                                 "or choose a --data-dir outside " + walked.string() + ".");
      if (run_process({setfacl, "-m", "u:postgres:x", walked.string()}, "/", "/dev/null") != 0 || !can_traverse(walked))
        throw std::runtime_error("Could not let the `postgres` user enter " + walked.string() +
                                 " (setfacl -m u:postgres:x failed); choose a --data-dir outside it.");
    }
  }
};

// A postmaster that was killed stays a zombie until init reaps it (over a second in some containers), and until then
// pg_ctl and the new postmaster take its postmaster.pid for a live server.
void wait_until_reaped(const fs::path& pid_file) {
  std::ifstream in{pid_file};
  long pid = 0;
  if (!(in >> pid) || pid <= 0) return;
  const std::string stat_path = "/proc/" + std::to_string(pid) + "/stat";
  const auto is_zombie = [&] {
    std::ifstream stat{stat_path};
    std::string pid_field, command, state;
    return stat >> pid_field >> command >> state && state == "Z";
  };
  for (int i = 0; i < 500 && is_zombie(); ++i) std::this_thread::sleep_for(std::chrono::milliseconds{20});
}

// The master's data directory holds the admin password, the agent token and the database's
// password: group and others get nothing. A group-execute bit alone is left, since under root it is
// the ACL mask that lets the `postgres` user (and no one else) through (ensure_traversable), and
// so is others' execute bit alone, which the master sets so that trials (run as their owners' Unix
// users) pass through to the default checkpoint root without listing anything
// (storage/shared_checkpoint_root.hpp): a restart must not close it under running trials.
void close_to_others(const fs::path& dir) {
  struct stat st {};
  if (::stat(dir.c_str(), &st) != 0)
    throw std::runtime_error("Could not read the permissions of " + dir.string() + ": " + std::strerror(errno) + ".");
  if ((st.st_mode & (S_IROTH | S_IWOTH | S_IRGRP | S_IWGRP)) != 0 && ::chmod(dir.c_str(), 0700) != 0)
    throw std::runtime_error("Could not make " + dir.string() + " private (mode 0700): " + std::strerror(errno) + ".");
}

void make_private_directory(const fs::path& dir) {
  if (::chmod(dir.c_str(), 0700) != 0)
    throw std::runtime_error("Could not make " + dir.string() + " private (mode 0700): " + std::strerror(errno) + ".");
}

// The password the file holds, or a new one written there (0600) when there is no file yet.
std::string password_in(const fs::path& file) {
  if (!fs::exists(file)) {
    const std::string password = auth::random_secret();
    auth::write_private_file(file.string(), password_line_prefix + password + "\n");
    return password;
  }
  const auto line = auth::read_first_line(file.string());
  if (!line || line->rfind(password_line_prefix, 0) != 0 || line->size() == std::strlen(password_line_prefix))
    throw std::runtime_error(file.string() + " does not hold the embedded PostgreSQL's password as det writes it (" +
                             password_line_prefix + "PASSWORD); restore it from a backup.");
  // libpq ignores a password file that others can read.
  fs::permissions(file, fs::perms::owner_read | fs::perms::owner_write);
  return line->substr(std::strlen(password_line_prefix));
}

// Whether any line of pg_hba.conf lets a client in without a password: clusters made before det set
// a password were initialised with --auth=trust.
bool hba_trusts_anyone(const fs::path& hba) {
  std::ifstream in{hba};
  for (std::string line; std::getline(in, line);) {
    std::istringstream words{line.substr(0, line.find('#'))};
    for (std::string word; words >> word;)
      if (word == "trust") return true;
  }
  return false;
}

// ALTER ROLE with the SCRAM verifier libpq computes, so the password itself never reaches the server's
// statement log or pg_stat_activity.
void set_superuser_password(pqxx::connection& connection, const std::string& password) {
  ::pg_conn* handle = libpq_handle(connection);
  char* verifier = ::PQencryptPasswordConn(handle, password.c_str(), "postgres", "scram-sha-256");
  if (!verifier) throw std::runtime_error("libpq could not hash the password: " + libpq_error(handle));
  const std::string hashed = verifier;
  ::PQfreemem(verifier);
  pqxx::nontransaction tx{connection};
  tx.exec("ALTER ROLE postgres PASSWORD " + tx.quote(hashed));
}

}  // namespace

embedded_postgres::embedded_postgres(std::string data_dir) {
  fs::path dir = fs::absolute(data_dir).lexically_normal();
  if (!dir.has_filename() && dir != dir.root_path()) dir = dir.parent_path();  // "data/" -> "data"
  dir_ = dir.string();
}

embedded_postgres::~embedded_postgres() {
  try {
    stop();
  } catch (...) {
    // A destructor cannot report it; the server log has the details.
  }
}

void embedded_postgres::start() {
  if (running_) return;
  const std::string bin = pg_bin();
  if (!fs::exists(bin + "/initdb") || !fs::exists(bin + "/pg_ctl"))
    throw std::runtime_error("The PostgreSQL 15 server programs were not found in " + bin +
                             "; install the postgresql-15 package or set PGBIN to the directory holding initdb and "
                             "pg_ctl.");

  std::error_code error;
  if (const auto resolved = fs::weakly_canonical(dir_, error); !error) dir_ = resolved.string();
  const fs::path cluster = fs::path{dir_} / "postgres";
  const fs::path socket_dir = fs::path{dir_} / "run";
  const std::string server_log = dir_ + "/postgres.log";
  const std::string initdb_log = dir_ + "/initdb.log";

  const std::string socket_path = socket_dir.string() + "/.s.PGSQL." + std::to_string(port);
  if (socket_path.size() >= sizeof(sockaddr_un::sun_path))
    throw std::runtime_error("The data directory " + dir_ + " is too long for PostgreSQL's unix socket (" +
                             socket_path + " has " + std::to_string(socket_path.size()) + " characters, at most " +
                             std::to_string(sizeof(sockaddr_un::sun_path) - 1) + " fit); choose a shorter one.");

  fs::create_directories(dir_, error);
  if (error) throw std::runtime_error("Could not create the data directory " + dir_ + ": " + error.message() + ".");
  close_to_others(dir_);  // before ensure_traversable, whose ACL entry it would otherwise mask
  const server_user user = server_user::for_this_process();
  user.ensure_traversable(dir_);
  for (const auto& sub : {cluster, socket_dir}) {
    fs::create_directories(sub, error);
    if (error) throw std::runtime_error("Could not create " + sub.string() + ": " + error.message() + ".");
    user.give(sub);
    // The server refuses a group- or world-readable cluster, and whoever enters run/ reaches its socket.
    make_private_directory(sub);
  }
  std::ofstream{server_log, std::ios::app};
  user.give(server_log);
  const std::string password = password_in(fs::path{dir_} / password_file_name);

  if (!fs::exists(cluster / "PG_VERSION")) {
    // initdb reads the password from a file; as root it runs as `postgres`, which cannot read the master's
    // 0600 file, so it gets a copy of its own in the socket directory for as long as initdb runs.
    const fs::path initdb_password = socket_dir / "initdb-password";
    auth::write_private_file(initdb_password.string(), password + "\n");
    user.give(initdb_password);
    const int status = run_process(
        user.command({bin + "/initdb", "-D", cluster.string(), "--auth=scram-sha-256",
                      "--pwfile=" + initdb_password.string(), "--no-sync", "-E", "UTF8", "--locale=C.UTF-8", "-U",
                      "postgres"}),
        dir_, initdb_log);
    fs::remove(initdb_password, error);
    if (status != 0)
      throw std::runtime_error("initdb could not create a PostgreSQL cluster in " + cluster.string() +
                               " (exit status " + std::to_string(status) + "). " + log_tail(initdb_log));
  }

  const auto pg_ctl = [&](std::vector<std::string> args, const std::string& log) {
    args.insert(args.begin(), {bin + "/pg_ctl", "-D", cluster.string()});
    return run_process(user.command(std::move(args)), dir_, log);
  };
  // A master that was killed leaves its server running, with this directory's options (its socket
  // under run/, its port): it is taken over as it is. Restarting it cost a shutdown checkpoint
  // of everything written since the last one, seconds after a busy hour, on the restart's critical path.
  // A server that was killed itself leaves a stale postmaster.pid, which the new postmaster replaces.
  wait_until_reaped(cluster / "postmaster.pid");
  if (pg_ctl({"status"}, "/dev/null") == pg_ctl_not_running) {
    const int status = pg_ctl({"start", "-w", "-t", "30", "-l", server_log, "-o",
                               "-c listen_addresses='' -k " + shell_quoted(socket_dir.string()) + " -p " +
                                   std::to_string(port)},
                               server_log);
    if (status != 0)
      throw std::runtime_error("PostgreSQL could not be started in " + cluster.string() + " (pg_ctl exit status " +
                               std::to_string(status) + "). " + log_tail(server_log));
  }
  running_ = true;

  // An upgrade: clusters made before det set a password trusted every local connection. The first start
  // after the upgrade sets the password (connecting under that trust one last time), writes a pg_hba.conf
  // that asks for it, and has the server reload it.
  if (hba_trusts_anyone(cluster / "pg_hba.conf")) {
    try {
      pqxx::connection admin{conninfo_of(dir_, "postgres")};
      set_superuser_password(admin, password);
      auth::write_private_file((cluster / "pg_hba.conf").string(), scram_only_hba);
      user.give(cluster / "pg_hba.conf");
      pqxx::nontransaction{admin}.exec("SELECT pg_reload_conf()");
    } catch (const std::exception& e) {
      throw std::runtime_error("PostgreSQL in " + cluster.string() + " trusts local connections, and det could not "
                               "give it a password: " + e.what());
    }
  }

  try {
    pqxx::connection admin{conninfo_of(dir_, "postgres")};
    pqxx::nontransaction tx{admin};
    if (tx.exec("SELECT 1 FROM pg_database WHERE datname = 'det'").empty()) tx.exec("CREATE DATABASE det");
  } catch (const std::exception& e) {
    throw std::runtime_error("PostgreSQL started in " + cluster.string() + ", but the database `det` could not be created: " +
                             e.what());
  }
}

void embedded_postgres::stop() {
  if (!running_) return;
  running_ = false;
  const std::string bin = pg_bin();
  const std::string cluster = dir_ + "/postgres";
  const std::string server_log = dir_ + "/postgres.log";
  const server_user user = server_user::for_this_process();
  // pg_ctl would signal a killed server's zombie and wait for it in vain.
  wait_until_reaped(cluster + "/postmaster.pid");
  const int status =
      run_process(user.command({bin + "/pg_ctl", "-D", cluster, "stop", "-m", "fast", "-w", "-t", "30"}), dir_,
                  server_log);
  if (status != 0 &&
      run_process(user.command({bin + "/pg_ctl", "-D", cluster, "status"}), dir_, "/dev/null") != pg_ctl_not_running)
    throw std::runtime_error("PostgreSQL in " + cluster + " did not stop (pg_ctl exit status " +
                             std::to_string(status) + "). " + log_tail(server_log));
}

std::string embedded_postgres::conninfo() const { return conninfo_of(dir_, "det"); }

}  // namespace det::storage
