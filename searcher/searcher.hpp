#pragma once

#include "searcher/search_method.hpp"
#include "searcher/trial_table.hpp"

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
  /// A trial's process reported its progress (search_method::trial_progress).
  void trial_progress(int64_t request_id, double share);
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

  int64_t trials_requested() const { return count(requested); }
  /// Whether the search asked for, saw created, or closed this trial (restore uses these to
  /// replay what happened after its last snapshot).
  bool was_requested(int64_t request_id) const { return has(request_id, requested); }
  bool was_created(int64_t request_id) const { return has(request_id, created); }
  bool was_closed(int64_t request_id) const { return has(request_id, closed); }
  int64_t trials_closed() const { return count(closed); }
  /// Requested and not yet closed, in request order.
  std::vector<int64_t> open_requests() const;
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
  /// What the searcher knows of one trial: a bit each.
  enum mark : uint8_t {
    requested = 1 << 0,
    created = 1 << 1,
    closed = 1 << 2,
    exited_early = 1 << 3,
    canceled = 1 << 4,
    failed = 1 << 5,
    invalid = 1 << 6,
  };
  static constexpr int mark_count = 7;

  std::vector<action> record(std::vector<action> actions);
  /// Requested and not closed: an event about any other trial is stale.
  bool is_open(int64_t request_id) const;
  bool has(int64_t request_id, mark m) const {
    const auto* marks = marks_.find(request_id);
    return marks && (*marks & m);
  }
  /// Sets the mark; false when the trial had it already.
  bool set(int64_t request_id, mark m);
  int64_t count(mark m) const { return counts_[index_of(m)]; }
  static int index_of(mark m) { return __builtin_ctz(m); }

  std::unique_ptr<search_method> method_;
  // Every event looks its trial up, once (searcher/trial_table.hpp).
  trial_table<uint8_t> marks_;
  int64_t counts_[mark_count] = {};
  bool shut_down_ = false;
  bool giving_up_ = false;  // too many invalid trials: create no more
};

} // namespace det::searcher
