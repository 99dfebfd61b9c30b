#pragma once

#include "searcher/id_set.hpp"
#include "searcher/search_method.hpp"

#include <cstdint>
#include <memory>
#include <algorithm>
#include <vector>

namespace det::pb {
class PostSearcherOperationsRequest;
}

namespace det::searcher {

class custom_search;

/// A search stops creating trials after this many had invalid hyperparameters.
inline constexpr std::size_t max_invalid_trials = 100;

/// The layout of pb::SearcherSnapshot that snapshot() writes and restore() reads.
inline constexpr uint32_t searcher_snapshot_version = 1;

/// Wraps a search_method with the bookkeeping every search shares (Determined's Searcher): which
/// trials were requested, created and closed, and which exited early, were canceled or failed.
/// When every requested trial has closed it adds shutdown_action{cancel, failure}: cancel when
/// every trial was canceled, failure when every trial failed (unless the method ends the search
/// itself, as custom does). Events about a request id that was
/// never requested or has already closed are stale and change nothing.
/// Not thread-safe: one owner (the experiment) feeds it events in order.
class searcher {
 public:
  explicit searcher(std::unique_ptr<search_method> method);

  std::vector<action> initial_trials();
  std::vector<action> trial_created(int64_t request_id);
  std::vector<action> validation_completed(int64_t request_id, double metric, int64_t length_trained);
  /// Closes the trial; the last close ends the search.
  std::vector<action> trial_exited(int64_t request_id);
  /// Idempotent per trial; user_canceled counts as a cancel and errored as a failure.
  std::vector<action> trial_exited_early(int64_t request_id, exit_reason reason);
  double progress() const;
  /// The method, when a user's process drives the search (searcher.name = "custom"); else null.
  custom_search* custom() const;
  /// custom: the operations its process posted, as actions. Throws std::invalid_argument with a
  /// sentence, changing nothing, for another method, a search that is over, or a bad operation.
  std::vector<action> operations_posted(const pb::PostSearcherOperationsRequest& request);
  /// search_method::rung_of and trials_wait_at_length of the method.
  int64_t rung_of(int64_t request_id) const { return method_->rung_of(request_id); }
  bool trials_wait_at_length() const { return method_->trials_wait_at_length(); }
  std::optional<config::length> training_target(int64_t request_id) const {
    return method_->training_target(request_id);
  }

  int64_t trials_requested() const { return static_cast<int64_t>(requested_.size()); }
  /// Whether the search asked for, saw created, or closed this trial (restore uses these to
  /// replay what happened after its last snapshot).
  bool was_requested(int64_t request_id) const { return requested_.contains(request_id); }
  bool was_created(int64_t request_id) const { return created_.contains(request_id); }
  bool was_closed(int64_t request_id) const { return closed_.contains(request_id); }
  int64_t trials_closed() const { return static_cast<int64_t>(closed_.size()); }
  /// Requested and not yet closed, in request order.
  std::vector<int64_t> open_requests() const {
    std::vector<int64_t> open;
    for (auto id : requested_)
      if (!closed_.contains(id)) open.push_back(id);
    return open;
  }
  /// Whether a shutdown_action has been handed out.
  bool shut_down() const { return shut_down_; }

  /// Everything the search has decided and been told (messages/searcher.proto), for a restarted
  /// master to continue it exactly.
  pb::SearcherSnapshot snapshot() const;
  /// Takes the state of `snapshot` into a searcher built by make_search_method from the config it
  /// was taken under. Throws std::runtime_error, changing nothing, for another version, another
  /// search method, or a state that does not fit this searcher's config.
  void restore(const pb::SearcherSnapshot& snapshot);

 private:
  std::vector<action> record(std::vector<action> actions);
  bool is_open(int64_t request_id) const;

  std::unique_ptr<search_method> method_;
  // Every event looks its trial up; every snapshot writes them in order (searcher/id_set.hpp).
  id_set requested_;
  id_set created_;
  id_set closed_;
  id_set exited_early_;
  id_set canceled_;
  id_set failed_;
  id_set invalid_;
  bool shut_down_ = false;
  bool giving_up_ = false;  // too many invalid trials: create no more
};

} // namespace det::searcher
