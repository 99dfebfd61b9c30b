// The admin's policy for host access (config/host_access_policy.hpp): master.toml's keys, and what
// experiment and task configs may name under it.

#include "config/experiment_config.hpp"
#include "config/host_access_policy.hpp"
#include "config/master_config.hpp"
#include "config/task_config.hpp"

#include <doctest/doctest.h>

#include <cstdlib>
#include <filesystem>
#include <string>
#include <unistd.h>

using namespace det::config;
namespace fs = std::filesystem;

namespace {

const std::string storage_root = "/srv/det/checkpoints";

std::string experiment_refusal(const std::string& extra, const host_access_policy& policy = {}) {
  const auto config = parse_experiment_config(R"(
name = "x"
entrypoint = "python3 train.py"
[searcher]
name = "single"
metric = "loss"
max_length = { batches = 1 }
)" + extra,
                                              "exp.toml");
  return host_access_refusal(policy, storage_root, config);
}

std::string task_refusal(const std::string& text, const host_access_policy& policy = {}) {
  return host_access_refusal(policy, storage_root, parse_task_config(text, "task.toml", task_kind::command));
}

std::string mount_of(const std::string& host_path) {
  return "[[bind_mounts]]\nhost_path = \"" + host_path + "\"\ncontainer_path = \"/mnt\"\n";
}

std::string capabilities(const std::string& list) { return "[environment]\nadd_capabilities = [" + list + "]\n"; }

// A fresh directory under /tmp, removed with everything in it at the end of the test.
struct temp_dir {
  std::string path;
  temp_dir() {
    char name[] = "/tmp/det-host-access-XXXXXX";
    REQUIRE(::mkdtemp(name) != nullptr);
    path = name;
  }
  ~temp_dir() { fs::remove_all(path); }
};

}  // namespace

TEST_CASE("master.toml's [security] names the host paths and capabilities users may have") {
  const auto defaults = parse_master_config("", "master.toml");
  CHECK(defaults.host_access.allowed_host_paths.empty());
  CHECK(defaults.host_access.allowed_capabilities.empty());

  const auto config = parse_master_config(
      "[security]\nallowed_host_paths = [\"/data/shared\"]\nallowed_capabilities = [\"NET_ADMIN\"]\n", "master.toml");
  CHECK(config.host_access.allowed_host_paths == std::vector<std::string>{"/data/shared"});
  CHECK(config.host_access.allowed_capabilities == std::vector<std::string>{"NET_ADMIN"});

  CHECK_THROWS_WITH_AS(parse_master_config("[security]\nallowed_host_paths = [\"data\"]\n", "master.toml"),
                       doctest::Contains("security.allowed_host_paths: expected absolute directories, got \"data\""),
                       config_error);
}

TEST_CASE("by default, host paths lie beneath the checkpoint storage root and no capability is added") {
  CHECK(experiment_refusal(mount_of("/etc")) ==
        "bind_mounts[0].host_path /etc is outside the host paths this master allows "
        "(security.allowed_host_paths in master.toml)");
  CHECK(experiment_refusal(mount_of(storage_root + "/datasets")).empty());
  CHECK(experiment_refusal(mount_of(storage_root)).empty());
  CHECK_FALSE(experiment_refusal(mount_of(storage_root + "/../agent-token")).empty());
  CHECK_FALSE(experiment_refusal(mount_of("/srv/det/checkpoints-other")).empty());  // a prefix, not a parent
  CHECK_FALSE(experiment_refusal(mount_of("/")).empty());

  CHECK(experiment_refusal(capabilities("\"SYS_ADMIN\"")) ==
        "environment.add_capabilities[0] SYS_ADMIN is not a capability this master lets users add "
        "(security.allowed_capabilities in master.toml)");
  CHECK_FALSE(experiment_refusal(capabilities("\"ALL\"")).empty());
  CHECK(experiment_refusal("[environment]\ndrop_capabilities = [\"ALL\"]\n").empty());
}

TEST_CASE("every refusal is named, mounts and capabilities alike") {
  const auto refusal = experiment_refusal(mount_of("/etc") + mount_of("/root") + capabilities("\"cap_sys_admin\""));
  CHECK(refusal.find("bind_mounts[0].host_path /etc") != std::string::npos);
  CHECK(refusal.find("bind_mounts[1].host_path /root") != std::string::npos);
  CHECK(refusal.find("environment.add_capabilities[0] cap_sys_admin") != std::string::npos);
}

TEST_CASE("the admin allows directories and capabilities, in any of podman's spellings") {
  host_access_policy policy;
  policy.allowed_host_paths = {"/data/shared/"};
  policy.allowed_capabilities = {"cap_net_admin"};
  CHECK(experiment_refusal(mount_of("/data/shared/imagenet"), policy).empty());
  CHECK(experiment_refusal(mount_of("/data/shared"), policy).empty());
  CHECK_FALSE(experiment_refusal(mount_of("/data/shared/../private"), policy).empty());
  CHECK_FALSE(experiment_refusal(mount_of("/data/sharedx"), policy).empty());
  CHECK(experiment_refusal(capabilities("\"NET_ADMIN\", \"CAP_NET_ADMIN\""), policy).empty());
  CHECK_FALSE(experiment_refusal(capabilities("\"SYS_ADMIN\""), policy).empty());
  CHECK_FALSE(experiment_refusal(capabilities("\"ALL\""), policy).empty());

  policy.allowed_capabilities = {"ALL"};
  CHECK(experiment_refusal(capabilities("\"SYS_ADMIN\", \"ALL\""), policy).empty());
}

TEST_CASE("a link beneath an allowed directory does not lead a mount out of it") {
  const temp_dir dir;
  host_access_policy policy;
  policy.allowed_host_paths = {dir.path};
  fs::create_directory_symlink("/etc", dir.path + "/etc-link");
  fs::create_directory(dir.path + "/real");
  CHECK_FALSE(experiment_refusal(mount_of(dir.path + "/etc-link"), policy).empty());
  CHECK_FALSE(experiment_refusal(mount_of(dir.path + "/etc-link/ssh"), policy).empty());
  CHECK(experiment_refusal(mount_of(dir.path + "/real"), policy).empty());
}

TEST_CASE("checkpoint storage lies beneath the storage root or an allowed directory") {
  CHECK(experiment_refusal("[checkpoint_storage]\nhost_path = \"/etc\"\n") ==
        "checkpoint_storage.host_path /etc is outside the host paths this master allows "
        "(security.allowed_host_paths in master.toml)");
  CHECK(experiment_refusal("[checkpoint_storage]\ntype = \"directory\"\ncontainer_path = \"/home\"\n")
            .rfind("checkpoint_storage.container_path /home is outside", 0) == 0);
  CHECK(experiment_refusal("[checkpoint_storage]\nstorage_path = \"../..\"\n")
            .rfind("checkpoint_storage.storage_path /srv/det/checkpoints/../.. is outside", 0) == 0);
  CHECK_FALSE(experiment_refusal("[checkpoint_storage]\nhost_path = \"relative\"\n").empty());
  CHECK(experiment_refusal("[checkpoint_storage]\nstorage_path = \"team-a\"\n").empty());
  CHECK(experiment_refusal("[checkpoint_storage]\nhost_path = \"" + storage_root + "/team-b\"\n").empty());
  CHECK(experiment_refusal("").empty());

  host_access_policy policy;
  policy.allowed_host_paths = {"/mnt/nfs"};
  CHECK(experiment_refusal("[checkpoint_storage]\nhost_path = \"/mnt/nfs\"\nstorage_path = \"det\"\n", policy).empty());
}

TEST_CASE("a task's mounts, capabilities and, in an image, its work_dir follow the same policy") {
  CHECK(task_refusal("entrypoint = \"true\"\n" + mount_of("/var/run")) ==
        "bind_mounts[0].host_path /var/run is outside the host paths this master allows "
        "(security.allowed_host_paths in master.toml)");
  CHECK_FALSE(task_refusal("entrypoint = \"true\"\n" + capabilities("\"SYS_ADMIN\"")).empty());
  CHECK(task_refusal("entrypoint = \"true\"\nwork_dir = \"/\"\n[environment]\nimage = \"python:3\"\n") ==
        "work_dir / is outside the host paths this master allows (security.allowed_host_paths in master.toml)");
  CHECK(task_refusal("entrypoint = \"true\"\nwork_dir = \"/\"\n").empty());  // no image: no mount
  CHECK(task_refusal("entrypoint = \"true\"\n").empty());
}
