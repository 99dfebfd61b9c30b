#pragma once
// The config of a command, shell, notebook or TensorBoard: Determined's job-config keys that det
// acts on (`det cmd run --config-file`, `det notebook start --config-file`, ...). Every other key
// of Determined's is refused with a sentence naming it, as unknown keys are.

#include "config/config_error.hpp"
#include "config/environment_config.hpp"

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace det::config {

enum class task_kind : uint8_t { command, shell, notebook, tensorboard };

std::string to_string(task_kind kind);

/// What keeps a notebook alive besides proxied requests (Determined's `notebook_idle_type`).
enum class notebook_idle_type : uint8_t {
  kernels_or_terminals,  ///< a busy kernel or an open terminal (Determined's default)
  kernel_connections,    ///< a kernel with a connection
  activity,              ///< Jupyter's last_activity
};

std::string to_string(notebook_idle_type type);

struct task_config {
  /// "" : the master names the task after its kind and entrypoint.
  std::string description;
  /// What a command runs (a string entrypoint runs as `/bin/sh -c STRING`); the master supplies
  /// the program of the other kinds.
  std::vector<std::string> entrypoint;
  /// `resources.slots`: 0 runs on an agent's aux capacity (`max_aux_containers_per_agent`).
  int slots = 0;
  /// `resources.resource_pool`; "" : the aux pool for 0 slots, else the compute pool.
  std::string resource_pool;
  /// `resources.priority`, 1-99; unset: the pool's default.
  std::optional<int> priority;
  /// `[environment]` (an image, variables), `[[bind_mounts]]` and the limits of `[resources]`.
  environment_config environment;
  /// `work_dir`: where it runs; "" : its uploaded context, else a directory of its own.
  std::string work_dir;
  /// `idle_timeout` in seconds: notebooks and TensorBoards stop after this long without use.
  std::optional<int64_t> idle_timeout_s;
  notebook_idle_type idle_type = notebook_idle_type::kernels_or_terminals;
  /// `tensorboard_args`: appended to TensorBoard's command line.
  std::vector<std::string> tensorboard_args;
};

/// Parses and checks a task's TOML config for a task of `kind`; every problem is reported at
/// once as a config_error naming file, line and key.
task_config parse_task_config(std::string_view toml_text, std::string_view source_path, task_kind kind);

} // namespace det::config
