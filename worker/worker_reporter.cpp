// What a trial produces, turned into reports to its trial on the master (worker_reporter.hpp).

#include "worker/worker_reporter.hpp"

#include <iostream>
#include <stdexcept>
#include <string_view>
#include <utility>

#include "messages/common.pb.h"
#include "messages/timestamp.hpp"
#include "worker/worker_connection.hpp"

namespace det::runtime {

worker_reporter::worker_reporter(worker_connection& link, int64_t trial_id, std::string allocation_id,
                                 const std::atomic<bool>& stop, std::unique_ptr<tensorboard::event_file_writer> events)
    : link_(link), trial_id_(trial_id), allocation_id_(std::move(allocation_id)), stop_(stop), events_(std::move(events)) {}

void worker_reporter::training_metrics(const harness::progress& p, const std::map<std::string, double>& m) {
  write_events([&](auto& file) { file.write_scalars("training", p.batches, tensorboard::wall_time_now(), m); });
  send("training", p, m);
}

void worker_reporter::validation_metrics(const harness::progress& p, const std::map<std::string, double>& m) {
  write_events([&](auto& file) {
    file.write_scalars("validation", p.batches, tensorboard::wall_time_now(), m);
    file.flush();  // validations are rare, and a searcher may stop the trial right after one
  });
  send("validation", p, m);
}

template <class Write>
void worker_reporter::write_events(Write write) {
  if (!events_) return;
  try {
    write(*events_);
  } catch (const std::exception& e) {
    std::cout << "trial " << trial_id_ << ": no more TensorBoard events: " << e.what() << std::endl;
    events_.reset();
  }
}

void worker_reporter::profile_metrics(const std::string& group, const harness::progress& p,
                                      const std::map<std::string, double>& m) {
  send(group.c_str(), p, m);
}

void worker_reporter::log(const std::string& line) {
  std::cout << line << std::endl;
}

void worker_reporter::checkpoint_saved(const harness::saved_checkpoint& saved) {
  drain();
  pb::Checkpoint c;
  c.set_uuid(saved.uuid);
  c.set_trial_id(trial_id_);
  c.set_allocation_id(allocation_id_);
  c.set_steps_completed(saved.at.batches);
  c.set_total_records(saved.at.records);
  c.set_total_epochs(saved.at.epochs);
  for (const auto& [name, size] : saved.resources)
    (*c.mutable_resources())[name] = size;
  bool recorded = link_.call(c, "checkpoint " + saved.uuid);
  if (!recorded)
    throw std::runtime_error("the master did not record checkpoint " + saved.uuid +
                             ": its database refused it, or the run is over");
  std::cout << "saved checkpoint " << saved.uuid << " at batch " << saved.at.batches << std::endl;
}

bool worker_reporter::should_stop() {
  // The next step begins: this one's reports go, unless the batch in flight is still unanswered.
  if (queued_.reports_size() > 0 && link_.metrics_answered()) send_queued();
  return stop_.load(std::memory_order_relaxed);
}

namespace {

// Reports that come faster than the master answers wait, up to this many, and then go together:
// the loop trains on instead of waiting a round trip per report, and a crash loses no more.
constexpr int max_queued_reports = 100;

} // namespace

void worker_reporter::drain() {
  write_events([](auto& file) { file.flush(); });
  send_queued();
  link_.await_metrics();
}

void worker_reporter::send_queued() {
  link_.await_metrics();
  if (queued_.reports_size() == 0)
    return;
  queued_.set_allocation_id(allocation_id_);
  auto group = queued_.reports(queued_.reports_size() - 1).group();
  link_.send_metrics(std::move(queued_), std::move(group));
  queued_.Clear();
}

void worker_reporter::send(const char* group, const harness::progress& p, const std::map<std::string, double>& m) {
  auto* r = queued_.add_reports();
  r->set_trial_id(trial_id_);
  r->set_group(group);
  r->set_total_batches(p.batches);
  r->set_total_records(p.records);
  r->set_total_epochs(p.epochs);
  for (auto& [k, v] : m)
    (*r->mutable_metrics())[k] = v;
  (*r->mutable_metrics())["batches"] = static_cast<double>(p.batches);
  (*r->mutable_metrics())["epochs"] = p.epochs;
  *r->mutable_time() = det::now();
  // A validation goes at once: the searcher waits for it. The rest wait for should_stop(), or go
  // once too many wait.
  if (std::string_view(group) == "validation" || queued_.reports_size() >= max_queued_reports) send_queued();
}

} // namespace det::runtime
