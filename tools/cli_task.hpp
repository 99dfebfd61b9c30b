#pragma once
// `det cmd ...` and `det task list`, after Determined's CLI: commands run on the cluster's slots,
// their logs followed until they end.

#include <cstdint>
#include <string>
#include <vector>

#include "messages/api.pb.h"

namespace det::tools {

class rest_client;

/// What `det cmd run` sends.
struct task_launch {
  std::string config_path;              ///< "" : the defaults
  std::string context_dir;              ///< "" : nothing uploaded
  std::vector<std::string> overrides;   ///< -c KEY=VALUE, in order
  std::vector<std::string> entrypoint;  ///< the words after --; empty: the config's entrypoint
  std::vector<std::int64_t> experiment_ids;  ///< a TensorBoard's experiments
  std::vector<std::int64_t> trial_ids;       ///< and trials
};

/// Starts the task and prints its id; unless `detach`, follows its logs until it ends and returns
/// its exit code (1 for a failure without one).
int run_task(rest_client& master, pb::TaskKind kind, const task_launch& launch, bool detach);
/// Waits until the task answers (riding out a master restart) and returns it; throws a sentence
/// naming why when it ends first.
pb::Task wait_ready(rest_client& master, pb::TaskKind kind, const std::string& id);
/// Creates the task (its config checked here first, as the master will) and returns its id;
/// throws config_error or a sentence.
std::string create_task(rest_client& master, pb::TaskKind kind, const task_launch& launch);
/// Starts a notebook, waits until it answers and prints the URL that opens it; with `detach`,
/// prints its id at once.
int start_service(rest_client& master, pb::TaskKind kind, const task_launch& launch, bool detach);
/// Waits until the task answers and prints the URL that opens it (with `browser`, opens it too).
int open_service(rest_client& master, pb::TaskKind kind, const std::string& id, bool browser);
int list_tasks(rest_client& master, pb::TaskKind kind, bool json);
/// Prints its logs; with `follow`, until it ends.
int print_task_logs(rest_client& master, const std::string& id, bool follow);
int kill_task(rest_client& master, pb::TaskKind kind, const std::string& id);
/// Every task and every trial that waits for or holds slots (`det task list`).
int list_all_tasks(rest_client& master, bool json);

} // namespace det::tools
