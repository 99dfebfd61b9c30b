#pragma once
// What a trial produces, turned into reports to its trial on the master: metrics and
// checkpoints go there, log lines to standard output (which the agent ships).

#include <atomic>
#include <cstdint>
#include <map>
#include <string>

#include "gpu/harness.hpp"

namespace det::runtime {

class worker_connection;

/// Sends each report to the trial actor without stopping training: at most
/// one report is in flight, and its acknowledgement is collected before the
/// next one goes out, so a worker never runs more than one report ahead of
/// what the master has taken in.
class worker_reporter final : public harness::reporter {
 public:
  /// Training stops gracefully once `stop` is set (the worker got SIGTERM).
  worker_reporter(worker_connection& link, int64_t trial_id, std::string allocation_id,
                  const std::atomic<bool>& stop);

  void training_metrics(const harness::progress& p, const std::map<std::string, double>& m) override;
  void validation_metrics(const harness::progress& p, const std::map<std::string, double>& m) override;
  void profile_metrics(const std::string& group, const harness::progress& p,
                       const std::map<std::string, double>& m) override;
  void log(const std::string& line) override;

  /// Waits until the master has recorded the checkpoint: a trial that stops right after must not
  /// be restarted without it.
  void checkpoint_saved(const harness::saved_checkpoint& saved) override;

  bool should_stop() override;

  /// Waits for the report still in flight, if any (sending it again after a reconnection);
  /// throws if the master refused it.
  void drain();

 private:
  void send(const char* group, const harness::progress& p, const std::map<std::string, double>& m);

  worker_connection& link_;
  int64_t trial_id_;
  std::string allocation_id_;
  const std::atomic<bool>& stop_;
};

} // namespace det::runtime
