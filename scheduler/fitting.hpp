#pragma once
// Where a gang of slots fits (reference §3.1): on one agent with enough free slots, scored best fit
// (pack: fewest free slots left) or worst fit (spread: most free), ties broken by a hash distance
// between task and agent and then the agent's id; failing that, for more than one slot, across
// whole idle agents of one size, all of their slots.

#include <map>
#include <optional>
#include <string>
#include <vector>

namespace det::scheduler {

enum class fitting_policy { best, worst };

struct slot_view {
  bool enabled = true;
  std::string owner;  // allocation id; empty when free
};

struct agent_view {
  std::string id;
  bool enabled = true;
  std::map<int, slot_view> slots;
  int zero_slot_tasks = 0;

  /// Slots a new task could take: enabled, free, on an enabled agent.
  int free_slots() const;
  /// Enabled slots, free or not.
  int usable_slots() const;
  /// No slot is held.
  bool idle() const;
};

/// Slots of one agent; no slots for a 0-slot task.
struct agent_part {
  std::string agent_id;
  std::vector<int> slot_ids;
};

struct placement {
  std::string allocation_id;
  std::vector<agent_part> parts;
};

/// Where a task of `slots` slots fits on `agents` now, or nothing. A 0-slot task fits on an
/// enabled agent running fewer than `max_zero_slot_tasks` of them; a gang that fits on no one agent
/// spans whole idle agents of one size, if `across_agents`.
std::optional<placement> find_fit(const std::string& allocation_id, int slots, const std::vector<agent_view>& agents,
                                  fitting_policy policy, int max_zero_slot_tasks, bool across_agents = true);

/// Whether a task of `slots` slots would fit on `agents` were all their slots free (and, if
/// `enable_all`, every agent and slot enabled): whether it can ever run there.
bool fits_when_idle(int slots, std::vector<agent_view> agents, fitting_policy policy, int max_zero_slot_tasks,
                    bool enable_all, bool across_agents);

/// Marks the placement's slots as held by its allocation (or counts its 0-slot task).
void take(std::vector<agent_view>& agents, const placement& where);
/// Frees what `parts` held for `allocation_id`.
void give_back(std::vector<agent_view>& agents, const std::string& allocation_id, const std::vector<agent_part>& parts);

}  // namespace det::scheduler
