#include "master/prometheus_routes.hpp"

#include <map>
#include <set>
#include <string>
#include <vector>

#include "messages/api.pb.h"
#include "messages/cluster.pb.h"
#include "messages/caf_types.hpp"
#include "master/http/route_coroutine.hpp"
#include "model/ids.hpp"
#include "observability/prometheus_text.hpp"
#include "master/http/route_helpers.hpp"
#include "messages/errc.hpp"

namespace det::runtime {

namespace {

using observability::labels;
using observability::metric_type;
using samples = std::vector<std::pair<labels, double>>;

// What a slot's allocation is: a trial's run or a task. det's jobs are experiments and tasks, so
// a job's label is the experiment's id or the task's (Determined's labels, not job_id::str()).
struct allocation_owner {
  std::string task;
  std::string task_actor;  // the actor's place, as Determined's label names it
  std::string job;
};

allocation_owner owner_of(const std::string& allocation, const std::map<int64_t, int64_t>& experiment_of_trial) {
  const auto id = allocation_id::parse(allocation);
  if (!id || id->is_task()) return {allocation, "/tasks/" + allocation, allocation};
  const auto trial = std::to_string(id->trial().value);
  const auto found = experiment_of_trial.find(id->trial().value);
  const auto experiment = found == experiment_of_trial.end() ? std::string{} : std::to_string(found->second);
  return {trial, "/experiments/" + experiment + "/trials/" + trial, experiment};
}

samples counts_by(const google::protobuf::Map<std::string, int64_t>& counts, const char* label) {
  samples out;
  for (const auto& [value, n] : std::map<std::string, int64_t>(counts.begin(), counts.end()))
    out.push_back({{{label, value}}, static_cast<double>(n)});
  return out;
}

template <class Snapshots>
std::vector<std::pair<labels, observability::histogram::snapshot>> by_label(const char* label, Snapshots members) {
  std::vector<std::pair<labels, observability::histogram::snapshot>> out;
  for (auto& [value, snapshot] : members) out.push_back({{{label, value}}, std::move(snapshot)});
  return out;
}

using pool_states = std::vector<std::pair<pb::ResourcePoolInfo, pb::GetJobsResponse>>;

// The scrape's body, from what the registry, the reader and the pools answered.
std::string exposition_of(const pb::GetAgentsResponse& agents, const pb::StoredCensus& census, const pool_states& pools) {
  std::map<int64_t, int64_t> experiment_of_trial;
  for (const auto& t : census.active_trials()) experiment_of_trial[t.trial_id()] = t.experiment_id();

  observability::exposition out;
  // Determined's mapping gauges (master/internal/prom): each sample says that two ids go together.
  samples containers, allocations;
  std::set<std::string> seen_containers, seen_allocations;
  for (const auto& a : agents.agents())
    for (const auto& s : a.slots()) {
      if (s.allocation_id().empty()) continue;
      // A run's process on one agent is det's container.
      const auto container = a.id() + "/" + s.allocation_id();
      if (seen_containers.insert(container).second)
        containers.push_back({{{"container_id", container}, {"allocation_id", s.allocation_id()}}, 1});
      if (seen_allocations.insert(s.allocation_id()).second) {
        const auto owner = owner_of(s.allocation_id(), experiment_of_trial);
        allocations.push_back({{{"allocation_id", s.allocation_id()}, {"task_id", owner.task},
                                {"task_actor", owner.task_actor}, {"job_id", owner.job}}, 1});
      }
    }
  out.family("det_container_id_allocation_id", "A container (a run's process on one agent) and its allocation.",
             metric_type::gauge, containers);
  out.family("det_allocation_id_task_id_task_actor", "An allocation holding slots, its task, the task's actor and job.",
             metric_type::gauge, allocations);
  samples jobs_of_experiments;
  for (const auto& [info, jobs] : pools)
    for (const auto& j : jobs.jobs())
      if (j.experiment_id() != 0)
        jobs_of_experiments.push_back(
            {{{"job_id", std::to_string(j.experiment_id())}, {"experiment_id", std::to_string(j.experiment_id())}}, 1});
  out.family("det_job_id_experiment_id", "A job and its experiment (det's job id is the experiment's).",
             metric_type::gauge, jobs_of_experiments);
  samples labels_of_experiments;
  for (const auto& l : census.active_experiment_labels())
    labels_of_experiments.push_back({{{"experiment_id", std::to_string(l.experiment_id())}, {"label", l.label()}}, 1});
  out.family("det_experiment_id_label", "A label of an experiment that has not ended.", metric_type::gauge,
             labels_of_experiments);

  // The cluster.
  std::map<std::string, std::pair<int, int>> agents_by_pool;  // connected, disconnected
  for (const auto& a : agents.agents())
    (a.connected() ? agents_by_pool[a.resource_pool()].first : agents_by_pool[a.resource_pool()].second)++;
  samples agent_counts;
  for (const auto& [pool, counts] : agents_by_pool) {
    agent_counts.push_back({{{"resource_pool", pool}, {"connected", "true"}}, static_cast<double>(counts.first)});
    agent_counts.push_back({{{"resource_pool", pool}, {"connected", "false"}}, static_cast<double>(counts.second)});
  }
  out.family("det_agents", "Agents by resource pool and whether they are connected.", metric_type::gauge, agent_counts);
  samples slots_used, slots_free, queued, running;
  for (const auto& [info, jobs] : pools) {
    const labels pool{{"resource_pool", info.name()}};
    slots_used.push_back({pool, static_cast<double>(info.slots_total() - info.slots_free())});
    slots_free.push_back({pool, static_cast<double>(info.slots_free())});
    queued.push_back({pool, static_cast<double>(info.tasks_queued())});
    running.push_back({pool, static_cast<double>(info.tasks_running())});
  }
  out.family("det_slots_used", "Enabled slots that hold work, by resource pool.", metric_type::gauge, slots_used);
  out.family("det_slots_free", "Enabled slots that hold no work, by resource pool.", metric_type::gauge, slots_free);
  out.family("det_queue_length", "Allocations waiting for slots, by resource pool.", metric_type::gauge, queued);
  out.family("det_allocations_running", "Allocations holding slots, by resource pool.", metric_type::gauge, running);
  out.family("det_experiments", "Experiments by state.", metric_type::gauge,
             counts_by(census.experiments_by_state(), "state"));
  out.family("det_trials", "Trials by state.", metric_type::gauge, counts_by(census.trials_by_state(), "state"));

  // The master's own measurements.
  auto& m = observability::measurements();
  out.family("det_metric_reports_ingested_total", "Metric reports committed to PostgreSQL since the master started.",
             metric_type::counter, {{{}, static_cast<double>(m.metric_reports_ingested.value())}});
  out.family("det_log_lines_ingested_total", "Log lines committed to PostgreSQL since the master started.",
             metric_type::counter, {{{}, static_cast<double>(m.log_lines_ingested.value())}});
  out.histograms("det_persistence_commit_seconds", "Duration of the persistence writer's group commits.",
                 {{{}, m.commit_seconds.read()}});
  out.histograms("det_scheduling_pass_seconds", "Duration of a resource pool's scheduling pass.",
                 by_label("resource_pool", m.scheduling_pass_seconds.read()));
  out.histograms("det_http_request_duration_seconds", "Duration of REST requests, by route.",
                 by_label("route", m.http_request_seconds.read()));
  return out.take();
}

void unreadable(const reply_to& out, const caf::error& failure) {
  out.error(errc::unavailable, "the cluster's state could not be read: " + error_sentence(out.system(), failure));
}

// Asks the agent registry, the reader and every pool in turn, holding no thread meanwhile.
route_coroutine scrape(const master_handles& handles, reply_to out) {
  auto agents = co_await ask<pb::GetAgentsResponse>(out, handles.registry, list_atom::value);
  if (!agents) co_return unreadable(out, agents.error);
  auto census = co_await ask<pb::StoredCensus>(out, handles.reader, census_atom::value);
  if (!census) co_return unreadable(out, census.error);
  pool_states pools;
  for (const auto& [name, pool] : handles.pools) {
    auto state = co_await ask<std::tuple<pb::ResourcePoolInfo, pb::GetJobsResponse>>(out, pool, list_atom::value);
    if (!state) co_return unreadable(out, state.error);
    auto& [info, jobs] = *state;
    info.set_default_compute_pool(name == handles.default_pool);
    info.set_default_aux_pool(name == handles.default_aux_pool);
    pools.emplace_back(std::move(info), std::move(jobs));
  }
  http_response res;
  res.set_content(exposition_of(*agents, *census, pools), observability::exposition::content_type);
  out.finish(std::move(res));
}

}  // namespace

void prometheus_routes::add_to(http_router& server) {
  // `handles` lives as long as the router, which outlives every request.
  server.Get("/prom/det-state-metrics", guards.signed_in([this](const http_request&, http_response& res, const principal&) {
               scrape(handles, reply_to{sys, res});
             }));
}

} // namespace det::runtime
