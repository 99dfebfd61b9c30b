#include "searcher/random_search.hpp"

#include "searcher/snapshot_parts.hpp"

#include <algorithm>
#include <set>

namespace det::searcher {

random_search::random_search(int64_t max_trials, int64_t max_concurrent_trials,
                             std::optional<config::length> max_length,
                             trial_factory trials)
    : max_trials_(max_trials),
      max_concurrent_trials_(max_concurrent_trials),
      max_length_(max_length),
      trials_(std::move(trials)) {}

std::vector<action> random_search::initial_trials() {
  auto count = max_concurrent_trials_ > 0 ? std::min(max_trials_, max_concurrent_trials_) : max_trials_;
  std::vector<action> actions;
  for (; counted_ < count; ++counted_) actions.push_back(trials_.next());
  return actions;
}

std::vector<action> random_search::trial_created(int64_t request_id) {
  trial_progress_.emplace(request_id, 0.0);
  if (!max_length_) return {};  // its process trains until it exits
  return {validate_after_action{request_id, *max_length_}};
}

std::vector<action> random_search::validation_completed(int64_t request_id, double, int64_t length_trained) {
  if (max_length_ && max_length_->value > 0)
    trial_progress(request_id, static_cast<double>(length_trained) / static_cast<double>(max_length_->value));
  return {};
}

void random_search::trial_progress(int64_t request_id, double share) {
  auto it = trial_progress_.find(request_id);
  if (it != trial_progress_.end())
    set_progress(request_id, std::max(it->second, std::clamp(share, 0.0, 1.0)));
}

void random_search::set_progress(int64_t request_id, double share) {
  auto& held = trial_progress_[request_id];
  progress_sum_ += share - held;
  held = share;
}

std::vector<action> random_search::trial_exited(int64_t request_id) {
  if (!invalid_.count(request_id)) set_progress(request_id, 1.0);
  if (counted_ >= max_trials_) return {};
  ++counted_;
  return {trials_.next()};
}

std::vector<action> random_search::trial_exited_early(int64_t request_id, exit_reason reason) {
  if (reason == exit_reason::invalid_hp && invalid_.insert(request_id).second) {
    // Its replacement is created when the trial exits, as any trial's successor is.
    --counted_;
    set_progress(request_id, 0.0);
    trial_progress_.erase(request_id);
  }
  return {};
}

double random_search::progress() const {
  if (max_trials_ <= 0) return 0.0;
  return std::clamp(progress_sum_ / static_cast<double>(max_trials_), 0.0, 1.0);
}

void random_search::snapshot(pb::SearcherSnapshot& snapshot) const {
  auto& state = *snapshot.mutable_random();
  trials_.snapshot(*state.mutable_trials());
  state.set_counted(counted_);
  write_progress(trial_progress_, *state.mutable_trial_progress());
  std::set<int64_t> invalid(invalid_.begin(), invalid_.end());
  for (auto id : invalid) state.add_invalid_hp(id);
}

void random_search::restore(const pb::SearcherSnapshot& snapshot) {
  require_method(snapshot, pb::SearcherSnapshot::kRandom);
  const auto& state = snapshot.random();
  trials_.restore(state.trials());
  counted_ = state.counted();
  trial_progress_ = read_progress(state.trial_progress());
  progress_sum_ = 0;
  for (const auto& [id, share] : trial_progress_) progress_sum_ += share;
  invalid_ = {state.invalid_hp().begin(), state.invalid_hp().end()};
}

} // namespace det::searcher
