#pragma once
// The master's actors, which live in one process: each domain's protocol beside its actors, and
// the handles the master's actors are spawned with. Handles point downward (experiment -> trial ->
// allocation -> pool/agent); what travels upward goes to a listener interface the parent's
// interface extends (trial_listener, allocation_listener, container_listener), so the interfaces
// have no cycles and no handle is cast unchecked. Include the one protocol a file uses rather than
// this header: a change to one then rebuilds only its users.

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <string>

#include "auth/task_user.hpp"
#include "config/document_limits.hpp"
#include "config/host_access_policy.hpp"
#include "master/accounts/accounts_protocol.hpp"
#include "master/experiments/experiments_protocol.hpp"
#include "master/models/model_registry_protocol.hpp"
#include "master/persistence/change_feed.hpp"
#include "master/persistence/persistence_protocol.hpp"
#include "master/projects/projects_protocol.hpp"
#include "master/remote/gates_protocol.hpp"
#include "master/scheduling/scheduling_protocol.hpp"
#include "master/tasks/tasks_protocol.hpp"

namespace det {

/// Handles the master's actors are spawned with.
struct master_handles {
  persistence_actor persistence;
  row_writer_actor rows;
  persistence_reader_actor reader;
  /// Reads of metric rows (a trial's metrics, series) on connections of their own: a slow one
  /// (a long history, a locked table) never holds up the reads of experiments and trials.
  persistence_reader_actor metric_reader;
  checkpoint_collector_actor collector;
  accounts_actor accounts;
  model_registry_actor models;
  projects_actor projects;
  std::map<std::string, resource_pool_actor> pools;  // by pool name
  std::string default_pool;
  std::string default_aux_pool;
  agent_registry_actor registry;
  tasks_actor tasks;
  /// The provisioners of pools with a provider, by pool name (for the REST API: spawned once the
  /// actor port is bound, after the other actors got their handles).
  std::map<std::string, provisioner_actor> provisioners;
  /// What an agent must present to register (security.agent_token_file).
  std::string agent_token;
  /// How long a disconnected agent's work is kept for it to reconnect.
  int64_t agent_reconnect_wait_s = 25;
  /// Where checkpoints go when an experiment's checkpoint_storage names no host_path.
  std::string default_checkpoint_root;
  /// What users' configs may take from an agent's host (master.toml's [security]); checked at submission.
  config::host_access_policy host_access;
  /// The most trials a grid search may have (master.toml's max_grid_trials); checked at submission.
  int64_t max_grid_trials = config::default_max_grid_trials;
  /// Where unlinked users' uids on agents begin (master.toml's security.task_uid_base).
  int64_t task_uid_base = auth::default_task_uid_base;
  /// The largest request body an authenticated caller may send (security.max_upload_size).
  int64_t max_upload_bytes = config::default_max_upload_bytes;
  /// What the persistence writer committed, for the gateway's event streams.
  std::shared_ptr<change_feed> feed = std::make_shared<change_feed>();
  /// The REST API's port, known once the gateway has bound it (agents tell trial processes).
  std::shared_ptr<std::atomic<int>> http_port = std::make_shared<std::atomic<int>>(0);

  /// The pool named `name`, the default pool for "" (the aux pool for 0-slot work), or an
  /// invalid handle.
  resource_pool_actor pool(const std::string& name, int32_t slots = 1) const {
    return pools_at(pool_name(name, slots));
  }
  std::string pool_name(const std::string& name, int32_t slots = 1) const {
    return !name.empty() ? name : slots == 0 && !default_aux_pool.empty() ? default_aux_pool : default_pool;
  }
  resource_pool_actor pools_at(const std::string& name) const {
    auto it = pools.find(name);
    return it == pools.end() ? resource_pool_actor{} : it->second;
  }
};

} // namespace det
