#include "searcher/grid_search.hpp"

#include "searcher/random_draw.hpp"
#include "searcher/snapshot_parts.hpp"

#include <algorithm>

namespace det::searcher {

grid_search::grid_search(std::vector<std::string> points, int64_t max_concurrent_trials,
                         std::optional<config::length> max_length, uint32_t experiment_seed)
    : remaining_(std::move(points)),
      grid_size_(static_cast<int64_t>(remaining_.size())),
      max_concurrent_trials_(max_concurrent_trials),
      max_length_(max_length),
      rng_(experiment_seed) {}

create_action grid_search::next_point() {
  create_action create;
  create.request_id = next_request_id_++;
  create.trial_seed = static_cast<uint32_t>(draw_below(rng_, uint64_t{1} << 31));
  create.hparams_json = std::move(remaining_.back());
  remaining_.pop_back();
  return create;
}

std::vector<action> grid_search::initial_trials() {
  auto count = max_concurrent_trials_ > 0 ? std::min(grid_size_, max_concurrent_trials_) : grid_size_;
  std::vector<action> actions;
  for (int64_t i = 0; i < count; ++i) actions.push_back(next_point());
  return actions;
}

std::vector<action> grid_search::trial_created(int64_t request_id) {
  trial_progress_.emplace(request_id, 0.0);
  if (!max_length_) return {};  // its process trains until it exits
  return {validate_after_action{request_id, *max_length_}};
}

std::vector<action> grid_search::validation_completed(int64_t request_id, double, int64_t length_trained) {
  if (max_length_ && max_length_->value > 0)
    trial_progress(request_id, static_cast<double>(length_trained) / static_cast<double>(max_length_->value));
  return {};
}

void grid_search::trial_progress(int64_t request_id, double share) {
  auto it = trial_progress_.find(request_id);
  if (it != trial_progress_.end()) it->second = std::max(it->second, std::clamp(share, 0.0, 1.0));
}

std::vector<action> grid_search::trial_exited(int64_t request_id) {
  trial_progress_[request_id] = 1.0;
  if (remaining_.empty()) return {};
  return {next_point()};
}

std::vector<action> grid_search::trial_exited_early(int64_t, exit_reason) {
  return {};
}

double grid_search::progress() const {
  if (grid_size_ == 0) return 0.0;
  double sum = 0;
  for (const auto& [id, share] : trial_progress_) sum += share;
  return std::clamp(sum / static_cast<double>(grid_size_), 0.0, 1.0);
}

void grid_search::snapshot(pb::SearcherSnapshot& snapshot) const {
  auto& state = *snapshot.mutable_grid();
  state.mutable_trials()->set_rng(rng_text(rng_));
  state.mutable_trials()->set_next_request_id(next_request_id_);
  for (const auto& point : remaining_) state.add_remaining_points(point);
  write_progress(trial_progress_, *state.mutable_trial_progress());
}

void grid_search::restore(const pb::SearcherSnapshot& snapshot) {
  require_method(snapshot, pb::SearcherSnapshot::kGrid);
  const auto& state = snapshot.grid();
  rng_ = rng_from_text(state.trials().rng());
  next_request_id_ = state.trials().next_request_id();
  remaining_.assign(state.remaining_points().begin(), state.remaining_points().end());
  trial_progress_ = read_progress(state.trial_progress());
}

} // namespace det::searcher
