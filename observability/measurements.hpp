#pragma once
// What the master measures about itself for Prometheus: counters and histograms that any thread
// (an actor, the HTTP server's handlers) updates without a lock, read when /prom/ is scraped.

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

namespace det::observability {

/// A count that only rises (Prometheus' counter); it starts at 0 with the process.
class counter {
 public:
  void add(uint64_t n = 1) { value_.fetch_add(n, std::memory_order_relaxed); }
  uint64_t value() const { return value_.load(std::memory_order_relaxed); }

 private:
  std::atomic<uint64_t> value_{0};
};

/// Observations counted in buckets with fixed upper bounds, with their sum (Prometheus' histogram).
class histogram {
 public:
  /// What a scrape reads: counts per bucket, cumulative as the text format wants them.
  struct snapshot {
    std::vector<double> upper_bounds;  ///< the +Inf bucket is `count`
    std::vector<uint64_t> cumulative;  ///< one per bound
    uint64_t count = 0;
    double sum = 0;
  };

  /// `upper_bounds` in increasing order, +Inf left out.
  explicit histogram(std::vector<double> upper_bounds);
  void observe(double value);
  snapshot read() const;

 private:
  std::vector<double> bounds_;
  std::unique_ptr<std::atomic<uint64_t>[]> counts_;  // per bucket, not cumulative; the last is +Inf
  std::atomic<double> sum_{0};
};

/// Histograms that differ by the value of one label (an HTTP route, a resource pool), each made
/// the first time its value is seen.
class histogram_family {
 public:
  explicit histogram_family(std::vector<double> upper_bounds) : bounds_(std::move(upper_bounds)) {}
  histogram& with(const std::string& label_value);
  /// Each label value's snapshot, in the values' order.
  std::vector<std::pair<std::string, histogram::snapshot>> read() const;

 private:
  std::vector<double> bounds_;
  mutable std::mutex mutex_;
  std::map<std::string, std::unique_ptr<histogram>> members_;
};

/// The master process's measurements. One instance per process, as a Prometheus client's
/// default registry is: the code that updates them and the route that reads them share nothing else.
struct master_measurements {
  counter metric_reports_ingested;  ///< rows committed to `metrics`
  counter log_lines_ingested;       ///< rows committed to the logs
  histogram commit_seconds;         ///< the persistence writer's group commits of metrics and logs
  histogram_family scheduling_pass_seconds;  ///< by resource pool
  histogram_family http_request_seconds;     ///< by route pattern, from request read to response ready

  master_measurements();
};

master_measurements& measurements();

}  // namespace det::observability
