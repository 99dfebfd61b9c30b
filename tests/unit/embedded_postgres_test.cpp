#include <doctest/doctest.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
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
  experiment.set_owner_id(database::admin_user_id);
  return db.insert_experiment(experiment);
}

}  // namespace

TEST_CASE("embedded_postgres keeps its data across restarts") {
  const temp_dir dir{0755};
  const std::string data = dir.path + "/data";
  int64_t id = 0;
  {
    embedded_postgres pg{data};
    pg.start();
    CHECK(pg.conninfo() == "host=" + data + "/run port=5432 user=postgres dbname=det");
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
