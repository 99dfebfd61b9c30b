// The custom searcher: events queued until acknowledged, operations turned into actions, bad
// operations refused without a change, and a snapshot that delivers unacknowledged events again.
#include "config/experiment_config.hpp"
#include "messages/searcher.pb.h"
#include "searcher/custom_search.hpp"
#include "searcher/searcher.hpp"

#include <doctest/doctest.h>

#include <stdexcept>
#include <string>
#include <variant>
#include <vector>

using namespace det;
using searcher::action;

namespace {

config::experiment_config custom_config() {
  return config::parse_experiment_config(
      "entrypoint = \"builtin:simulate\"\n[searcher]\nname = \"custom\"\nmetric = \"loss\"\nunit = \"batches\"\n",
      "custom.toml");
}

searcher::searcher make_custom() {
  return searcher::searcher(searcher::make_search_method(custom_config()));
}

pb::PostSearcherOperationsRequest acknowledging(int32_t event_id) {
  pb::PostSearcherOperationsRequest request;
  request.mutable_triggered_by_event()->set_id(event_id);
  return request;
}

void add_create(pb::PostSearcherOperationsRequest& r, const std::string& uuid, const std::string& hparams) {
  auto& op = *r.add_searcher_operations()->mutable_create_trial();
  op.set_request_id(uuid);
  op.set_hyperparams(hparams);
}

void add_validate(pb::PostSearcherOperationsRequest& r, const std::string& uuid, uint64_t length) {
  auto& op = *r.add_searcher_operations()->mutable_trial_operation()->mutable_validate_after();
  op.set_request_id(uuid);
  op.set_length(length);
}

void add_close(pb::PostSearcherOperationsRequest& r, const std::string& uuid) {
  r.add_searcher_operations()->mutable_close_trial()->set_request_id(uuid);
}

std::string refusal(searcher::searcher& s, const pb::PostSearcherOperationsRequest& r) {
  try {
    s.operations_posted(r);
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
  return "";
}

} // namespace

TEST_CASE("custom: events wait for the client, and its operations become the search's actions") {
  auto s = make_custom();
  auto* custom = s.custom();
  REQUIRE(custom != nullptr);
  CHECK(s.initial_trials().empty());
  REQUIRE(custom->events().size() == 1);
  CHECK(custom->events()[0].id() == 1);
  CHECK(custom->events()[0].has_initial_operations());

  auto ops = acknowledging(1);
  add_create(ops, "a", R"({"x": 1.5})");
  add_create(ops, "b", R"({"x": 3})");
  auto actions = s.operations_posted(ops);
  REQUIRE(actions.size() == 2);
  const auto& first = std::get<searcher::create_action>(actions[0]);
  CHECK(first.request_id == 1);
  CHECK(first.hparams_json == R"({"x":1.5})");
  CHECK(std::get<searcher::create_action>(actions[1]).request_id == 2);
  CHECK(custom->events().empty());  // acknowledged

  s.trial_created(1);
  s.trial_created(2);
  REQUIRE(custom->events().size() == 2);
  CHECK(custom->events()[0].trial_created().request_id() == "a");

  auto validate = acknowledging(2);  // the first of the two
  add_validate(validate, "a", 100);
  actions = s.operations_posted(validate);
  REQUIRE(actions.size() == 1);
  CHECK(std::get<searcher::validate_after_action>(actions[0]).length.value == 100);
  REQUIRE(custom->events().size() == 1);  // b's creation is still unacknowledged
  CHECK(custom->events()[0].trial_created().request_id() == "b");
  CHECK(s.training_target(1)->value == 100);

  // A validation short of the length is progress; at the length it completes the operation.
  s.validation_completed(1, 0.7, 50);
  s.validation_completed(1, 0.5, 100);
  REQUIRE(custom->events().size() == 3);
  CHECK(custom->events()[1].trial_progress().partial_units() == 50);
  CHECK(custom->events()[2].validation_completed().metric() == 0.5);
  CHECK(custom->events()[2].validation_completed().validate_after_length() == 100);
  CHECK_FALSE(s.training_target(1));  // it waits for the client

  // Closing every trial does not end a custom search: the client says when.
  auto close = acknowledging(custom->events().back().id());
  add_close(close, "a");
  add_close(close, "b");
  actions = s.operations_posted(close);
  REQUIRE(actions.size() == 2);
  CHECK_FALSE(std::get<searcher::stop_action>(actions[0]).early);
  CHECK(s.trial_exited(1).empty());
  CHECK(s.trial_exited(2).empty());
  CHECK_FALSE(s.shut_down());

  auto shutdown = acknowledging(custom->events().back().id());
  shutdown.add_searcher_operations()->mutable_shut_down();
  actions = s.operations_posted(shutdown);
  REQUIRE(actions.size() == 1);
  CHECK(std::holds_alternative<searcher::shutdown_action>(actions[0]));
  CHECK(s.shut_down());
  CHECK(refusal(s, acknowledging(0)).find("the search is over") != std::string::npos);
}

TEST_CASE("custom: a shut-down stops the open trials and ends the search when the last one exits") {
  auto s = make_custom();
  s.initial_trials();
  auto ops = acknowledging(1);
  add_create(ops, "a", "{}");
  ops.add_searcher_operations()->mutable_shut_down()->set_failure(true);
  auto actions = s.operations_posted(ops);
  REQUIRE(actions.size() == 2);  // the create, and its stop
  CHECK(std::get<searcher::stop_action>(actions[1]).request_id == 1);
  s.trial_created(1);
  // Said again (the process closed its last trials one by one), a shut-down changes nothing, and
  // a trial stopping for it trains no further; creating one is refused.
  auto create = acknowledging(2);
  add_create(create, "b", "{}");
  CHECK(refusal(s, create).find("creates no trials") != std::string::npos);
  auto again = acknowledging(2);
  again.add_searcher_operations()->mutable_shut_down();
  add_validate(again, "a", 10);
  CHECK(s.operations_posted(again).empty());
  auto closing = s.trial_exited(1);
  REQUIRE(closing.size() == 1);
  CHECK(std::get<searcher::shutdown_action>(closing[0]).failure);
}

TEST_CASE("custom: a bad operation is refused with its place and changes nothing") {
  auto s = make_custom();
  s.initial_trials();
  auto ops = acknowledging(1);
  add_create(ops, "a", "{}");
  add_validate(ops, "nobody", 10);
  CHECK(refusal(s, ops) == "searcher operation 2: no trial was created with request id \"nobody\"");
  CHECK(s.custom()->events().size() == 1);  // not acknowledged either
  CHECK(s.trials_requested() == 0);

  auto twice = acknowledging(1);
  add_create(twice, "a", "{}");
  add_create(twice, "a", "{}");
  CHECK(refusal(s, twice).find("searcher operation 2: a trial with request id \"a\" was created already") == 0);

  auto not_object = acknowledging(1);
  add_create(not_object, "c", "[1, 2]");
  CHECK(refusal(s, not_object) == "searcher operation 1: createTrial.hyperparams must be a JSON object");

  auto future = acknowledging(9);
  CHECK(refusal(s, future) == "triggeredByEvent.id 9 is not an event of this search: the latest is 1");

  auto empty = acknowledging(1);
  empty.add_searcher_operations();
  CHECK(refusal(s, empty).find("expected one of createTrial") != std::string::npos);

  auto progress = acknowledging(1);
  progress.add_searcher_operations()->mutable_set_searcher_progress()->set_progress(1.5);
  CHECK(refusal(s, progress).find("between 0 and 1") != std::string::npos);

  searcher::searcher random(searcher::make_search_method(config::parse_experiment_config(
      "entrypoint = \"x\"\n[searcher]\nname = \"single\"\nmetric = \"loss\"\nmax_length = { batches = 5 }\n",
      "single.toml")));
  CHECK(refusal(random, acknowledging(0)).find("not custom") != std::string::npos);
}

TEST_CASE("custom: a restored search delivers its unacknowledged events again and keeps its trials") {
  auto s = make_custom();
  s.initial_trials();
  auto ops = acknowledging(1);
  add_create(ops, "a", R"({"x": 2})");
  s.operations_posted(ops);
  s.trial_created(1);
  auto validate = acknowledging(2);
  add_validate(validate, "a", 40);
  validate.add_searcher_operations()->mutable_set_searcher_progress()->set_progress(0.5);
  s.operations_posted(validate);
  s.validation_completed(1, 0.25, 40);
  // A client that posts again after a master restart (it saw no answer) changes nothing.
  CHECK(s.operations_posted(validate).empty());
  CHECK(s.training_target(1) == std::nullopt);

  auto restored = make_custom();
  restored.restore(s.snapshot());
  auto* custom = restored.custom();
  REQUIRE(custom->events().size() == 1);
  CHECK(custom->events()[0].id() == 3);
  CHECK(custom->events()[0].validation_completed().request_id() == "a");
  CHECK(restored.progress() == 0.5);
  CHECK(restored.was_created(1));

  // The client's UUID still names the trial, and new events continue the numbering.
  auto more = acknowledging(3);
  add_validate(more, "a", 80);
  auto actions = restored.operations_posted(more);
  REQUIRE(actions.size() == 1);
  CHECK(std::get<searcher::validate_after_action>(actions[0]).request_id == 1);
  restored.validation_completed(1, 0.2, 80);
  CHECK(custom->events().back().id() == 4);
  auto create = acknowledging(4);
  add_create(create, "b", "{}");
  actions = restored.operations_posted(create);
  CHECK(std::get<searcher::create_action>(actions[0]).request_id == 2);
}
