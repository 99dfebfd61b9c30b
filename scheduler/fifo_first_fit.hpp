#pragma once
// The resource pool's placement policy for now: requests are served strictly
// in arrival order, each on the first agent (in registration order) that has
// enough free slots. Plain logic, owned by the resource pool actor.

#include <cstdint>
#include <deque>
#include <map>
#include <string>
#include <vector>

namespace det::scheduler {

struct slot_assignment {
  std::string allocation_id;
  std::string agent_id;
  std::vector<int> slot_ids;
};

class fifo_first_fit {
public:
  /// Adds an agent whose `slot_ids` are all free. Re-adding a known agent replaces it.
  void add_agent(const std::string& agent_id, const std::vector<int>& slot_ids);

  /// Forgets the agent; returns the allocations that held its slots (they are lost).
  std::vector<std::string> remove_agent(const std::string& agent_id);

  /// Queues a request for `slots` slots on one agent.
  void request(const std::string& allocation_id, int slots);

  /// Drops a queued request or frees the slots of an assigned one.
  void release(const std::string& allocation_id);

  /// Assigns queued requests in FIFO order; stops at the first that does not fit
  /// so that a large request is never starved by smaller ones behind it.
  std::vector<slot_assignment> schedule();

  int total_slots() const;
  int free_slots() const;
  std::size_t queued() const { return queue_.size(); }
  std::size_t running() const { return assigned_.size(); }

  /// A few lines describing agents, free slots and the queue (admin REPL).
  std::string describe() const;

private:
  struct agent_slots {
    std::string id;
    std::map<int, std::string> slots;  // slot id -> allocation id, "" when free
  };
  struct pending {
    std::string allocation_id;
    int slots;
  };

  agent_slots* find_agent(const std::string& id);

  std::vector<agent_slots> agents_;  // registration order is first-fit order
  std::deque<pending> queue_;
  std::map<std::string, std::string> assigned_;  // allocation id -> agent id
};

} // namespace det::scheduler
