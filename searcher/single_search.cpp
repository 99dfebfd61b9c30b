#include "searcher/single_search.hpp"

#include "searcher/snapshot_parts.hpp"

#include <algorithm>

namespace det::searcher {

single_search::single_search(config::length max_length, trial_factory trials)
    : max_length_(max_length), trials_(std::move(trials)) {}

std::vector<action> single_search::initial_trials() {
  auto create = trials_.next();
  request_id_ = create.request_id;
  return {create, validate_after_action{request_id_, max_length_}};
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

double single_search::progress() const {
  if (exited_) return 1.0;
  if (max_length_.value <= 0) return 0.0;
  return std::clamp(static_cast<double>(length_trained_) / static_cast<double>(max_length_.value), 0.0, 1.0);
}

void single_search::snapshot(pb::SearcherSnapshot& snapshot) const {
  auto& state = *snapshot.mutable_single();
  trials_.snapshot(*state.mutable_trials());
  state.set_request_id(request_id_);
  state.set_length_trained(length_trained_);
  state.set_exited(exited_);
}

void single_search::restore(const pb::SearcherSnapshot& snapshot) {
  require_method(snapshot, pb::SearcherSnapshot::kSingle);
  const auto& state = snapshot.single();
  trials_.restore(state.trials());
  request_id_ = state.request_id();
  length_trained_ = state.length_trained();
  exited_ = state.exited();
}

} // namespace det::searcher
