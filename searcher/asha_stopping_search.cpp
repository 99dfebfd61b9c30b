#include "searcher/asha_stopping_search.hpp"

#include "searcher/snapshot_parts.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>

namespace det::searcher {

asha_stopping_search::asha_stopping_search(asha_settings settings, std::shared_ptr<trial_factory> trials)
    : settings_(settings),
      trials_(std::move(trials)),
      rungs_(make_rungs(settings.num_rungs, settings.divisor, settings.max_length.value)) {}

create_action asha_stopping_search::next_trial() {
  ++requested_;
  return trials_->next();
}

bool asha_stopping_search::trials_remain() const {
  return requested_ - invalid_ < settings_.max_trials;
}

int64_t initial_trial_count(const asha_settings& settings) {
  if (settings.max_concurrent_trials > 0) return std::min(settings.max_concurrent_trials, settings.max_trials);
  // Enough trials that one of them can reach the top rung.
  double needed = std::pow(settings.divisor, static_cast<double>(settings.num_rungs - 1));
  auto most = static_cast<double>(std::max<int64_t>(settings.max_trials, 1));
  return static_cast<int64_t>(std::clamp(needed, 1.0, most));
}

std::vector<action> asha_stopping_search::initial_trials() {
  const auto count = initial_trial_count(settings_);
  std::vector<action> actions;
  for (int64_t i = 0; i < count; ++i) actions.push_back(next_trial());
  return actions;
}

std::vector<action> asha_stopping_search::trial_created(int64_t request_id) {
  // Brackets of adaptive_asha share the ids out: this one's may be sparse, but all were handed out.
  trial_states_.issued(request_id, trials_->next_request_id());
  return {validate_after_action{request_id, settings_.max_length}};
}

std::vector<action> asha_stopping_search::validation_completed(int64_t request_id, double metric,
                                                               int64_t length_trained) {
  auto* trial = trial_states_.find(request_id);
  if (!trial || trial->done) return {};
  double ranked = ranked_metric(metric, settings_.smaller_is_better);

  // Validations are not scheduled by the search, so one report may pass several rungs.
  for (size_t r = trial->rung; r < rungs_.size(); ++r) {
    trial->rung = r;
    auto& current = rungs_[r];
    if (length_trained < current.units_needed) return {};
    auto index = current.insert(request_id, ranked);
    bool top = r + 1 == rungs_.size();
    auto keep = std::max<int64_t>(
        static_cast<int64_t>(static_cast<double>(current.size()) / settings_.divisor), 1);
    if (top || static_cast<int64_t>(index) >= keep) {
      trial->done = true;
      std::vector<action> actions{stop_action{request_id, !top}};
      if (trials_remain()) actions.push_back(next_trial());
      return actions;
    }
  }
  return {};
}

std::vector<action> asha_stopping_search::trial_exited(int64_t) {
  ++completed_;
  return {};
}

std::vector<action> asha_stopping_search::trial_exited_early(int64_t request_id, exit_reason reason) {
  // A trial whose creation failed was never created: it exits at rung 0.
  auto& trial = trial_states_[request_id];
  if (trial.done) return {};
  trial.done = true;
  if (reason == exit_reason::invalid_hp) {
    ++invalid_;
    for (size_t r = 0; r <= trial.rung && r < rungs_.size(); ++r) rungs_[r].remove(request_id);
    std::vector<action> actions{stop_action{request_id}};
    actions.push_back(next_trial());
    return actions;
  }
  if (trial.rung < rungs_.size()) rungs_[trial.rung].insert(request_id, exited_trial_metric);
  if (trials_remain()) return {next_trial()};
  return {};
}

double asha_stopping_search::progress() const {
  if (rungs_.empty()) return 0.0;
  return asha_progress(rungs_.front().size(), settings_.max_trials, completed_ - invalid_);
}

int64_t asha_stopping_search::rung_of(int64_t request_id) const {
  const auto* trial = trial_states_.find(request_id);
  return trial ? static_cast<int64_t>(trial->rung) : 0;
}

void asha_stopping_search::snapshot(pb::SearcherSnapshot& snapshot) const {
  auto& state = *snapshot.mutable_async_halving();
  trials_->snapshot(*state.mutable_trials());
  snapshot_state(*state.mutable_search());
}

void asha_stopping_search::restore(const pb::SearcherSnapshot& snapshot) {
  require_method(snapshot, pb::SearcherSnapshot::kAsyncHalving);
  const auto& state = snapshot.async_halving();
  // Restored aside first, so that a throw changes nothing.
  auto restored = *this;
  restored.restore_state(state.search());
  trials_->restore(state.trials());
  *this = std::move(restored);
}

void asha_stopping_search::snapshot_state(pb::AshaState& state) const {
  for (const auto& r : rungs_) {
    auto& rung = *state.add_rungs();
    r.for_each([&rung](int64_t id, double metric) {
      auto& entry = *rung.add_metrics();
      entry.set_request_id(id);
      entry.set_metric(metric);
    });
  }
  state.mutable_trials()->Reserve(static_cast<int>(trial_states_.size()));
  trial_states_.for_each([&state](int64_t id, const trial_state& trial) {
    auto& entry = *state.add_trials();
    entry.set_request_id(id);
    entry.set_rung(static_cast<int64_t>(trial.rung));
    entry.set_done(trial.done);
  });
  state.set_requested(requested_);
  state.set_invalid_hp(invalid_);
  state.set_completed(completed_);
}

void asha_stopping_search::restore_state(const pb::AshaState& state) {
  auto rung_count = static_cast<int64_t>(rungs_.size());
  if (state.rungs_size() != rung_count)
    throw std::runtime_error("cannot restore the successive-halving search: the snapshot holds " +
                             std::to_string(state.rungs_size()) + " rungs where its config gives " +
                             std::to_string(rung_count));
  trial_table<trial_state> trials;
  for (const auto& entry : state.trials()) {
    if (entry.rung() < 0 || entry.rung() >= rung_count)
      throw std::runtime_error("cannot restore the successive-halving search: the snapshot puts trial " +
                               std::to_string(entry.request_id()) + " in rung " + std::to_string(entry.rung()) +
                               " of " + std::to_string(rung_count));
    trials[entry.request_id()] = trial_state{static_cast<size_t>(entry.rung()), entry.done()};
  }
  for (size_t r = 0; r < rungs_.size(); ++r) {
    std::vector<std::pair<int64_t, double>> entries;
    for (const auto& entry : state.rungs(static_cast<int>(r)).metrics())
      entries.emplace_back(entry.request_id(), entry.metric());
    rungs_[r].assign(std::move(entries));
  }
  trial_states_ = std::move(trials);
  requested_ = state.requested();
  invalid_ = state.invalid_hp();
  completed_ = state.completed();
}

} // namespace det::searcher
