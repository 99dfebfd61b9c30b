#include "searcher/pbt_search.hpp"

#include "searcher/asha_rungs.hpp"
#include "searcher/hyperparameter_sampling.hpp"
#include "searcher/snapshot_parts.hpp"

#include <algorithm>

namespace det::searcher {

pbt_search::pbt_search(pbt_settings settings, config::hyperparameters hparams, trial_factory trials)
    : settings_(settings), hparams_(std::move(hparams)), trials_(std::move(trials)) {}

int64_t pbt_search::round_end(const member& m) const {
  return settings_.length_per_round.value * (m.rounds_trained + 1);
}

create_action pbt_search::add_member(create_action create) {
  members_[create.request_id] = member{create.hparams_json};
  return create;
}

std::vector<action> pbt_search::initial_trials() {
  std::vector<action> actions;
  for (int64_t i = 0; i < settings_.population_size; ++i) actions.push_back(add_member(trials_.next()));
  return actions;
}

std::vector<action> pbt_search::trial_created(int64_t request_id) {
  auto it = members_.find(request_id);
  if (it == members_.end() || it->second.reported || it->second.exited_early) return {};
  return {validate_after_action{request_id, config::length{settings_.length_per_round.unit, round_end(it->second)}}};
}

std::vector<action> pbt_search::validation_completed(int64_t request_id, double metric, int64_t length_trained) {
  auto it = members_.find(request_id);
  if (it == members_.end()) return {};
  auto& m = it->second;
  if (m.reported || m.exited_early || length_trained < round_end(m)) return {};
  m.reported = true;
  m.metric = ranked_metric(metric, settings_.smaller_is_better);
  ++m.rounds_trained;
  return end_round_if_complete();
}

std::vector<action> pbt_search::end_round_if_complete() {
  if (members_.empty()) return {};
  for (const auto& [id, m] : members_)
    if (!m.reported) return {};
  ++rounds_completed_;
  std::vector<action> actions;
  if (rounds_completed_ >= settings_.num_rounds) {
    for (const auto& [id, m] : members_)
      if (!m.exited_early) actions.push_back(stop_action{id, false});
    members_.clear();
    return actions;
  }
  std::vector<int64_t> ranked;
  for (const auto& [id, m] : members_) ranked.push_back(id);
  // Best first; among equals the older trial, so that a round replays exactly.
  std::stable_sort(ranked.begin(), ranked.end(),
                   [&](int64_t a, int64_t b) { return members_.at(a).metric < members_.at(b).metric; });
  auto truncate = static_cast<size_t>(settings_.truncate_fraction * static_cast<double>(settings_.population_size));
  truncate = std::min(truncate, ranked.size() / 2);
  std::vector<int64_t> survivors(ranked.begin(), ranked.end() - static_cast<std::ptrdiff_t>(truncate));
  for (auto it = ranked.end() - static_cast<std::ptrdiff_t>(truncate); it != ranked.end(); ++it) {
    if (!members_.at(*it).exited_early) actions.push_back(stop_action{*it, true});
    members_.erase(*it);
  }
  for (size_t i = 0; i < truncate; ++i) {
    auto parent = ranked[i];
    const auto& parent_hparams = members_.at(parent).hparams_json;
    auto create = trials_.next_with([&](std::mt19937_64& rng) {
      return explore_hyperparameters(hparams_, parent_hparams, settings_.resample_probability,
                                     settings_.perturb_factor, rng);
    });
    create.parent_request_id = parent;
    actions.push_back(add_member(std::move(create)));
  }
  for (auto id : survivors) {
    auto& m = members_.at(id);
    if (m.exited_early) {
      members_.erase(id);
      continue;
    }
    m.reported = false;
    actions.push_back(validate_after_action{id, config::length{settings_.length_per_round.unit, round_end(m)}});
  }
  return actions;
}

std::vector<action> pbt_search::trial_exited(int64_t request_id) {
  ++exited_;
  auto it = members_.find(request_id);
  if (it == members_.end() || it->second.exited_early) return {};
  // It ended on its own, without an early exit: as one.
  return trial_exited_early(request_id, exit_reason::errored);
}

std::vector<action> pbt_search::trial_exited_early(int64_t request_id, exit_reason reason) {
  auto it = members_.find(request_id);
  if (it == members_.end() || it->second.exited_early) return {};
  auto& m = it->second;
  if (reason == exit_reason::invalid_hp) {
    ++invalid_;
    members_.erase(it);
    return {add_member(trials_.next())};
  }
  m.exited_early = true;
  if (m.reported) return {};  // its result for this round stands
  m.reported = true;
  m.metric = exited_trial_metric;
  return end_round_if_complete();
}

double pbt_search::progress() const {
  if (settings_.num_rounds <= 0) return 0.0;
  double round_share = 0;
  if (!members_.empty()) {
    auto reported = std::count_if(members_.begin(), members_.end(), [](const auto& m) { return m.second.reported; });
    round_share = static_cast<double>(reported) / static_cast<double>(members_.size());
  }
  if (rounds_completed_ >= settings_.num_rounds) round_share = 0;
  return std::clamp((static_cast<double>(rounds_completed_) + round_share) / static_cast<double>(settings_.num_rounds),
                    0.0, 1.0);
}

std::optional<config::length> pbt_search::training_target(int64_t request_id) const {
  auto it = members_.find(request_id);
  if (it == members_.end() || it->second.reported || it->second.exited_early) return std::nullopt;
  return config::length{settings_.length_per_round.unit, round_end(it->second)};
}

void pbt_search::snapshot(pb::SearcherSnapshot& snapshot) const {
  auto& state = *snapshot.mutable_pbt();
  trials_.snapshot(*state.mutable_trials());
  state.set_rounds_completed(rounds_completed_);
  for (const auto& [id, m] : members_) {
    auto& entry = *state.add_members();
    entry.set_request_id(id);
    entry.set_hparams(m.hparams_json);
    entry.set_rounds_trained(m.rounds_trained);
    entry.set_reported(m.reported);
    entry.set_metric(m.metric);
    entry.set_exited_early(m.exited_early);
  }
  state.set_invalid_hp(invalid_);
  state.set_exited(exited_);
}

void pbt_search::restore(const pb::SearcherSnapshot& snapshot) {
  require_method(snapshot, pb::SearcherSnapshot::kPbt);
  const auto& state = snapshot.pbt();
  auto restored = *this;
  restored.rounds_completed_ = state.rounds_completed();
  restored.members_.clear();
  for (const auto& m : state.members())
    restored.members_[m.request_id()] =
        member{m.hparams(), m.rounds_trained(), m.reported(), m.metric(), m.exited_early()};
  restored.invalid_ = state.invalid_hp();
  restored.exited_ = state.exited();
  restored.trials_.restore(state.trials());
  *this = std::move(restored);
}

} // namespace det::searcher
