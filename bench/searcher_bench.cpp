// Searcher decisions per second: an adaptive_asha search over many trials, driven in-process
// through `searcher` by simulated trials that validate at every rung length with a seeded random
// metric, against the same driver around random search, which never stops a trial (the
// driver's own cost per event, sampling included).
//
//   bench_searcher [--trials N] [--seed S]

#include "config/experiment_config.hpp"
#include "searcher/asha_rungs.hpp"
#include "searcher/random_draw.hpp"
#include "searcher/random_search.hpp"
#include "searcher/searcher.hpp"
#include "searcher/trial_factory.hpp"

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <unordered_map>
#include <vector>

namespace {

using clock_type = std::chrono::steady_clock;
using det::searcher::action;


struct tally {
  int64_t trials = 0;
  int64_t events = 0;   // calls into the searcher
  int64_t actions = 0;  // decisions it returned
  int64_t stops = 0;
  double searcher_s = 0;
  double wall_s = 0;
  bool shut_down = false;
};

/// Live trials report, in a seeded random order, a validation at each of `lengths` until the
/// search stops them or they reach the last; then they exit.
tally drive(std::unique_ptr<det::searcher::search_method> method, const std::vector<int64_t>& lengths,
            uint64_t seed) {
  auto wall_start = clock_type::now();
  det::searcher::searcher s(std::move(method));
  std::mt19937_64 rng(seed);
  tally t;
  struct live_trial {
    int64_t request_id;
    size_t next_length = 0;
  };
  std::vector<live_trial> live;
  std::unordered_map<int64_t, bool> stopped;

  auto timed = [&](auto&& call) {
    auto start = clock_type::now();
    std::vector<action> actions = call();
    t.searcher_s += std::chrono::duration<double>(clock_type::now() - start).count();
    ++t.events;
    t.actions += static_cast<int64_t>(actions.size());
    return actions;
  };
  std::vector<action> pending = timed([&] { return s.initial_trials(); });
  auto carry_out = [&] {
    while (!pending.empty()) {
      auto actions = std::move(pending);
      pending.clear();
      for (const auto& a : actions) {
        if (const auto* create = std::get_if<det::searcher::create_action>(&a)) {
          live.push_back(live_trial{create->request_id});
          auto more = timed([&] { return s.trial_created(create->request_id); });
          pending.insert(pending.end(), more.begin(), more.end());
          ++t.trials;
        } else if (const auto* stop = std::get_if<det::searcher::stop_action>(&a)) {
          stopped[stop->request_id] = true;
          ++t.stops;
        } else if (std::holds_alternative<det::searcher::shutdown_action>(a)) {
          t.shut_down = true;
        }
      }
    }
  };
  carry_out();
  while (!t.shut_down && !live.empty()) {
    auto index = static_cast<size_t>(det::searcher::draw_below(rng, live.size()));
    auto& trial = live[index];
    auto id = trial.request_id;
    auto length = lengths[trial.next_length++];
    double metric = det::searcher::draw_unit(rng);
    pending = timed([&] { return s.validation_completed(id, metric, length); });
    carry_out();
    auto& reported = live[index];
    if (stopped[id] || reported.next_length == lengths.size()) {
      reported = live.back();
      live.pop_back();
      pending = timed([&] { return s.trial_exited(id); });
      carry_out();
    }
  }
  t.wall_s = std::chrono::duration<double>(clock_type::now() - wall_start).count();
  return t;
}

void print(const char* name, const tally& t) {
  std::printf("%-14s %7lld trials %8lld events %8lld decisions (%lld stops)  searcher %.3f s  wall %.3f s"
              "  %.0f decisions/s  %.0f ns/event%s\n",
              name, static_cast<long long>(t.trials), static_cast<long long>(t.events),
              static_cast<long long>(t.actions), static_cast<long long>(t.stops), t.searcher_s, t.wall_s,
              static_cast<double>(t.actions) / t.searcher_s, t.searcher_s * 1e9 / static_cast<double>(t.events),
              t.shut_down ? "" : "  (did not shut down)");
}

} // namespace

int main(int argc, char** argv) {
  int64_t trials = 100000;
  uint64_t seed = 1;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!std::strcmp(argv[i], "--trials")) trials = std::atoll(argv[i + 1]);
    else if (!std::strcmp(argv[i], "--seed")) seed = std::strtoull(argv[i + 1], nullptr, 10);
    else {
      std::fprintf(stderr, "usage: bench_searcher [--trials N] [--seed S]\n");
      return 2;
    }
  }
  auto config = det::config::parse_experiment_config(
      "entrypoint = \"builtin:mlp\"\n[reproducibility]\nexperiment_seed = " + std::to_string(seed) +
          "\n[hyperparameters]\nlr = { type = \"log\", minval = -4, maxval = -1 }\n"
          "width = { type = \"int\", minval = 16, maxval = 512 }\n"
          "[searcher]\nname = \"adaptive_asha\"\nmetric = \"loss\"\nmax_trials = " + std::to_string(trials) +
          "\nmax_concurrent_trials = 0\ndivisor = 4\nmax_rungs = 5\ntime_metric = \"batches\"\nmax_time = 4096\n",
      "bench.toml");
  // Every bracket's rungs are the last few of the five-rung bracket's.
  std::vector<int64_t> lengths;
  for (const auto& r : det::searcher::make_rungs(5, 4, 4096)) lengths.push_back(r.units_needed);

  auto asha = drive(det::searcher::make_search_method(config), lengths, seed);
  // The baseline runs as many trials at a time as adaptive_asha started.
  auto concurrent = static_cast<int64_t>(det::searcher::searcher(det::searcher::make_search_method(config))
                                             .initial_trials()
                                             .size());
  det::searcher::trial_factory factory(config.hparams, config.experiment_seed);
  auto baseline = drive(
      std::make_unique<det::searcher::random_search>(trials, concurrent, *config.searcher.training_length(),
                                                    std::move(factory)),
      lengths, seed);
  print("adaptive_asha", asha);
  print("random (never stops)", baseline);
  std::printf("adaptive_asha costs %.2fx the driver's baseline per event; %.3f s wall in all\n",
              (asha.searcher_s / static_cast<double>(asha.events)) /
                  (baseline.searcher_s / static_cast<double>(baseline.events)),
              asha.wall_s + baseline.wall_s);
  return asha.shut_down && baseline.shut_down ? 0 : 1;
}
