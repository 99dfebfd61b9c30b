// A task's TOML config (config/task_config.hpp): Determined's job-config keys, checked per kind.

#include "config/config_overrides.hpp"
#include "config/task_config.hpp"

#include <doctest/doctest.h>

#include <string>

using namespace det::config;

namespace {

std::string errors_of(const std::string& text, task_kind kind) {
  try {
    parse_task_config(text, "task.toml", kind);
  } catch (const config_error& e) {
    return e.what();
  }
  return "";
}

} // namespace

TEST_CASE("a command's config takes Determined's job-config keys") {
  auto config = parse_task_config(R"(
description = "prep data"
entrypoint = ["sh", "-c", "echo hi"]
work_dir = "/data"
[resources]
slots = 2
resource_pool = "gpus"
priority = 10
[environment]
environment_variables = ["A=1", "B_2=x=y", "EMPTY="]
)",
                                  "task.toml", task_kind::command);
  CHECK(config.description == "prep data");
  CHECK(config.entrypoint == std::vector<std::string>{"sh", "-c", "echo hi"});
  CHECK(config.work_dir == "/data");
  CHECK(config.slots == 2);
  CHECK(config.resource_pool == "gpus");
  CHECK(config.priority == 10);
  CHECK(config.environment.cpu_variables ==
        std::vector<std::pair<std::string, std::string>>{{"A", "1"}, {"B_2", "x=y"}, {"EMPTY", ""}});
  CHECK_FALSE(config.idle_timeout_s);
}

TEST_CASE("defaults: no slots, the pool's priority, a string entrypoint is a shell line") {
  auto config = parse_task_config("entrypoint = \"python3 prep.py\"\n", "task.toml", task_kind::command);
  CHECK(config.entrypoint == std::vector<std::string>{"/bin/sh", "-c", "python3 prep.py"});
  CHECK(config.slots == 0);
  CHECK(config.resource_pool.empty());
  CHECK_FALSE(config.priority);
  CHECK(parse_task_config("", "task.toml", task_kind::shell).entrypoint.empty());
}

TEST_CASE("notebooks and TensorBoards stop when idle; the idle type is a notebook's") {
  auto notebook = parse_task_config("idle_timeout = \"30m\"\nnotebook_idle_type = \"activity\"\n", "task.toml",
                                    task_kind::notebook);
  CHECK(notebook.idle_timeout_s == 1800);
  CHECK(notebook.idle_type == notebook_idle_type::activity);
  auto board = parse_task_config("idle_timeout = 300\ntensorboard_args = [\"--samples_per_plugin\", \"images=5\"]\n",
                                 "task.toml", task_kind::tensorboard);
  CHECK(board.idle_timeout_s == 300);
  CHECK(board.tensorboard_args == std::vector<std::string>{"--samples_per_plugin", "images=5"});
}

TEST_CASE("each bad key is named with its file and line, all in one pass") {
  auto errors = errors_of(R"(description = "x"
[resources]
slots = -1
weight = 2
[environment]
environment_variables = ["1BAD=x", "NOEQUALS"]
pod_spec = { kind = "Pod" }
)",
                          task_kind::command);
  CHECK(errors.find("task.toml:1:1: entrypoint: required key is missing") != std::string::npos);
  CHECK(errors.find("task.toml:3:9: resources.slots: must be at least 0, got -1") != std::string::npos);
  CHECK(errors.find("task.toml:4:10: resources.weight: a task holds its slots until it ends") != std::string::npos);
  CHECK(errors.find("task.toml:6:26: environment.environment_variables[0]: expected \"NAME=VALUE\"") !=
        std::string::npos);
  CHECK(errors.find("environment.environment_variables[1]: expected \"NAME=VALUE\"") != std::string::npos);
  CHECK(errors.find("task.toml:7:12: environment.pod_spec: det runs containers with podman, not Kubernetes") !=
        std::string::npos);
}

TEST_CASE("a task's image, variables, mounts and limits") {
  auto config = parse_task_config(R"(entrypoint = "python3 -c 'print(1)'"
[environment]
image = { cpu = "localhost/py:1", cuda = "localhost/py:1-cuda" }
environment_variables = { A = "1", B = 2 }
force_pull_image = true
registry_auth = { username = "u", password = "p", serveraddress = "registry.example" }
[resources]
memory_limit = "256MiB"
cpu_limit = 0.5
shm_size = 1073741824
[[bind_mounts]]
host_path = "/data"
container_path = "/mnt/data"
read_only = true
)",
                                  "task.toml", task_kind::command);
  const auto& env = config.environment;
  CHECK(env.image(false) == "localhost/py:1");
  CHECK(env.image(true) == "localhost/py:1-cuda");
  CHECK(env.variables(false) == std::vector<std::pair<std::string, std::string>>{{"A", "1"}, {"B", "2"}});
  CHECK(env.force_pull_image);
  REQUIRE(env.auth);
  CHECK(env.auth->server == "registry.example");
  CHECK(env.memory_limit_bytes == 256 * 1024 * 1024);
  CHECK(env.cpu_limit == 0.5);
  CHECK(env.shm_size_bytes == 1073741824);
  REQUIRE(env.bind_mounts.size() == 1);
  CHECK(env.bind_mounts[0].container_path == "/mnt/data");
  CHECK(env.bind_mounts[0].read_only);
  CHECK(det::config::describe_bytes(env.memory_limit_bytes) == "256 MiB");
}

TEST_CASE("bad limits and mounts are named") {
  auto errors = errors_of(R"(entrypoint = "true"
[resources]
memory_limit = "lots"
cpu_limit = -1
[[bind_mounts]]
host_path = "relative"
)",
                          task_kind::command);
  CHECK(errors.find("task.toml:3:16: resources.memory_limit: expected a byte count") != std::string::npos);
  CHECK(errors.find("resources.cpu_limit: must be a positive number of CPUs") != std::string::npos);
  CHECK(errors.find("bind_mounts[0].host_path: must be an absolute path") != std::string::npos);
  CHECK(errors.find("bind_mounts[0].container_path: required key is missing") != std::string::npos);
}

TEST_CASE("keys that do not apply to a kind are refused with what does apply") {
  CHECK(errors_of("entrypoint = \"bash\"\n", task_kind::shell)
            .find("task.toml:1:14: entrypoint: the master chooses what a shell runs; remove it") != std::string::npos);
  CHECK(errors_of("entrypoint = \"true\"\nidle_timeout = \"5m\"\n", task_kind::command)
            .find("idle_timeout: only notebooks and TensorBoards stop when idle; a command runs until it ends") !=
        std::string::npos);
  CHECK(errors_of("notebook_idle_type = \"kernels\"\n", task_kind::notebook)
            .find("notebook_idle_type: expected kernels_or_terminals, kernel_connections or activity, got \"kernels\"") !=
        std::string::npos);
  CHECK(errors_of("notebook_idle_type = \"activity\"\n", task_kind::tensorboard)
            .find("notebook_idle_type: applies to notebooks only") != std::string::npos);
  CHECK(errors_of("entrypoint = \"true\"\nbind_mounts = []\nentrypiont = 1\n", task_kind::command)
            .find("entrypiont: unknown key") != std::string::npos);
}

TEST_CASE("-c KEY=VALUE sets a config key: TOML values, plain strings, nested tables made where missing") {
  auto text = with_overrides("description = \"x\"\n[resources]\nslots = 1\n", "task.toml",
                             {"resources.slots=2", "resources.resource_pool=gpus", "environment.environment_variables=[\"A=1\"]",
                              "entrypoint=[" + toml_string_literal("sh") + ", " + toml_string_literal("-c") + ", " +
                                  toml_string_literal("echo \"hi\"; echo $X") + "]"});
  auto config = parse_task_config(text, "task.toml", task_kind::command);
  CHECK(config.description == "x");
  CHECK(config.slots == 2);
  CHECK(config.resource_pool == "gpus");
  CHECK(config.environment.cpu_variables == std::vector<std::pair<std::string, std::string>>{{"A", "1"}});
  CHECK(config.entrypoint == std::vector<std::string>{"sh", "-c", "echo \"hi\"; echo $X"});
}

TEST_CASE("an override that cannot apply is named") {
  CHECK_THROWS_WITH_AS(with_overrides("", "task.toml", {"slots"}), doctest::Contains("-c slots: expected KEY=VALUE"),
                       config_error);
  CHECK_THROWS_WITH_AS(with_overrides("description = \"x\"\n", "task.toml", {"description.text=1"}),
                       doctest::Contains("-c description.text=1: description is not a table"), config_error);
  CHECK_THROWS_WITH_AS(with_overrides("[resources\n", "task.toml", {"a=1"}), doctest::Contains("task.toml:1"),
                       config_error);
}
