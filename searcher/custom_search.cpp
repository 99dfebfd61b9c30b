#include "searcher/custom_search.hpp"

#include "searcher/snapshot_parts.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <stdexcept>

namespace det::searcher {

namespace {

std::string operation_at(std::size_t place) {
  return "searcher operation " + std::to_string(place) + ": ";
}

} // namespace

custom_search::custom_search(config::length_unit unit, config::hyperparameters hparams, uint32_t experiment_seed)
    : unit_(unit), state_{{}, 0, 0, trial_factory(std::move(hparams), experiment_seed)} {}

pb::SearcherEvent& custom_search::push_event() {
  auto& event = state_.events.emplace_back();
  event.set_id(++state_.last_event_id);
  return event;
}

const std::string& custom_search::uuid_of(int64_t request_id) const {
  static const std::string none;
  auto it = state_.uuids.find(request_id);
  return it == state_.uuids.end() ? none : it->second;
}

std::vector<action> custom_search::initial_trials() {
  push_event().mutable_initial_operations();
  return {};
}

std::vector<action> custom_search::trial_created(int64_t request_id) {
  push_event().mutable_trial_created()->set_request_id(uuid_of(request_id));
  return {};
}

std::vector<action> custom_search::validation_completed(int64_t request_id, double metric, int64_t length_trained) {
  auto target = state_.targets.find(request_id);
  if (target == state_.targets.end() || length_trained < target->second) {
    auto& progress = *push_event().mutable_trial_progress();
    progress.set_request_id(uuid_of(request_id));
    progress.set_partial_units(static_cast<double>(length_trained));
    return {};
  }
  auto& done = *push_event().mutable_validation_completed();
  done.set_request_id(uuid_of(request_id));
  done.set_metric(metric);
  done.set_validate_after_length(static_cast<uint64_t>(target->second));
  state_.targets.erase(target);
  return {};
}

std::vector<action> custom_search::trial_exited(int64_t request_id) {
  push_event().mutable_trial_closed()->set_request_id(uuid_of(request_id));
  state_.targets.erase(request_id);
  state_.open.erase(request_id);
  if (state_.shutdown_requested && state_.open.empty())
    return {shutdown_action{state_.shutdown.cancel(), state_.shutdown.failure()}};
  return {};
}

std::vector<action> custom_search::trial_exited_early(int64_t request_id, exit_reason reason) {
  auto& exited = *push_event().mutable_trial_exited_early();
  exited.set_request_id(uuid_of(request_id));
  exited.set_exited_reason(reason == exit_reason::invalid_hp ? pb::TrialExitedEarly::EXITED_REASON_INVALID_HP
                           : reason == exit_reason::user_canceled
                               ? pb::TrialExitedEarly::EXITED_REASON_USER_REQUESTED_STOP
                               : pb::TrialExitedEarly::EXITED_REASON_UNSPECIFIED);
  return {};
}

double custom_search::progress() const {
  return state_.progress;
}

std::optional<config::length> custom_search::training_target(int64_t request_id) const {
  auto it = state_.targets.find(request_id);
  if (it == state_.targets.end()) return std::nullopt;
  return config::length{unit_, it->second};
}

int64_t custom_search::request_id_of(const std::string& uuid, std::size_t place) const {
  auto it = state_.request_ids.find(uuid);
  if (it == state_.request_ids.end())
    throw std::invalid_argument(operation_at(place) + "no trial was created with request id \"" + uuid + "\"");
  return it->second;
}

action custom_search::create(const pb::CreateTrialOperation& op, std::size_t place) {
  if (op.request_id().empty())
    throw std::invalid_argument(operation_at(place) + "createTrial needs a requestId");
  if (state_.request_ids.count(op.request_id()))
    throw std::invalid_argument(operation_at(place) + "a trial with request id \"" + op.request_id() +
                                "\" was created already");
  nlohmann::json hparams;
  try {
    hparams = nlohmann::json::parse(op.hyperparams().empty() ? std::string("{}") : op.hyperparams());
  } catch (const nlohmann::json::exception& e) {
    throw std::invalid_argument(operation_at(place) + "createTrial.hyperparams is not JSON: " + e.what());
  }
  if (!hparams.is_object())
    throw std::invalid_argument(operation_at(place) + "createTrial.hyperparams must be a JSON object");
  auto created = state_.trials.next_with([&](std::mt19937_64&) { return hparams.dump(); });
  state_.request_ids[op.request_id()] = created.request_id;
  state_.uuids[created.request_id] = op.request_id();
  state_.open.insert(created.request_id);
  return created;
}

void custom_search::acknowledge(int32_t event_id) {
  state_.acknowledged = std::max(state_.acknowledged, std::min(event_id, state_.last_event_id));
  auto& events = state_.events;
  events.erase(std::remove_if(events.begin(), events.end(),
                              [&](const pb::SearcherEvent& e) { return e.id() <= state_.acknowledged; }),
               events.end());
}

std::vector<action> custom_search::apply(const pb::PostSearcherOperationsRequest& request) {
  const auto saved = state_;
  try {
    auto acknowledged = request.triggered_by_event().id();
    if (acknowledged > state_.last_event_id)
      throw std::invalid_argument("triggeredByEvent.id " + std::to_string(acknowledged) +
                                  " is not an event of this search: the latest is " +
                                  std::to_string(state_.last_event_id));
    if (acknowledged <= state_.acknowledged) return {};
    acknowledge(acknowledged);
    std::vector<action> actions;
    std::size_t place = 0;
    for (const auto& op : request.searcher_operations()) {
      ++place;
      switch (op.union_case()) {
        case pb::SearcherOperation::kCreateTrial:
          if (state_.shutdown_requested)
            throw std::invalid_argument(operation_at(place) + "the search was shut down already: it creates no trials");
          actions.push_back(create(op.create_trial(), place));
          break;
        case pb::SearcherOperation::kTrialOperation: {
          if (!op.trial_operation().has_validate_after())
            throw std::invalid_argument(operation_at(place) + "trialOperation needs validateAfter");
          const auto& validate = op.trial_operation().validate_after();
          auto id = request_id_of(validate.request_id(), place);
          if (validate.length() < 1 || validate.length() > static_cast<uint64_t>(INT64_MAX))
            throw std::invalid_argument(operation_at(place) + "validateAfter.length must be at least 1");
          // A trial may exit while its process decides (its trial closed event is on the way), or
          // be stopping for a shut-down.
          if (!state_.open.count(id) || state_.shutdown_requested) break;
          auto length = static_cast<int64_t>(validate.length());
          state_.targets[id] = length;
          actions.push_back(validate_after_action{id, config::length{unit_, length}});
          break;
        }
        case pb::SearcherOperation::kCloseTrial: {
          auto id = request_id_of(op.close_trial().request_id(), place);
          // Cut short if the client had asked for more training than it got.
          if (state_.open.count(id)) actions.push_back(stop_action{id, state_.targets.count(id) > 0});
          break;
        }
        case pb::SearcherOperation::kShutDown:
          if (state_.shutdown_requested) break;  // said before: its trials are stopping
          state_.shutdown_requested = true;
          state_.shutdown = op.shut_down();
          // Open trials are stopped (checkpointing first); the search ends when the last exits.
          for (auto id : state_.open) actions.push_back(stop_action{id, state_.targets.count(id) > 0});
          if (state_.open.empty())
            actions.push_back(shutdown_action{state_.shutdown.cancel(), state_.shutdown.failure()});
          break;
        case pb::SearcherOperation::kSetSearcherProgress: {
          auto progress = op.set_searcher_progress().progress();
          if (!(progress >= 0 && progress <= 1))
            throw std::invalid_argument(operation_at(place) + "setSearcherProgress.progress must be between 0 and 1");
          state_.progress = progress;
          break;
        }
        case pb::SearcherOperation::UNION_NOT_SET:
          throw std::invalid_argument(operation_at(place) +
                                      "expected one of createTrial, trialOperation, closeTrial, shutDown "
                                      "or setSearcherProgress");
      }
    }
    return actions;
  } catch (...) {
    state_ = saved;
    throw;
  }
}

void custom_search::snapshot(pb::SearcherSnapshot& snapshot) const {
  auto& out = *snapshot.mutable_custom();
  for (const auto& e : state_.events) *out.add_events() = e;
  out.set_last_event_id(state_.last_event_id);
  out.set_acknowledged(state_.acknowledged);
  for (const auto& [uuid, id] : state_.request_ids) (*out.mutable_request_ids())[uuid] = id;
  state_.trials.snapshot(*out.mutable_trials());
  out.set_progress(state_.progress);
  for (const auto& [id, length] : state_.targets) (*out.mutable_targets())[id] = length;
  for (auto id : state_.open) out.add_open(id);
  out.set_shutdown_requested(state_.shutdown_requested);
  *out.mutable_shutdown() = state_.shutdown;
}

void custom_search::restore(const pb::SearcherSnapshot& snapshot) {
  require_method(snapshot, pb::SearcherSnapshot::kCustom);
  const auto& in = snapshot.custom();
  state next = state_;
  next.trials.restore(in.trials());
  next.events.assign(in.events().begin(), in.events().end());
  next.last_event_id = in.last_event_id();
  next.acknowledged = in.acknowledged();
  next.request_ids = {in.request_ids().begin(), in.request_ids().end()};
  next.uuids.clear();
  for (const auto& [uuid, id] : next.request_ids) next.uuids[id] = uuid;
  next.progress = in.progress();
  next.targets = {in.targets().begin(), in.targets().end()};
  next.open = {in.open().begin(), in.open().end()};
  next.shutdown_requested = in.shutdown_requested();
  next.shutdown = in.shutdown();
  state_ = std::move(next);
}

} // namespace det::searcher
