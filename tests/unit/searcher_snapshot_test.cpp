// A searcher snapshot, serialized, parsed and restored into a searcher built afresh from the same
// config, continues exactly as the search it was taken from (determined-reference §1.6, §2.1).
#include "config/experiment_config.hpp"
#include "messages/searcher.pb.h"
#include "searcher/searcher.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <deque>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

using namespace det;
using searcher::action;

namespace {

const std::string sampled_hparams =
    "lr = { type = \"log\", minval = -4, maxval = -1 }\n"
    "width = { type = \"int\", minval = 1, maxval = 64 }\n"
    "dropout = { type = \"double\", minval = 0.0, maxval = 0.5 }\n"
    "act = { type = \"categorical\", vals = [\"relu\", \"tanh\", \"gelu\"] }\n";

const std::string grid_hparams =
    "lr = { type = \"log\", minval = -4, maxval = -1, count = 3 }\n"
    "width = { type = \"int\", minval = 1, maxval = 64, count = 3 }\n";

config::experiment_config snapshot_config(const std::string& searcher_lines,
                                          const std::string& hparams = sampled_hparams) {
  return config::parse_experiment_config(
      "entrypoint = \"builtin:mlp\"\n[reproducibility]\nexperiment_seed = 20240611\n"
      "[hyperparameters]\n" + hparams + "[searcher]\nmetric = \"loss\"\n" + searcher_lines,
      "snapshot.toml");
}

const std::string single_lines = "name = \"single\"\nmax_length = { batches = 10 }\n";
const std::string random_lines =
    "name = \"random\"\nmax_trials = 8\nmax_concurrent_trials = 3\nmax_length = { batches = 10 }\n";
const std::string grid_lines = "name = \"grid\"\nmax_concurrent_trials = 2\nmax_length = { batches = 10 }\n";
const std::string halving_lines =
    "name = \"async_halving\"\nmax_trials = 12\nmax_concurrent_trials = 4\ndivisor = 3\nnum_rungs = 3\n"
    "max_length = { batches = 90 }\n";
const std::string promotion_lines =
    "name = \"asha\"\nmax_trials = 12\nmax_concurrent_trials = 4\ndivisor = 3\nnum_rungs = 3\n"
    "max_length = { batches = 90 }\n";
const std::string pbt_lines =
    "name = \"pbt\"\npopulation_size = 4\nnum_rounds = 4\nlength_per_round = { batches = 20 }\n"
    "replace_function = { truncate_fraction = 0.5 }\n"
    "explore_function = { resample_probability = 0.3, perturb_factor = 0.2 }\n";
const std::string adaptive_lines =
    "name = \"adaptive_asha\"\nmax_trials = 12\nmax_rungs = 5\ndivisor = 3\nmax_concurrent_trials = 4\n"
    "mode = \"standard\"\nmax_length = { batches = 90 }\n";

/// The searcher metric a trial reports: fixed by its request id and training, spread over [0, 1).
double metric_of(int64_t request_id, int64_t trained) {
  uint64_t x = static_cast<uint64_t>(request_id) * 0x9E3779B97F4A7C15ull;
  x ^= static_cast<uint64_t>(trained) * 0xC2B2AE3Dull;
  x ^= x >> 31;
  x *= 0xBF58476D1CE4E5B9ull;
  x ^= x >> 29;
  return static_cast<double>(x % 10007) / 10007.0;
}

/// Whether a trial exits early, and why, after `reports` validations.
using exit_rule = std::optional<searcher::exit_reason> (*)(int64_t request_id, int64_t reports);

/// A mix of every reason, at several points of a trial's life.
std::optional<searcher::exit_reason> mixed_exits(int64_t request_id, int64_t reports) {
  if (request_id % 7 == 3 && reports == 0) return searcher::exit_reason::invalid_hp;
  if (request_id % 7 == 5 && reports == 1) return searcher::exit_reason::errored;
  if (request_id % 11 == 6 && reports == 2) return searcher::exit_reason::user_canceled;
  return std::nullopt;
}

std::optional<searcher::exit_reason> all_fail(int64_t, int64_t reports) {
  if (reports == 1) return searcher::exit_reason::errored;
  return std::nullopt;
}

std::optional<searcher::exit_reason> all_canceled(int64_t, int64_t reports) {
  // Before any report: a report could get the trial stopped first.
  if (reports == 0) return searcher::exit_reason::user_canceled;
  return std::nullopt;
}

/// The experiment's side of a search, one event per step: the search starts, each requested trial
/// is created, then the live trials take turns in request order to validate every `period` units
/// up to their target and exit, or exit early as `exits` decides. A trial the search stopped
/// reports once more on its way out, as det's graceful stop allows; some creations and early exits
/// are reported twice, and a closed trial's report is stale, as after a master restart. Every
/// action and event goes to the log, and the progress after each event to progress(). Copyable,
/// so that a search and its restored copy can be driven on from the same point.
class search_driver {
 public:
  explicit search_driver(int64_t period, exit_rule exits = mixed_exits) : period_(period), exits_(exits) {}

  /// Feeds the next event to `s`; false once there is none.
  bool step(searcher::searcher& s) {
    waits_ = s.trials_wait_at_length();
    if (steps_ > 100000) throw std::logic_error("the search does not end");
    ++steps_;
    if (!started_) {
      started_ = true;
      apply(s, s.initial_trials());
      return true;
    }
    if (!to_create_.empty()) {
      auto id = to_create_.front();
      to_create_.pop_front();
      trial_of(id).created = true;
      log_.push_back("created " + std::to_string(id));
      apply(s, s.trial_created(id));
      return true;
    }
    for (size_t n = 0; n < trials_.size(); ++n) {
      auto index = (turn_ + n) % trials_.size();
      auto& t = trials_[index];
      if (t.stale_reported || !t.created || waiting(t)) continue;
      turn_ = index + 1;
      take_turn(s, t);
      return true;
    }
    --steps_;
    return false;
  }

  int64_t steps() const { return steps_; }
  const std::vector<std::string>& log() const { return log_; }
  const std::vector<double>& progress() const { return progress_; }

 private:
  struct trial {
    int64_t id = 0;
    int64_t target = 0;
    int64_t trained = 0;
    int64_t reports = 0;
    bool created = false;
    bool created_again = false;
    bool stopped = false;
    bool reported_after_stop = false;
    bool exited_early = false;
    bool exited_early_again = false;
    bool exited = false;
    bool stale_reported = false;
  };

  void take_turn(searcher::searcher& s, trial& t) {
    auto id = std::to_string(t.id);
    bool last_report = t.stopped && !t.reported_after_stop && t.trained < t.target;
    if (t.exited) {
      t.stale_reported = true;
      log_.push_back("validated " + id + " after its exit");
      apply(s, s.validation_completed(t.id, 0.0, t.target));
    } else if (!t.created_again && t.id % 4 == 2) {
      t.created_again = true;
      log_.push_back("created again " + id);
      apply(s, s.trial_created(t.id));
    } else if (t.exited_early && !t.exited_early_again) {
      t.exited_early_again = true;
      log_.push_back("exited early again " + id);
      // Were it not ignored, it would replace the trial as one with invalid hyperparameters.
      apply(s, s.trial_exited_early(t.id, searcher::exit_reason::invalid_hp));
    } else if (t.exited_early || (t.stopped && !last_report) || t.trained >= t.target) {
      t.exited = true;
      log_.push_back("exited " + id);
      apply(s, s.trial_exited(t.id));
    } else if (auto reason = exits_(t.id, t.reports); reason && !t.stopped) {
      t.exited_early = true;
      log_.push_back("exited early " + id + " " + std::to_string(static_cast<int>(*reason)));
      apply(s, s.trial_exited_early(t.id, *reason));
    } else {
      t.reported_after_stop = t.stopped;
      t.trained = std::min(t.trained + period_, t.target);
      ++t.reports;
      log_.push_back("validated " + id + " at " + std::to_string(t.trained));
      apply(s, s.validation_completed(t.id, metric_of(t.id, t.trained), t.trained));
    }
  }

  /// A trial of a promotion-based search at the length it was asked for, until the search promotes
  /// or closes it.
  bool waiting(const trial& t) const {
    return waits_ && !t.stopped && !t.exited_early && !t.exited && t.trained >= t.target;
  }

  trial& trial_of(int64_t id) {
    for (auto& t : trials_)
      if (t.id == id) return t;
    throw std::logic_error("the search named request id " + std::to_string(id) + " before creating it");
  }

  void apply(const searcher::searcher& s, const std::vector<action>& actions) {
    progress_.push_back(s.progress());
    for (const auto& a : actions) {
      if (const auto* create = std::get_if<searcher::create_action>(&a)) {
        log_.push_back("create " + std::to_string(create->request_id) + " seed " +
                       std::to_string(create->trial_seed) + " " + create->hparams_json +
                       (create->parent_request_id ? " from " + std::to_string(create->parent_request_id) : ""));
        trials_.push_back(trial{create->request_id});
        to_create_.push_back(create->request_id);
      } else if (const auto* validate = std::get_if<searcher::validate_after_action>(&a)) {
        log_.push_back("validate after " + std::to_string(validate->request_id) + " " +
                       std::to_string(validate->length.value));
        trial_of(validate->request_id).target = validate->length.value;
      } else if (const auto* stop = std::get_if<searcher::stop_action>(&a)) {
        log_.push_back("stop " + std::to_string(stop->request_id));
        trial_of(stop->request_id).stopped = true;
      } else {
        const auto& shutdown = std::get<searcher::shutdown_action>(a);
        log_.push_back("shutdown cancel " + std::to_string(shutdown.cancel) + " failure " +
                       std::to_string(shutdown.failure));
      }
    }
  }

  int64_t period_;
  exit_rule exits_;
  bool waits_ = false;
  int64_t steps_ = 0;
  bool started_ = false;
  std::deque<int64_t> to_create_;
  std::vector<trial> trials_;
  size_t turn_ = 0;
  std::vector<std::string> log_;
  std::vector<double> progress_;
};

/// "" when the logs are equal, else where they first part.
std::string first_difference(const std::vector<std::string>& got, const std::vector<std::string>& expected) {
  for (size_t i = 0; i < std::max(got.size(), expected.size()); ++i) {
    auto at = [i](const std::vector<std::string>& log) { return i < log.size() ? log[i] : "(end)"; };
    if (at(got) != at(expected))
      return "entry " + std::to_string(i) + ": " + at(got) + " instead of " + at(expected);
  }
  return "";
}

/// "" when the progress after each event agrees to rounding (a restored search may add the same
/// shares in another order), else where it first differs.
std::string first_difference(const std::vector<double>& got, const std::vector<double>& expected) {
  if (got.size() != expected.size())
    return std::to_string(got.size()) + " events instead of " + std::to_string(expected.size());
  for (size_t i = 0; i < got.size(); ++i)
    if (std::abs(got[i] - expected[i]) > 1e-12)
      return "event " + std::to_string(i) + ": " + std::to_string(got[i]) + " instead of " +
             std::to_string(expected[i]);
  return "";
}

searcher::searcher start(const config::experiment_config& config) {
  return searcher::searcher(searcher::make_search_method(config));
}

/// The snapshot as the persistence actor stores and a restarted master reads it.
pb::SearcherSnapshot through_bytes(const searcher::searcher& s) {
  std::string bytes;
  REQUIRE(s.snapshot().SerializeToString(&bytes));
  pb::SearcherSnapshot parsed;
  REQUIRE(parsed.ParseFromString(bytes));
  return parsed;
}

/// Snapshots the search before every event of an uninterrupted run (so right after
/// initial_trials, part way through rungs, after early exits and exits, and after the shutdown),
/// and checks that both the original and the restored copy go on as the uninterrupted run did.
/// Returns the uninterrupted run's log.
std::vector<std::string> check_restores_at_every_step(const config::experiment_config& config, int64_t period,
                                  exit_rule exits = mixed_exits) {
  auto whole = start(config);
  search_driver uninterrupted(period, exits);
  while (uninterrupted.step(whole)) {
  }
  REQUIRE(whole.shut_down());
  for (int64_t k = 0; k <= uninterrupted.steps(); ++k) {
    CAPTURE(k);
    auto original = start(config);
    search_driver driver(period, exits);
    for (int64_t i = 0; i < k; ++i) REQUIRE(driver.step(original));
    auto restored = start(config);
    restored.restore(through_bytes(original));
    CHECK(restored.trials_requested() == original.trials_requested());
    CHECK(restored.trials_closed() == original.trials_closed());
    CHECK(restored.shut_down() == original.shut_down());
    CHECK(restored.progress() == doctest::Approx(original.progress()));

    auto restored_driver = driver;
    while (driver.step(original)) {
    }
    while (restored_driver.step(restored)) {
    }
    CHECK(first_difference(driver.log(), uninterrupted.log()) == "");
    CHECK(first_difference(restored_driver.log(), uninterrupted.log()) == "");
    CHECK(first_difference(restored_driver.progress(), uninterrupted.progress()) == "");
  }
  return uninterrupted.log();
}

std::string restore_error(const config::experiment_config& config, const pb::SearcherSnapshot& snapshot) {
  auto s = start(config);
  try {
    s.restore(snapshot);
  } catch (const std::runtime_error& e) {
    // A refused snapshot leaves the searcher as it was: it starts as a fresh one does.
    search_driver refused(10), fresh(10);
    auto other = start(config);
    refused.step(s);
    fresh.step(other);
    CHECK(refused.log() == fresh.log());
    return e.what();
  }
  return "";
}

/// The snapshot of a search of `config` part way through.
pb::SearcherSnapshot snapshot_after(const config::experiment_config& config, int64_t steps) {
  auto s = start(config);
  search_driver driver(10);
  for (int64_t i = 0; i < steps; ++i) driver.step(s);
  return through_bytes(s);
}

} // namespace

TEST_CASE("a restored single search goes on as the uninterrupted one") {
  check_restores_at_every_step(snapshot_config(single_lines), 2);
  check_restores_at_every_step(snapshot_config(single_lines), 2, all_fail);
}

TEST_CASE("a restored random search goes on as the uninterrupted one, replacements included") {
  check_restores_at_every_step(snapshot_config(random_lines), 3);
}

TEST_CASE("a restored grid search goes on as the uninterrupted one") {
  check_restores_at_every_step(snapshot_config(grid_lines, grid_hparams), 4);
}

TEST_CASE("a restored async_halving search keeps its rungs and goes on as the uninterrupted one") {
  check_restores_at_every_step(snapshot_config(halving_lines), 10);
  check_restores_at_every_step(snapshot_config(halving_lines + "smaller_is_better = false\n"), 20);
}

TEST_CASE("a restored asha search keeps its promotions and goes on as the uninterrupted one") {
  check_restores_at_every_step(snapshot_config(promotion_lines), 10);
  check_restores_at_every_step(snapshot_config(promotion_lines), 30, all_fail);
}

TEST_CASE("a restored pbt search keeps its population and goes on as the uninterrupted one") {
  auto log = check_restores_at_every_step(snapshot_config(pbt_lines), 10);
  // Copies of the best were made in every round but the last.
  CHECK(std::count_if(log.begin(), log.end(), [](const std::string& e) { return e.find(" from ") != std::string::npos; }) >= 6);
}

TEST_CASE("a restored adaptive_asha search keeps every bracket and goes on as the uninterrupted one") {
  check_restores_at_every_step(snapshot_config(adaptive_lines), 10);
}

TEST_CASE("a restored search still ends failed when every trial failed, or canceled when every one was") {
  auto shutdowns = [](const std::vector<std::string>& log) {
    std::vector<std::string> found;
    for (const auto& entry : log)
      if (entry.rfind("shutdown", 0) == 0) found.push_back(entry);
    return found;
  };
  auto failed = check_restores_at_every_step(snapshot_config(random_lines), 3, all_fail);
  CHECK(shutdowns(failed) == std::vector<std::string>{"shutdown cancel 0 failure 1"});
  auto canceled = check_restores_at_every_step(snapshot_config(halving_lines), 10, all_canceled);
  CHECK(shutdowns(canceled) == std::vector<std::string>{"shutdown cancel 1 failure 0"});
}

TEST_CASE("a snapshot of one search method is refused by another, naming both") {
  auto random = snapshot_after(snapshot_config(random_lines), 5);
  CHECK(restore_error(snapshot_config(grid_lines, grid_hparams), random) ==
        "cannot restore the grid search from a snapshot of a random search");
  auto halving = snapshot_after(snapshot_config(halving_lines), 5);
  CHECK(restore_error(snapshot_config(adaptive_lines), halving) ==
        "cannot restore the adaptive_asha search from a snapshot of an async_halving search");
  CHECK(restore_error(snapshot_config(single_lines), halving) ==
        "cannot restore the single search from a snapshot of an async_halving search");
  pb::SearcherSnapshot empty;
  empty.set_version(searcher::searcher_snapshot_version);
  CHECK(restore_error(snapshot_config(random_lines), empty) ==
        "cannot restore the random search from a snapshot that holds no search");
}

TEST_CASE("a snapshot of an unknown version is refused") {
  auto snapshot = snapshot_after(snapshot_config(random_lines), 5);
  CHECK(snapshot.version() == 1);
  snapshot.set_version(2);
  CHECK(restore_error(snapshot_config(random_lines), snapshot) ==
        "cannot restore a searcher snapshot of version 2: this master reads version 1");
}

TEST_CASE("a snapshot that does not fit the searcher's config is refused") {
  auto halving = snapshot_after(snapshot_config(halving_lines), 12);
  auto two_rungs = halving_lines;
  two_rungs.replace(two_rungs.find("num_rungs = 3"), 13, "num_rungs = 2");
  CHECK(restore_error(snapshot_config(two_rungs), halving) ==
        "cannot restore the successive-halving search: the snapshot holds 3 rungs where its config gives 2");

  auto adaptive = snapshot_after(snapshot_config(adaptive_lines), 12);
  REQUIRE(adaptive.adaptive_asha().brackets_size() == 2);
  CHECK(restore_error(snapshot_config(adaptive_lines + "bracket_rungs = [3]\n"), adaptive) ==
        "cannot restore the adaptive_asha search: the snapshot holds 2 brackets where its config gives 1");

  auto random = snapshot_after(snapshot_config(random_lines), 5);
  random.mutable_random()->mutable_trials()->set_rng("not an engine");
  CHECK(restore_error(snapshot_config(random_lines), random) ==
        "the searcher snapshot holds no valid random number generator state");
  halving.mutable_async_halving()->mutable_trials()->set_rng("");
  CHECK(restore_error(snapshot_config(halving_lines), halving) ==
        "the searcher snapshot holds no valid random number generator state");
}
