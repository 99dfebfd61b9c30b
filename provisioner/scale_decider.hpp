#pragma once
// How many instances a pool's provider should launch and which it should terminate: Determined's
// scale decider (determined-platform §2.3-2.6) as plain functions over plain values, so that the
// provisioner actor only gathers inputs and carries out what these decide.

#include <chrono>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

namespace det::provisioner {

using time_point = std::chrono::system_clock::time_point;
using duration = std::chrono::system_clock::duration;

/// An instance's state as its provider lists it.
enum class instance_state : uint8_t { starting, running, stopping, stopped, terminating, unknown };

std::string to_string(instance_state state);
/// A provider's word for a state (EC2's, GCE's, Slurm's or det's own, any case): "pending",
/// "PROVISIONING" -> starting; "running", "RUNNING" -> running; "COMPLETING" -> stopping; ...
instance_state instance_state_from(std::string_view word);

struct instance {
  std::string id;
  time_point launched;
  instance_state state = instance_state::starting;
};

/// A pool's `provider` limits that the decisions read.
struct scale_limits {
  int min_instances = 0;
  int max_instances = 5;
  duration max_idle_agent_period = std::chrono::minutes(20);
  duration max_agent_starting_period = std::chrono::minutes(20);
  /// Determined's fixed maxDisconnectPeriod: an agent gone this long is given up.
  duration max_disconnect_period = std::chrono::minutes(10);
};

/// A task waiting for slots in the pool, as the sizing sees it.
struct pending_task {
  int slots = 0;
  std::string group;  // its job: every task of a job shares its max_slots
};

/// Instances the pool's pending work needs beyond what it has (Determined's
/// calculateDesiredNewAgentNum): slots of tasks one instance holds, or a whole number of
/// instances hold, summed per job up to its max_slots (`max_slots_by_group`, absent or 0: none);
/// 0-slot tasks by `max_aux_per_agent` per instance. Other shapes can never be placed and count
/// for nothing.
int desired_new_instances(const std::vector<pending_task>& pending, const std::map<std::string, int>& max_slots_by_group,
                          int slots_per_instance, int max_aux_per_agent);

/// The instances sorted by what they are doing (CalculateInstanceStates). `idle` and
/// `disconnected` remember since when, across decisions.
struct instance_classes {
  std::map<std::string, instance> instances;  // starting and running ones
  std::set<std::string> stopped, recently_launched, long_idle, long_disconnected;
  std::map<std::string, time_point> idle, disconnected;
};

/// Sorts `listed` for `now`: `agents` are the connected agents by id, true when idle. `previous`
/// gives the idle and disconnected times seen before.
instance_classes classify(time_point now, const std::vector<instance>& listed, const std::map<std::string, bool>& agents,
                          const instance_classes& previous, const scale_limits& limits);

/// An instance to terminate and why.
struct termination {
  std::string id;
  std::string reason;
  bool operator==(const termination& o) const { return id == o.id && reason == o.reason; }
};

/// FindInstancesToTerminate: stopped ones, long disconnected ones, long idle ones while above
/// min_instances, then above max_instances idle, disconnected and the newest others.
std::vector<termination> instances_to_terminate(const instance_classes& classes, const scale_limits& limits);

/// CalculateNumInstancesToLaunch: clamp(min - instances, desired - recently launched,
/// max - instances), never below 0.
int instances_to_launch(const instance_classes& classes, int desired_new, const scale_limits& limits);

}  // namespace det::provisioner
