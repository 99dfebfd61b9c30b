#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <unordered_map>
#include <vector>

namespace det {

/// Which of the persistence writer's metric writers a batch of reports goes to. The writers commit
/// on connections of their own, side by side, so that one's server inserts rows while the other's
/// commits. A trial's batches stay on one writer while any of them is uncommitted: its reports then
/// commit in the order they came, as a restored trial expects (it takes its highest stored step to
/// mean that every earlier one is stored too). A trial with nothing uncommitted goes to the writer
/// with the fewest uncommitted reports.
class metric_routing {
 public:
  explicit metric_routing(std::size_t writers);

  /// The writer for a batch of the reports of `trials` (distinct ids), or nullopt when some of them
  /// are uncommitted on different writers: everything must commit before this batch goes anywhere.
  std::optional<std::size_t> writer_for(const std::vector<int64_t>& trials) const;
  /// A batch of `reports` reports of `trials` went to `writer`.
  void appended(std::size_t writer, const std::vector<int64_t>& trials, std::size_t reports);
  /// A batch that went to `writer` has committed or failed.
  void settled(std::size_t writer, const std::vector<int64_t>& trials, std::size_t reports);
  /// Reports sent to `writer` and not yet settled.
  std::size_t uncommitted(std::size_t writer) const { return uncommitted_.at(writer); }

 private:
  struct route {
    std::size_t writer;
    std::size_t batches;  // unsettled
  };
  std::unordered_map<int64_t, route> routes_;  // trials with unsettled batches
  std::vector<std::size_t> uncommitted_;       // by writer
};

}  // namespace det
