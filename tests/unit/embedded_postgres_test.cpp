#include <doctest/doctest.h>
#include <pwd.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <pqxx/pqxx>
#include <sstream>
#include <string>

#include "storage/database.hpp"
#include "storage/embedded_postgres.hpp"

using det::storage::database;
using det::storage::embedded_postgres;
namespace fs = std::filesystem;

namespace {

// A fresh directory under /tmp, removed with everything in it at the end of the test.
struct temp_dir {
  std::string path;

  explicit temp_dir(mode_t mode) {
    char name[] = "/tmp/det-embedded-pg-XXXXXX";
    REQUIRE(::mkdtemp(name) != nullptr);
    path = name;
    ::chmod(name, mode);
  }
  ~temp_dir() { fs::remove_all(path); }
};

long postmaster_pid(const std::string& data_dir) {
  std::ifstream in{data_dir + "/postgres/postmaster.pid"};
  long pid = 0;
  in >> pid;
  return pid;
}

int64_t store_experiment(const std::string& conninfo) {
  database db{conninfo};
  db.migrate();
  det::pb::Experiment experiment;
  experiment.set_name("kept");
  experiment.set_state(det::pb::STATE_ACTIVE);
  experiment.set_config("name = \"kept\"\n");
  experiment.set_owner_id(det::storage::admin_user_id);
  return db.insert_experiment(experiment);
}

mode_t mode_of(const std::string& path) {
  struct stat st {};
  REQUIRE(::stat(path.c_str(), &st) == 0);
  return st.st_mode & 07777;
}

std::string text_of(const std::string& path) {
  std::ifstream in{path};
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// Whether the superuser reaches the database `det` over DATA/run with no password at all.
bool connects_without_password(const std::string& data) {
  try {
    pqxx::connection{"host=" + data + "/run port=5432 user=postgres dbname=postgres passfile=/dev/null"};
    return true;
  } catch (const pqxx::broken_connection&) {
    return false;
  }
}

// The cluster an older det made: initdb with --auth=trust, as the server's user.
void make_trusting_cluster(const std::string& data) {
  const std::string cluster = data + "/postgres";
  fs::create_directories(cluster);
  ::chmod(cluster.c_str(), 0700);
  std::string as_server_user;
  if (::geteuid() == 0) {
    const passwd* pw = ::getpwnam("postgres");
    REQUIRE(pw != nullptr);
    REQUIRE(::chown(cluster.c_str(), pw->pw_uid, pw->pw_gid) == 0);
    as_server_user = "runuser -u postgres -- ";
  }
  const char* pgbin = std::getenv("PGBIN");
  const std::string bin = pgbin && *pgbin ? pgbin : "/usr/lib/postgresql/15/bin";
  REQUIRE(std::system((as_server_user + bin + "/initdb -D " + cluster +
                       " --auth=trust --no-sync -E UTF8 --locale=C.UTF-8 -U postgres >/dev/null 2>&1")
                          .c_str()) == 0);
}

}  // namespace

TEST_CASE("embedded_postgres asks for a password it keeps private, in directories closed to others") {
  const temp_dir dir{0755};
  const std::string data = dir.path + "/data";
  embedded_postgres pg{data};
  pg.start();
  CHECK(mode_of(data + "/postgres-password") == 0600);
  CHECK((mode_of(data) & 0067) == 0);  // under root the ACL mask may show as group execute, for `postgres` alone
  CHECK(mode_of(data + "/run") == 0700);
  CHECK(text_of(data + "/postgres/pg_hba.conf").find("scram-sha-256") != std::string::npos);
  CHECK_FALSE(connects_without_password(data));
  CHECK(database{pg.conninfo()}.migrate().size() > 0);
  CHECK(pg.conninfo().find(text_of(data + "/postgres-password").substr(15, 16)) == std::string::npos);
  pg.stop();
}

TEST_CASE("embedded_postgres gives a cluster an older det made with trust a password, and keeps its data") {
  const temp_dir dir{0755};
  const std::string data = dir.path + "/data";
  make_trusting_cluster(data);
  REQUIRE(text_of(data + "/postgres/pg_hba.conf").find("trust") != std::string::npos);
  {
    embedded_postgres pg{data};
    pg.start();
    CHECK_FALSE(connects_without_password(data));
    store_experiment(pg.conninfo());
    pg.stop();
  }
  std::istringstream hba{text_of(data + "/postgres/pg_hba.conf")};
  for (std::string line; std::getline(hba, line);)
    if (!line.empty() && line.front() != '#') CHECK(line.find("trust") == std::string::npos);
  CHECK(mode_of(data + "/postgres-password") == 0600);
  embedded_postgres pg{data};
  pg.start();
  CHECK_FALSE(connects_without_password(data));
  CHECK(database{pg.conninfo()}.migrate().empty());
  pg.stop();
}

TEST_CASE("embedded_postgres keeps its data across restarts") {
  const temp_dir dir{0755};
  const std::string data = dir.path + "/data";
  int64_t id = 0;
  {
    embedded_postgres pg{data};
    pg.start();
    CHECK(pg.conninfo() ==
          "host=" + data + "/run port=5432 user=postgres dbname=det passfile=" + data + "/postgres-password");
    id = store_experiment(pg.conninfo());
    pg.stop();
    CHECK(postmaster_pid(data) == 0);  // pg_ctl stop removed it
  }
  embedded_postgres pg{data};
  pg.start();
  {
    database db{pg.conninfo()};
    CHECK(db.migrate().empty());
    const auto experiment = db.get_experiment(id);
    REQUIRE(experiment);
    CHECK(experiment->name() == "kept");
  }
  pg.stop();
  CHECK(fs::exists(data + "/postgres.log"));
}

TEST_CASE("embedded_postgres starts after its master or its server was killed") {
  const temp_dir dir{0755};
  const std::string data = dir.path + "/data";

  // A master that dies without stopping its server leaves the server running.
  const pid_t master = ::fork();
  REQUIRE(master >= 0);
  if (master == 0) {
    try {
      embedded_postgres pg{data};
      pg.start();
      ::_exit(0);  // before the destructor could stop the server
    } catch (...) {
      ::_exit(1);
    }
  }
  int status = 0;
  ::waitpid(master, &status, 0);
  REQUIRE(WIFEXITED(status));
  REQUIRE(WEXITSTATUS(status) == 0);
  const long orphan = postmaster_pid(data);
  REQUIRE(orphan > 0);
  REQUIRE(::kill(orphan, 0) == 0);

  // The next master takes that server over as it runs (no shutdown checkpoint on its way up), and
  // stops it as its own.
  embedded_postgres pg{data};
  pg.start();
  CHECK(postmaster_pid(data) == orphan);
  const int64_t id = store_experiment(pg.conninfo());

  // A server killed outright leaves a stale postmaster.pid behind.
  const long server = postmaster_pid(data);
  REQUIRE(::kill(server, SIGKILL) == 0);
  pg.stop();  // finds no server, and says nothing
  pg.start();
  CHECK(database{pg.conninfo()}.get_experiment(id).has_value());
  pg.stop();
}

TEST_CASE("embedded_postgres reaches a data directory under a parent closed to other users") {
  const temp_dir dir{0700};
  embedded_postgres pg{dir.path + "/data"};
  const bool needs_acl = ::geteuid() == 0 && std::system("command -v setfacl >/dev/null") != 0;
  if (needs_acl) {
    CHECK_THROWS_WITH_AS(pg.start(), doctest::Contains("install the `acl` package"), std::runtime_error);
  } else {
    pg.start();
    CHECK(database{pg.conninfo()}.migrate().size() > 0);
    pg.stop();
  }
}
