// An experiment's searcher: owns its searcher::searcher and takes the events of the search in the
// order its experiment sends them. Each message is one decision, answered with one search_step:
// the actions, the requests they touched as the search now sees them, the progress, and the
// snapshot a restarted master continues from. Linked to its experiment: each ends the other.

#include <algorithm>
#include <memory>
#include <type_traits>
#include <stdexcept>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include "master/spawn.hpp"
#include "node/state_text.hpp"
#include "caf/all.hpp"
#include "config/experiment_config.hpp"
#include "messages/errc.hpp"
#include "searcher/custom_search.hpp"
#include "searcher/searcher.hpp"

namespace det {
namespace {

struct searcher_state {
  static inline const char* name = "searcher";
  int64_t experiment_id = 0;
  std::shared_ptr<searcher::searcher> search;
  config::searcher_config config;
};

using self_ptr = searcher_actor::stateful_pointer<searcher_state>;

// The search after `actions`: the requests `named` and the actions name, as it sees them now.
search_step step_of(const searcher::searcher& search, std::vector<searcher::action> actions,
                    std::vector<int64_t> named) {
  search_step step;
  for (const auto& a : actions) {
    std::visit(
        [&](const auto& action) {
          if constexpr (!std::is_same_v<std::decay_t<decltype(action)>, searcher::shutdown_action>)
            named.push_back(action.request_id);
        },
        a);
  }
  std::sort(named.begin(), named.end());
  named.erase(std::unique(named.begin(), named.end()), named.end());
  for (auto rid : named) step.requests.push_back({rid, search.rung_of(rid), search.training_target(rid)});
  step.actions = std::move(actions);
  step.progress = search.progress();
  search.snapshot().SerializeToString(&step.snapshot);
  if (const auto* custom = search.custom()) step.custom_events = custom->events();
  return step;
}

// Applies one event, appending what the search decided; returns the request it names (0: none).
int64_t apply(searcher::searcher& search, const search_event& event, std::vector<searcher::action>& actions) {
  auto append = [&](std::vector<searcher::action> more) {
    actions.insert(actions.end(), std::make_move_iterator(more.begin()), std::make_move_iterator(more.end()));
  };
  using namespace search_events;
  if (std::holds_alternative<initial_trials>(event)) {
    append(search.initial_trials());
  } else if (auto* created = std::get_if<trial_created>(&event)) {
    append(search.trial_created(created->request_id));
    return created->request_id;
  } else if (auto* validated = std::get_if<validation_completed>(&event)) {
    append(search.validation_completed(validated->request_id, validated->metric, validated->length_trained));
    return validated->request_id;
  } else if (auto* early = std::get_if<trial_exited_early>(&event)) {
    append(search.trial_exited_early(early->request_id, early->reason));
    return early->request_id;
  } else if (auto* exited = std::get_if<trial_exited>(&event)) {
    append(search.trial_exited(exited->request_id));
    return exited->request_id;
  } else if (auto* reported = std::get_if<trial_progress>(&event)) {
    search.trial_progress(reported->request_id, reported->share);
    return reported->request_id;
  } else if (auto* acknowledged = std::get_if<events_acknowledged>(&event)) {
    if (auto* custom = search.custom()) custom->acknowledge(acknowledged->through_event_id);
  }
  return 0;
}

std::string inspect_text(self_ptr self) {
  const auto& st = self->state;
  const auto& search = *st.search;
  state_text text{self};
  text.add("experiment", st.experiment_id)
      .add("searcher", st.config.name)
      .add("metric", st.config.metric + (st.config.smaller_is_better ? " (smaller is better)" : " (larger is better)"))
      .add("progress", search.progress())
      .add("trials requested", search.trials_requested())
      .add("trials closed", search.trials_closed())
      .add("open requests", search.open_requests().size())
      .add("shut down", search.shut_down() ? "yes" : "no");
  if (const auto* custom = search.custom()) {
    text.add("events not acknowledged", custom->events().size());
    if (!custom->events().empty()) text.add("oldest event", custom->events().front().id());
  }
  for (auto rid : search.open_requests()) {
    auto target = search.training_target(rid);
    auto rung = search.rung_of(rid);
    text.add("request " + std::to_string(rid),
             (search.was_created(rid) ? std::string("created") : std::string("requested")) +
                 (rung >= 0 ? ", rung " + std::to_string(rung) : std::string{}) +
                 (target ? ", asked to train to " + std::to_string(target->value) + " " + config::to_string(target->unit)
                         : std::string{}));
  }
  return text.str();
}

searcher_actor::behavior_type searcher_impl(self_ptr self, int64_t experiment_id,
                                            std::shared_ptr<searcher::searcher> search,
                                            config::searcher_config config) {
  auto& st = self->state;
  st.experiment_id = experiment_id;
  st.search = std::move(search);
  st.config = std::move(config);
  // Its experiment's end is its own, however the experiment ended.
  self->set_exit_handler([=](caf::exit_msg& msg) { self->quit(msg.reason); });
  return {
      [=](search_request& request) -> search_step { return decide(*self->state.search, request); },
      [=](pb::PostSearcherOperationsRequest& request) -> caf::result<search_step> {
        auto& search = *self->state.search;
        try {
          return step_of(search, search.operations_posted(request), {});
        } catch (const std::invalid_argument& e) {
          return make_error(errc::invalid_input, e.what());
        }
      },
      [=](inspect_atom) -> std::string { return inspect_text(self); },
  };
}

} // namespace

search_step decide(searcher::searcher& search, const search_request& request, std::vector<searcher::action> decided) {
  std::vector<int64_t> named;
  for (const auto& event : request.events)
    if (auto rid = apply(search, event, decided)) named.push_back(rid);
  return step_of(search, std::move(decided), std::move(named));
}

searcher_actor spawn_searcher(caf::actor_system& sys, int64_t experiment_id, std::shared_ptr<searcher::searcher> search,
                              const config::searcher_config& config) {
  return sys.spawn(searcher_impl, experiment_id, std::move(search), config);
}

} // namespace det
