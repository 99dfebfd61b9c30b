#include "tools/cli_scheduling.hpp"

#include <iostream>

#include "messages/api.pb.h"
#include "messages/json.hpp"
#include "tools/cli_format.hpp"
#include "tools/rest_client.hpp"

namespace det::tools {

int list_resource_pools(rest_client& master, bool json) {
  auto reply = master.get<pb::GetResourcePoolsResponse>("/api/v1/resource-pools");
  if (json) {
    std::cout << det::to_json(reply, true) << '\n';
    return 0;
  }
  table out({"Name", "Description", "Scheduler", "Fitting", "Agents", "Slots free", "Running", "Queued", "Default",
             "Provider"});
  for (const auto& p : reply.resource_pools()) {
    std::string scheduler = p.scheduler();
    if (p.scheduler() == "priority")
      scheduler += " (default " + std::to_string(p.default_priority()) +
                   (p.preemption() ? ", preemption)" : ", no preemption)");
    std::string defaults = p.default_compute_pool() && p.default_aux_pool() ? "compute, aux"
                           : p.default_compute_pool()                       ? "compute"
                           : p.default_aux_pool()                           ? "aux"
                                                                            : "";
    out.add_row({p.name(), p.description(), scheduler, p.fitting_policy(), std::to_string(p.agents()),
                 std::to_string(p.slots_free()) + " of " + std::to_string(p.slots_total()),
                 std::to_string(p.tasks_running()), std::to_string(p.tasks_queued()), defaults,
                 p.has_provisioner() ? p.provisioner().provider() + " (" +
                                           std::to_string(p.provisioner().instances_size()) + " instances, " +
                                           std::to_string(p.provisioner().min_instances()) + "-" +
                                           std::to_string(p.provisioner().max_instances()) + ")"
                                     : "-"});
  }
  out.print(std::cout);
  return 0;
}

int list_provisioners(rest_client& master, bool json) {
  auto reply = master.get<pb::GetProvisionersResponse>("/api/v1/provisioners");
  if (json) {
    std::cout << det::to_json(reply, true) << '\n';
    return 0;
  }
  if (reply.provisioners().empty()) {
    std::cout << "No resource pool has a provider.\n";
    return 0;
  }
  for (const auto& p : reply.provisioners()) {
    std::cout << "Pool " << p.resource_pool() << ": " << p.provider() << " provider, " << p.min_instances() << " to "
              << p.max_instances() << " instances of " << p.instance_slots() << " slots; " << p.launched()
              << " launched since the master started\n";
    if (p.has_last_decision())
      std::cout << "Last decision (" << format_time(p.last_decision().time()) << "): " << p.last_decision().reason()
                << "\n";
    if (!p.last_error().empty())
      std::cout << "Last error (" << p.failed_launches() << " failed launches in a row): " << p.last_error() << "\n";
    if (p.has_retry_time()) std::cout << "Next launch not before " << format_time(p.retry_time()) << "\n";
    table out({"Instance", "State", "Launched", "Agent"});
    for (const auto& i : p.instances())
      out.add_row({i.id(), i.state(), format_time(i.launch_time()),
                   !i.agent_connected() ? "not connected" : i.agent_idle() ? "idle" : "busy"});
    out.print(std::cout);
    std::cout << "\n";
  }
  return 0;
}

int list_jobs(rest_client& master, const std::string& pool, bool json) {
  auto reply = master.get<pb::GetJobsResponse>("/api/v1/job-queues" + (pool.empty() ? "" : "?resource_pool=" + pool));
  if (json) {
    std::cout << det::to_json(reply, true) << '\n';
    return 0;
  }
  table out({"#", "Experiment", "Pool", "State", "Priority", "Weight", "Max slots", "Slots", "Running", "Queued"});
  for (const auto& j : reply.jobs())
    out.add_row({std::to_string(j.position()), std::to_string(j.experiment_id()), j.resource_pool(), j.state(),
                 std::to_string(j.priority()), format_number(j.weight()),
                 j.max_slots() > 0 ? std::to_string(j.max_slots()) : "-", std::to_string(j.allocated_slots()),
                 std::to_string(j.running_tasks()), std::to_string(j.queued_tasks())});
  out.print(std::cout);
  return 0;
}

int update_job(rest_client& master, int64_t experiment_id, const pb::JobSettings& change) {
  pb::PatchExperimentRequest body;
  *body.mutable_resources() = change;
  pb::ErrorResponse ignored;
  master.patch(experiment_path(experiment_id), body, ignored);
  std::cout << "Experiment " << experiment_id << ":";
  if (change.has_priority()) std::cout << " priority " << change.priority();
  if (change.has_weight()) std::cout << " weight " << format_number(change.weight());
  if (change.has_max_slots())
    std::cout << " max slots " << (change.max_slots() > 0 ? std::to_string(change.max_slots()) : "unlimited");
  std::cout << '\n';
  return 0;
}

int enable_agent(rest_client& master, const std::string& agent, int slot, bool enable, bool drain) {
  pb::DisableRequest body;
  body.set_drain(drain);
  pb::ErrorResponse ignored;
  const std::string verb = enable ? "enable" : "disable";
  master.post("/api/v1/agents/" + agent + (slot < 0 ? "" : "/slots/" + std::to_string(slot)) + "/" + verb, body,
              ignored);
  std::cout << (slot < 0 ? "Agent " + agent : "Slot " + std::to_string(slot) + " of agent " + agent)
            << (enable ? " is enabled"
                : drain ? " is disabled and draining: what runs there finishes"
                        : " is disabled: what ran there is being preempted")
            << '\n';
  return 0;
}

}  // namespace det::tools
