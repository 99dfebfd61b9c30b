// Harness overhead in one process: samples/s of builtin:mlp trained by det's harness loop, loaded
// from libdet_torch_trials.so as a plugin is (dlopen, DET_TRIAL factory), ÷ the same model, data
// and batches in a bare LibTorch loop. The two alternate, each det run between two bare runs, so
// that drift in the machine's speed hits both sides of a ratio alike; the cluster's own share
// (messages to the master) is measured end to end by bench/cluster_bench.py.
// With --event-files the baseline is the harness itself and the other side writes TensorBoard
// event files as the worker's reporter does, every --report-every batches (100: a cluster's
// default scheduling unit; 1: the worst case).
//   bench_harness_overhead [--rounds 9] [--batches 1500] [--event-files [--report-every 100]]

#include "gpu/builtin_trials.hpp"
#include "gpu/mlp_model.hpp"
#include "gpu/trial_settings.hpp"
#include "tensorboard/event_file_writer.hpp"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <memory>
#include <limits.h>
#include <string>
#include <unistd.h>
#include <vector>

namespace {

using namespace det::harness;
using clock_type = std::chrono::steady_clock;

constexpr int64_t batch_size = 64;
constexpr int64_t report_period = 100;
int64_t report_every = report_period;  // the harness's reporting period (--report-every)

std::string hparams_json() { return R"({"global_batch_size":)" + std::to_string(batch_size) + "}"; }
const char* data_json = R"({"dataset":"fashion-mnist","validation_limit":1000})";

// Timed as the cluster bench times det: from the end of the first report period to the last batch.
double bare_samples_per_second(int64_t batches) {
  auto hparams = parse_mlp_hparams(hparams_json());
  auto data = load_trial_data(parse_data_settings(data_json));
  torch::manual_seed(1);
  mlp model(hparams.hidden_sizes, hparams.dropout);
  auto optimizer = make_optimizer(hparams, model->parameters());
  shuffled_batches stream(data->train, batch_size, 1);
  const int64_t per_epoch = stream.batches_per_epoch();
  auto start = clock_type::now();
  for (int64_t i = 0; i < batches; ++i) {
    if (i == report_period) start = clock_type::now();
    auto [inputs, labels] = stream.get(i / per_epoch, i % per_epoch);
    train_step(model, *optimizer, inputs, labels);
  }
  std::chrono::duration<double> took = clock_type::now() - start;
  return static_cast<double>((batches - report_period) * batch_size) / took.count();
}

// What the worker's reporter does minus the messages: keeps each report's time, and with an
// event file writes the metrics there as the worker's reporter does.
struct timing_reporter : reporter {
  std::vector<std::pair<clock_type::time_point, int64_t>> reports;  // time, records
  std::unique_ptr<det::tensorboard::event_file_writer> events;
  void training_metrics(const progress& at, const std::map<std::string, double>& m) override {
    if (events) events->write_scalars("training", at.batches, det::tensorboard::wall_time_now(), m);
    reports.emplace_back(clock_type::now(), at.records);
  }
  void validation_metrics(const progress& at, const std::map<std::string, double>& m) override {
    if (events) events->write_scalars("validation", at.batches, det::tensorboard::wall_time_now(), m);
  }
  void log(const std::string&) override {}
  bool should_stop() override { return false; }
  void checkpoint_saved(const saved_checkpoint&) override {}
};

std::string torch_trials_library() {
  char buf[PATH_MAX];
  auto n = ::readlink("/proc/self/exe", buf, sizeof buf - 1);
  std::string exe(buf, n > 0 ? static_cast<size_t>(n) : 0);
  return exe.substr(0, exe.rfind('/')) + "/libdet_torch_trials.so";
}

/// Where --event-files writes: removed at exit.
const std::string event_directory =
    (std::filesystem::temp_directory_path() / ("det-bench-events-" + std::to_string(::getpid()))).string();

enum class event_files { none, written };

double det_samples_per_second(int64_t batches, event_files files = event_files::none) {
  training_plan plan;
  plan.trial_name = "plugin";
  plan.plugin_library = torch_trials_library();
  plan.plugin_class = "mlp";
  plan.hparams_json = hparams_json();
  plan.data_json = data_json;
  plan.seed = 1;
  plan.length = batches;
  plan.report_every_batches = report_every;
  timing_reporter out;
  if (files == event_files::written) out.events = std::make_unique<det::tensorboard::event_file_writer>(event_directory);
  run_plugin_trial(plan, out);
  auto [first_time, first_records] = out.reports.front();
  auto [last_time, last_records] = out.reports.back();
  return static_cast<double>(last_records - first_records) /
         std::chrono::duration<double>(last_time - first_time).count();
}

// Each run with event files sits between two without, as det's runs sit between bare ones below.
int event_files_ratio(int rounds, int64_t batches) {
  det_samples_per_second(2 * report_period);
  std::vector<double> ratios;
  double before = det_samples_per_second(batches);
  for (int r = 0; r < rounds; ++r) {
    double with_files = det_samples_per_second(batches, event_files::written);
    double after = det_samples_per_second(batches);
    double ratio = with_files / ((before + after) / 2);
    ratios.push_back(ratio);
    std::printf("round %d: without %.0f / %.0f samples/s, with event files %.0f samples/s, ratio %.3f\n", r + 1, before,
                after, with_files, ratio);
    std::fflush(stdout);
    before = after;
  }
  std::filesystem::remove_all(event_directory);
  std::sort(ratios.begin(), ratios.end());
  std::printf("event_files_ratio=%.3f (median of %d, a report every %lld batches; range %.3f-%.3f)\n",
              ratios[ratios.size() / 2], rounds, static_cast<long long>(report_every), ratios.front(), ratios.back());
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  int rounds = 9;
  int64_t batches = 1500;
  bool compare_event_files = false;
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--event-files")) compare_event_files = true;
    else if (i + 1 < argc && !std::strcmp(argv[i], "--rounds")) rounds = std::stoi(argv[++i]);
    else if (i + 1 < argc && !std::strcmp(argv[i], "--batches")) batches = std::stoll(argv[++i]);
    else if (i + 1 < argc && !std::strcmp(argv[i], "--report-every")) report_every = std::stoll(argv[++i]);
  }
  try {
    if (compare_event_files) return event_files_ratio(rounds, batches);
    bare_samples_per_second(2 * report_period);  // warms the data cache and LibTorch's kernels
    det_samples_per_second(2 * report_period);
    std::vector<double> ratios;
    double before = bare_samples_per_second(batches);
    for (int r = 0; r < rounds; ++r) {
      double inside = det_samples_per_second(batches);
      double after = bare_samples_per_second(batches);
      double ratio = inside / ((before + after) / 2);
      ratios.push_back(ratio);
      std::printf("round %d: bare %.0f / %.0f samples/s, harness %.0f samples/s, ratio %.3f\n", r + 1, before, after,
                  inside, ratio);
      std::fflush(stdout);
      before = after;
    }
    std::sort(ratios.begin(), ratios.end());
    std::printf("harness_loop_ratio=%.3f (median of %d; range %.3f-%.3f)\n", ratios[ratios.size() / 2], rounds,
                ratios.front(), ratios.back());
    return 0;
  } catch (const std::exception& e) {
    std::cerr << e.what() << "\n";
    return 1;
  }
}
