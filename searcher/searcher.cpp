#include "searcher/searcher.hpp"

#include "messages/searcher.pb.h"
#include "searcher/custom_search.hpp"

#include <algorithm>
#include <stdexcept>
#include <string>

namespace det::searcher {

searcher::searcher(std::unique_ptr<search_method> method) : method_(std::move(method)) {}

bool searcher::set(int64_t request_id, mark m) {
  auto& marks = marks_[request_id];
  if (marks & m) return false;
  marks = static_cast<uint8_t>(marks | m);
  ++counts_[index_of(m)];
  return true;
}

std::vector<action> searcher::record(std::vector<action> actions) {
  // Filtered in place: the method's vector is handed on, not copied, at every event.
  std::size_t kept = 0;
  for (auto& a : actions) {
    if (const auto* create = std::get_if<create_action>(&a)) {
      if (giving_up_) continue;  // too many invalid trials: only open ones may finish
      set(create->request_id, requested);
    }
    if (std::holds_alternative<shutdown_action>(a)) shut_down_ = true;
    if (&actions[kept] != &a) actions[kept] = std::move(a);
    ++kept;
  }
  actions.erase(actions.begin() + static_cast<std::ptrdiff_t>(kept), actions.end());
  return actions;
}

bool searcher::is_open(int64_t request_id) const {
  const auto* marks = marks_.find(request_id);
  return marks && (*marks & (requested | closed)) == requested;
}

std::vector<int64_t> searcher::open_requests() const {
  std::vector<int64_t> open;
  marks_.for_each([&open](int64_t id, uint8_t marks) {
    if ((marks & (requested | closed)) == requested) open.push_back(id);
  });
  return open;
}

std::vector<action> searcher::initial_trials() {
  return record(method_->initial_trials());
}

std::vector<action> searcher::trial_created(int64_t request_id) {
  if (!is_open(request_id) || !set(request_id, created)) return {};
  return record(method_->trial_created(request_id));
}

std::vector<action> searcher::validation_completed(int64_t request_id, double metric, int64_t length_trained) {
  if (!is_open(request_id)) return {};
  return record(method_->validation_completed(request_id, metric, length_trained));
}

void searcher::trial_progress(int64_t request_id, double share) {
  if (is_open(request_id)) method_->trial_progress(request_id, std::clamp(share, 0.0, 1.0));
}

std::vector<action> searcher::trial_exited_early(int64_t request_id, exit_reason reason) {
  if (!is_open(request_id) || !set(request_id, exited_early)) return {};
  if (reason == exit_reason::user_canceled) set(request_id, canceled);
  if (reason == exit_reason::errored) set(request_id, failed);
  if (reason == exit_reason::invalid_hp) set(request_id, invalid);
  // Searches replace trials with invalid hyperparameters; when the space
  // yields nothing else, give up instead of sampling forever.
  // (A custom search's process decides that itself.)
  giving_up_ = count(invalid) >= static_cast<int64_t>(max_invalid_trials) && !method_->ends_search_itself();
  return record(method_->trial_exited_early(request_id, reason));
}

std::vector<action> searcher::trial_exited(int64_t request_id) {
  if (!is_open(request_id)) return {};
  set(request_id, closed);
  auto actions = record(method_->trial_exited(request_id));
  if (!shut_down_ && count(closed) == count(requested) && !method_->ends_search_itself()) {
    // Determined's rule, plus: a search that gave up on invalid hyperparameters failed.
    auto trials = count(requested);
    actions.push_back(shutdown_action{count(canceled) >= trials, giving_up_ || count(failed) >= trials});
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

pb::SearcherSnapshot searcher::snapshot() const {
  pb::SearcherSnapshot snapshot;
  snapshot.set_version(searcher_snapshot_version);
  auto& state = *snapshot.mutable_searcher();
  google::protobuf::RepeatedField<int64_t>* lists[mark_count] = {
      state.mutable_trials_requested(), state.mutable_trials_created(), state.mutable_trials_closed(),
      state.mutable_exited_early(),     state.mutable_canceled(),       state.mutable_failed(),
      state.mutable_invalid()};
  for (int i = 0; i < mark_count; ++i) lists[i]->Reserve(static_cast<int>(counts_[i]));
  // In increasing id order, as restore and every earlier snapshot have them.
  marks_.for_each([&lists](int64_t id, uint8_t marks) {
    for (int i = 0; i < mark_count; ++i)
      if (marks & (1 << i)) lists[i]->AddAlreadyReserved(id);
  });
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
  const google::protobuf::RepeatedField<int64_t>* lists[mark_count] = {
      &state.trials_requested(), &state.trials_created(), &state.trials_closed(), &state.exited_early(),
      &state.canceled(),         &state.failed(),         &state.invalid()};
  marks_ = {};
  std::fill(std::begin(counts_), std::end(counts_), 0);
  for (int i = 0; i < mark_count; ++i)
    for (auto id : *lists[i]) set(id, static_cast<mark>(1 << i));  // an id listed twice counts once
  giving_up_ = count(invalid) >= static_cast<int64_t>(max_invalid_trials) && !method_->ends_search_itself();
  shut_down_ = state.shut_down();
}

} // namespace det::searcher
