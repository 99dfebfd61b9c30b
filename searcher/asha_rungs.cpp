#include "searcher/asha_rungs.hpp"

#include <algorithm>
#include <cmath>

namespace det::searcher {

size_t rung::insert(int64_t request_id, double metric) {
  const entry at{metric, --next_order_, request_id};
  ++size_;
  if (blocks_.empty()) {
    blocks_.push_back({at});
    lasts_.push_back(at);
    recount();
    return 0;
  }
  // The first block whose last entry ranks after it, or the last block.
  auto block = static_cast<size_t>(std::lower_bound(lasts_.begin(), lasts_.end(), at) - lasts_.begin());
  if (block == blocks_.size()) --block;
  auto& entries = blocks_[block];
  auto place = std::lower_bound(entries.begin(), entries.end(), at);
  auto index = static_cast<size_t>(place - entries.begin());
  entries.insert(place, at);
  lasts_[block] = entries.back();
  for (size_t i = block + 1; i <= counts_.size(); i += i & (~i + 1)) ++counts_[i - 1];
  auto rank = entries_before(block) + index;
  if (entries.size() >= block_capacity) split(block);
  return rank;
}

size_t rung::entries_before(size_t block) const {
  size_t before = 0;
  for (size_t i = block; i > 0; i -= i & (~i + 1)) before += counts_[i - 1];
  return before;
}

void rung::split(size_t block) {
  auto& full = blocks_[block];
  std::vector<entry> upper(full.begin() + static_cast<std::ptrdiff_t>(full.size() / 2), full.end());
  full.resize(full.size() / 2);
  lasts_[block] = full.back();
  lasts_.insert(lasts_.begin() + static_cast<std::ptrdiff_t>(block) + 1, upper.back());
  blocks_.insert(blocks_.begin() + static_cast<std::ptrdiff_t>(block) + 1, std::move(upper));
  recount();
}

void rung::recount() {
  // Built in O(blocks): each node adds itself to its parent.
  counts_.assign(blocks_.size(), 0);
  for (size_t i = 1; i <= counts_.size(); ++i) {
    counts_[i - 1] += blocks_[i - 1].size();
    auto parent = i + (i & (~i + 1));
    if (parent <= counts_.size()) counts_[parent - 1] += counts_[i - 1];
  }
}

void rung::remove(int64_t request_id) {
  for (size_t b = 0; b < blocks_.size(); ++b) {
    auto& entries = blocks_[b];
    auto it = std::find_if(entries.begin(), entries.end(),
                           [request_id](const entry& e) { return e.request_id == request_id; });
    if (it == entries.end()) continue;
    entries.erase(it);
    --size_;
    if (entries.empty()) {
      blocks_.erase(blocks_.begin() + static_cast<std::ptrdiff_t>(b));
      lasts_.erase(lasts_.begin() + static_cast<std::ptrdiff_t>(b));
    } else {
      lasts_[b] = entries.back();
    }
    recount();
    return;
  }
}

void rung::for_each(const std::function<void(int64_t, double)>& f) const {
  for (const auto& entries : blocks_)
    for (const auto& e : entries) f(e.request_id, e.metric);
}

void rung::assign(std::vector<std::pair<int64_t, double>> entries) {
  // A snapshot's entries are in rank order; any others (a damaged snapshot) are put in it, keeping
  // their order among equal metrics, as the blocks' searches need.
  for (auto& [id, metric] : entries)
    if (std::isnan(metric)) metric = exited_trial_metric;
  std::stable_sort(entries.begin(), entries.end(), [](const auto& a, const auto& b) { return a.second < b.second; });
  blocks_.clear();
  lasts_.clear();
  const auto n = static_cast<int64_t>(entries.size());
  // Half full, as split leaves them: the next inserts move short blocks.
  constexpr int64_t fill = block_capacity / 2;
  for (int64_t i = 0; i < n; ++i) {
    if (i % fill == 0) blocks_.emplace_back().reserve(block_capacity);
    blocks_.back().push_back(entry{entries[i].second, i - n, entries[i].first});
  }
  for (const auto& block : blocks_) lasts_.push_back(block.back());
  size_ = entries.size();
  next_order_ = -n;
  recount();
}

std::vector<rung> make_rungs(int64_t num_rungs, double divisor, int64_t max_length) {
  std::vector<rung> rungs;
  rungs.reserve(static_cast<size_t>(std::max<int64_t>(num_rungs, 0)));
  for (int64_t i = 0; i < num_rungs; ++i) {
    double downsampling = std::pow(divisor, static_cast<double>(num_rungs - i - 1));
    auto units = static_cast<int64_t>(static_cast<double>(max_length) / downsampling);
    rungs.emplace_back(std::max<int64_t>(units, 1));
  }
  return rungs;
}

double asha_progress(size_t rung0_results, int64_t max_trials, int64_t valid_exits) {
  if (max_trials <= 0) return 0.0;
  auto most = static_cast<double>(max_trials);
  double progress = static_cast<double>(rung0_results) / (1.2 * most);
  if (static_cast<int64_t>(rung0_results) == max_trials)
    progress = std::max(progress, static_cast<double>(valid_exits) / most);
  return std::clamp(progress, 0.0, 1.0);
}

double ranked_metric(double reported, bool smaller_is_better) {
  // A NaN would break the sorted order every later insert relies on.
  if (std::isnan(reported)) return exited_trial_metric;
  return smaller_is_better ? reported : -reported;
}

} // namespace det::searcher
