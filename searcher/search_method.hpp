#pragma once

#include "config/experiment_config.hpp"
#include "searcher/action.hpp"

#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

namespace det::pb {
class SearcherSnapshot;
}

namespace det::searcher {

/// A search algorithm (Determined's SearchMethod): events about trials in, decisions out. Pure
/// logic without clocks or I/O; its randomness comes from the experiment seed, so a search
/// replays exactly. Every event names a trial by the request id of its create_action.
class search_method {
 public:
  virtual ~search_method();

  /// The first decisions, when the experiment starts.
  virtual std::vector<action> initial_trials() = 0;
  /// The trial now exists (its create_action has been carried out).
  virtual std::vector<action> trial_created(int64_t request_id) = 0;
  /// The trial validated: `metric` is the searcher metric as reported (not negated), and
  /// `length_trained` the trial's total training so far, in the unit of its validate_after_action.
  virtual std::vector<action> validation_completed(int64_t request_id, double metric,
                                                   int64_t length_trained) = 0;
  /// The trial reached a terminal state.
  virtual std::vector<action> trial_exited(int64_t request_id) = 0;
  /// The trial ended early; trial_exited follows once it is terminal.
  virtual std::vector<action> trial_exited_early(int64_t request_id, exit_reason reason) = 0;
  /// The trial's own process reported how far it is, from 0 to 1 (Determined 0.38's
  /// SetTrialProgress). Searches whose progress counts trials' shares take it; by default it is
  /// ignored.
  virtual void trial_progress(int64_t request_id, double share);
  /// How far the whole search is, from 0 to 1.
  virtual double progress() const = 0;
  /// The successive-halving rung (0 the lowest) the trial trains for or was last ranked in; -1
  /// where the method has no rungs.
  virtual int64_t rung_of(int64_t request_id) const;
  /// Whether a trial that reached the length of its validate_after_action waits for the search's
  /// next action (promotion-based methods), rather than being done.
  virtual bool trials_wait_at_length() const;
  /// For methods whose trials wait: the length the trial is asked to train to now, or nullopt
  /// while it waits for the search (or is unknown).
  virtual std::optional<config::length> training_target(int64_t request_id) const;
  /// Whether the method says itself when the search is over (custom), rather than the searcher
  /// ending it when the last requested trial has closed.
  virtual bool ends_search_itself() const { return false; }
  /// Writes the method's state into its field of `snapshot` (messages/searcher.proto).
  virtual void snapshot(pb::SearcherSnapshot& snapshot) const = 0;
  /// Takes the state `snapshot` holds, into a method built from the config it was taken under.
  /// Throws std::runtime_error, changing nothing, when it holds another method's state or one that
  /// does not fit this method's config.
  virtual void restore(const pb::SearcherSnapshot& snapshot) = 0;
};

/// The search method `config.searcher.name` names, seeded with `config.experiment_seed`.
/// Throws config::config_error for a name that is not a searcher.
std::unique_ptr<search_method> make_search_method(const config::experiment_config& config);

} // namespace det::searcher
