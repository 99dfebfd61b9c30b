#include "searcher/single_search.hpp"

#include "searcher/snapshot_parts.hpp"

#include <algorithm>

namespace det::searcher {

single_search::single_search(std::optional<config::length> max_length, trial_factory trials)
    : max_length_(max_length), trials_(std::move(trials)) {}

std::vector<action> single_search::initial_trials() {
  auto create = trials_.next();
  request_id_ = create.request_id;
  if (!max_length_) return {create};  // its process trains until it exits
  return {create, validate_after_action{request_id_, *max_length_}};
}

std::vector<action> single_search::trial_created(int64_t) {
  return {};
}

std::vector<action> single_search::validation_completed(int64_t request_id, double, int64_t length_trained) {
  if (request_id == request_id_) length_trained_ = std::max(length_trained_, length_trained);
  return {};
}

std::vector<action> single_search::trial_exited(int64_t request_id) {
  if (request_id == request_id_) exited_ = true;
  return {};
}

std::vector<action> single_search::trial_exited_early(int64_t, exit_reason) {
  // Determined's single searcher replaces no trial, not even one with invalid hyperparameters.
  return {};
}

void single_search::trial_progress(int64_t request_id, double share) {
  if (request_id == request_id_) reported_progress_ = std::max(reported_progress_, share);
}

double single_search::progress() const {
  if (exited_) return 1.0;
  double validated = 0;
  if (max_length_ && max_length_->value > 0)
    validated = static_cast<double>(length_trained_) / static_cast<double>(max_length_->value);
  return std::clamp(std::max(validated, reported_progress_), 0.0, 1.0);
}

void single_search::snapshot(pb::SearcherSnapshot& snapshot) const {
  auto& state = *snapshot.mutable_single();
  trials_.snapshot(*state.mutable_trials());
  state.set_request_id(request_id_);
  state.set_length_trained(length_trained_);
  state.set_exited(exited_);
  state.set_reported_progress(reported_progress_);
}

void single_search::restore(const pb::SearcherSnapshot& snapshot) {
  require_method(snapshot, pb::SearcherSnapshot::kSingle);
  const auto& state = snapshot.single();
  trials_.restore(state.trials());
  request_id_ = state.request_id();
  length_trained_ = state.length_trained();
  exited_ = state.exited();
  reported_progress_ = state.reported_progress();
}

} // namespace det::searcher
