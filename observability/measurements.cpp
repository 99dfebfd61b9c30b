#include "observability/measurements.hpp"

#include <algorithm>

namespace det::observability {

histogram::histogram(std::vector<double> upper_bounds)
    : bounds_(std::move(upper_bounds)), counts_(new std::atomic<uint64_t>[bounds_.size() + 1]) {
  for (size_t i = 0; i <= bounds_.size(); ++i) counts_[i].store(0, std::memory_order_relaxed);
}

void histogram::observe(double value) {
  const auto bucket = std::lower_bound(bounds_.begin(), bounds_.end(), value) - bounds_.begin();  // le: value <= bound
  counts_[bucket].fetch_add(1, std::memory_order_relaxed);
  double sum = sum_.load(std::memory_order_relaxed);
  while (!sum_.compare_exchange_weak(sum, sum + value, std::memory_order_relaxed)) {
  }
}

// Concurrent observations may land between the reads, so the sum can be a few observations
// apart from the counts; the counts themselves stay cumulative, as the format requires.
histogram::snapshot histogram::read() const {
  snapshot s;
  s.upper_bounds = bounds_;
  s.sum = sum_.load(std::memory_order_relaxed);
  uint64_t running = 0;
  for (size_t i = 0; i < bounds_.size(); ++i) {
    running += counts_[i].load(std::memory_order_relaxed);
    s.cumulative.push_back(running);
  }
  s.count = running + counts_[bounds_.size()].load(std::memory_order_relaxed);
  return s;
}

histogram& histogram_family::with(const std::string& label_value) {
  std::lock_guard<std::mutex> lock(mutex_);
  auto& member = members_[label_value];
  if (!member) member = std::make_unique<histogram>(bounds_);
  return *member;
}

std::vector<std::pair<std::string, histogram::snapshot>> histogram_family::read() const {
  std::lock_guard<std::mutex> lock(mutex_);
  std::vector<std::pair<std::string, histogram::snapshot>> out;
  for (const auto& [value, member] : members_) out.emplace_back(value, member->read());
  return out;
}

namespace {

// From 100 µs (a pass over a few requests, a commit of one report) to 10 s (a stalled disk).
std::vector<double> latency_bounds() {
  return {0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10};
}

}  // namespace

master_measurements::master_measurements()
    : commit_seconds(latency_bounds()), scheduling_pass_seconds(latency_bounds()), http_request_seconds(latency_bounds()) {}

master_measurements& measurements() {
  static master_measurements instance;
  return instance;
}

}  // namespace det::observability
