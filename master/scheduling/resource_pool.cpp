// A resource pool: agents join it with their slots, allocations ask it for slots, and its
// scheduler (scheduler/pool_scheduler) decides which start and which are preempted.
//
// Scheduling is event-driven: a change (a request, a release, an agent, a job's settings) asks
// for one pass, and every change already in the mailbox when that pass runs shares it, so a
// burst of requests costs one pass rather than one each.

#include <algorithm>
#include <csignal>
#include <map>

#include "observability/measurements.hpp"
#include "master/scheduling/container_exit.hpp"
#include "master/spawn.hpp"
#include "node/state_text.hpp"
#include "caf/all.hpp"
#include "config/master_config.hpp"
#include "provisioner/scale_decider.hpp"
#include "scheduler/pool_scheduler.hpp"
#include "model/ids.hpp"

namespace det {
namespace {

using placement_promise = caf::typed_response_promise<allocation_parts>;

struct waiting_allocation {
  placement_promise promise;
  caf::actor requester;  // told to give its slots back when preempted
};

struct orphan {
  std::string agent_id;
  std::vector<int32_t> slots;
};

struct reclaim {
  waiting_allocation waiting;
  allocation_ask ask;
};

// An orphan holds its slots in the scheduler under a task of its own per agent, since a run on
// several agents leaves one container on each.
std::string orphan_task(const std::string& allocation_id, const std::string& agent_id) {
  return allocation_id + " on " + agent_id;
}

struct pool_state {
  static inline const char* name = "resource_pool";
  config::resource_pool_config spec;
  int64_t reconnect_wait_s = 25;
  std::map<std::string, std::vector<orphan>> orphans;  // running containers nobody has claimed yet
  std::map<std::string, reclaim> reclaims;  // restored runs waiting for their container
  scheduler::pool_scheduler policy;
  struct pool_agent {
    agent_proxy_actor proxy;
    slot_kind kind = slot_kind::cpu;
  };
  std::map<std::string, pool_agent> agents;
  std::map<std::string, waiting_allocation> waiting;  // allocation id -> its pending answer
  std::map<std::string, caf::actor> running;          // allocation id -> its allocation actor
  bool pass_requested = false;
  int64_t passes = 0;
  provisioner_actor provisioner;  // with a provider: told what the pool needs after each pass
  scaling_info told;              // what it was told last
  // Agents return within reconnect_wait of a master start; until then no request is refused for
  // want of them.
  std::chrono::steady_clock::time_point started = std::chrono::steady_clock::now();
};

using self_ptr = resource_pool_actor::stateful_pointer<pool_state>;

scheduler::scheduler_options options_of(const config::resource_pool_config& spec) {
  scheduler::scheduler_options o;
  o.policy = spec.scheduler.type == "fair_share"    ? scheduler::policy_kind::fair_share
             : spec.scheduler.type == "round_robin" ? scheduler::policy_kind::round_robin
                                               : scheduler::policy_kind::priority;
  o.fitting = spec.scheduler.fitting_policy == "worst" ? scheduler::fitting_policy::worst : scheduler::fitting_policy::best;
  o.preemption = spec.scheduler.preemption;
  o.max_zero_slot_tasks_per_agent = spec.max_aux_containers_per_agent;
  return o;
}

void preempt(self_ptr self, const std::string& allocation_id) {
  auto it = self->state.running.find(allocation_id);
  if (it != self->state.running.end())
    self->send(caf::actor_cast<allocation_actor>(it->second), preempt_atom::value);
}

// Whether a request fits the pool's agents were they idle, or else the instances its provider
// can launch: on one, or (not one_agent) across up to max_instances whole ones.
bool could_ever_fit(self_ptr self, int slots, bool one_agent) {
  auto& st = self->state;
  if (st.policy.could_ever_fit(slots, one_agent)) return true;
  if (!st.spec.provider) return false;
  const int per = st.spec.provider->instance_slots;
  return slots <= per || (!one_agent && slots % per == 0 && slots / per <= st.spec.provider->max_instances);
}

// Requests the pool could not place even with every agent idle (or every instance its provider
// may launch): refused with a sentence rather than queued for ever (once the pool has agents or a
// provider to judge by, and its agents had time to return).
void refuse_oversized(self_ptr self) {
  auto& st = self->state;
  if ((st.policy.agents().empty() && !st.spec.provider) ||
      std::chrono::steady_clock::now() - st.started < std::chrono::seconds(st.reconnect_wait_s))
    return;
  std::map<std::pair<int, bool>, bool> fits;  // by slot count and one_agent: most requests share a few
  for (auto it = st.waiting.begin(); it != st.waiting.end();) {
    const auto& request = st.policy.tasks().at(it->first).request;
    const int slots = request.slots;
    const std::pair<int, bool> key{slots, request.one_agent};
    auto known = fits.find(key);
    if (known == fits.end()) known = fits.emplace(key, could_ever_fit(self, slots, request.one_agent)).first;
    if (known->second) {
      ++it;
      continue;
    }
    std::map<int, int> sizes;  // slots per agent -> agents
    for (const auto& agent : st.policy.agents()) ++sizes[static_cast<int>(agent.slots.size())];
    std::string agents;
    for (const auto& [size, count] : sizes)
      agents += (agents.empty() ? "" : ", ") + std::to_string(count) + " with " + std::to_string(size);
    std::string capacity = agents.empty() ? "it has no agents" : "its agents have " + agents + " slots";
    if (st.spec.provider)
      capacity += ", and its provider launches up to " + std::to_string(st.spec.provider->max_instances) +
                  " with " + std::to_string(st.spec.provider->instance_slots) + " slots";
    it->second.promise.deliver(make_error(
        errc::unschedulable, "the trial needs " + std::to_string(slots) + " slots, which pool " + st.spec.name +
                                     " cannot give: " + capacity + "; " +
                                     (request.one_agent ? "a task runs as one process on one agent"
                                                        : "a trial spans agents only as whole agents of one size")));
    st.policy.release(it->first);
    it = st.waiting.erase(it);
  }
}

allocation_parts parts_of(self_ptr self, const scheduler::placement& where) {
  allocation_parts parts;
  for (const auto& part : where.parts) {
    const auto& agent = self->state.agents[part.agent_id];
    parts.push_back({part.agent_id, {part.slot_ids.begin(), part.slot_ids.end()}, agent.proxy, agent.kind});
  }
  return parts;
}

// What the provisioner sizes the pool by (determined-platform §2.3): the pending tasks, and
// which connected agents are idle.
void tell_provisioner(self_ptr self) {
  auto& st = self->state;
  if (!st.provisioner) return;
  scaling_info info;
  std::vector<provisioner::pending_task> pending;
  std::map<std::string, int> caps;
  for (const auto& [id, task] : st.policy.tasks()) {
    if (task.running) continue;
    pending.push_back({task.request.slots, task.request.group});
    caps[task.request.group] = st.policy.group(task.request.group).max_slots;
  }
  info.desired_new = provisioner::desired_new_instances(pending, caps, st.spec.provider->instance_slots,
                                                        st.spec.max_aux_containers_per_agent);
  for (const auto& agent : st.policy.agents()) info.agents[agent.id] = agent.idle() && agent.zero_slot_tasks == 0;
  if (info == st.told) return;
  st.told = info;
  self->send(st.provisioner, std::move(info));
}

void run_pass(self_ptr self) {
  auto& st = self->state;
  st.pass_requested = false;
  ++st.passes;
  refuse_oversized(self);
  auto decision = st.policy.schedule();
  for (auto& where : decision.start) {
    auto w = st.waiting.find(where.allocation_id);
    if (w == st.waiting.end()) {  // its allocation went away meanwhile
      st.policy.release(where.allocation_id);
      continue;
    }
    auto waiting = std::move(w->second);
    st.waiting.erase(w);
    st.running[where.allocation_id] = waiting.requester;
    waiting.promise.deliver(parts_of(self, where));
  }
  for (const auto& id : decision.preempt) preempt(self, id);
  tell_provisioner(self);
}

void kill_on_agent(self_ptr self, const std::string& agent_id, const std::string& allocation_id) {
  auto agent = self->state.agents.find(agent_id);
  if (agent == self->state.agents.end())
    return;
  self->send(agent->second.proxy, kill_container(allocation_id));
}

// A reclaimed run meets its containers: once they account for all its slots (a run on several
// agents has one on each), it holds them under its own job.
void try_adopt(self_ptr self, const std::string& allocation_id) {
  auto& st = self->state;
  auto r = st.reclaims.find(allocation_id);
  auto o = st.orphans.find(allocation_id);
  if (r == st.reclaims.end() || o == st.orphans.end())
    return;
  size_t found = 0;
  for (const auto& part : o->second) found += part.slots.size();
  if (found < static_cast<size_t>(r->second.ask.slots))
    return;  // another agent's container is still to come
  auto claim = std::move(r->second);
  st.reclaims.erase(r);
  auto where = std::move(o->second);
  st.orphans.erase(o);
  scheduler::placement placement{allocation_id, {}};
  bool known = true;
  for (const auto& part : where) {
    st.policy.release(orphan_task(allocation_id, part.agent_id));  // held as an orphan until now
    placement.parts.push_back({part.agent_id, {part.slots.begin(), part.slots.end()}});
    known = known && st.agents.count(part.agent_id) > 0;
  }
  const auto& ask = claim.ask;
  if (!known || !st.policy.adopt({allocation_id, ask.job, ask.slots, ask.preemptible, ask.one_agent}, placement)) {
    for (const auto& part : where)  // they must not share slots given to others
      kill_on_agent(self, part.agent_id, allocation_id);
    claim.waiting.promise.deliver(make_error(errc::unavailable, "its slots are no longer free"));
    return;
  }
  st.running[allocation_id] = claim.waiting.requester;
  claim.waiting.promise.deliver(parts_of(self, placement));
}

// A container an agent still runs that this master has not claimed (yet): matched to its
// restored run's reclaim, or its slots are held until agent_reconnect_wait passes and it is killed.
void add_orphan(self_ptr self, const std::string& agent_id, const pb::RunningContainer& running) {
  auto& st = self->state;
  const auto& id = running.allocation_id();
  const auto task = orphan_task(id, agent_id);
  st.policy.adopt({task, "", running.slot_ids_size(), false},
                  {task, {{agent_id, {running.slot_ids().begin(), running.slot_ids().end()}}}});
  auto& parts = st.orphans[id];
  parts.erase(std::remove_if(parts.begin(), parts.end(), [&](const orphan& o) { return o.agent_id == agent_id; }),
              parts.end());  // the agent registered again
  parts.push_back({agent_id, {running.slot_ids().begin(), running.slot_ids().end()}});
  self->delayed_send(self, std::chrono::seconds(st.reconnect_wait_s), expire_atom::value, id);
  try_adopt(self, id);
}

// Kills the containers nobody claimed under `allocation_id` and frees their slots.
void drop_orphans(self_ptr self, const std::string& allocation_id) {
  auto& st = self->state;
  auto o = st.orphans.find(allocation_id);
  if (o == st.orphans.end())
    return;
  for (const auto& part : o->second) {
    kill_on_agent(self, part.agent_id, allocation_id);
    st.policy.release(orphan_task(allocation_id, part.agent_id));
  }
  st.orphans.erase(o);
}

void request_pass(self_ptr self) {
  if (std::exchange(self->state.pass_requested, true)) return;
  self->send(self, schedule_atom::value);
}

pb::ResourcePoolInfo describe_pool(self_ptr self) {
  auto& st = self->state;
  pb::ResourcePoolInfo info;
  info.set_name(st.spec.name);
  info.set_description(st.spec.description);
  info.set_scheduler(st.spec.scheduler.type);
  info.set_fitting_policy(st.spec.scheduler.fitting_policy);
  info.set_preemption(st.spec.scheduler.preemption);
  info.set_default_priority(st.spec.scheduler.default_priority);
  info.set_agents(static_cast<int32_t>(st.agents.size()));
  info.set_slots_total(st.policy.total_slots());
  info.set_slots_free(st.policy.free_slots());
  info.set_tasks_running(static_cast<int32_t>(st.policy.running()));
  info.set_tasks_queued(static_cast<int32_t>(st.policy.queued()));
  return info;
}

// One job per experiment or task with allocations here, in the order its first one arrived.
pb::GetJobsResponse describe_jobs(self_ptr self) {
  auto& st = self->state;
  std::map<std::string, pb::Job> jobs;
  std::map<std::string, int64_t> first;
  for (const auto& [id, task] : st.policy.tasks()) {
    const auto& group = task.request.group;
    if (group.empty())  // a container no trial has claimed yet
      continue;
    auto& job = jobs[group];
    if (!first.count(group) || task.order < first[group]) first[group] = task.order;
    if (task.running) {
      job.set_allocated_slots(job.allocated_slots() + task.request.slots);
      job.set_running_tasks(job.running_tasks() + 1);
      if (job.state() != "SCHEDULED") job.set_state(task.backfilled ? "SCHEDULED_BACKFILLED" : "SCHEDULED");
    } else {
      job.set_queued_tasks(job.queued_tasks() + 1);
    }
  }
  std::vector<std::pair<int64_t, std::string>> order;
  for (auto& [group, at] : first) order.emplace_back(at, group);
  std::sort(order.begin(), order.end());
  pb::GetJobsResponse out;
  int32_t position = 0;
  for (auto& [at, group] : order) {
    auto& job = jobs[group];
    const auto& settings = st.policy.group(group);
    if (const auto id = job_id::parse(group); id && id->is_task())
      job.set_task_id(id->task().value);
    else if (id)
      job.set_experiment_id(id->experiment().value);
    job.set_resource_pool(st.spec.name);
    job.set_priority(settings.priority);
    job.set_weight(settings.weight);
    job.set_max_slots(settings.max_slots);
    if (job.state().empty()) job.set_state("QUEUED");
    job.set_position(++position);
    *out.add_jobs() = std::move(job);
  }
  return out;
}

resource_pool_actor::behavior_type pool_impl(self_ptr self, config::resource_pool_config spec,
                                             int64_t reconnect_wait_s) {
  self->state.policy = scheduler::pool_scheduler(options_of(spec));
  self->state.spec = std::move(spec);
  self->state.reconnect_wait_s = reconnect_wait_s;
  self->delayed_send(self, std::chrono::seconds(reconnect_wait_s), schedule_atom::value);  // see refuse_oversized
  return {
      [=](reclaim_atom, allocation_ask& ask) {
        auto& st = self->state;
        auto requester = caf::actor_cast<caf::actor>(self->current_sender());
        auto rp = self->make_response_promise<allocation_parts>();
        const auto allocation_id = ask.id;
        st.reclaims[allocation_id] = reclaim{{rp, std::move(requester)}, std::move(ask)};
        try_adopt(self, allocation_id);
        if (st.reclaims.count(allocation_id))
          self->delayed_send(self, std::chrono::seconds(st.reconnect_wait_s), expire_atom::value, allocation_id);
        return rp;
      },
      [=](expire_atom, const std::string& allocation_id) {
        auto& st = self->state;
        if (auto r = st.reclaims.find(allocation_id); r != st.reclaims.end()) {
          r->second.waiting.promise.deliver(make_error(
              errc::unavailable, "no agent reported its worker within " + std::to_string(st.reconnect_wait_s) +
                                           " s of the master's restart"));
          st.reclaims.erase(r);
        }
        if (st.orphans.count(allocation_id)) {
          drop_orphans(self, allocation_id);
          request_pass(self);
        }
      },
      [=](allocate_atom, const allocation_ask& ask) {
        auto& st = self->state;
        // Before the promise: making it takes the sender out of the current message.
        auto requester = caf::actor_cast<caf::actor>(self->current_sender());
        auto rp = self->make_response_promise<allocation_parts>();
        st.waiting[ask.id] = {rp, std::move(requester)};
        st.policy.request({ask.id, ask.job, ask.slots, ask.preemptible, ask.one_agent});
        request_pass(self);
        return rp;
      },
      [=](release_atom, const std::string& allocation_id) {
        auto& st = self->state;
        auto w = st.waiting.find(allocation_id);
        if (w != st.waiting.end()) {
          w->second.promise.deliver(caf::make_error(caf::sec::request_receiver_down));
          st.waiting.erase(w);
        }
        if (auto r = st.reclaims.find(allocation_id); r != st.reclaims.end()) {
          r->second.waiting.promise.deliver(caf::make_error(caf::sec::request_receiver_down));
          st.reclaims.erase(r);
        }
        drop_orphans(self, allocation_id);  // workers nobody wants
        st.running.erase(allocation_id);
        st.policy.release(allocation_id);
        request_pass(self);
      },
      [=](update_atom, const std::string& job, job_settings settings) {
        auto& st = self->state;
        scheduler::group_settings g;
        g.priority = settings.priority > 0 ? settings.priority : st.spec.scheduler.default_priority;
        g.weight = settings.weight;
        g.max_slots = settings.max_slots;
        st.policy.set_group(job, g);
        request_pass(self);
      },
      [=](remove_atom, const std::string& job) { self->state.policy.forget_group(job); },
      [=](schedule_atom) {
        const auto began = std::chrono::steady_clock::now();
        run_pass(self);
        observability::measurements()
            .scheduling_pass_seconds.with(self->state.spec.name)
            .observe(std::chrono::duration<double>(std::chrono::steady_clock::now() - began).count());
      },
      [=](add_atom, const std::string& agent_id, const std::vector<int32_t>& slots, slot_kind kind,
          agent_proxy_actor proxy, const std::vector<pb::RunningContainer>& running) {
        auto& st = self->state;
        st.policy.add_agent(agent_id, std::vector<int>(slots.begin(), slots.end()));
        st.agents[agent_id] = {std::move(proxy), kind};
        // Before any pass: their slots are taken.
        for (const auto& container : running) add_orphan(self, agent_id, container);
        request_pass(self);
      },
      [=](remove_atom, const std::string& agent_id, const caf::actor_addr& proxy) {
        // A proxy replaced by a re-registration must not remove its successor.
        auto& st = self->state;
        auto it = st.agents.find(agent_id);
        if (it == st.agents.end() || it->second.proxy.address() != proxy)
          return;
        // The proxy tells each of the agent's allocations that it was lost.
        for (const auto& lost : st.policy.remove_agent(agent_id)) st.running.erase(lost);
        st.agents.erase(agent_id);
        request_pass(self);
      },
      [=](enable_atom, const std::string& agent_id, int32_t slot, slot_switch change) -> bool {
        auto& st = self->state;
        const bool enabled = change == slot_switch::enable;
        bool known = slot < 0 ? st.policy.set_agent_enabled(agent_id, enabled)
                              : st.policy.set_slot_enabled(agent_id, slot, enabled);
        if (!known) return false;
        if (change == slot_switch::disable)
          for (const auto& id : st.policy.tasks_on(agent_id, slot < 0 ? std::nullopt : std::optional<int>(slot)))
            preempt(self, id);
        request_pass(self);
        return true;
      },
      [=](list_atom) -> caf::result<pb::ResourcePoolInfo, pb::GetJobsResponse> {
        return {describe_pool(self), describe_jobs(self)};
      },
      [=](provisioner_actor& provisioner) {
        self->state.provisioner = std::move(provisioner);
        self->state.told = {};
        tell_provisioner(self);
      },
      [=](inspect_atom) -> std::string {
        auto& st = self->state;
        return state_text{self}
                   .add("name", st.spec.name)
                   .add("agents", st.agents.size())
                   .add("running allocations", st.policy.running())
                   .add("queued allocations", st.policy.queued())
                   .add("scheduling passes", st.passes)
                   .str() +
               st.policy.describe();
      },
  };
}

}  // namespace

resource_pool_actor spawn_resource_pool(caf::actor_system& sys, const config::resource_pool_config& spec,
                                        int64_t reconnect_wait_s) {
  return sys.spawn(pool_impl, spec, reconnect_wait_s);
}

}  // namespace det
