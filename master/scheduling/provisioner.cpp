// A pool's provisioner: Determined's control loop (determined-platform §2.2) over the pool's
// provider. Each pass lists the provider's instances, sorts them with what the pool last said
// about its agents and pending work (provisioner/scale_decider), terminates what should go and
// launches what is missing. Passes run every few seconds and soon after the pool's needs change.
//
// Every instance is stored before its launch command runs, so that a master killed meanwhile
// finds it after a restart: nothing is leaked, and nothing is launched twice for one need.
// Failed launches, and instances whose agent never registered within max_agent_starting_period,
// make the next launch wait: 2 s, then twice as long after each failure in a row, up to 5 min.

#include <algorithm>
#include <map>
#include <memory>
#include <set>

#include "master/spawn.hpp"
#include "node/state_text.hpp"
#include "auth/random_uuid.hpp"
#include "caf/all.hpp"
#include "messages/timestamp.hpp"
#include "provisioner/instance_provider.hpp"
#include "provisioner/scale_decider.hpp"
#include "storage/database.hpp"
#include "node/log.hpp"

namespace det {
namespace {

using namespace std::chrono_literals;
using provisioner::time_point;

// A provider that has listed an instance may still lag behind its launch (a cloud's API does):
// an instance it does not list yet is not taken for gone until this long after its launch.
constexpr auto listing_lag = 30s;
constexpr auto first_backoff = 2s;
constexpr auto max_backoff = std::chrono::minutes(5);
// The soonest a pass follows another when the pool's needs change.
constexpr auto pass_spacing = 50ms;

struct provisioner_state {
  static inline const char* name = "provisioner";
  config::resource_pool_config pool;
  config::provider_config spec;
  provisioner::scale_limits limits;
  std::unique_ptr<provisioner::instance_provider> provider;
  std::unique_ptr<storage::database> db;
  time_point started = std::chrono::system_clock::now();
  scaling_info scaling;
  std::map<std::string, pb::ProvisionedInstance> instances;  // not ended, by id
  std::set<std::string> registered;  // instances whose agent connected since this master started
  provisioner::instance_classes classes;
  pb::ScaleDecision last_decision;
  int failed_launches = 0;
  std::string last_error;
  time_point retry_at{};
  int64_t launched = 0;
  bool pass_scheduled = false;
  std::chrono::steady_clock::time_point last_pass{};
};

using self_ptr = provisioner_actor::stateful_pointer<provisioner_state>;

provisioner::scale_limits limits_of(const config::provider_config& p) {
  provisioner::scale_limits l;
  l.min_instances = p.min_instances;
  l.max_instances = p.max_instances;
  l.max_idle_agent_period = std::chrono::seconds(p.max_idle_agent_period_s);
  l.max_agent_starting_period = std::chrono::seconds(p.max_agent_starting_period_s);
  return l;
}

// Between passes: often enough that an idle period or starting period a few seconds long is kept
// to within a second or two, and at most Determined's 5 s.
std::chrono::milliseconds tick_period(const config::provider_config& p) {
  auto shortest = std::min(p.max_idle_agent_period_s, p.max_agent_starting_period_s);
  return std::clamp<std::chrono::milliseconds>(std::chrono::seconds(shortest) / 4, 500ms, 5s);
}

void log(self_ptr self, const std::string& line) {
  logs::info(logs::component::pool, "provisioner of pool " + self->state.pool.name + ": " + line);
}

void store(self_ptr self, const pb::ProvisionedInstance& instance) {
  try {
    self->state.db->update_instance(instance);
  } catch (const std::exception& e) {
    log(self, e.what());
  }
}

void end_instance(self_ptr self, const std::string& id, const std::string& state, const std::string& reason) {
  auto& st = self->state;
  auto it = st.instances.find(id);
  if (it == st.instances.end()) return;
  it->second.set_state(state);
  it->second.set_end_reason(reason);
  *it->second.mutable_end_time() = now();
  store(self, it->second);
  st.instances.erase(it);
  st.registered.erase(id);
}

void note_failure(self_ptr self, const std::string& sentence) {
  auto& st = self->state;
  ++st.failed_launches;
  st.last_error = sentence;
  const std::chrono::seconds wait = std::min<std::chrono::seconds>(
      first_backoff * (1 << std::min(st.failed_launches - 1, 16)), max_backoff);
  st.retry_at = std::chrono::system_clock::now() + wait;
  log(self, sentence + "; the next launch waits " + std::to_string(wait.count()) + " s");
}

// The provider's view merged into the stored instances: states updated, vanished ones ended.
// Returns the instances as the scale decisions see them, or nothing when the provider failed.
std::optional<std::vector<provisioner::instance>> take_listing(self_ptr self, time_point now) {
  auto& st = self->state;
  std::vector<std::string> known;
  for (const auto& [id, inst] : st.instances) known.push_back(id);
  std::vector<provisioner::listed_instance> listed;
  try {
    listed = st.provider->list(known);
  } catch (const std::exception& e) {
    st.last_error = e.what();
    log(self, st.last_error);
    return std::nullopt;
  }
  std::map<std::string, provisioner::instance_state> by_id;
  for (const auto& l : listed) by_id[l.id] = l.state;
  std::vector<provisioner::instance> out;
  for (const auto& [id, state] : by_id) {
    // Ended ones a provider still lists (a cloud shows terminated instances for a while) are
    // not taken back.
    if (st.instances.count(id) || (state != provisioner::instance_state::starting &&
                                   state != provisioner::instance_state::running))
      continue;
    // Listed but not live here: one whose launch command failed yet made it after all, or one of
    // the pool's that the command provider's list names. It is taken in (its row reopened) and
    // managed like the others.
    pb::ProvisionedInstance adopted;
    adopted.set_id(id);
    adopted.set_resource_pool(st.pool.name);
    adopted.set_state(provisioner::to_string(state));
    *adopted.mutable_launch_time() = det::now();
    try {
      st.db->insert_instance(adopted, config::to_string(st.spec.type));
      st.instances[id] = adopted;
      log(self, "took in instance " + id + ", which its provider lists");
    } catch (const std::exception& e) {
      log(self, e.what());
    }
  }
  std::vector<std::string> gone;
  for (auto& [id, inst] : st.instances) {
    // After a master restart every instance gets a fresh starting period to reconnect in.
    const auto launched = std::max(time_point_of(inst.launch_time()), st.started);
    auto listed_state = by_id.find(id);
    if (listed_state == by_id.end()) {
      if (now - time_point_of(inst.launch_time()) < listing_lag) {
        out.push_back({id, launched, provisioner::instance_state::starting});
        continue;
      }
      gone.push_back(id);
      continue;
    }
    const auto state = provisioner::to_string(listed_state->second);
    if (inst.state() != state) {
      inst.set_state(state);
      store(self, inst);
    }
    out.push_back({id, launched, listed_state->second});
  }
  for (const auto& id : gone) {
    log(self, "instance " + id + " is gone: its provider no longer lists it");
    end_instance(self, id, "gone", "its provider no longer lists it");
  }
  return out;
}

void terminate(self_ptr self, const std::string& id, const std::string& reason,
               std::vector<std::string>& terminated) {
  auto& st = self->state;
  try {
    st.provider->terminate(id);
    log(self, "terminated instance " + id + " (" + reason + ")");
    terminated.push_back(id + ": " + reason);
    end_instance(self, id, "terminated", reason);
  } catch (const std::exception& e) {
    st.last_error = e.what();
    log(self, "cannot terminate instance " + id + ": " + st.last_error);
  }
}

int launch(self_ptr self, int count) {
  auto& st = self->state;
  int done = 0;
  for (; done < count; ++done) {
    pb::ProvisionedInstance inst;
    inst.set_id(st.pool.name + "-" + auth::random_uuid().substr(0, 8));
    inst.set_resource_pool(st.pool.name);
    inst.set_state("launching");
    *inst.mutable_launch_time() = det::now();
    try {
      st.db->insert_instance(inst, config::to_string(st.spec.type));
    } catch (const std::exception& e) {
      st.last_error = e.what();
      log(self, st.last_error);
      break;
    }
    try {
      st.provider->launch(inst.id());
    } catch (const std::exception& e) {
      inst.set_state("failed");
      inst.set_end_reason(e.what());
      *inst.mutable_end_time() = det::now();
      store(self, inst);
      note_failure(self, "cannot launch an instance: " + std::string(e.what()));
      break;
    }
    inst.set_state("starting");
    store(self, inst);
    st.instances[inst.id()] = inst;
    ++st.launched;
    log(self, "launched instance " + inst.id());
  }
  return done;
}

void pass(self_ptr self) {
  auto& st = self->state;
  st.last_pass = std::chrono::steady_clock::now();
  const auto now = std::chrono::system_clock::now();
  auto listed = take_listing(self, now);
  if (!listed) return;
  for (const auto& [id, idle] : st.scaling.agents)
    if (st.instances.count(id) && st.registered.insert(id).second && st.failed_launches > 0) {
      st.failed_launches = 0;  // an agent made it: launches work again, without waiting
      st.retry_at = {};
    }
  st.classes = provisioner::classify(now, *listed, st.scaling.agents, st.classes, st.limits);
  auto doomed = provisioner::instances_to_terminate(st.classes, st.limits);
  // det's own rule: an instance whose agent never registered within its starting period failed to
  // launch, and is ended rather than waited for as Determined's disconnected ones are.
  for (const auto& [id, since] : st.classes.disconnected)
    if (!st.registered.count(id) &&
        std::none_of(doomed.begin(), doomed.end(), [&](const provisioner::termination& t) { return t.id == id; })) {
      doomed.push_back({id, "its agent did not register within max_agent_starting_period"});
      note_failure(self, "instance " + id + "'s agent did not register within " +
                             std::to_string(st.spec.max_agent_starting_period_s) + " s");
    }
  std::vector<std::string> terminated;
  for (const auto& t : doomed) terminate(self, t.id, t.reason, terminated);
  for (const auto& t : doomed) {
    st.classes.instances.erase(t.id);
    st.classes.recently_launched.erase(t.id);
  }
  const int wanted = provisioner::instances_to_launch(st.classes, st.scaling.desired_new, st.limits);
  int launched = 0;
  std::string reason = "the pending work asks for " + std::to_string(st.scaling.desired_new) + " new instances; " +
                       std::to_string(st.classes.instances.size()) + " exist (" +
                       std::to_string(st.classes.recently_launched.size()) + " starting), min " +
                       std::to_string(st.limits.min_instances) + ", max " + std::to_string(st.limits.max_instances);
  if (wanted > 0 && now < st.retry_at) {
    reason += "; " + std::to_string(wanted) + " to launch wait for the backoff after " +
              std::to_string(st.failed_launches) + " failed launches";
  } else if (wanted > 0) {
    launched = launch(self, wanted);
    reason += "; launched " + std::to_string(launched) + (launched < wanted ? " of " + std::to_string(wanted) : "");
  }
  if (!terminated.empty()) reason += "; terminated " + std::to_string(terminated.size());
  pb::ScaleDecision decision;
  *decision.mutable_time() = det::now();
  decision.set_desired_new(st.scaling.desired_new);
  decision.set_launch(launched);
  for (auto& t : terminated) decision.add_terminate(std::move(t));
  decision.set_reason(reason);
  st.last_decision = std::move(decision);
}

void request_pass(self_ptr self) {
  auto& st = self->state;
  if (st.pass_scheduled) return;
  st.pass_scheduled = true;
  auto since = std::chrono::steady_clock::now() - st.last_pass;
  auto delay = since >= pass_spacing ? std::chrono::steady_clock::duration::zero() : pass_spacing - since;
  self->delayed_send(self, std::chrono::duration_cast<std::chrono::milliseconds>(delay), tick_atom::value);
}

pb::Provisioner describe(self_ptr self) {
  auto& st = self->state;
  pb::Provisioner out;
  out.set_resource_pool(st.pool.name);
  out.set_provider(config::to_string(st.spec.type));
  out.set_min_instances(st.spec.min_instances);
  out.set_max_instances(st.spec.max_instances);
  out.set_instance_slots(st.spec.instance_slots);
  std::vector<const pb::ProvisionedInstance*> oldest_first;
  for (const auto& [id, inst] : st.instances) oldest_first.push_back(&inst);
  std::stable_sort(oldest_first.begin(), oldest_first.end(), [](auto* a, auto* b) {
    return time_point_of(a->launch_time()) < time_point_of(b->launch_time());
  });
  for (const auto* inst : oldest_first) {
    auto* shown = out.add_instances();
    *shown = *inst;
    auto agent = st.scaling.agents.find(inst->id());
    shown->set_agent_connected(agent != st.scaling.agents.end());
    shown->set_agent_idle(agent != st.scaling.agents.end() && agent->second);
  }
  *out.mutable_last_decision() = st.last_decision;
  out.set_failed_launches(st.failed_launches);
  out.set_last_error(st.last_error);
  if (st.retry_at > std::chrono::system_clock::now()) *out.mutable_retry_time() = timestamp_of(st.retry_at);
  out.set_launched(st.launched);
  return out;
}

provisioner_actor::behavior_type provisioner_impl(self_ptr self, config::resource_pool_config pool,
                                                  resource_pool_actor pool_actor, provisioner_setup setup) {
  auto& st = self->state;
  st.spec = *pool.provider;
  st.pool = std::move(pool);
  st.limits = limits_of(st.spec);
  st.provider = provisioner::make_provider(
      st.spec, {st.pool.name, setup.master, setup.agent_token, setup.node_binary, setup.directory});
  st.db = std::make_unique<storage::database>(setup.conninfo);
  for (auto& inst : st.db->live_instances(st.pool.name)) st.instances[inst.id()] = std::move(inst);
  if (!st.instances.empty())
    log(self, "found " + std::to_string(st.instances.size()) + " instances launched before this master started");
  self->send(pool_actor, provisioner_actor{self});
  self->send(self, tick_atom::value);
  return {
      [=](scaling_info& info) {
        auto& st = self->state;
        const bool more_wanted = info.desired_new > st.scaling.desired_new;
        st.scaling = std::move(info);
        if (more_wanted) request_pass(self);
      },
      [=](tick_atom) {
        auto& st = self->state;
        const bool periodic = !st.pass_scheduled;
        st.pass_scheduled = false;
        pass(self);
        if (periodic) self->delayed_send(self, tick_period(st.spec), tick_atom::value);
      },
      [=](get_atom) { return describe(self); },
      [=](inspect_atom) -> std::string {
        auto& st = self->state;
        state_text text{self};
        text.add("pool", st.pool.name)
            .add("provider", config::to_string(st.spec.type))
            .add("instances", st.instances.size())
            .add("launched", st.launched)
            .add("failed launches in a row", st.failed_launches)
            .add("last error", st.last_error)
            .add("last decision", st.last_decision.reason());
        for (const auto& [id, inst] : st.instances) text.add("instance " + id, inst.state());
        return text.str();
      },
  };
}

}  // namespace

provisioner_actor spawn_provisioner(caf::actor_system& sys, const config::resource_pool_config& pool,
                                    const resource_pool_actor& pool_actor, const provisioner_setup& setup) {
  return sys.spawn<caf::detached>(provisioner_impl, pool, pool_actor, setup);
}

}  // namespace det
