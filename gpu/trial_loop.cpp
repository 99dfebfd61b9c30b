#include "gpu/trial_loop.hpp"

#include "gpu/checkpoint_files.hpp"
#include "gpu/system_sampler.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <optional>
#include <utility>
#include <vector>

namespace det::harness {

namespace {

// How many batches in a row a distributed trial may train without averaging anything: enough for
// any sensible gradient accumulation, few enough that a trial that never averages stops early.
constexpr int64_t max_unaveraged_batches = 32;

using clock_type = std::chrono::steady_clock;

class plan_context final : public det::trial_context {
 public:
  plan_context(const training_plan& plan, reporter& out, step_timings& timings)
      : timings_(timings),
        hparams_json_(plan.hparams_json.empty() ? "{}" : plan.hparams_json),
        data_json_(plan.data_json.empty() ? "{}" : plan.data_json),
        hparams_(nlohmann::json::parse(hparams_json_, nullptr, false)),
        seed_(plan.seed),
        mixed_precision_(plan.mixed_precision),
        gradient_clip_norm_(plan.gradient_clip_norm),
        cuda_graph_(plan.cuda_graph),
        peers_(plan.peers),
        out_(out) {
    if (hparams_.is_discarded()) throw det::invalid_hyperparameters("The hyperparameters are not valid JSON.");
    if (!hparams_.is_object()) throw det::invalid_hyperparameters("The hyperparameters are not a JSON object.");
  }

  const std::string& hparams_json() const override { return hparams_json_; }
  double hparam(const std::string& name) const override {
    auto it = hparams_.find(name);
    if (it == hparams_.end()) throw det::invalid_hyperparameters("There is no hyperparameter '" + name + "'.");
    if (it->is_boolean()) return it->get<bool>() ? 1 : 0;
    if (!it->is_number()) throw det::invalid_hyperparameters("The hyperparameter '" + name + "' is not a number.");
    return it->get<double>();
  }
  std::string hparam_text(const std::string& name) const override {
    auto it = hparams_.find(name);
    if (it == hparams_.end()) throw det::invalid_hyperparameters("There is no hyperparameter '" + name + "'.");
    return it->is_string() ? it->get<std::string>() : it->dump();
  }
  const std::string& data_json() const override { return data_json_; }
  uint64_t seed() const override { return seed_; }
  const std::string& mixed_precision() const override { return mixed_precision_; }
  double gradient_clip_norm() const override { return gradient_clip_norm_; }
  bool cuda_graph() const override { return cuda_graph_; }
  int rank() const override { return peers_ ? peers_->rank() : 0; }
  int world_size() const override { return peers_ ? peers_->size() : 1; }
  void average(float* values, std::size_t count) override {
    if (peers_ && peers_->size() > 1) peers_->average(values, count);
  }
  void broadcast(float* values, std::size_t count) override {
    if (peers_ && peers_->size() > 1) peers_->broadcast(values, count);
  }
  void log(const std::string& line) override { out_.log(line); }
  void record_timing(const std::string& name, double seconds) override { timings_.add(name, seconds); }

 private:
  step_timings& timings_;
  std::string hparams_json_;
  std::string data_json_;
  nlohmann::json hparams_;
  uint64_t seed_;
  std::string mixed_precision_;
  double gradient_clip_norm_;
  bool cuda_graph_;
  collective* peers_;
  reporter& out_;
};

int64_t total_batches(const training_plan& plan, int64_t batch_size, int64_t records_per_epoch) {
  if (plan.length <= 0)
    throw std::runtime_error("The trial's length must be positive, not " + std::to_string(plan.length) + ".");
  auto batches_for_records = [&](int64_t records) { return (records + batch_size - 1) / batch_size; };
  switch (plan.length_unit) {
    case unit::batches: return plan.length;
    case unit::records: return batches_for_records(plan.length);
    case unit::epochs: return batches_for_records(plan.length * records_per_epoch);
  }
  throw std::logic_error("unhandled length unit");
}

// Accumulates one reporting period; validation and checkpoint time is left out so that
// samples/s measures training only.
class training_period {
 public:
  void resume() { resumed_ = clock_type::now(); }
  void pause() { seconds_ += std::chrono::duration<double>(clock_type::now() - resumed_).count(); }
  void add(const det::metrics& batch, int64_t records) {
    for (const auto& [name, value] : batch) sums_[name] += value;
    ++batches_;
    records_ += records;
  }
  int64_t batches() const { return batches_; }
  std::map<std::string, double> close() {
    pause();
    std::map<std::string, double> metrics;
    for (const auto& [name, sum] : sums_) metrics[name] = sum / static_cast<double>(batches_);
    metrics["samples_per_second"] = seconds_ > 0 ? static_cast<double>(records_) / seconds_ : 0;
    *this = training_period{};
    resume();
    return metrics;
  }

 private:
  clock_type::time_point resumed_ = clock_type::now();
  double seconds_ = 0;
  std::map<std::string, double> sums_;
  int64_t batches_ = 0;
  int64_t records_ = 0;
};

// Sums each metric over the processes, whose metrics must have the same names (compared by count:
// the sums of the counts and of their squares match n*c and n*c*c only if every process has c,
// and every process sees the same sums, so all of them throw or none).
void sum_over_processes(collective& peers, std::map<std::string, double>& metrics, const char* what) {
  const double count = static_cast<double>(metrics.size()), n = peers.size();
  double counts[2] = {count, count * count};
  peers.sum(counts, 2);
  if (counts[1] * n != counts[0] * counts[0])
    throw std::runtime_error(std::string("The trial's processes report different ") + what +
                             " metrics: each must return the same names.");
  std::vector<double> values;
  for (const auto& [name, value] : metrics) values.push_back(value);
  peers.sum(values.data(), values.size());
  auto value = values.begin();
  for (auto& [name, sum] : metrics) sum = *value++;
}

// A validation through the trial's loader: each metric's mean over its batches. Processes of a
// distributed run share the batches out (unless there are fewer batches than processes).
det::metrics mean_over(det::data_loader& data, det::trial& t, collective* peers) {
  std::map<std::string, double> sums;
  const int64_t batches = data.batches_per_epoch();
  const bool shared = peers && batches >= peers->size();
  const int64_t first = shared ? peers->rank() : 0, stride = shared ? peers->size() : 1;
  for (int64_t index = first; index < batches; index += stride) {
    auto b = data.get(0, index);
    for (const auto& [name, value] : t.evaluate_batch(b)) sums[name] += value;
  }
  if (shared) sum_over_processes(*peers, sums, "validation");
  for (auto& [name, sum] : sums) sum /= static_cast<double>(std::max<int64_t>(batches, 1));
  return sums;
}

// Whether any process of a distributed run was asked to stop, agreed in an exchange so that they
// all stop after the same batch. The exchange is a barrier of every process, which at every batch
// cost small batches a few per cent of their time, so the chief paces it: each check also carries
// how many batches to train until the next, about stop_check_period of its training at the pace
// of the batches since the last check (a stop waits longer only when batches slow down at once).
class stop_agreement {
 public:
  /// `batch`: where training starts (a resume's batch), the first check's baseline.
  stop_agreement(collective* peers, int64_t batch) : peers_(peers), checked_batch_(batch) {}

  bool any(int64_t batch, bool mine) {
    if (!peers_) return mine;
    if (batch < next_check_) return false;
    double values[2] = {mine ? 1.0 : 0.0, peers_->rank() == 0 ? batches_until_next(batch) : 0.0};
    peers_->sum(values, 2);
    next_check_ = batch + std::max<int64_t>(static_cast<int64_t>(values[1]), 1);
    return values[0] > 0;
  }

 private:
  static constexpr auto stop_check_period = std::chrono::milliseconds(50);
  static constexpr int64_t most_batches_between_checks = 100;

  double batches_until_next(int64_t batch) {
    const auto now = clock_type::now();
    const auto batches = batch - checked_batch_;
    double until = 1;
    if (batches > 0) {
      const auto per_batch = (now - checked_at_) / batches;
      if (per_batch.count() > 0)
        until = std::clamp<double>(static_cast<double>(stop_check_period / per_batch), 1, most_batches_between_checks);
    }
    checked_at_ = now;
    checked_batch_ = batch;
    return until;
  }

  collective* peers_;
  int64_t next_check_ = 0;
  int64_t checked_batch_;
  clock_type::time_point checked_at_ = clock_type::now();
};

} // namespace

void step_timings::add(const std::string& name, double seconds) {
  if (!enabled_) return;
  auto& [sum, count] = sums_[name];
  sum += seconds;
  ++count;
}

std::map<std::string, double> step_timings::close() {
  std::map<std::string, double> means;
  for (const auto& [name, sum_count] : sums_) means[name] = sum_count.first / static_cast<double>(sum_count.second);
  sums_.clear();
  return means;
}

std::unique_ptr<det::trial_context> make_trial_context(const training_plan& plan, reporter& out, step_timings& timings) {
  return std::make_unique<plan_context>(plan, out, timings);
}

bool run_trial_loop(det::trial& t, const training_plan& plan, reporter& out, const std::string& format,
                    step_timings& timings) {
  collective* peers = plan.peers && plan.peers->size() > 1 ? plan.peers : nullptr;
  const bool chief = !peers || peers->rank() == 0;
  // Times `f` as `name` when profiling.
  auto timed = [&](const char* name, auto&& f) {
    if (!timings.enabled()) return f();
    auto start = clock_type::now();
    struct record {
      step_timings& timings;
      const char* name;
      clock_type::time_point start;
      ~record() { timings.add(name, std::chrono::duration<double>(clock_type::now() - start).count()); }
    } guard{timings, name, start};
    return f();
  };
  std::optional<system_sampler> sampler;
  if (plan.profiling && chief) sampler.emplace();
  const int64_t batch_size = t.batch_size();
  if (batch_size <= 0) throw invalid_hyperparameters("The batch size must be positive, not " + std::to_string(batch_size) + ".");
  auto training_data = t.build_training_data_loader();
  auto validation_data = t.build_validation_data_loader();
  const int64_t batches_per_epoch = training_data ? training_data->batches_per_epoch() : 0;
  if (training_data && batches_per_epoch < 1)
    throw std::runtime_error("The trial's training data loader has no batches.");
  const int64_t records_per_epoch = plan.records_per_epoch > 0 ? plan.records_per_epoch
                                    : t.records_per_epoch() > 0 ? t.records_per_epoch()
                                                                : batches_per_epoch * batch_size;
  if (records_per_epoch <= 0 && plan.length_unit == unit::epochs)
    throw std::runtime_error(
        "The searcher's length is in epochs, but neither the config's records_per_epoch, the trial's "
        "records_per_epoch() nor a training data loader says how long an epoch is.");
  const int64_t goal = total_batches(plan, batch_size, std::max<int64_t>(records_per_epoch, 1));

  progress at;
  if (!plan.resume_from.empty()) {
    at = read_checkpoint(plan.resume_from, format).at;
    timed("checkpoint_load", [&] { t.load(plan.resume_from, false); });
    out.log("Resuming from checkpoint " + plan.resume_from + " at batch " + std::to_string(at.batches) + ".");
  } else if (!plan.warm_start_from.empty()) {
    read_checkpoint(plan.warm_start_from, format);
    t.load(plan.warm_start_from, true);
    out.log("Starting from the weights of checkpoint " + plan.warm_start_from + ".");
  }

  int64_t validated_at = -1;
  int64_t checkpointed_at = plan.resume_from.empty() ? -1 : at.batches;
  training_period period;
  auto validate = [&] {
    t.synchronize();  // the batches queued on a GPU are training time
    period.pause();
    // Every process validates (evaluate_full in full): on_validation_end must see the same metrics
    // everywhere.
    auto metrics = timed("evaluate", [&] {
      return validation_data ? mean_over(*validation_data, t, peers) : t.evaluate_full();
    });
    if (chief) out.validation_metrics(at, metrics);
    t.on_validation_end(at.batches, metrics);
    validated_at = at.batches;
    period.resume();
  };
  auto checkpoint = [&] {
    if (plan.checkpoint_dir.empty() || checkpointed_at == at.batches) return;
    checkpointed_at = at.batches;
    if (!chief) return;  // the processes' models are the same: the chief's checkpoint holds them
    t.synchronize();
    period.pause();
    auto saved = timed("checkpoint_save", [&] {
      checkpoint_writer writer(plan.checkpoint_dir);
      t.save(writer.dir());
      return writer.commit(format, at);
    });
    out.checkpoint_saved(saved);
    period.resume();
  };

  auto report_timings = [&] {
    auto means = timings.close();
    if (!means.empty() && chief) out.profile_metrics("timings", at, means);
  };
  loop_statistics unused;
  loop_statistics& counted = plan.statistics ? *plan.statistics : unused;
  auto report_training = [&] {
    // Taken before the period's clock stops: on a GPU the take waits for the period's batches,
    // whose time samples_per_second must include.
    auto taken = t.take_training_metrics();
    auto metrics = period.close();
    for (auto& [name, mean] : taken) metrics[name] = mean;
    ++counted.metric_takes;
    ++counted.reports;
    if (peers) {
      sum_over_processes(*peers, metrics, "training");
      for (auto& [name, sum] : metrics) sum /= peers->size();
    }
    if (chief) out.training_metrics(at, metrics);
  };

  bool stopped = false;
  stop_agreement stops(peers, at.batches);
  int64_t batches_unaveraged = 0;  // in a row: a trial accumulating gradients averages every k-th
  while (at.batches < goal) {
    if (stops.any(at.batches, out.should_stop())) {
      stopped = true;
      break;
    }
    // With a loader, the batch is the one at the trial's position in the data, so a resume
    // continues with the batch an uninterrupted run would have trained.
    det::batch next;
    int64_t epoch = records_per_epoch > 0 ? at.records / records_per_epoch : 0;
    if (training_data) {
      epoch = at.batches / batches_per_epoch;
      next = timed("dataloader_next", [&] { return training_data->get(epoch, at.batches % batches_per_epoch); });
    }
    const auto exchanges = peers ? peers->exchanges() : 0;
    auto batch_metrics = timed("train_batch", [&] { return t.train_batch(next, epoch, at.batches); });
    ++counted.batches;
    if (!batch_metrics.empty()) ++counted.batches_with_metrics;
    period.add(batch_metrics, batch_size);
    // A trial that does not average its gradients would train one model per process, each
    // on its share, under metrics that mix them. One that accumulates gradients averages only
    // every k-th batch: the check allows up to max_unaveraged_batches in a row, at any point of
    // the run; every process stops alike.
    batches_unaveraged = peers && peers->exchanges() == exchanges ? batches_unaveraged + 1 : 0;
    if (batches_unaveraged > max_unaveraged_batches)
      throw std::runtime_error(
          "The trial trains as several processes (on several agents, or one per GPU slot) but its train_batch "
          "averaged nothing with the other processes for " + std::to_string(batches_unaveraged) + " batches in a "
          "row: use a det::gradient_averager or det::average_gradients (det/torch_data_parallel.hpp) or "
          "trial_context::average between the backward pass and the optimizer step, or give it "
          "slots_per_trial = 1 on GPUs, or CPU slots that fit one agent.");
    if (sampler)
      for (auto& sample : sampler->take()) out.profile_metrics("system", at, sample);
    ++at.batches;
    at.records += batch_size;
    at.epochs = static_cast<double>(at.records) / static_cast<double>(std::max<int64_t>(records_per_epoch, 1));
    if (plan.report_every_batches > 0 && period.batches() == plan.report_every_batches) {
      report_training();
      report_timings();
    }
    if (plan.min_validation_period_batches > 0 && at.batches % plan.min_validation_period_batches == 0) validate();
    if (plan.min_checkpoint_period_batches > 0 && at.batches % plan.min_checkpoint_period_batches == 0) checkpoint();
  }
  if (period.batches() > 0) report_training();
  if (stopped) {
    out.log("Stopped after " + std::to_string(at.batches) + " of " + std::to_string(goal) + " batches as requested.");
    checkpoint();
    report_timings();
    return true;
  }
  if (validated_at != at.batches) validate();
  checkpoint();
  report_timings();
  return false;
}

} // namespace det::harness
