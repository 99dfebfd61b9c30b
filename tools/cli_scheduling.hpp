#pragma once
// Scheduling from the CLI, after Determined's: `det resource-pool list`, `det provisioner list`, `det job list|update`,
// `det experiment set priority|weight|max-slots`, `det agent|slot enable|disable`.

#include <cstdint>
#include <string>

namespace det::pb {
class JobSettings;
}

namespace det::tools {

class rest_client;

int list_resource_pools(rest_client& master, bool json);

/// `det provisioner list`: each pool's provider, its instances and its last decision.
int list_provisioners(rest_client& master, bool json);

/// The jobs in every pool's queue, or in `pool`'s.
int list_jobs(rest_client& master, const std::string& pool, bool json);

/// Changes an experiment's priority, weight or max_slots (what `change` sets).
int update_job(rest_client& master, int64_t experiment_id, const pb::JobSettings& change);

/// `slot` < 0: the whole agent. Disabling without `drain` preempts what runs there.
int enable_agent(rest_client& master, const std::string& agent, int slot, bool enable, bool drain);

}  // namespace det::tools
