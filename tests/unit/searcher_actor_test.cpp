// The searcher actor on CAF's deterministic scheduler, against a searcher::searcher driven in this
// thread with the same events: each step answers what the in-process search decides, views the
// requests it named as that search sees them, and carries its snapshot; a bad custom post is
// refused with a sentence and changes nothing; the actor ends with its experiment.

#include <doctest/doctest.h>

#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include "master/spawn.hpp"
#include "caf/all.hpp"
#include "config/experiment_config.hpp"
#include "messages/errc.hpp"
#include "searcher/searcher.hpp"
#include "tests/unit/deterministic_system.hpp"

using namespace det;

namespace {

config::experiment_config parse(const std::string& toml) {
  return config::parse_experiment_config(toml, "search.toml");
}

const char* asha_toml = R"(
entrypoint = "builtin:simulate"
[hyperparameters]
lr = { type = "double", minval = 0.001, maxval = 0.1 }
[searcher]
name = "async_halving"
metric = "validation_loss"
max_trials = 4
num_rungs = 2
divisor = 2
max_length = { batches = 100 }
)";

// An action as text, so that two lists of them compare.
std::string text(const searcher::action& a) {
  if (auto* c = std::get_if<searcher::create_action>(&a))
    return "create " + std::to_string(c->request_id) + " seed " + std::to_string(c->trial_seed) + " " + c->hparams_json;
  if (auto* v = std::get_if<searcher::validate_after_action>(&a))
    return "validate " + std::to_string(v->request_id) + " after " + std::to_string(v->length.value);
  if (auto* s = std::get_if<searcher::stop_action>(&a))
    return "stop " + std::to_string(s->request_id) + (s->early ? " early" : "");
  auto& d = std::get<searcher::shutdown_action>(a);
  return std::string("shutdown") + (d.cancel ? " cancel" : "") + (d.failure ? " failure" : "");
}

std::vector<std::string> texts(const std::vector<searcher::action>& actions) {
  std::vector<std::string> out;
  for (const auto& a : actions) out.push_back(text(a));
  return out;
}

// Sends `message` to `searcher` from an actor of its own and runs the system until it is answered.
template <class Message>
std::variant<search_step, caf::error> ask(testing::deterministic_system& d, const searcher_actor& searcher,
                                          Message message) {
  auto answer = std::make_shared<std::optional<std::variant<search_step, caf::error>>>();
  d.sys->spawn([=](caf::event_based_actor* self) {
    self->request(searcher, caf::infinite, message)
        .then([=](search_step& step) { *answer = std::move(step); }, [=](caf::error& e) { *answer = e; });
  });
  d.run();
  REQUIRE(answer->has_value());
  return std::move(**answer);
}

search_step step(testing::deterministic_system& d, const searcher_actor& searcher, search_request request) {
  auto answer = ask(d, searcher, std::move(request));
  REQUIRE(std::holds_alternative<search_step>(answer));
  return std::get<search_step>(std::move(answer));
}

std::string snapshot_of(const searcher::searcher& s) {
  std::string bytes;
  s.snapshot().SerializeToString(&bytes);
  return bytes;
}

// The step's views against what `reference` says of the same requests.
void check_views(const search_step& step, const searcher::searcher& reference) {
  for (const auto& view : step.requests) {
    CAPTURE(view.request_id);
    CHECK(view.rung == reference.rung_of(view.request_id));
    auto target = reference.training_target(view.request_id);
    REQUIRE(view.training_target.has_value() == target.has_value());
    if (target) CHECK(view.training_target->value == target->value);
  }
}

} // namespace

TEST_CASE("the searcher actor answers each decision as the search in this thread decides it") {
  testing::deterministic_system d;
  auto cfg = parse(asha_toml);
  searcher::searcher reference(searcher::make_search_method(cfg));
  auto actor = spawn_searcher(*d.sys, 1, std::make_shared<searcher::searcher>(searcher::make_search_method(cfg)),
                              cfg.searcher);

  auto first = step(d, actor, {{search_events::initial_trials{}}});
  auto expected = reference.initial_trials();
  CHECK(texts(first.actions) == texts(expected));
  REQUIRE(first.requests.size() == 4);  // every trial its actions created and asked to train
  check_views(first, reference);
  CHECK(first.snapshot == snapshot_of(reference));

  // One decision of several events: applied in order, their actions in one step.
  search_request batch{{search_events::trial_created{1}, search_events::trial_created{2},
                        search_events::validation_completed{1, 0.25, 50}, search_events::validation_completed{2, 0.5, 50}}};
  auto second = step(d, actor, batch);
  std::vector<searcher::action> decided;
  for (auto more : {reference.trial_created(1), reference.trial_created(2), reference.validation_completed(1, 0.25, 50),
                    reference.validation_completed(2, 0.5, 50)})
    decided.insert(decided.end(), more.begin(), more.end());
  CHECK(texts(second.actions) == texts(decided));
  CHECK(!second.actions.empty());  // the better trial goes on to the top rung
  check_views(second, reference);
  CHECK(second.progress == doctest::Approx(reference.progress()));
  CHECK(second.snapshot == snapshot_of(reference));

  // Its snapshot restores a search that goes on as the actor's does.
  pb::SearcherSnapshot stored;
  REQUIRE(stored.ParseFromString(second.snapshot));
  searcher::searcher restored(searcher::make_search_method(cfg));
  restored.restore(stored);
  auto third = step(d, actor, {{search_events::trial_exited_early{2, searcher::exit_reason::errored},
                                search_events::trial_exited{2}}});
  auto replayed = restored.trial_exited_early(2, searcher::exit_reason::errored);
  auto closed = restored.trial_exited(2);
  replayed.insert(replayed.end(), closed.begin(), closed.end());
  CHECK(texts(third.actions) == texts(replayed));
  CHECK(third.snapshot == snapshot_of(restored));
}

TEST_CASE("a custom search's bad post is refused by its searcher actor with a sentence, changing nothing") {
  testing::deterministic_system d;
  auto cfg = parse("entrypoint = \"builtin:simulate\"\n[searcher]\nname = \"custom\"\nmetric = \"loss\"\n");
  auto actor = spawn_searcher(*d.sys, 1, std::make_shared<searcher::searcher>(searcher::make_search_method(cfg)),
                              cfg.searcher);
  auto begun = step(d, actor, {{search_events::initial_trials{}}});
  REQUIRE(begun.custom_events.size() == 1);  // initial operations, for its process to read

  pb::PostSearcherOperationsRequest bad;
  bad.mutable_triggered_by_event()->set_id(1);
  auto& validate = *bad.add_searcher_operations()->mutable_trial_operation()->mutable_validate_after();
  validate.set_request_id("nobody");
  validate.set_length(10);
  auto refused = ask(d, actor, bad);
  REQUIRE(std::holds_alternative<caf::error>(refused));
  auto error = std::get<caf::error>(refused);
  CHECK(error == errc::invalid_input);
  CHECK(d.sys->render(error).find("no trial was created with request id") != std::string::npos);

  auto after = step(d, actor, {});
  CHECK(after.snapshot == begun.snapshot);
  CHECK(after.custom_events.size() == 1);  // still not acknowledged

  pb::PostSearcherOperationsRequest good;
  good.mutable_triggered_by_event()->set_id(1);
  auto& create = *good.add_searcher_operations()->mutable_create_trial();
  create.set_request_id("a");
  create.set_hyperparams("{}");
  auto created = ask(d, actor, good);
  REQUIRE(std::holds_alternative<search_step>(created));
  CHECK(texts(std::get<search_step>(created).actions).at(0).rfind("create 1 ", 0) == 0);
  CHECK(std::get<search_step>(created).custom_events.empty());  // event 1 acknowledged
}

TEST_CASE("a searcher actor ends with its experiment, however the experiment ended") {
  testing::deterministic_system d;
  auto cfg = parse(asha_toml);
  for (bool normally : {true, false}) {
    CAPTURE(normally);
    auto actor = spawn_searcher(*d.sys, 1, std::make_shared<searcher::searcher>(searcher::make_search_method(cfg)),
                                cfg.searcher);
    REQUIRE(std::holds_alternative<search_step>(ask(d, actor, search_request{})));
    d.sys->spawn([=](caf::event_based_actor* self) {
      self->link_to(actor);
      self->quit(normally ? caf::error{} : caf::make_error(caf::exit_reason::user_shutdown));
    });
    d.run();
    auto after = ask(d, actor, search_request{});  // a request to an actor that is gone fails
    REQUIRE(std::holds_alternative<caf::error>(after));
    CHECK(std::get<caf::error>(after) == caf::sec::request_receiver_down);
  }
}
