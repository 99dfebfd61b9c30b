// det-trial-bench: one trial through det's harness loop in this process, as a worker trains it
// minus the messages to the master, and its speed as one JSON line. It is built with det and, by
// scripts/build-torch-trials.sh, on a GPU node against that node's LibTorch, where
// bench/gpu_harness_bench.py and bench/gpt_bench.py run it beside PyTorch loops on the same GPU.
//   det-trial-bench --trial cnn|mlp|gpt|LIBRARY:CLASS [--hparams JSON] [--data JSON] [--batches N]
//                   [--report-every N] [--mixed-precision O0|O1] [--cuda-graph] [--profiling] [--seed N]
// The last line of its output is {"samples_per_second": ..., "tokens_per_second": ..., "mfu": ...,
// "metric_reads_per_report": ..., "batches_with_metrics": ..., ...}: samples/s over the training
// periods after the first (which holds the start-up), as the harness measures each.

#include "gpu/builtin_trials.hpp"
#include "gpu/harness.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <iostream>
#include <map>
#include <string>
#include <vector>

namespace {

using namespace det::harness;

struct recording_reporter : reporter {
  std::vector<std::map<std::string, double>> training;
  std::vector<std::map<std::string, double>> validation;
  void training_metrics(const progress&, const std::map<std::string, double>& m) override { training.push_back(m); }
  void validation_metrics(const progress&, const std::map<std::string, double>& m) override {
    validation.push_back(m);
  }
  void log(const std::string& line) override { std::cerr << line << "\n"; }
  bool should_stop() override { return false; }
  void checkpoint_saved(const saved_checkpoint&) override {}
  void profile_metrics(const std::string& group, const progress&, const std::map<std::string, double>& m) override {
    if (group == "system") system.push_back(m);
  }
  std::vector<std::map<std::string, double>> system;
};

// The median of a metric over the periods after the first; null when no period has it.
nlohmann::json steady(const std::vector<std::map<std::string, double>>& periods, const std::string& name) {
  std::vector<double> values;
  for (std::size_t i = periods.size() > 1 ? 1 : 0; i < periods.size(); ++i)
    if (auto it = periods[i].find(name); it != periods[i].end()) values.push_back(it->second);
  if (values.empty()) return nullptr;
  std::sort(values.begin(), values.end());
  return values[values.size() / 2];
}

[[noreturn]] void usage(const std::string& why) {
  std::cerr << "det-trial-bench: " << why
            << "\nusage: det-trial-bench --trial cnn|mlp|gpt|LIBRARY:CLASS [--hparams JSON] [--data JSON] [--batches N] "
               "[--report-every N] [--mixed-precision O0|O1] [--cuda-graph] [--profiling] [--seed N]\n";
  std::exit(2);
}

}  // namespace

int main(int argc, char** argv) {
  training_plan plan;
  plan.length = 1000;
  plan.seed = 1;
  loop_statistics statistics;
  plan.statistics = &statistics;
  std::string trial = "mlp";
  for (int i = 1; i < argc; ++i) {
    const std::string flag = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) usage(flag + " needs a value");
      return argv[++i];
    };
    // A number that is not one: the usage, not an uncaught std::invalid_argument.
    auto number = [&]() -> long long {
      const std::string text = value();
      try {
        std::size_t end = 0;
        const long long n = std::stoll(text, &end);
        if (end == text.size() && n >= 0) return n;
      } catch (const std::exception&) {
      }
      usage(flag + " takes a whole number, not \"" + text + "\"");
    };
    if (flag == "--trial") trial = value();
    else if (flag == "--hparams") plan.hparams_json = value();
    else if (flag == "--data") plan.data_json = value();
    else if (flag == "--batches") plan.length = number();
    else if (flag == "--report-every") plan.report_every_batches = number();
    else if (flag == "--mixed-precision") plan.mixed_precision = value();
    else if (flag == "--seed") plan.seed = static_cast<uint64_t>(number());
    else if (flag == "--cuda-graph") plan.cuda_graph = true;
    else if (flag == "--profiling") plan.profiling = true;
    else usage("unknown argument " + flag);
  }
  if (auto colon = trial.rfind(':'); colon != std::string::npos) {
    plan.trial_name = "plugin";
    plan.plugin_library = trial.substr(0, colon);
    plan.plugin_class = trial.substr(colon + 1);
  } else {
    plan.trial_name = trial;
  }
  recording_reporter out;
  const auto start = std::chrono::steady_clock::now();
  try {
    run_trial(plan, out);
  } catch (const std::exception& e) {
    std::cout << nlohmann::json{{"error", e.what()}}.dump() << std::endl;
    return 1;
  }
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  nlohmann::json result{
      {"trial", trial},
      {"batches", statistics.batches},
      {"seconds", seconds},
      {"samples_per_second", steady(out.training, "samples_per_second")},
      {"tokens_per_second", steady(out.training, "tokens_per_second")},
      {"mfu", steady(out.training, "mfu")},
      {"loss", out.training.empty() ? nlohmann::json(nullptr) : nlohmann::json(out.training.back().count("loss") ? out.training.back().at("loss") : 0.0)},
      {"validation", out.validation.empty() ? nlohmann::json(nullptr) : nlohmann::json(out.validation.back())},
      {"reports", statistics.reports},
      {"batches_with_metrics", statistics.batches_with_metrics},
      {"metric_reads_per_report",
       statistics.reports > 0
           ? static_cast<double>(statistics.batches_with_metrics + statistics.metric_takes) / statistics.reports
           : 0.0},
      {"gpu_util_percent", steady(out.system, "gpu0_util_percent")},
  };
  std::cout << result.dump() << std::endl;
  return 0;
}
