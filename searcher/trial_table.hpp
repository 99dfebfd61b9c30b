#pragma once
// A value per trial request id, for what a search looks up at every event and writes, in
// increasing id order, into the snapshot it takes at every step. Request ids are handed out in
// order from 1 (trial_factory), so they index a vector: a lookup is one load where a hash set
// cost a hash, a probe and a cache miss, and the ids read out in order without a sort. An id far
// beyond the number of ids held (an event about a trial no search made, a corrupt snapshot) goes
// to an ordered map instead, so that stray ids cannot make the vector huge; an owner that holds
// only some of the ids handed out says which ids were (issued).

#include <cstddef>
#include <cstdint>
#include <map>
#include <utility>
#include <vector>

namespace det::searcher {

template <class T>
class trial_table {
 public:
  /// Null when the id has no value.
  T* find(int64_t id) {
    if (in_dense(id)) {
      auto& slot = dense_[static_cast<std::size_t>(id)];
      return slot.present ? &slot.value : nullptr;
    }
    auto it = sparse_.find(id);
    return it == sparse_.end() ? nullptr : &it->second;
  }
  const T* find(int64_t id) const { return const_cast<trial_table*>(this)->find(id); }

  /// The id's value, default-constructed first if it had none.
  T& operator[](int64_t id) {
    if (!in_dense(id) && id >= 0 && static_cast<std::size_t>(id) < dense_limit()) grow_to(id);
    if (in_dense(id)) {
      auto& slot = dense_[static_cast<std::size_t>(id)];
      if (!slot.present) {
        slot.present = true;
        ++size_;
      }
      return slot.value;
    }
    auto [it, inserted] = sparse_.try_emplace(id);
    if (inserted) ++size_;
    return it->second;
  }

  /// The id's value, as operator[], for an id the caller knows was handed out: one below
  /// `issued_end` (a trial_factory's next id). It goes in the vector however few of the ids below
  /// it this table holds (a bracket of adaptive_asha holds a share of its search's): the vector
  /// stays within the ids handed out.
  T& issued(int64_t id, int64_t issued_end) {
    if (!in_dense(id) && id >= 0 && id < issued_end) grow_to(id);
    return (*this)[id];
  }

  std::size_t size() const { return size_; }

  /// Calls `f(id, value)` for every id with a value, in increasing id order.
  template <class F>
  void for_each(F&& f) const {
    auto sparse = sparse_.begin();
    for (; sparse != sparse_.end() && sparse->first < 0; ++sparse) f(sparse->first, sparse->second);
    for (std::size_t id = 0; id < dense_.size(); ++id)
      if (dense_[id].present) f(static_cast<int64_t>(id), dense_[id].value);
    for (; sparse != sparse_.end(); ++sparse) f(sparse->first, sparse->second);
  }

 private:
  struct slot {
    T value{};
    bool present = false;
  };

  bool in_dense(int64_t id) const { return id >= 0 && static_cast<std::size_t>(id) < dense_.size(); }
  // Ids below twice the number held, plus room for a search's first trials, go in the vector: it
  // stays within a constant of the values it holds, whatever ids a snapshot lists.
  std::size_t dense_limit() const { return 2 * size_ + 1024; }

  void grow_to(int64_t id) {
    dense_.resize(static_cast<std::size_t>(id) + 1);
    // Ids that were stray when they came may fit now: every id below the vector's end lives in it.
    for (auto it = sparse_.lower_bound(0); it != sparse_.end() && in_dense(it->first);) {
      dense_[static_cast<std::size_t>(it->first)] = slot{std::move(it->second), true};
      it = sparse_.erase(it);
    }
  }

  std::vector<slot> dense_;
  std::map<int64_t, T> sparse_;
  std::size_t size_ = 0;
};

}  // namespace det::searcher
