// The experiment, trial and allocation actors driven deterministically: CAF's test_coordinator
// runs every message in this thread, against small fake persistence, pool, agent, directory and
// experiment actors that record what they hear. Each case is an ordering of events that the
// lifecycle must survive: a kill during a preemption, an activate before a pause lands, an agent
// lost while pausing, a worker's report arriving after its agent's, a decode failure from the
// pool, reports from a run that is over, and an experiment killed while its trial runs.

#include <doctest/doctest.h>

#include <csignal>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "master/spawn.hpp"
#include "caf/all.hpp"
#include "tests/unit/deterministic_system.hpp"

using namespace det;

namespace {

/// What the fakes heard, in order.
struct recorded {
  std::vector<pb::State> trial_states;  // every state persisted, in order
  std::vector<std::string> log_lines;
  std::vector<pb::StartContainer> launches;
  std::vector<caf::actor> allocations;  // the allocation behind each launch
  std::vector<pb::KillContainer> kills;
  std::vector<std::string> released;
  int allocate_requests = 0;
  std::optional<caf::error> pool_answer;  // set: the pool answers allocate requests with it
  std::optional<pb::State> exited;        // what the experiment heard
  std::vector<double> progress;           // the progress shares the experiment heard
  std::vector<caf::error> refusals;       // errors the fake worker got
  std::vector<bool> checkpoint_answers;
  int restarts_stored = 0;
  caf::actor agent;  // where the pool places runs: the agent's master-side proxy
  std::vector<pb::State> experiment_states;
  int64_t next_trial_id = 7;
  std::vector<int64_t> collected;  // experiments whose checkpoints were collected
  std::vector<std::string> snapshots;  // searcher snapshots stored, serialized
  std::vector<trial_actor> trials;     // trial actors, as they registered in the directory
  bool refuse_commits = false;         // a custom search's snapshot commits fail
};

caf::behavior fake_persistence(caf::event_based_actor*, std::shared_ptr<recorded> r) {
  return {
      [=](update_atom, const pb::Trial& t) {
        r->trial_states.push_back(t.state());
        r->restarts_stored = t.restarts();
      },
      [=](const pb::LogBatch& b) {
        for (const auto& e : b.entries()) r->log_lines.push_back(e.text());
      },
      [=](const pb::MetricBatch& b) -> int64_t { return b.reports_size(); },
      [=](const pb::Checkpoint&) -> bool { return true; },
      [=](create_atom, const pb::Trial&) -> int64_t { return r->next_trial_id++; },
      [=](update_atom, const pb::Experiment& e) { r->experiment_states.push_back(e.state()); },
      [=](snapshot_atom, experiment_id, const std::string& s) { r->snapshots.push_back(s); },
      [=](snapshot_atom, experiment_id, const std::string& s, flush_atom) -> caf::result<bool> {
        if (r->refuse_commits) return make_error(errc::storage_failed, "the disk is full");
        r->snapshots.push_back(s);
        return true;
      },
  };
}

caf::behavior fake_collector(caf::event_based_actor*, std::shared_ptr<recorded> r) {
  return {[=](gc_atom, experiment_id id, const std::string&) { r->collected.push_back(id.value); }};
}

caf::behavior fake_agent(caf::event_based_actor*, std::shared_ptr<recorded> r) {
  return {
      [=](launch_atom, const pb::StartContainer& start, const container_listener& allocation) {
        r->launches.push_back(start);
        r->allocations.push_back(caf::actor_cast<caf::actor>(allocation));
      },
      [=](const pb::KillContainer& k) { r->kills.push_back(k); },
  };
}

caf::behavior fake_pool(caf::event_based_actor*, std::shared_ptr<recorded> r) {
  return {
      [=](allocate_atom, const allocation_ask&) -> caf::result<allocation_parts> {
        ++r->allocate_requests;
        if (r->pool_answer)  // once
          return *std::exchange(r->pool_answer, std::nullopt);
        return allocation_parts{{"agent-1", {0}, caf::actor_cast<agent_proxy_actor>(r->agent)}};
      },
      [=](release_atom, const std::string& id) { r->released.push_back(id); },
      [=](update_atom, const std::string&, const job_settings&) {},
      [=](remove_atom, const std::string&) {},
  };
}

caf::behavior fake_experiment(caf::event_based_actor*, std::shared_ptr<recorded> r) {
  return {
      [=](exited_atom, int64_t, pb::State s, pb::WorkerOutcome) { r->exited = s; },
      [=](validated_atom, int64_t, double, int64_t) {},
      [=](checkpointed_atom, int64_t, const std::string&, int64_t) {},
      [=](progress_atom, int64_t, double share) { r->progress.push_back(share); },
  };
}

caf::behavior fake_directory(caf::event_based_actor*, std::shared_ptr<recorded> r) {
  return {
      [](register_atom, const std::string&, const std::string&, const caf::actor&) {},
      [=](register_atom, trial_id, const trial_actor& t) { r->trials.push_back(t); },
      [](register_atom, experiment_id, const experiment_actor&) {},
  };
}

/// A worker process as the trial sees it: sends what it is told and keeps the answers.
caf::behavior fake_worker(caf::event_based_actor* self, std::shared_ptr<recorded> r, trial_actor trial) {
  return {
      [=](pb::MetricBatch& b) {
        self->request(trial, caf::infinite, std::move(b))
            .then([](int64_t) {}, [=](caf::error& e) { r->refusals.push_back(e); });
      },
      [=](pb::Checkpoint& c) {
        self->request(trial, caf::infinite, std::move(c))
            .then([=](bool recorded) { r->checkpoint_answers.push_back(recorded); },
                  [=](caf::error& e) { r->refusals.push_back(e); });
      },
      [=](pb::WorkerExit& e) { self->request(trial, caf::infinite, std::move(e)).then([](bool) {}); },
  };
}

/// An actor system on the deterministic scheduler with the fakes a trial or experiment talks to.
struct neighbours : testing::deterministic_system {
  std::shared_ptr<recorded> r = std::make_shared<recorded>();
  master_handles handles;
  directory_actor directory;

  neighbours() {
    r->agent = sys->spawn(fake_agent, r);
    auto persistence = sys->spawn(fake_persistence, r);
    handles.persistence = caf::actor_cast<persistence_actor>(persistence);
    handles.rows = caf::actor_cast<row_writer_actor>(persistence);
    handles.collector = caf::actor_cast<checkpoint_collector_actor>(sys->spawn(fake_collector, r));
    handles.default_pool = "default";
    handles.pools["default"] = caf::actor_cast<resource_pool_actor>(sys->spawn(fake_pool, r));
    directory = caf::actor_cast<directory_actor>(sys->spawn(fake_directory, r));
  }

  ~neighbours() {
    caf::anon_send_exit(std::exchange(r->agent, nullptr), caf::exit_reason::user_shutdown);
    run();
  }

  /// Experiment 3: a single search of one builtin:simulate trial trained to 100 batches.
  experiment_actor spawn_single_search() {
    pb::Experiment exp;
    exp.set_id(3);
    exp.set_state(pb::STATE_ACTIVE);
    exp.set_config(R"(
name = "single"
entrypoint = "builtin:simulate"
[hyperparameters]
x = 0.5
[searcher]
name = "single"
metric = "validation_loss"
max_length = { batches = 100 }
)");
    return spawn_experiment(*sys, exp, make_experiment_plan(exp.config(), "single.toml"), handles, directory);
  }

  pb::State state() const { return r->trial_states.empty() ? pb::STATE_UNSPECIFIED : r->trial_states.back(); }
  caf::actor allocation() const { return r->allocations.back(); }
  std::string run_id() const { return r->launches.back().allocation_id(); }

  void container_exits(int exit_code, int signal = 0) {
    pb::ContainerExited x;
    x.set_allocation_id(run_id());
    x.set_agent_id("agent-1");
    x.set_cause(pb::EXIT_CAUSE_EXITED);
    x.set_exit_code(exit_code);
    x.set_signal(signal);
    caf::anon_send(allocation(), std::move(x));
    run();
  }
};

/// One trial (id 7) of experiment 3, spawned as its experiment would.
struct fixture : neighbours {
  trial_actor trial;
  caf::actor worker;

  /// `train_to`: the length its searcher gave it before it was spawned; `trains_until_exit`: its
  /// search gives it none (its process decides).
  explicit fixture(config::length train_to = {}, bool trains_until_exit = false) {
    trial_setup setup;
    setup.train_to = train_to;
    setup.trains_until_exit = trains_until_exit;
    setup.trial.set_id(7);
    setup.trial.set_experiment_id(3);
    setup.trial.set_request_id(1);
    setup.trial.set_state(pb::STATE_QUEUED);
    setup.max_restarts = 5;
    setup.handles = handles;
    setup.experiment = caf::actor_cast<trial_listener>(sys->spawn(fake_experiment, r));
    setup.directory = directory;
    trial = spawn_trial(*sys, std::move(setup));
    worker = sys->spawn(fake_worker, r, trial);
    run();
  }

  ~fixture() {
    caf::anon_send_exit(worker, caf::exit_reason::user_shutdown);
    caf::anon_send_exit(trial, caf::exit_reason::user_shutdown);
    run();
  }

  /// The agent's proxy goes down (the agent was lost); the pool places later runs on a new one.
  void lose_agent() {
    auto lost = std::exchange(r->agent, sys->spawn(fake_agent, r));
    caf::anon_send_exit(lost, caf::exit_reason::kill);
    run();
  }

  /// The current run's container started on agent-1 and its worker said it runs.
  void started() {
    pb::ContainerStarted s;
    s.set_allocation_id(run_id());
    s.set_agent_id("agent-1");
    caf::anon_send(allocation(), std::move(s));
    run();
  }

  void worker_reports(pb::WorkerOutcome outcome, const std::string& allocation_id) {
    pb::WorkerExit e;
    e.set_trial_id(7);
    e.set_allocation_id(allocation_id);
    e.set_outcome(outcome);
    caf::anon_send(worker, std::move(e));
    run();
  }

  template <class... Ts>
  void tell_trial(Ts... xs) {
    caf::anon_send(trial, xs...);
    run();
  }
};

} // namespace

TEST_CASE("a trial asks for slots, launches its worker and completes on a clean exit") {
  fixture f;
  REQUIRE(f.r->launches.size() == 1);
  CHECK(f.run_id() == "7.1");
  f.started();
  CHECK(f.state() == pb::STATE_STARTING);
  f.worker_reports(pb::WORKER_OUTCOME_COMPLETED, "7.1");
  f.container_exits(0);
  CHECK(f.state() == pb::STATE_COMPLETED);
  CHECK(f.r->exited == pb::STATE_COMPLETED);
  CHECK(f.r->released == std::vector<std::string>{"7.1"});
}

TEST_CASE("the length the searcher gave before the trial existed is in its first run's spec") {
  fixture f(config::length{config::length_unit::batches, 100});  // and no train_to message after the spawn
  f.started();
  caf::scoped_actor self{*f.sys};
  pb::WorkerHello hello;
  hello.set_trial_id(7);
  hello.set_allocation_id(f.run_id());
  hello.set_allocation_token(f.r->launches.back().allocation_token());
  auto answer = self->request(f.trial, caf::infinite, hello);
  f.run();
  int64_t length = -1;
  answer.receive([&](pb::TrialSpec& spec, trial_endpoint&) { length = spec.validate_after_length(); },
                 [&](caf::error& e) { FAIL(f.sys->render(e)); });
  CHECK(length == 100);
}

TEST_CASE("a trial without a length gives its process one operation without one, passes on its progress, "
          "and completes when the process exits") {
  fixture f({}, true);
  f.started();
  caf::scoped_actor self{*f.sys};
  auto call = [&](auto fill) {
    pb::CoreApiCall c;
    c.set_token(f.r->launches.back().allocation_token());
    fill(c);
    auto answer = self->request(f.trial, caf::infinite, c);
    f.run();
    pb::CoreApiReply reply;
    answer.receive([&](pb::CoreApiReply& r) { reply = r; }, [&](caf::error& e) { FAIL(f.sys->render(e)); });
    return reply;
  };
  auto operation = call([](pb::CoreApiCall& c) { c.set_searcher_operation(true); });
  CHECK(operation.no_length());
  CHECK_FALSE(operation.completed());
  call([](pb::CoreApiCall& c) { c.set_progress(0.4); });
  f.run();
  CHECK(f.r->progress == std::vector<double>{0.4});
  CHECK(call([](pb::CoreApiCall& c) { c.set_completed_length(0); }).completed());  // nothing to check
  f.worker_reports(pb::WORKER_OUTCOME_COMPLETED, "7.1");
  f.container_exits(0);
  CHECK(f.state() == pb::STATE_COMPLETED);
}

TEST_CASE("a trial's gate passes on only what carries the current run's token") {
  fixture f;
  f.started();
  const auto token = f.r->launches.back().allocation_token();
  REQUIRE(token.size() == 64);
  caf::scoped_actor self{*f.sys};
  pb::WorkerHello hello;
  hello.set_trial_id(7);
  hello.set_allocation_id(f.run_id());
  hello.set_allocation_token("forged");
  caf::error refusal;
  auto forged_hello = self->request(f.trial, caf::infinite, hello);  // without the token: no endpoint
  f.run();
  forged_hello.receive([](pb::TrialSpec&, trial_endpoint&) { FAIL("a hello without the run's token got an endpoint"); },
                       [&](caf::error& e) { refusal = e; });
  CHECK(static_cast<errc>(refusal.code()) == errc::refused);
  hello.set_allocation_token(token);
  trial_endpoint gate;
  auto hello_request = self->request(f.trial, caf::infinite, hello);
  f.run();
  hello_request.receive([&](pb::TrialSpec&, trial_endpoint& g) { gate = g; }, [&](caf::error& e) { refusal = e; });
  REQUIRE(gate);
  pb::WorkerExit exit;
  exit.set_trial_id(7);
  exit.set_allocation_id(f.run_id());
  exit.set_outcome(pb::WORKER_OUTCOME_ERRORED);
  exit.set_message("forged");
  pb::MetricBatch report;
  report.set_allocation_id(f.run_id());
  auto forged_report = self->request(gate, caf::infinite, report, std::string(64, '0'));
  f.run();
  forged_report.receive([](int64_t) { FAIL("a forged token was accepted"); }, [&](caf::error& e) { refusal = e; });
  CHECK(refusal.category() == errc_category);
  CHECK(static_cast<errc>(refusal.code()) == errc::stale_run);
  // An exit report with another token is heard (a worker of an ended run says goodbye) and not counted.
  auto forged_exit = self->request(gate, caf::infinite, exit, std::string(64, '0'));
  f.run();
  bool heard = false;
  forged_exit.receive([&](bool) { heard = true; }, [&](caf::error&) {});
  CHECK(heard);
  f.container_exits(0);
  CHECK(f.state() == pb::STATE_COMPLETED);  // the forged failure report did not count
}

TEST_CASE("a kill during a preemption cancels the trial instead of queueing it again") {
  fixture f;
  f.started();
  caf::anon_send(f.allocation(), preempt_atom::value);  // the pool wants the slots back
  f.run();
  REQUIRE(f.r->kills.size() == 1);
  CHECK(f.r->kills[0].signal() == SIGTERM);
  f.tell_trial(kill_atom::value);
  REQUIRE(f.r->kills.size() == 2);
  CHECK(f.r->kills[1].signal() == SIGKILL);
  CHECK(f.state() == pb::STATE_STOPPING_KILLED);
  f.container_exits(0, SIGKILL);
  CHECK(f.state() == pb::STATE_CANCELED);
  CHECK(f.r->exited == pb::STATE_CANCELED);
  CHECK(f.r->allocate_requests == 1);  // not queued again
}

TEST_CASE("an activate before the pause lands runs the trial again, counting nothing") {
  fixture f;
  f.started();
  f.tell_trial(pause_atom::value);
  REQUIRE(f.r->kills.size() == 1);
  CHECK(f.r->kills[0].signal() == SIGTERM);
  f.tell_trial(activate_atom::value);
  f.worker_reports(pb::WORKER_OUTCOME_STOPPED, "7.1");
  f.container_exits(0);
  CHECK(f.state() == pb::STATE_QUEUED);
  CHECK(f.r->allocate_requests == 2);
  CHECK(f.run_id() == "7.2");
  CHECK(f.r->restarts_stored == 0);
  CHECK_FALSE(f.r->exited.has_value());
}

TEST_CASE("an agent lost while its trial is pausing leaves it PAUSED, with no restart counted") {
  fixture f;
  f.started();
  f.tell_trial(pause_atom::value);
  f.lose_agent();
  CHECK(f.state() == pb::STATE_PAUSED);
  CHECK(f.r->restarts_stored == 0);
  CHECK(f.r->allocate_requests == 1);
  f.tell_trial(activate_atom::value);
  CHECK(f.state() == pb::STATE_QUEUED);
  CHECK(f.r->allocate_requests == 2);
}

TEST_CASE("a worker's report that arrives after its agent's is refused as stale and changes nothing") {
  fixture f;
  f.started();
  f.lose_agent();  // before its worker reported
  CHECK(f.state() == pb::STATE_QUEUED);  // run again, uncounted
  CHECK(f.r->restarts_stored == 0);
  f.worker_reports(pb::WORKER_OUTCOME_ERRORED, "7.1");  // the old run's worker, late
  pb::MetricBatch late;
  late.set_allocation_id("7.1");
  late.add_reports()->set_group("training");
  caf::anon_send(f.worker, std::move(late));
  f.run();
  REQUIRE(f.r->refusals.size() == 1);
  CHECK(f.r->refusals[0] == errc::stale_run);
  pb::Checkpoint stale_checkpoint;
  stale_checkpoint.set_uuid("u");
  stale_checkpoint.set_allocation_id("7.1");
  caf::anon_send(f.worker, std::move(stale_checkpoint));
  f.run();
  CHECK(f.r->checkpoint_answers == std::vector<bool>{false});
}

TEST_CASE("a decode failure from the pool is one failed run, not an unschedulable trial") {
  fixture f;
  f.r->pool_answer = make_error(errc::malformed_message, "a det.pb.Agent arrived that does not decode");
  f.container_exits(1);  // run 7.1 fails; 7.2 meets the decode failure; 7.3 is placed
  CHECK(f.state() == pb::STATE_QUEUED);
  CHECK(f.r->restarts_stored == 2);
  CHECK_FALSE(f.r->exited.has_value());
  REQUIRE(f.r->launches.size() == 2);
  CHECK(f.run_id() == "7.3");
  f.r->pool_answer = make_error(errc::unschedulable, "the trial needs 6 slots");
  f.container_exits(1);  // 7.3 fails; 7.4 can never be placed
  CHECK(f.state() == pb::STATE_ERROR);
  CHECK(f.r->exited == pb::STATE_ERROR);
}

TEST_CASE("an experiment killed while its trial runs is STOPPING_KILLED until the trial has stopped") {
  neighbours n;
  auto experiment = n.spawn_single_search();
  n.run();
  REQUIRE(n.r->launches.size() == 1);  // its one trial launched
  caf::anon_send(experiment, kill_atom::value);
  n.run();
  CHECK(n.r->experiment_states.back() == pb::STATE_STOPPING_KILLED);
  CHECK(n.state() == pb::STATE_STOPPING_KILLED);
  REQUIRE_FALSE(n.r->kills.empty());
  CHECK(n.r->kills.back().signal() == SIGKILL);
  n.container_exits(0, SIGKILL);
  CHECK(n.state() == pb::STATE_CANCELED);
  CHECK(n.r->experiment_states.back() == pb::STATE_CANCELED);
  CHECK(n.r->collected == std::vector<int64_t>{3});
}

TEST_CASE("a kill that comes before the search answered the last trial's exit ends the experiment after it") {
  neighbours n;
  auto experiment = n.spawn_single_search();
  n.run();
  REQUIRE(n.r->launches.size() == 1);
  // Its one trial completed, and the kill is in the experiment's mailbox before its searcher runs.
  caf::anon_send(caf::actor_cast<trial_listener>(experiment), exited_atom::value, int64_t{1}, pb::STATE_COMPLETED,
                 pb::WORKER_OUTCOME_COMPLETED);
  caf::anon_send(experiment, kill_atom::value);
  n.run();
  CHECK(n.r->experiment_states.back() == pb::STATE_CANCELED);
  CHECK(n.r->collected == std::vector<int64_t>{3});
  // The search's step that closed the trial was stored before the end, not dropped by it.
  REQUIRE_FALSE(n.r->snapshots.empty());
  pb::SearcherSnapshot last;
  REQUIRE(last.ParseFromString(n.r->snapshots.back()));
  CHECK(std::vector<int64_t>(last.searcher().trials_closed().begin(), last.searcher().trials_closed().end()) ==
        std::vector<int64_t>{1});
  n.container_exits(0);  // the trial actor, which the experiment's message stood in for, ends too
}

TEST_CASE("an experiment's trial knows its length from the moment it exists") {
  neighbours n;
  auto experiment = n.spawn_single_search();
  // One message at a time, until the trial actor exists: what it knows then is what its first
  // run's worker would get, had its hello come next.
  while (n.r->trials.empty() && n.sched->try_run_once()) {
  }
  REQUIRE(n.r->trials.size() == 1);
  caf::scoped_actor self{*n.sys};
  auto answer = self->request(n.r->trials.back(), caf::infinite, inspect_atom::value);
  n.sched->prioritize(n.r->trials.back());
  n.sched->run_once();
  std::string text;
  answer.receive([&](std::string& t) { text = t; }, [&](caf::error& e) { FAIL(n.sys->render(e)); });
  CHECK(text.find("train to: 100 batches") != std::string::npos);
  n.run();
  n.container_exits(0);
}

TEST_CASE("a custom search's process reads only events whose snapshot was committed") {
  neighbours n;
  pb::Experiment exp;
  exp.set_id(4);
  exp.set_state(pb::STATE_ACTIVE);
  exp.set_config("name = \"custom\"\nentrypoint = \"builtin:simulate\"\n"
                 "[searcher]\nname = \"custom\"\nmetric = \"validation_loss\"\nunit = \"batches\"\n");
  auto experiment = spawn_experiment(*n.sys, exp, make_experiment_plan(exp.config(), "custom.toml"), n.handles,
                                     n.directory);
  n.run();
  caf::scoped_actor self{*n.sys};
  auto read = [&] {
    auto answer = self->request(experiment, caf::infinite, searcher_atom::value, get_atom::value);
    n.run();
    pb::GetSearcherEventsResponse events;
    answer.receive([&](pb::GetSearcherEventsResponse& e) { events = std::move(e); },
                   [&](caf::error& e) { FAIL(n.sys->render(e)); });
    return events;
  };
  auto first = read();
  REQUIRE(first.searcher_events_size() == 1);
  REQUIRE(first.searcher_events(0).has_initial_operations());
  // Its answer creates a trial, but that snapshot is not committed: the post fails, and what
  // the process reads is still what was committed.
  n.r->refuse_commits = true;
  pb::PostSearcherOperationsRequest post;
  post.mutable_triggered_by_event()->set_id(first.searcher_events(0).id());
  auto& create = *post.add_searcher_operations()->mutable_create_trial();
  create.set_request_id("a");
  create.set_hyperparams("{}");
  auto posted = self->request(experiment, caf::infinite, post);
  n.run();
  caf::error refusal;
  posted.receive([](bool) { FAIL("a post whose snapshot was not committed was answered as done"); },
                 [&](caf::error& e) { refusal = e; });
  CHECK(refusal == errc::storage_failed);
  auto after = read();
  REQUIRE(after.searcher_events_size() == 1);
  CHECK(after.searcher_events(0).has_initial_operations());
  // Killed, so that the experiment and the trial its post created end with the test (they hold
  // each other's handles).
  self->send(experiment, kill_atom::value);
  n.run();
}
