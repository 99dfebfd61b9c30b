#pragma once
// What a trial produces, turned into reports to its trial on the master: metrics and
// checkpoints go there, log lines to standard output (which the agent ships).

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <string>

#include "gpu/harness.hpp"
#include "messages/trial.pb.h"
#include "tensorboard/event_file_writer.hpp"

namespace det::runtime {

class worker_connection;

/// Sends each report to the trial actor without stopping training: at most one batch of reports
/// is in flight, and reports made meanwhile wait (up to 100) and go as the next batch once it is
/// answered, so a worker runs at most that far ahead of what the master has taken in. A report
/// goes when the loop next asks should_stop(), so that the reports of one step (training, then a
/// validation) go as one batch; a validation goes as soon as the batch in flight is answered,
/// with what waits; a checkpoint and the end of training (or a failure) send what waits and wait
/// for every answer.
class worker_reporter final : public harness::reporter {
 public:
  /// Training stops gracefully once `stop` is set (the worker got SIGTERM). Training and
  /// validation metrics also go to `events` as they are reported, when there is one.
  worker_reporter(worker_connection& link, int64_t trial_id, std::string allocation_id,
                  const std::atomic<bool>& stop, std::unique_ptr<tensorboard::event_file_writer> events = nullptr);

  void training_metrics(const harness::progress& p, const std::map<std::string, double>& m) override;
  void validation_metrics(const harness::progress& p, const std::map<std::string, double>& m) override;
  void profile_metrics(const std::string& group, const harness::progress& p,
                       const std::map<std::string, double>& m) override;
  void log(const std::string& line) override;

  /// Waits until the master has recorded the checkpoint: a trial that stops right after must not
  /// be restarted without it.
  void checkpoint_saved(const harness::saved_checkpoint& saved) override;

  bool should_stop() override;

  /// Sends the reports that wait and waits for every answer (sending again after a
  /// reconnection), and flushes the event file; throws if the master refused them.
  void drain();

 private:
  void send(const char* group, const harness::progress& p, const std::map<std::string, double>& m);
  /// Once the batch in flight is answered, sends the waiting reports as one batch.
  void send_queued();
  /// Writes to the event file; a failure is logged once and ends the event file, not the run.
  template <class Write>
  void write_events(Write write);

  worker_connection& link_;
  int64_t trial_id_;
  std::string allocation_id_;
  const std::atomic<bool>& stop_;
  pb::MetricBatch queued_;  // reports not sent yet
  std::unique_ptr<tensorboard::event_file_writer> events_;
};

} // namespace det::runtime
