#include "master/persistence/change_feed.hpp"

#include <algorithm>
#include <chrono>

namespace det {

namespace {

// Distinct for every master start: microseconds of the start time are enough for one cluster.
std::string new_generation() {
  return std::to_string(
      std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::system_clock::now().time_since_epoch()).count());
}

}  // namespace

change_feed::change_feed(size_t capacity) : capacity_(capacity), generation_(new_generation()) {}

void change_feed::push(change c) {
  c.seq = next_seq_++;
  changes_.push_back(std::move(c));
  if (changes_.size() > capacity_) changes_.pop_front();
}

void change_feed::publish_metrics(const pb::MetricBatch& committed) {
  auto batch = std::make_shared<const std::string>(committed.SerializeAsString());
  std::lock_guard<std::mutex> lock(mutex_);
  for (int i = 0; i < committed.reports_size(); ++i) {
    change c;
    c.kind = change_kind::metrics;
    c.id = committed.reports(i).trial_id();
    c.batch = batch;
    c.index = i;
    push(std::move(c));
  }
}

void change_feed::publish(change_kind kind, int64_t id, int64_t experiment_id) {
  std::lock_guard<std::mutex> lock(mutex_);
  change c;
  c.kind = kind;
  c.id = id;
  c.experiment_id = experiment_id;
  push(std::move(c));
}

uint64_t change_feed::latest() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return next_seq_ - 1;
}

change_feed::read_result change_feed::read_after(uint64_t after, size_t limit) const {
  std::lock_guard<std::mutex> lock(mutex_);
  read_result out;
  if (after + 1 >= next_seq_) return out;
  if (changes_.empty() || changes_.front().seq > after + 1) {
    out.fell_behind = true;
    return out;
  }
  // Seqs are consecutive, so the first wanted change is at a known place.
  auto first = changes_.begin() + static_cast<std::ptrdiff_t>(after + 1 - changes_.front().seq);
  auto last = first + static_cast<std::ptrdiff_t>(std::min<size_t>(limit, changes_.end() - first));
  out.changes.assign(first, last);
  return out;
}

}  // namespace det
