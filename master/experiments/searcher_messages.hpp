#pragma once
// What an experiment and its searcher actor say to each other. The experiment tells the search
// what happened to its trials, a decision's events in one message, and gets back one
// search_step: the actions the search decided, and what the experiment needs to know of the
// search to carry them out (the requests they touched, progress, the snapshot to store).
// Both actors live in the master process: these messages never cross the network, so they
// carry searcher::action as it is rather than a serializable copy of it.

#include <cstdint>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "caf/allowed_unsafe_message_type.hpp"
#include "config/length.hpp"
#include "messages/searcher.pb.h"
#include "searcher/action.hpp"

namespace det {

/// The events of a search, one per method of searcher::searcher with the same name.
namespace search_events {
struct initial_trials {};
struct trial_created {
  int64_t request_id = 0;
};
struct validation_completed {
  int64_t request_id = 0;
  double metric = 0;
  int64_t length_trained = 0;
};
struct trial_exited_early {
  int64_t request_id = 0;
  searcher::exit_reason reason = searcher::exit_reason::errored;
};
struct trial_exited {
  int64_t request_id = 0;
};
/// The trial's process reported how far it is (0 to 1).
struct trial_progress {
  int64_t request_id = 0;
  double share = 0;
};
/// custom: its process read the events up to this one (a killed search takes no operations).
struct events_acknowledged {
  int32_t through_event_id = 0;
};
} // namespace search_events

using search_event =
    std::variant<search_events::initial_trials, search_events::trial_created, search_events::validation_completed,
                 search_events::trial_exited_early, search_events::trial_exited, search_events::events_acknowledged,
                 search_events::trial_progress>;

/// One decision's events, in order; answered with one search_step.
struct search_request {
  std::vector<search_event> events;
};

/// What the search says of one request after a step: the rung it is in (-1 outside rungs) and
/// the length it was last asked to train to (none while it waits for one).
struct request_view {
  int64_t request_id = 0;
  int64_t rung = -1;
  std::optional<config::length> training_target;
};

/// The search after a step: what it decided and what the experiment carries out with it.
struct search_step {
  std::vector<searcher::action> actions;
  /// Every request the step's events or actions named.
  std::vector<request_view> requests;
  double progress = 0;
  /// pb::SearcherSnapshot after the step, serialized: what a restarted master continues from.
  std::string snapshot;
  /// custom: the events its process has not acknowledged, oldest first.
  std::vector<pb::SearcherEvent> custom_events;
};

} // namespace det

CAF_ALLOW_UNSAFE_MESSAGE_TYPE(det::search_request)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(det::search_step)
