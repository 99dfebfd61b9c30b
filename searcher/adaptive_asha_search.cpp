#include "searcher/adaptive_asha_search.hpp"

#include "searcher/snapshot_parts.hpp"

#include <algorithm>
#include <cmath>
#include <functional>
#include <stdexcept>
#include <string>

namespace det::searcher {

std::vector<int64_t> adaptive_bracket_rungs(const config::searcher_config& config, int64_t max_length) {
  std::vector<int64_t> rungs = config.bracket_rungs;
  if (rungs.empty()) {
    auto rungs_for = [&](int64_t n) {
      return static_cast<int64_t>(std::log(static_cast<double>(n)) / std::log(config.divisor)) + 1;
    };
    // The top rung of the largest bracket must be able to hold a trial.
    int64_t max_rungs = std::min({config.max_rungs, rungs_for(max_length), rungs_for(config.max_trials)});
    int64_t first = 1;
    if (config.mode == "aggressive") first = max_rungs;
    if (config.mode == "standard") first = (max_rungs - 1) / 2 + 1;
    for (int64_t n = first; n <= max_rungs; ++n) rungs.push_back(n);
  }
  // Brackets that stop more trials early come first, to show speedups early on.
  std::sort(rungs.begin(), rungs.end(), std::greater<>());
  return rungs;
}

std::vector<int64_t> bracket_max_trials(int64_t max_trials, double divisor,
                                        const std::vector<int64_t>& bracket_rungs) {
  std::vector<double> weights;
  double total = 0;
  for (auto rungs : bracket_rungs) {
    weights.push_back(std::pow(divisor, static_cast<double>(rungs - 1)) / static_cast<double>(rungs));
    total += weights.back();
  }
  std::vector<int64_t> trials;
  int64_t allocated = 0;
  for (auto weight : weights) {
    trials.push_back(std::max<int64_t>(static_cast<int64_t>(weight / total * static_cast<double>(max_trials)), 1));
    allocated += trials.back();
  }
  if (!trials.empty()) trials.front() += std::max<int64_t>(max_trials - allocated, 0);
  return trials;
}

std::vector<int64_t> bracket_max_concurrent_trials(int64_t max_concurrent_trials, double divisor,
                                                   const std::vector<int64_t>& bracket_max_trials) {
  auto brackets = static_cast<int64_t>(bracket_max_trials.size());
  if (brackets == 0) return {};
  if (max_concurrent_trials == 0) {
    auto each = std::max(bracket_max_trials.back(), static_cast<int64_t>(divisor));
    return std::vector<int64_t>(bracket_max_trials.size(), each);
  }
  // Every bracket needs at least one trial at a time, or it would never start.
  max_concurrent_trials = std::max(max_concurrent_trials, brackets);
  std::vector<int64_t> concurrent(bracket_max_trials.size(), max_concurrent_trials / brackets);
  for (int64_t i = 0; i < max_concurrent_trials % brackets; ++i) ++concurrent[static_cast<size_t>(i)];
  return concurrent;
}

std::vector<asha_settings> adaptive_asha_brackets(const config::searcher_config& config,
                                                  config::length max_length) {
  auto rungs = adaptive_bracket_rungs(config, max_length.value);
  auto trials = bracket_max_trials(config.max_trials, config.divisor, rungs);
  auto concurrent = bracket_max_concurrent_trials(config.max_concurrent_trials, config.divisor, trials);
  std::vector<asha_settings> brackets;
  for (size_t i = 0; i < rungs.size(); ++i)
    brackets.push_back(asha_settings{rungs[i], config.divisor, trials[i], concurrent[i], max_length,
                                     config.smaller_is_better});
  return brackets;
}

adaptive_asha_search::adaptive_asha_search(const std::vector<asha_settings>& brackets, trial_factory trials)
    // One factory for all brackets: request ids stay unique and samples come in one seeded order.
    : trials_(std::make_shared<trial_factory>(std::move(trials))) {
  brackets_.reserve(brackets.size());
  for (const auto& settings : brackets) brackets_.emplace_back(settings, trials_);
}

std::vector<action> adaptive_asha_search::claim(size_t bracket, std::vector<action> actions) {
  for (const auto& a : actions)
    if (const auto* create = std::get_if<create_action>(&a)) bracket_of_[create->request_id] = bracket;
  return actions;
}

std::optional<size_t> adaptive_asha_search::bracket_of(int64_t request_id) const {
  const auto* bracket = bracket_of_.find(request_id);
  if (!bracket) return std::nullopt;
  return *bracket;
}

std::vector<action> adaptive_asha_search::initial_trials() {
  std::vector<action> actions;
  for (size_t i = 0; i < brackets_.size(); ++i) {
    auto creates = claim(i, brackets_[i].initial_trials());
    actions.insert(actions.end(), creates.begin(), creates.end());
  }
  return actions;
}

int64_t adaptive_asha_search::rung_of(int64_t request_id) const {
  auto b = bracket_of(request_id);
  return b ? brackets_[*b].rung_of(request_id) : -1;
}

std::vector<action> adaptive_asha_search::trial_created(int64_t request_id) {
  auto b = bracket_of(request_id);
  return b ? claim(*b, brackets_[*b].trial_created(request_id)) : std::vector<action>{};
}

std::vector<action> adaptive_asha_search::validation_completed(int64_t request_id, double metric,
                                                               int64_t length_trained) {
  auto b = bracket_of(request_id);
  return b ? claim(*b, brackets_[*b].validation_completed(request_id, metric, length_trained))
           : std::vector<action>{};
}

std::vector<action> adaptive_asha_search::trial_exited(int64_t request_id) {
  auto b = bracket_of(request_id);
  return b ? claim(*b, brackets_[*b].trial_exited(request_id)) : std::vector<action>{};
}

std::vector<action> adaptive_asha_search::trial_exited_early(int64_t request_id, exit_reason reason) {
  auto b = bracket_of(request_id);
  return b ? claim(*b, brackets_[*b].trial_exited_early(request_id, reason)) : std::vector<action>{};
}

double adaptive_asha_search::progress() const {
  if (brackets_.empty()) return 0.0;
  double sum = 0;
  for (const auto& bracket : brackets_) sum += bracket.progress();
  return sum / static_cast<double>(brackets_.size());
}

void adaptive_asha_search::snapshot(pb::SearcherSnapshot& snapshot) const {
  auto& state = *snapshot.mutable_adaptive_asha();
  trials_->snapshot(*state.mutable_trials());
  for (const auto& bracket : brackets_) bracket.snapshot_state(*state.add_brackets());
  auto& bracket_of = *state.mutable_bracket_of();
  bracket_of_.for_each([&bracket_of](int64_t id, size_t bracket) { bracket_of[id] = static_cast<int64_t>(bracket); });
}

void adaptive_asha_search::restore(const pb::SearcherSnapshot& snapshot) {
  require_method(snapshot, pb::SearcherSnapshot::kAdaptiveAsha);
  const auto& state = snapshot.adaptive_asha();
  auto count = static_cast<int64_t>(brackets_.size());
  if (state.brackets_size() != count)
    throw std::runtime_error("cannot restore the adaptive_asha search: the snapshot holds " +
                             std::to_string(state.brackets_size()) + " brackets where its config gives " +
                             std::to_string(count));
  // Restored aside first, so that a throw changes nothing; the copies share trials_.
  auto brackets = brackets_;
  for (size_t i = 0; i < brackets.size(); ++i) brackets[i].restore_state(state.brackets(static_cast<int>(i)));
  trial_table<size_t> bracket_of;
  for (const auto& [id, bracket] : state.bracket_of()) {
    if (bracket < 0 || bracket >= count)
      throw std::runtime_error("cannot restore the adaptive_asha search: the snapshot puts trial " +
                               std::to_string(id) + " in bracket " + std::to_string(bracket) + " of " +
                               std::to_string(count));
    bracket_of[id] = static_cast<size_t>(bracket);
  }
  trials_->restore(state.trials());
  brackets_ = std::move(brackets);
  bracket_of_ = std::move(bracket_of);
}

} // namespace det::searcher
