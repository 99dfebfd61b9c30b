#include "config/task_config.hpp"

#include "config/environment_reader.hpp"
#include "config/toml_reader.hpp"

#include <limits>

namespace det::config {
namespace {

using detail::table_reader;

void read_resources(table_reader& root, task_config& config) {
  const auto* table = root.read_table("resources");
  if (!table) return;
  table_reader reader(*table, root.path_of("resources"), root.diag());
  if (auto v = reader.read_integer_in("slots", 0, std::numeric_limits<int>::max())) config.slots = static_cast<int>(*v);
  if (auto v = reader.read_string("resource_pool")) config.resource_pool = *v;
  if (auto v = reader.read_integer_in("priority", 1, 99)) config.priority = static_cast<int>(*v);
  reader.refuse({"weight", "max_slots"}, "a task holds its slots until it ends: only slots, resource_pool and "
                                         "priority apply to it");
  detail::read_resource_limits(reader, config.environment);
  reader.refuse({"devices", "agent_label", "is_single_node"}, "det does not implement this Determined resource setting; remove it");
  reader.report_unknown_keys();
}

void read_idle(table_reader& root, task_config& config, task_kind kind) {
  const bool idles = kind == task_kind::notebook || kind == task_kind::tensorboard;
  if (auto seconds = detail::read_duration_s(root, "idle_timeout", 1,
                                             "expected seconds as a positive integer or a duration such as \"30m\"")) {
    if (idles)
      config.idle_timeout_s = *seconds;
    else
      root.error("idle_timeout", "only notebooks and TensorBoards stop when idle; a " + to_string(kind) +
                                     " runs until it ends or is killed");
  }
  if (auto type = root.read_string("notebook_idle_type")) {
    if (kind != task_kind::notebook)
      root.error("notebook_idle_type", "applies to notebooks only");
    else if (*type == "kernels_or_terminals")
      config.idle_type = notebook_idle_type::kernels_or_terminals;
    else if (*type == "kernel_connections")
      config.idle_type = notebook_idle_type::kernel_connections;
    else if (*type == "activity")
      config.idle_type = notebook_idle_type::activity;
    else
      root.error("notebook_idle_type", "expected kernels_or_terminals, kernel_connections or activity, got \"" +
                                           *type + "\"");
  }
}

void read_tensorboard_args(table_reader& root, task_config& config, task_kind kind) {
  const auto* node = root.read_node("tensorboard_args");
  if (!node) return;
  const auto* list = node->as_array();
  if (kind != task_kind::tensorboard)
    root.error("tensorboard_args", "applies to TensorBoards only");
  else if (!list || !list->is_homogeneous<std::string>())
    root.error("tensorboard_args", "expected an array of strings, got " + detail::describe(*node));
  else
    for (const auto& arg : *list) config.tensorboard_args.push_back(arg.as_string()->get());
}

} // namespace

std::string to_string(task_kind kind) {
  switch (kind) {
    case task_kind::command: return "command";
    case task_kind::shell: return "shell";
    case task_kind::notebook: return "notebook";
    case task_kind::tensorboard: return "TensorBoard";
  }
  return "task";
}

std::string to_string(notebook_idle_type type) {
  switch (type) {
    case notebook_idle_type::kernels_or_terminals: return "kernels_or_terminals";
    case notebook_idle_type::kernel_connections: return "kernel_connections";
    case notebook_idle_type::activity: return "activity";
  }
  return "kernels_or_terminals";
}

task_config parse_task_config(std::string_view toml_text, std::string_view source_path, task_kind kind) {
  detail::diagnostics diag(source_path);
  auto root_table = detail::parse_document(toml_text, source_path, diag);
  table_reader root(root_table, "", diag);
  task_config config;
  if (auto v = root.read_string("description")) config.description = *v;
  if (kind != task_kind::command) {
    if (root.read_node("entrypoint"))
      root.error("entrypoint", "the master chooses what a " + to_string(kind) + " runs; remove it");
  } else if (auto entrypoint = detail::read_command(root, "entrypoint", "\"python3 train.py\"")) {
    // A string is a shell command line, as Determined runs it; an array is the program's argv.
    const bool shell_line = root_table.get("entrypoint")->is_string();
    config.entrypoint = shell_line ? std::vector<std::string>{"/bin/sh", "-c", entrypoint->front()} : std::move(*entrypoint);
  } else if (!root_table.contains("entrypoint")) {
    root.missing("entrypoint");
  }
  read_resources(root, config);
  detail::read_environment(root, config.environment);
  if (auto v = root.read_string("work_dir")) config.work_dir = *v;
  read_idle(root, config, kind);
  read_tensorboard_args(root, config, kind);
  root.refuse({"pbs", "slurm"}, "det runs tasks on its own agents, not through an HPC launcher; remove it");
  root.refuse({"debug"}, "det does not implement this Determined setting; remove it");
  root.report_unknown_keys();
  diag.throw_if_any();
  return config;
}

} // namespace det::config
