#pragma once

#include "auth/task_user.hpp"
#include "config/document_limits.hpp"
#include "auth/tls_files.hpp"
#include "config/config_error.hpp"
#include "config/host_access_policy.hpp"
#include "config/log_settings.hpp"

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace det::config {

/// `[resource_manager.scheduler]` or `[resource_pools.scheduler]`, as in Determined.
struct scheduler_config {
  std::string type = "priority";       // priority | fair_share | round_robin
  std::string fitting_policy = "best";  // best (pack) | worst (spread)
  bool preemption = false;              // [scheduler.priority] preemption
  int default_priority = 42;            // [scheduler.priority] default_priority, 1-99
};

/// How a pool's provider starts agents (`[resource_pools.provider] type`).
enum class provider_type : uint8_t {
  process,  ///< det-node --role=agent processes on the master's machine
  command,  ///< the user's launch, list and terminate commands (any cloud's CLI)
  slurm,    ///< one Slurm job per agent
};

std::string to_string(provider_type type);

/// `[resources_pools.provider]`: Determined's elastic-agent keys (determined-platform §2.1) and
/// each type's own.
struct provider_config {
  provider_type type = provider_type::process;
  int min_instances = 0;
  int max_instances = 5;
  int64_t max_idle_agent_period_s = 20 * 60;
  int64_t max_agent_starting_period_s = 20 * 60;
  /// Slots per instance (Determined's `instance_slots`; `slots_per_instance` is accepted too).
  int instance_slots = 1;
  /// `master_url`: where agents dial the master's actor port, HOST:PORT (a scheme is dropped);
  /// empty: this machine's hostname and the actor port.
  std::string master_url;
  /// `startup_script`: shell lines the generated agent start-up script runs before the agent
  /// (installing det-node on a fresh machine, mounting shared storage).
  std::string startup_script;
  /// `slot_type`: "cpu" (the agent offers instance_slots CPU slots) or "cuda" (it offers the
  /// GPUs it finds); the process provider's `gpus` mean cuda.
  bool cuda_slots = false;
  /// process: GPU indices handed out `instance_slots` at a time; empty: CPU slots.
  std::vector<int> gpus;
  /// command: shell command lines with {instance_id}, {pool}, {master}, {agent_token} and
  /// {startup_script}; `list` prints one instance a line, its id then optionally its state.
  std::string launch, terminate, list;
  /// slurm: sbatch options.
  std::string partition, gres, time_limit;
  std::vector<std::string> sbatch_args;
};

struct resource_pool_config {
  std::string name;
  std::string description;
  scheduler_config scheduler;
  int max_aux_containers_per_agent = 100;  // 0-slot tasks an agent runs at once
  std::optional<provider_config> provider;  // unset: agents are started by hand
};

/// The master's TOML config. Keys: `port`, `http_port`, `proxy_port`, `proxy_host`, `db`, `data_dir`, `[[resource_pools]]
/// pool_name, description, max_aux_containers_per_agent, [resource_pools.scheduler]`,
/// `[resource_manager] type, default_compute_resource_pool, default_aux_resource_pool,
/// agent_reconnect_wait, [resource_manager.scheduler]`, `[security] agent_token_file,
/// session_lifespan, max_token_lifespan, allowed_host_paths, allowed_capabilities, [security.tls] cert, key,
/// ca`. Other keys of Determined's master.yaml are
/// refused with a sentence naming them.
struct master_config {
  /// The actor system's port (agents and workers connect here); 0 picks a free one.
  int port = 8090;
  /// The REST API's port; 0 picks a free one.
  int http_port = 8080;
  /// `proxy_port`: the listener of task services (notebooks, TensorBoards, shells, commands' ports),
  /// an origin apart from the web UI's so that a task's pages share no cookie or storage with it;
  /// 0 picks a free one. On the master's address, with TLS when the REST API has it.
  int proxy_port = 0;
  /// `proxy_host`: "*.SUFFIX" serves task ID at ID.SUFFIX:proxy_port, so that tasks do not share an
  /// origin with each other either (needs a wildcard DNS name, and a wildcard certificate under
  /// TLS); empty: the host the client reached the master by.
  std::string proxy_host;
  /// A libpq connection string. A Determined-style `[db]` table (host, port, user, password,
  /// name, ssl_mode) is turned into one.
  std::string db;
  /// Empty: the caller decides.
  std::string data_dir;
  std::vector<resource_pool_config> resource_pools = {{"default", "", {}, 100, std::nullopt}};
  /// Where experiments go that name no pool; the first pool unless
  /// `resource_manager.default_compute_resource_pool` says otherwise.
  std::string default_resource_pool = "default";
  /// Where 0-slot tasks go that name no pool; likewise.
  std::string default_aux_resource_pool = "default";
  /// Every pool's scheduler unless the pool sets its own.
  scheduler_config scheduler;

  std::vector<std::string> pool_names() const;
  /// How long an agent that lost its connection may take to come back before its work fails.
  /// TOML: seconds as an integer, or a duration string such as "25s" or "1m".
  int64_t agent_reconnect_wait_s = 25;
  /// `max_grid_trials`: the most trials a grid search may have (at most largest_max_grid_trials).
  int64_t max_grid_trials = default_max_grid_trials;
  /// `[security] agent_token_file`: the file holding the token agents must present; empty means
  /// DATA_DIR/agent-token, made at the first start.
  std::string agent_token_file;
  /// `[security] session_lifespan`: how long a login lasts (seconds, or "7d", "12h").
  int64_t session_lifespan_s = 7 * 24 * 3600;
  /// `[security] max_token_lifespan`: the longest an access token (det token create) may last
  /// (seconds, or "30d"); a longer one is refused.
  int64_t max_token_lifespan_s = 30 * 24 * 3600;
  /// `[security.tls] cert, key, ca`: REST over HTTPS and the actor port over TLS, where agents,
  /// workers and REPLs show certificates signed by `ca`. Unset: both serve plain text.
  std::optional<auth::tls_files> tls;
  /// `[security] allowed_host_paths, allowed_capabilities`: what users' configs may take from an
  /// agent's host (config/host_access_policy.hpp).
  host_access_policy host_access;
  /// `[security] task_uid_base`: unlinked det user N runs as uid and gid task_uid_base + N on agents
  /// (auth/task_user.hpp); the same on every agent, so that a user's checkpoints are its own wherever
  /// its trials ran.
  int64_t task_uid_base = auth::default_task_uid_base;
  /// `[security] max_upload_size`: the largest request body a logged-in caller may send (a byte
  /// count, "160MiB"); the master holds at most three of them at once.
  int64_t max_upload_bytes = default_max_upload_bytes;
  /// `[log] level, format`: what the master writes to its log, and how; --log-level and
  /// --log-format win.
  log_settings log;
};

/// Parses and validates a master config; errors as for experiment configs.
master_config parse_master_config(std::string_view toml_text, std::string_view source_path);

/// Reads and parses the file at `path`; an unreadable file is a config_error naming the path.
master_config load_master_config(const std::string& path);

} // namespace det::config
