#include "searcher/searcher.hpp"

namespace det::searcher {

searcher::searcher(std::unique_ptr<search_method> method) : method_(std::move(method)) {}

std::vector<action> searcher::record(std::vector<action> actions) {
  for (const auto& a : actions) {
    if (const auto* create = std::get_if<create_action>(&a)) requested_.insert(create->request_id);
    if (std::holds_alternative<shutdown_action>(a)) shut_down_ = true;
  }
  return actions;
}

bool searcher::is_open(int64_t request_id) const {
  return requested_.count(request_id) && !closed_.count(request_id);
}

std::vector<action> searcher::initial_trials() {
  return record(method_->initial_trials());
}

std::vector<action> searcher::trial_created(int64_t request_id) {
  if (!is_open(request_id) || !created_.insert(request_id).second) return {};
  return record(method_->trial_created(request_id));
}

std::vector<action> searcher::validation_completed(int64_t request_id, double metric, int64_t length_trained) {
  if (!is_open(request_id)) return {};
  return record(method_->validation_completed(request_id, metric, length_trained));
}

std::vector<action> searcher::trial_exited_early(int64_t request_id, exit_reason reason) {
  if (!is_open(request_id) || !exited_early_.insert(request_id).second) return {};
  if (reason == exit_reason::user_canceled) canceled_.insert(request_id);
  if (reason == exit_reason::errored) failed_.insert(request_id);
  return record(method_->trial_exited_early(request_id, reason));
}

std::vector<action> searcher::trial_exited(int64_t request_id) {
  if (!is_open(request_id)) return {};
  closed_.insert(request_id);
  auto actions = record(method_->trial_exited(request_id));
  if (!shut_down_ && closed_.size() == requested_.size()) {
    auto trials = requested_.size();
    actions.push_back(shutdown_action{canceled_.size() >= trials, failed_.size() >= trials});
    shut_down_ = true;
  }
  return actions;
}

double searcher::progress() const {
  return method_->progress();
}

} // namespace det::searcher
