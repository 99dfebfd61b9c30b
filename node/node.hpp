#pragma once
// The roles of det's processes: det-node runs a master or an agent until it is
// told to stop (SIGTERM or SIGINT); det-worker runs one trial until its work
// is done.

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>

#include "config/log_settings.hpp"

namespace det::runtime {

class worker_connection;

struct master_options {
  std::string config_path;   // master TOML; flags given on the command line win
  int port = -1;             // actor port; -1 = config or 8090, 0 = any free port
  int http_port = -1;        // REST port; -1 = config or 8080, 0 = any free port
  std::string db;            // libpq connection string; empty = embedded PostgreSQL
  std::string data_dir;      // embedded PostgreSQL lives here; empty = ~/.local/share/det
  std::string listen = "0.0.0.0";
  std::string ready_file;    // written with the bound ports once the master serves
  std::string webui_dir;     // the web UI's files; empty = share/det/webui beside det-node's directory
  std::optional<config::log_level> log_level;    // --log-level, over the config's [log] level
  std::optional<config::log_format> log_format;  // --log-format, over the config's [log] format
};

struct agent_options {
  std::string master = "127.0.0.1:8090";  // HOST:PORT of the master's actor port
  std::string pool = "default";
  std::string slots = "auto";             // auto | cpu:N
  std::string id;                         // default: the hostname
  std::string agent_token;                // the cluster's agent token, which the master admits agents by
  std::string master_ca;                  // TLS: the CA the master's certificate chains to
  std::string tls_cert;                   // TLS: this agent's certificate, signed by the master's security.tls.ca
  std::string tls_key;                    // TLS: its private key
  /// The programs of tasks' services, where they are not the names the master asks for on PATH:
  /// "jupyter-notebook", "tensorboard", "sshd".
  std::map<std::string, std::string> programs;
  /// Workers started ahead of their runs (agent/warm_worker_pool.hpp); -1: one per slot.
  int warm_workers = -1;
  /// Whom det users' work runs as (--run-tasks-as; agent/task_user_policy.hpp): "owner" or
  /// "agent-user".
  std::string run_tasks_as = "owner";
  std::optional<config::log_level> log_level;  // --log-level (default info)
  std::optional<config::log_format> log_format;
};

struct worker_options {
  std::string master;  // HOST:PORT
  std::string allocation_id;
  int64_t trial_id = 0;
  int rank = 0;        // a run on several agents: this worker's place (0: the chief)
  int world_size = 1;  // and how many train together
};

int run_master(const master_options& opts);
int run_agent(const agent_options& opts);
/// `link`: a connection made ahead (a warm worker's, which reached the master while it waited);
/// nullptr: one is made here.
int run_worker(const worker_options& opts, std::unique_ptr<worker_connection> link = nullptr);

/// Blocks SIGTERM and SIGINT in the calling thread and every thread started
/// after it, so that wait_for_stop_signal() alone receives them.
void block_stop_signals();

/// Waits for SIGTERM or SIGINT; returns the signal.
int wait_for_stop_signal();

/// Splits "HOST:PORT"; throws std::runtime_error naming the flag on bad input.
std::pair<std::string, uint16_t> split_host_port(const std::string& text, const std::string& flag);

/// The agent token from `path`, else from DET_AGENT_TOKEN (then removed from this process's
/// environment); throws std::runtime_error with a sentence when neither gives one.
std::string read_agent_token(const std::string& path);

/// Absolute path of det-worker, installed next to the running det-node.
std::string worker_executable();

/// This machine's hostname.
std::string hostname();

/// Absolute path of the running det-node.
std::string node_executable();

} // namespace det::runtime
