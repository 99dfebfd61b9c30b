// Search quality of the tpe searcher: the mean, over seeds, of the best value the search finds in
// a fixed number of trials of a 5-d benchmark (Branin plus three bowls, minimum 0.397887), beside
// random search on the same seeds. The benchmark and config are those of the test "tpe beats
// random on a 5-d benchmark" (tests/unit/tpe_search_test.cpp; both use bench/tpe_benchmark.hpp); trials run one at a time, so that
// every proposal sees every earlier result. bench/tpe_vs_optuna.py sets it beside Optuna's TPE.
//
//   bench_tpe [--seeds N] [--trials T]
//
// Prints one JSON line: {"det_tpe_mean_best", "det_random_mean_best", "det_tpe_s", "det_random_s",
// "per_seed": [{"seed", "tpe", "random"}, ...]}, seeds 1..N; the _s fields are wall seconds of
// all the seeds' searches, the benchmark's evaluations included.

#include "config/experiment_config.hpp"
#include "searcher/search_method.hpp"
#include "bench/tpe_benchmark.hpp"
#include "searcher/searcher.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <limits>
#include <map>
#include <string>
#include <vector>

namespace {

using nlohmann::json;
namespace searcher = det::searcher;

using det::bench::tpe_benchmark;
using det::bench::tpe_benchmark_hparams;

/// The best benchmark value of a `name` search of `trials` trials, one at a time, for `seed`.
double best_of_search(const std::string& name, int64_t trials, uint32_t seed) {
  auto config = det::config::parse_experiment_config(
      "entrypoint = \"builtin:mlp\"\n[reproducibility]\nexperiment_seed = " + std::to_string(seed) +
          "\n[searcher]\nmetric = \"loss\"\nmax_length = { batches = 100 }\nname = \"" + name +
          "\"\nmax_trials = " + std::to_string(trials) + "\nmax_concurrent_trials = 1\n" + tpe_benchmark_hparams,
      "tpe_bench.toml");
  searcher::searcher s(searcher::make_search_method(config));
  double best = std::numeric_limits<double>::infinity();
  // Trials waiting to run, and the length each was asked to train.
  std::deque<searcher::create_action> waiting;
  std::map<int64_t, int64_t> targets;
  auto apply = [&](auto&& self, const std::vector<searcher::action>& actions) -> void {
    for (const auto& a : actions) {
      if (const auto* create = std::get_if<searcher::create_action>(&a)) {
        waiting.push_back(*create);
        self(self, s.trial_created(create->request_id));
      } else if (const auto* validate = std::get_if<searcher::validate_after_action>(&a)) {
        targets[validate->request_id] = validate->length.value;
      }
    }
  };
  apply(apply, s.initial_trials());
  // Each trial reports its value at the length asked and exits; its exit starts the next.
  while (!waiting.empty()) {
    auto trial = waiting.front();
    waiting.pop_front();
    double value = tpe_benchmark(json::parse(trial.hparams_json));
    best = std::min(best, value);
    apply(apply, s.validation_completed(trial.request_id, value, targets.at(trial.request_id)));
    apply(apply, s.trial_exited(trial.request_id));
  }
  return best;
}

} // namespace

int main(int argc, char** argv) {
  int seeds = 10;
  int64_t trials = 50;
  bool usable = argc % 2 == 1;  // options come in pairs
  for (int i = 1; usable && i + 1 < argc; i += 2) {
    if (!std::strcmp(argv[i], "--seeds")) seeds = std::atoi(argv[i + 1]);
    else if (!std::strcmp(argv[i], "--trials")) trials = std::atoll(argv[i + 1]);
    else usable = false;
  }
  if (!usable || seeds < 1 || trials < 1) {
    std::fprintf(stderr, "usage: bench_tpe [--seeds N] [--trials T]\n");
    return 2;
  }
  using clock_type = std::chrono::steady_clock;
  auto seconds_since = [](clock_type::time_point start) {
    return std::chrono::duration<double>(clock_type::now() - start).count();
  };
  double tpe_sum = 0, random_sum = 0, tpe_s = 0, random_s = 0;
  auto per_seed = json::array();
  for (uint32_t seed = 1; seed <= static_cast<uint32_t>(seeds); ++seed) {
    auto start = clock_type::now();
    double tpe = best_of_search("tpe", trials, seed);
    tpe_s += seconds_since(start);
    start = clock_type::now();
    double random = best_of_search("random", trials, seed);
    random_s += seconds_since(start);
    tpe_sum += tpe;
    random_sum += random;
    per_seed.push_back({{"seed", seed}, {"tpe", tpe}, {"random", random}});
  }
  json out = {{"det_tpe_mean_best", tpe_sum / seeds},
              {"det_random_mean_best", random_sum / seeds},
              {"det_tpe_s", tpe_s},
              {"det_random_s", random_s},
              {"per_seed", per_seed}};
  std::printf("%s\n", out.dump().c_str());
  return 0;
}
