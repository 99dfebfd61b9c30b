#pragma once
// Spawn functions of the master's actors. Each actor lives in its own file;
// this header is what the node bootstrap and the other actors include.

#include <memory>
#include <optional>
#include <vector>
#include <string>

#include "master/local_interfaces.hpp"
#include "config/master_config.hpp"
#include "searcher/action.hpp"
#include "storage/stored_rows.hpp"
#include "caf/actor_system.hpp"

namespace det {

namespace storage {
class database;
}
namespace config {
struct experiment_config;
struct searcher_config;
}
namespace searcher {
class searcher;
}

/// Actor kinds and ids as the admin REPL names them, and the live experiments and trials by id
/// (an invalid handle when there is none), typed as they were registered.
using directory_actor = caf::typed_actor<
    caf::reacts_to<register_atom, std::string, std::string, caf::actor>,
    caf::reacts_to<register_atom, experiment_id, experiment_actor>,
    caf::reacts_to<register_atom, trial_id, trial_actor>,
    caf::replies_to<get_atom, experiment_id>::with<experiment_actor>,
    caf::replies_to<get_atom, trial_id>::with<trial_actor>,
    caf::replies_to<actors_atom>::with<std::string>,
    caf::replies_to<inspect_atom, std::string, std::string>::with<std::string>>;

directory_actor spawn_directory(caf::actor_system& sys);

/// What a pool's provisioner needs besides its pool's config.
struct provisioner_setup {
  std::string conninfo;       // its own PostgreSQL connection
  std::string master;         // HOST:PORT agents dial
  std::string agent_token;
  std::string node_binary;    // det-node's path
  std::string directory;      // DATA_DIR/provisioner/POOL
};

/// Detached (its provider's commands block): launches and terminates the pool's agents, and tells
/// the pool it exists so that the pool reports its scaling_info.
provisioner_actor spawn_provisioner(caf::actor_system& sys, const config::resource_pool_config& pool,
                                    const resource_pool_actor& pool_actor, const provisioner_setup& setup);

/// Detached: it blocks on PostgreSQL, so it gets a thread of its own. Metrics are committed on two
/// more connections to `conninfo`, taking turns, while it goes on with the rest on `db`. What it
/// commits is published to `feed`. Throws if those connections cannot be made. `rows` (linked:
/// it ends with this actor) catches up before each searcher snapshot is stored.
persistence_actor spawn_persistence(caf::actor_system& sys, std::shared_ptr<storage::database> db,
                                    const std::string& conninfo, std::shared_ptr<change_feed> feed,
                                    const row_writer_actor& rows);

/// Detached, on a connection of its own to `conninfo` (throws if it cannot be made); what it
/// commits is published to `feed`. Give it to spawn_persistence, which it then ends with.
row_writer_actor spawn_row_writer(caf::actor_system& sys, const std::string& conninfo, std::shared_ptr<change_feed> feed);

/// `count` detached readers on connections of their own to `conninfo`, behind one round-robin pool.
persistence_reader_actor spawn_persistence_readers(caf::actor_system& sys, const std::string& conninfo,
                                                   const persistence_actor& writer, size_t count);

/// Detached, on a connection of its own to `conninfo`.
projects_actor spawn_projects(caf::actor_system& sys, const std::string& conninfo);

/// Detached, on a connection of its own to `conninfo`.
model_registry_actor spawn_model_registry(caf::actor_system& sys, const std::string& conninfo);

/// Detached, on a connection of its own to `conninfo`.
accounts_actor spawn_accounts(caf::actor_system& sys, const std::string& conninfo);

/// Detached, on a connection of its own to `conninfo`.
checkpoint_collector_actor spawn_checkpoint_collector(caf::actor_system& sys, const std::string& conninfo,
                                                      const persistence_actor& writer);

/// What the master answers an agent that registers.
pb::AgentWelcome agent_welcome(const master_handles& handles);

resource_pool_actor spawn_resource_pool(caf::actor_system& sys, const config::resource_pool_config& spec,
                                        int64_t reconnect_wait_s);

agent_registry_actor spawn_agent_registry(caf::actor_system& sys, const master_handles& handles,
                                          const directory_actor& directory);

agent_proxy_actor spawn_agent_proxy(caf::actor_system& sys, const pb::AgentHello& hello,
                                    const agent_actor& remote, const master_handles& handles);

/// The front gate, published on the actor port (master/remote/network_gates.cpp).
master_actor spawn_front_gate(caf::actor_system& sys, const master_handles& handles, const directory_actor& directory);
/// The gate of an agent's proxy: its agent's endpoint. It goes when the proxy goes.
agent_gate_actor spawn_agent_gate(caf::actor_system& sys, const agent_proxy_actor& proxy);
/// The gate of a trial: its workers' endpoint. It goes when the trial goes.
run_gate_actor spawn_run_gate(caf::actor_system& sys, const trial_actor& trial);

master_front_actor spawn_master_front(caf::actor_system& sys, const master_handles& handles,
                                      const directory_actor& directory);

/// What an experiment hands each trial it creates.
struct trial_setup {
  pb::Trial trial;                 // id, experiment_id, request_id, hparams, seed
  std::string config;              // the experiment's TOML
  std::string searcher_metric;
  int32_t slots_per_trial = 1;
  std::string resource_pool;     // "" = the default pool
  int32_t max_restarts = 5;
  int64_t preemption_timeout_s = 3600;  // a preempted run has this long to checkpoint and exit
  bool start_paused = false;       // created or restored while its experiment is paused
  bool waits_at_length = false;    // promotion-based search: at its length it waits, not ends
  bool trains_until_exit = false;  // a search without a length: its process decides when it is done
  bool start_waiting = false;      // restored while waiting for its searcher
  std::string start_note;          // logged when it first starts (e.g. where a PBT copy comes from)
  std::string checkpoint_root;     // its checkpoints go to <checkpoint_root>/<uuid>/
  int64_t owner_id = 0;            // its experiment's owner, whose Unix user its workers run as
  std::shared_ptr<const std::string> model_definition;  // tar archive for the worker; may be empty
  std::string warm_start_dir;      // the directory of trial.warm_start_checkpoint_uuid
  pb::RunEnvironment environment;  // its variables and limits, which the agent applies
  pb::WorkerRuntime runtime = pb::WORKER_RUNTIME_OTHER;  // whether its worker trains with LibTorch
  bool warm_start_resumes = false; // searcher.source_resumes: resume from it, steps included
  // What the searcher decided before the actor existed, taken before the trial asks for slots:
  // sent after the spawn, a busy machine could run the trial's first run to its worker's hello
  // before they arrived (a run trained to length 0, 1 in 2,000).
  config::length train_to;         // its length so far; 0 before the searcher gave it one
  std::optional<bool> stop;        // a stop the search sent already (whether early)
  trial_listener experiment;
  master_handles handles;
  directory_actor directory;
};

trial_actor spawn_trial(caf::actor_system& sys, trial_setup setup);

/// A task as stored, and what its actor needs besides.
struct task_setup {
  pb::Task task;            // as stored; its state says where a restored one was
  storage::task_secrets secrets;  // its run's token, a notebook's token, a shell's host key
  std::string context;      // the tar archive of its uploaded directory; may be empty
  bool restored = false;    // taken back after a master restart: a started one is reclaimed where it runs
  tasks_actor registry;     // stores its states
  master_handles handles;
};

task_actor spawn_task(caf::actor_system& sys, task_setup setup);

/// Detached, on a connection of its own to `conninfo`; restores the tasks a master restart
/// interrupted, registering each with `directory`.
tasks_actor spawn_tasks(caf::actor_system& sys, const std::string& conninfo, const master_handles& handles,
                        const directory_actor& directory);

/// Asks `pool` for what `ask` says and starts `container` on each part it gets (with the part's
/// slots, rank and world size filled in); `listener` hears how it goes. `reclaim`: the run's
/// containers outlived a master restart; they are taken back where they run rather than launched.
/// A container's task_user names its owner: the Unix user it runs as is read from `accounts`
/// (the owner's link, else `task_uid_base` + its id) before the pool is asked.
allocation_actor spawn_allocation(caf::actor_system& sys, const allocation_ask& ask, const pb::StartContainer& container,
                                  allocation_listener listener, const resource_pool_actor& pool, bool reclaim,
                                  const accounts_actor& accounts, int64_t task_uid_base);

/// A parsed experiment config and its searcher, made before the experiment
/// actor so that a config the searcher rejects never creates an experiment.
struct experiment_plan {
  std::shared_ptr<config::experiment_config> config;
  std::shared_ptr<searcher::searcher> search;
  /// Set when a restarted master restores the experiment: its trials as stored.
  std::optional<std::vector<pb::Trial>> restored_trials;
  /// Restored without a snapshot: the search starts from the beginning and adopts those trials.
  bool search_from_start = false;
  /// searcher.source_trial_id / source_checkpoint_uuid, resolved: the checkpoint every trial
  /// starts from and its directory; empty for none.
  std::string warm_start_uuid;
  std::string warm_start_dir;
  /// The user's model directory as a tar archive (det submit CONFIG DIR); empty for none.
  std::shared_ptr<const std::string> model_definition = std::make_shared<const std::string>();
  /// A new experiment's first searcher actions, taken before its actor exists so that the trials
  /// they create are stored in the experiment's own transaction (first_trials, ids set); the
  /// actor carries them out and adopts those rows.
  std::optional<std::vector<searcher::action>> first_actions;
  std::vector<pb::Trial> first_trials;
};

/// The row of the trial a create action asks for, as the experiment stores it (a PBT copy's
/// parent and its checkpoint are the experiment's to add).
pb::Trial new_trial_row(const searcher::create_action& c, const config::experiment_config& cfg,
                          const std::string& warm_start_uuid);

/// Throws config::config_error (or std::runtime_error) with a sentence.
experiment_plan make_experiment_plan(const std::string& toml, const std::string& source);

/// The plan of a stored experiment: its config, its searcher restored from
/// `snapshot` (serialized pb::SearcherSnapshot) and its trials. Throws
/// std::runtime_error with a sentence if the snapshot cannot be restored.
experiment_plan restore_experiment_plan(const pb::Experiment& experiment,
                                        const std::string& snapshot,
                                        std::vector<pb::Trial> trials,
                                        std::string model_definition);

/// The searcher actor of experiment `experiment_id`, handed `search` (restored, or with its first
/// actions taken, by the experiment that spawns it); `config` names it and its metric for inspect.
searcher_actor spawn_searcher(caf::actor_system& sys, int64_t experiment_id, std::shared_ptr<searcher::searcher> search,
                              const config::searcher_config& config);

/// What `search` decides on `request`'s events, in order, after the actions it `decided` before
/// (a new experiment's first actions), and where it stands then: what a searcher actor answers.
search_step decide(searcher::searcher& search, const search_request& request,
                   std::vector<searcher::action> decided = {});

experiment_actor spawn_experiment(caf::actor_system& sys, const pb::Experiment& experiment,
                                  experiment_plan plan, const master_handles& handles,
                                  const directory_actor& directory);

} // namespace det
