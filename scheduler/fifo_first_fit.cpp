#include "scheduler/fifo_first_fit.hpp"

#include <algorithm>
#include <sstream>

namespace det::scheduler {

fifo_first_fit::agent_slots* fifo_first_fit::find_agent(const std::string& id) {
  auto it = std::find_if(agents_.begin(), agents_.end(), [&](auto& a) { return a.id == id; });
  return it == agents_.end() ? nullptr : &*it;
}

void fifo_first_fit::add_agent(const std::string& agent_id, const std::vector<int>& slot_ids) {
  remove_agent(agent_id);
  agent_slots a{agent_id, {}};
  for (int s : slot_ids)
    a.slots.emplace(s, std::string{});
  agents_.push_back(std::move(a));
}

std::vector<std::string> fifo_first_fit::remove_agent(const std::string& agent_id) {
  std::vector<std::string> lost;
  for (auto it = assigned_.begin(); it != assigned_.end();) {
    if (it->second == agent_id) {
      lost.push_back(it->first);
      it = assigned_.erase(it);
    } else {
      ++it;
    }
  }
  agents_.erase(std::remove_if(agents_.begin(), agents_.end(),
                               [&](auto& a) { return a.id == agent_id; }),
                agents_.end());
  return lost;
}

void fifo_first_fit::request(const std::string& allocation_id, int slots) {
  queue_.push_back({allocation_id, std::max(slots, 0)});
}

void fifo_first_fit::release(const std::string& allocation_id) {
  queue_.erase(std::remove_if(queue_.begin(), queue_.end(),
                              [&](auto& p) { return p.allocation_id == allocation_id; }),
               queue_.end());
  auto it = assigned_.find(allocation_id);
  if (it == assigned_.end())
    return;
  if (auto* agent = find_agent(it->second))
    for (auto& [slot, owner] : agent->slots)
      if (owner == allocation_id)
        owner.clear();
  assigned_.erase(it);
}

std::vector<slot_assignment> fifo_first_fit::schedule() {
  std::vector<slot_assignment> out;
  while (!queue_.empty()) {
    auto& head = queue_.front();
    bool placed = false;
    for (auto& agent : agents_) {
      std::vector<int> free;
      for (auto& [slot, owner] : agent.slots)
        if (owner.empty())
          free.push_back(slot);
      if (static_cast<int>(free.size()) < head.slots)
        continue;
      free.resize(head.slots);
      for (int s : free)
        agent.slots[s] = head.allocation_id;
      assigned_[head.allocation_id] = agent.id;
      out.push_back({head.allocation_id, agent.id, std::move(free)});
      placed = true;
      break;
    }
    if (!placed)
      break;
    queue_.pop_front();
  }
  return out;
}

int fifo_first_fit::total_slots() const {
  int n = 0;
  for (auto& a : agents_)
    n += static_cast<int>(a.slots.size());
  return n;
}

int fifo_first_fit::free_slots() const {
  int n = 0;
  for (auto& a : agents_)
    for (auto& [slot, owner] : a.slots)
      n += owner.empty() ? 1 : 0;
  return n;
}

std::string fifo_first_fit::describe() const {
  std::ostringstream os;
  os << "policy: fifo, first fit\n"
     << "slots: " << free_slots() << " free of " << total_slots() << "\n";
  for (auto& a : agents_) {
    os << "agent " << a.id << ":";
    for (auto& [slot, owner] : a.slots)
      os << " " << slot << "=" << (owner.empty() ? "free" : owner);
    os << "\n";
  }
  os << "queue (" << queue_.size() << "):";
  for (auto& p : queue_)
    os << " " << p.allocation_id << "[" << p.slots << "]";
  os << "\n";
  return os.str();
}

} // namespace det::scheduler
