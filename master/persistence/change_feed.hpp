#pragma once
// What changed in the stored state, in commit order, for pages that show it live: the
// persistence writer publishes each batch of metric reports and each change of an experiment or
// trial once it is committed, and the gateway's event streams read what came after their cursor.
// In memory only, and bounded: a reader that fell behind, or that comes back after a master
// restart (a new generation), is told to reload from REST and carry on from there.

#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "messages/trial.pb.h"

namespace det {

enum class change_kind : uint8_t {
  metrics,     ///< a metric report of trial `id`, committed
  logs,        ///< trial `id` has new log lines
  experiment,  ///< experiment `id` changed (state, trials, labels, notes, settings)
  trial,       ///< trial `id` changed (state, progress, checkpoints)
};

struct change {
  uint64_t seq = 0;  ///< 1, 2, ... in publication order
  change_kind kind;
  int64_t id = 0;
  int64_t experiment_id = 0;  ///< of a trial's change, when the publisher knows it; else 0
  /// For metrics: the committed batch its report came in, serialized (a pb::MetricBatch), and the
  /// report's place in it. Bytes, not messages: 50,000 reports kept as messages, each freed long
  /// after, cost the metric writers more than storing them did.
  std::shared_ptr<const std::string> batch;
  int index = 0;
};

class change_feed {
 public:
  /// Keeps the newest `capacity` changes: about 25 MB of metric reports at most. A page that falls
  /// further behind (a tab asleep through a burst) reloads from REST.
  explicit change_feed(size_t capacity = 50000);

  /// Names this feed among the master's runs: cursors of another run mean nothing here.
  const std::string& generation() const { return generation_; }

  void publish_metrics(const pb::MetricBatch& committed);
  void publish(change_kind kind, int64_t id, int64_t experiment_id = 0);

  /// The seq of the newest change (0 before any).
  uint64_t latest() const;

  /// What a reader asking for changes after `after` gets: the changes (at most `limit`, oldest
  /// first), or `fell_behind` when some of those were already dropped.
  struct read_result {
    std::vector<change> changes;
    bool fell_behind = false;
  };
  read_result read_after(uint64_t after, size_t limit) const;

 private:
  void push(change c);
  const size_t capacity_;
  const std::string generation_;
  mutable std::mutex mutex_;
  std::deque<change> changes_;
  uint64_t next_seq_ = 1;
};

}  // namespace det
