#include "searcher/asha_promotion_search.hpp"

#include "searcher/snapshot_parts.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>

namespace det::searcher {

asha_promotion_search::asha_promotion_search(asha_settings settings, trial_factory trials)
    : settings_(settings), trials_(std::move(trials)) {
  for (const auto& r : make_rungs(settings.num_rungs, settings.divisor, settings.max_length.value))
    rungs_.push_back(promotion_rung{r.units_needed, {}, 0});
}

int64_t asha_promotion_search::trials_counted() const {
  return static_cast<int64_t>(trial_states_.size()) - invalid_;
}

create_action asha_promotion_search::new_trial() {
  auto create = trials_.next();
  trial_states_[create.request_id] = trial_state{0, true, false, false};
  ++rungs_.front().outstanding;
  return create;
}

std::vector<action> asha_promotion_search::initial_trials() {
  const auto count = initial_trial_count(settings_);
  std::vector<action> actions;
  for (int64_t i = 0; i < count; ++i) actions.push_back(new_trial());
  return actions;
}

std::vector<action> asha_promotion_search::trial_created(int64_t request_id) {
  auto it = trial_states_.find(request_id);
  if (it == trial_states_.end() || !it->second.training || it->second.exited_early) return {};
  auto units = rungs_[it->second.rung].units_needed;
  return {validate_after_action{request_id, config::length{settings_.max_length.unit, units}}};
}

std::vector<int64_t> asha_promotion_search::promotions(promotion_rung& rung, int64_t request_id,
                                                       double metric) const {
  auto before = static_cast<double>(rung.results.size());
  auto promote_count = static_cast<int64_t>((before + 1) / settings_.divisor);
  // After every equal result, as Determined's sort.Search(metric < existing) places it.
  auto at = std::upper_bound(rung.results.begin(), rung.results.end(), metric,
                             [](double value, const result& r) { return value < r.metric; });
  auto index = static_cast<int64_t>(at - rung.results.begin());
  bool now = index < promote_count;
  rung.results.insert(at, result{request_id, metric, now});
  if (now) return {request_id};
  if (promote_count > static_cast<int64_t>(before / settings_.divisor)) {
    for (auto& r : rung.results) {
      if (!r.promoted) {
        r.promoted = true;
        return {r.request_id};
      }
    }
  }
  return {};
}

std::vector<action> asha_promotion_search::record_result(int64_t request_id, double metric) {
  std::vector<action> actions;
  auto& trial = trial_states_[request_id];
  auto r = trial.rung;
  auto& rung = rungs_[r];
  trial.training = false;
  --rung.outstanding;
  bool training_added = false;
  if (r + 1 == rungs_.size()) {
    auto at = std::upper_bound(rung.results.begin(), rung.results.end(), metric,
                               [](double value, const result& e) { return value < e.metric; });
    rung.results.insert(at, result{request_id, metric, false});
    if (!trial.closed) {
      trial.closed = true;
      actions.push_back(stop_action{request_id, false});
    }
  } else {
    auto& next = rungs_[r + 1];
    for (auto id : promotions(rung, request_id, metric)) {
      auto& promoted = trial_states_[id];
      promoted.rung = r + 1;
      promoted.training = true;
      ++next.outstanding;
      if (promoted.exited_early) {
        // It cannot train on: it takes the worst result the next rung can hold, as Determined's.
        auto more = record_result(id, exited_trial_metric);
        actions.insert(actions.end(), more.begin(), more.end());
        return actions;
      }
      actions.push_back(validate_after_action{id, config::length{settings_.max_length.unit, next.units_needed}});
      training_added = true;
    }
  }
  if (!training_added && trials_counted() < settings_.max_trials) actions.push_back(new_trial());
  if (static_cast<int64_t>(rungs_.front().results.size()) == settings_.max_trials) {
    auto closing = close_out_rungs();
    actions.insert(actions.end(), closing.begin(), closing.end());
  }
  return actions;
}

std::vector<action> asha_promotion_search::close_out_rungs() {
  std::vector<action> actions;
  for (size_t r = 0; r < rungs_.size(); ++r) {
    if (rungs_[r].outstanding > 0) break;
    bool top = r + 1 == rungs_.size();
    for (const auto& entry : rungs_[r].results) {
      auto& trial = trial_states_[entry.request_id];
      if ((top || !entry.promoted) && !trial.closed) {
        trial.closed = true;
        actions.push_back(stop_action{entry.request_id, !top});
      }
    }
  }
  return actions;
}

std::vector<action> asha_promotion_search::validation_completed(int64_t request_id, double metric,
                                                                int64_t length_trained) {
  auto it = trial_states_.find(request_id);
  if (it == trial_states_.end()) return {};
  const auto& trial = it->second;
  if (!trial.training || trial.exited_early || length_trained < rungs_[trial.rung].units_needed) return {};
  return record_result(request_id, ranked_metric(metric, settings_.smaller_is_better));
}

std::vector<action> asha_promotion_search::trial_exited(int64_t request_id) {
  ++exited_;
  auto it = trial_states_.find(request_id);
  if (it == trial_states_.end() || it->second.closed) return {};
  // It ended without a result for its rung and without an early exit: rank it last, so that
  // the rung does not wait for it forever.
  it->second.closed = true;
  it->second.exited_early = true;
  if (!it->second.training) return {};
  return record_result(request_id, exited_trial_metric);
}

std::vector<action> asha_promotion_search::trial_exited_early(int64_t request_id, exit_reason reason) {
  auto it = trial_states_.find(request_id);
  if (it == trial_states_.end() || it->second.exited_early) return {};
  auto& trial = it->second;
  trial.exited_early = true;
  trial.closed = true;
  if (reason == exit_reason::invalid_hp) {
    ++invalid_;
    if (trial.training) --rungs_[trial.rung].outstanding;
    trial.training = false;
    for (size_t r = 0; r <= trial.rung; ++r) {
      auto& results = rungs_[r].results;
      results.erase(std::remove_if(results.begin(), results.end(),
                                   [&](const result& e) { return e.request_id == request_id; }),
                    results.end());
    }
    if (trials_counted() < settings_.max_trials) return {new_trial()};
    return {};
  }
  if (!trial.training) return {};  // waiting at its rung: its result stands
  return record_result(request_id, exited_trial_metric);
}

double asha_promotion_search::progress() const {
  return asha_progress(rungs_.front().results.size(), settings_.max_trials, exited_ - invalid_);
}

int64_t asha_promotion_search::rung_of(int64_t request_id) const {
  auto it = trial_states_.find(request_id);
  return it == trial_states_.end() ? -1 : static_cast<int64_t>(it->second.rung);
}

std::optional<config::length> asha_promotion_search::training_target(int64_t request_id) const {
  auto it = trial_states_.find(request_id);
  if (it == trial_states_.end() || !it->second.training || it->second.exited_early) return std::nullopt;
  return config::length{settings_.max_length.unit, rungs_[it->second.rung].units_needed};
}

void asha_promotion_search::snapshot(pb::SearcherSnapshot& snapshot) const {
  auto& state = *snapshot.mutable_asha();
  trials_.snapshot(*state.mutable_trials());
  for (const auto& r : rungs_) {
    auto& rung = *state.add_rungs();
    rung.set_outstanding(r.outstanding);
    for (const auto& e : r.results) {
      auto& entry = *rung.add_results();
      entry.set_request_id(e.request_id);
      entry.set_metric(e.metric);
      entry.set_promoted(e.promoted);
    }
  }
  for (const auto& [id, t] : trial_states_) {
    auto& entry = *state.add_trial_states();
    entry.set_request_id(id);
    entry.set_rung(static_cast<int64_t>(t.rung));
    entry.set_training(t.training);
    entry.set_exited_early(t.exited_early);
    entry.set_closed(t.closed);
  }
  state.set_invalid_hp(invalid_);
  state.set_exited(exited_);
}

void asha_promotion_search::restore(const pb::SearcherSnapshot& snapshot) {
  require_method(snapshot, pb::SearcherSnapshot::kAsha);
  const auto& state = snapshot.asha();
  auto rung_count = static_cast<int64_t>(rungs_.size());
  if (state.rungs_size() != rung_count)
    throw std::runtime_error("cannot restore the asha search: the snapshot holds " +
                             std::to_string(state.rungs_size()) + " rungs where its config gives " +
                             std::to_string(rung_count));
  auto restored = *this;
  for (int r = 0; r < state.rungs_size(); ++r) {
    auto& rung = restored.rungs_[static_cast<size_t>(r)];
    rung.outstanding = state.rungs(r).outstanding();
    rung.results.clear();
    for (const auto& e : state.rungs(r).results())
      rung.results.push_back(result{e.request_id(), e.metric(), e.promoted()});
  }
  restored.trial_states_.clear();
  for (const auto& t : state.trial_states()) {
    if (t.rung() < 0 || t.rung() >= rung_count)
      throw std::runtime_error("cannot restore the asha search: the snapshot puts trial " +
                               std::to_string(t.request_id()) + " in rung " + std::to_string(t.rung()) +
                               " of " + std::to_string(rung_count));
    restored.trial_states_[t.request_id()] =
        trial_state{static_cast<size_t>(t.rung()), t.training(), t.exited_early(), t.closed()};
  }
  restored.invalid_ = state.invalid_hp();
  restored.exited_ = state.exited();
  restored.trials_.restore(state.trials());
  *this = std::move(restored);
}

} // namespace det::searcher
