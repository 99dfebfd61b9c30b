#pragma once
// A set of trial request ids kept sorted in a vector. Ids mostly arrive in increasing order, so an
// insertion is usually an append and a lookup a binary search; a snapshot, taken at every step of
// a search, copies them as they are, already in the order that makes the same search give the
// same bytes (a hash set had to be sorted each time: 4 % of a busy master's CPU).

#include <algorithm>
#include <cstdint>
#include <vector>

namespace det::searcher {

class id_set {
 public:
  id_set() = default;
  template <class Iterator>
  id_set(Iterator first, Iterator last) : ids_(first, last) {
    std::sort(ids_.begin(), ids_.end());
    ids_.erase(std::unique(ids_.begin(), ids_.end()), ids_.end());
  }

  /// Whether `id` was not there yet.
  bool insert(int64_t id) {
    if (ids_.empty() || ids_.back() < id) {
      ids_.push_back(id);
      return true;
    }
    auto at = std::lower_bound(ids_.begin(), ids_.end(), id);
    if (at != ids_.end() && *at == id) return false;
    ids_.insert(at, id);
    return true;
  }
  bool contains(int64_t id) const { return std::binary_search(ids_.begin(), ids_.end(), id); }
  std::size_t size() const { return ids_.size(); }
  /// In increasing order.
  std::vector<int64_t>::const_iterator begin() const { return ids_.begin(); }
  std::vector<int64_t>::const_iterator end() const { return ids_.end(); }

 private:
  std::vector<int64_t> ids_;
};

}  // namespace det::searcher
