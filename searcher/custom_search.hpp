#pragma once

#include "searcher/search_method.hpp"
#include "searcher/trial_factory.hpp"

#include "messages/searcher.pb.h"

#include <map>
#include <set>
#include <string>
#include <vector>

namespace det::searcher {

/// Determined's `custom` searcher (0.19.6 to 0.37): a user's process decides. Every event about
/// the search is queued for it (initial operations, trial created, validation completed, trial
/// progress, trial closed, trial exited early); it reads them over REST and answers with
/// operations (create a trial with these hyperparameters, validate after this length, close,
/// set progress, shut down), acknowledging the events up to the one that prompted them. Events
/// stay queued, and in the snapshot, until acknowledged, so a restarted master delivers them
/// again. The client names trials by its own UUIDs; det gives each a request id.
class custom_search final : public search_method {
 public:
  custom_search(config::length_unit unit, config::hyperparameters hparams, uint32_t experiment_seed);

  std::vector<action> initial_trials() override;
  std::vector<action> trial_created(int64_t request_id) override;
  /// Queues validation completed once the trial reached the length the client asked for, and
  /// trial progress for a validation on the way there.
  std::vector<action> validation_completed(int64_t request_id, double metric, int64_t length_trained) override;
  std::vector<action> trial_exited(int64_t request_id) override;
  std::vector<action> trial_exited_early(int64_t request_id, exit_reason reason) override;
  /// What the client last set.
  double progress() const override;
  /// A trial waits at each length until the client says what next.
  bool trials_wait_at_length() const override { return true; }
  /// The length of the trial's validate-after until it validates there.
  std::optional<config::length> training_target(int64_t request_id) const override;
  /// The client says when the search is over, not the last trial's close.
  bool ends_search_itself() const override { return true; }
  void snapshot(pb::SearcherSnapshot& snapshot) const override;
  void restore(const pb::SearcherSnapshot& snapshot) override;

  /// The events the client has not acknowledged, oldest first.
  const std::vector<pb::SearcherEvent>& events() const { return state_.events; }
  /// Acknowledges the events up to `request.triggered_by_event().id()` and turns the operations
  /// into actions. A post that acknowledges no event beyond those already acknowledged repeats one
  /// carried out before (a client retrying across a master restart) and changes nothing. A
  /// shut-down stops the open trials and ends the search once the last of them exits; after it,
  /// trials are no longer created (refused) or trained further (ignored), and another shut-down
  /// changes nothing.
  /// Throws std::invalid_argument with a sentence naming the operation (from 1), changing nothing.
  std::vector<action> apply(const pb::PostSearcherOperationsRequest& request);
  /// Drops the events up to `event_id` and nothing else (a search that is being killed takes no
  /// operations, but its process's answers still acknowledge what it read).
  void acknowledge(int32_t event_id);

 private:
  struct state {
    std::vector<pb::SearcherEvent> events;
    int32_t last_event_id = 0;
    int32_t acknowledged = 0;  // the client has answered every event up to this one
    trial_factory trials;
    std::map<std::string, int64_t> request_ids;  // the client's UUID -> request id
    std::map<int64_t, std::string> uuids;        // turned round
    double progress = 0;
    std::map<int64_t, int64_t> targets;  // request id -> validate-after length not yet reached
    std::set<int64_t> open;              // created by the client, not yet exited
    bool shutdown_requested = false;
    pb::ShutDownOperation shutdown;
  };

  pb::SearcherEvent& push_event();
  const std::string& uuid_of(int64_t request_id) const;
  int64_t request_id_of(const std::string& uuid, std::size_t place) const;
  action create(const pb::CreateTrialOperation& op, std::size_t place);

  config::length_unit unit_;
  state state_;
};

} // namespace det::searcher
