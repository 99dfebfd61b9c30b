#include "searcher/searcher.hpp"

#include "messages/searcher.pb.h"
#include "searcher/custom_search.hpp"

#include <algorithm>
#include <stdexcept>
#include <string>

namespace det::searcher {

searcher::searcher(std::unique_ptr<search_method> method) : method_(std::move(method)) {}

std::vector<action> searcher::record(std::vector<action> actions) {
  // Filtered in place: the method's vector is handed on, not copied, at every event.
  std::size_t kept = 0;
  for (auto& a : actions) {
    if (const auto* create = std::get_if<create_action>(&a)) {
      if (giving_up_) continue;  // too many invalid trials: only open ones may finish
      requested_.insert(create->request_id);
    }
    if (std::holds_alternative<shutdown_action>(a)) shut_down_ = true;
    if (&actions[kept] != &a) actions[kept] = std::move(a);
    ++kept;
  }
  actions.erase(actions.begin() + static_cast<std::ptrdiff_t>(kept), actions.end());
  return actions;
}

bool searcher::is_open(int64_t request_id) const {
  return requested_.contains(request_id) && !closed_.contains(request_id);
}

std::vector<action> searcher::initial_trials() {
  return record(method_->initial_trials());
}

std::vector<action> searcher::trial_created(int64_t request_id) {
  if (!is_open(request_id) || !created_.insert(request_id)) return {};
  return record(method_->trial_created(request_id));
}

std::vector<action> searcher::validation_completed(int64_t request_id, double metric, int64_t length_trained) {
  if (!is_open(request_id)) return {};
  return record(method_->validation_completed(request_id, metric, length_trained));
}

std::vector<action> searcher::trial_exited_early(int64_t request_id, exit_reason reason) {
  if (!is_open(request_id) || !exited_early_.insert(request_id)) return {};
  if (reason == exit_reason::user_canceled) canceled_.insert(request_id);
  if (reason == exit_reason::errored) failed_.insert(request_id);
  if (reason == exit_reason::invalid_hp) invalid_.insert(request_id);
  // Searches replace trials with invalid hyperparameters; when the space
  // yields nothing else, give up instead of sampling forever.
  // (A custom search's process decides that itself.)
  giving_up_ = invalid_.size() >= max_invalid_trials && !method_->ends_search_itself();
  return record(method_->trial_exited_early(request_id, reason));
}

std::vector<action> searcher::trial_exited(int64_t request_id) {
  if (!is_open(request_id)) return {};
  closed_.insert(request_id);
  auto actions = record(method_->trial_exited(request_id));
  if (!shut_down_ && closed_.size() == requested_.size() && !method_->ends_search_itself()) {
    // Determined's rule, plus: a search that gave up on invalid hyperparameters failed.
    auto trials = requested_.size();
    actions.push_back(shutdown_action{canceled_.size() >= trials,
                                      giving_up_ || failed_.size() >= trials});
    shut_down_ = true;
  }
  return actions;
}

custom_search* searcher::custom() const {
  return dynamic_cast<custom_search*>(method_.get());
}

std::vector<action> searcher::operations_posted(const pb::PostSearcherOperationsRequest& request) {
  auto* method = custom();
  if (!method) throw std::invalid_argument("this experiment's searcher is not custom: it takes no operations");
  if (shut_down_) throw std::invalid_argument("the search is over: it takes no more operations");
  return record(method->apply(request));
}

double searcher::progress() const {
  return method_->progress();
}

namespace {

void write_ids(const id_set& ids, google::protobuf::RepeatedField<int64_t>& into) {
  into.Add(ids.begin(), ids.end());
}

id_set read_ids(const google::protobuf::RepeatedField<int64_t>& ids) {
  return {ids.begin(), ids.end()};
}

} // namespace

pb::SearcherSnapshot searcher::snapshot() const {
  pb::SearcherSnapshot snapshot;
  snapshot.set_version(searcher_snapshot_version);
  auto& state = *snapshot.mutable_searcher();
  write_ids(requested_, *state.mutable_trials_requested());
  write_ids(created_, *state.mutable_trials_created());
  write_ids(closed_, *state.mutable_trials_closed());
  write_ids(exited_early_, *state.mutable_exited_early());
  write_ids(canceled_, *state.mutable_canceled());
  write_ids(failed_, *state.mutable_failed());
  write_ids(invalid_, *state.mutable_invalid());
  state.set_shut_down(shut_down_);
  method_->snapshot(snapshot);
  return snapshot;
}

void searcher::restore(const pb::SearcherSnapshot& snapshot) {
  if (snapshot.version() != searcher_snapshot_version)
    throw std::runtime_error("cannot restore a searcher snapshot of version " +
                             std::to_string(snapshot.version()) + ": this master reads version " +
                             std::to_string(searcher_snapshot_version));
  method_->restore(snapshot);
  const auto& state = snapshot.searcher();
  requested_ = read_ids(state.trials_requested());
  created_ = read_ids(state.trials_created());
  closed_ = read_ids(state.trials_closed());
  exited_early_ = read_ids(state.exited_early());
  canceled_ = read_ids(state.canceled());
  failed_ = read_ids(state.failed());
  invalid_ = read_ids(state.invalid());
  giving_up_ = invalid_.size() >= max_invalid_trials && !method_->ends_search_itself();
  shut_down_ = state.shut_down();
}

} // namespace det::searcher
