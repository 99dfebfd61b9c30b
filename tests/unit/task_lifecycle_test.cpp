// A task's lifecycle as a table: from a state and what was asked, an event gives the next state,
// the signal for its process and the reason it ended. master/tasks/task_lifecycle.hpp draws the states.

#include "master/tasks/task_lifecycle.hpp"

#include <doctest/doctest.h>

#include <string>
#include <vector>

using namespace det;

namespace {

pb::ContainerExited exited(int code, int signal = 0, pb::ExitCause cause = pb::EXIT_CAUSE_EXITED,
                           const std::string& message = "") {
  pb::ContainerExited e;
  e.set_cause(cause);
  e.set_exit_code(code);
  e.set_signal(signal);
  e.set_message(message);
  return e;
}

struct row {
  task_state state;
  task_stop stop;
  task_event_kind event;
  pb::ContainerExited exit;
  // expected
  task_state next;
  task_stop next_stop;
  process_signal signal;
  bool released;
  int32_t exit_code;
  std::string reason;
};

} // namespace

TEST_CASE("each event moves a task as the table says") {
  using S = task_state;
  using E = task_event_kind;
  const auto none = process_signal::none;
  const auto term = process_signal::terminate;
  const pb::ContainerExited no_exit;
  const std::vector<row> table = {
      {S::queued, task_stop::none, E::slots_assigned, no_exit, S::starting, task_stop::none, none, false, 0, ""},
      {S::starting, task_stop::none, E::process_started, no_exit, S::running, task_stop::none, none, false, 0, ""},
      // Events that do not apply leave it as it is.
      {S::queued, task_stop::none, E::process_started, no_exit, S::queued, task_stop::none, none, false, 0, ""},
      {S::terminated, task_stop::none, E::slots_assigned, no_exit, S::terminated, task_stop::none, none, false, 0, ""},
      // A kill while queued ends it at once; later, it stops its process first.
      {S::queued, task_stop::none, E::kill_requested, no_exit, S::terminated, task_stop::kill, none, true, -1,
       "killed on request before it started"},
      {S::starting, task_stop::none, E::kill_requested, no_exit, S::terminating, task_stop::kill, term, false, 0,
       "killing it on request"},
      {S::running, task_stop::none, E::kill_requested, no_exit, S::terminating, task_stop::kill, term, false, 0,
       "killing it on request"},
      {S::running, task_stop::none, E::idle_timeout, no_exit, S::terminating, task_stop::idle, term, false, 0,
       "stopping it after 300 s without use"},
      // Only a running task idles.
      {S::queued, task_stop::none, E::idle_timeout, no_exit, S::queued, task_stop::none, none, false, 0, ""},
      {S::starting, task_stop::none, E::idle_timeout, no_exit, S::starting, task_stop::none, none, false, 0, ""},
      // A kill outranks an idle stop, not the other way round; a second kill does nothing.
      {S::terminating, task_stop::idle, E::kill_requested, no_exit, S::terminating, task_stop::kill, term, false, 0,
       "killing it on request"},
      {S::terminating, task_stop::kill, E::idle_timeout, no_exit, S::terminating, task_stop::kill, none, false, 0, ""},
      {S::terminating, task_stop::kill, E::kill_requested, no_exit, S::terminating, task_stop::kill, none, false, 0, ""},
      {S::terminated, task_stop::none, E::kill_requested, no_exit, S::terminated, task_stop::none, none, false, 0, ""},
      // The end of its process ends it, whatever the state, with what ended it.
      {S::running, task_stop::none, E::process_ended, exited(0), S::terminated, task_stop::none, none, true, 0,
       "exited with code 0"},
      {S::running, task_stop::none, E::process_ended, exited(3), S::terminated, task_stop::none, none, true, 3,
       "exited with code 3"},
      {S::running, task_stop::none, E::process_ended, exited(0, 9), S::terminated, task_stop::none, none, true, -1,
       "killed by signal 9"},
      {S::terminating, task_stop::kill, E::process_ended, exited(0, 15), S::terminated, task_stop::kill, none, true, -1,
       "killed on request (killed by signal 15)"},
      {S::terminating, task_stop::idle, E::process_ended, exited(0), S::terminated, task_stop::idle, none, true, 0,
       "stopped after 300 s without use (exited with code 0)"},
      {S::running, task_stop::none, E::process_ended, exited(-1, 0, pb::EXIT_CAUSE_LOST_WITH_AGENT, "agent-1 stopped"),
       S::terminated, task_stop::none, none, true, -1, "its agent was lost: agent-1 stopped"},
      {S::starting, task_stop::none, E::process_ended,
       exited(-1, 0, pb::EXIT_CAUSE_NEVER_STARTED, "the agent could not start the process: sshd not found"),
       S::terminated, task_stop::none, none, true, -1,
       "it never started: the agent could not start the process: sshd not found"},
      {S::queued, task_stop::none, E::process_ended,
       exited(-1, 0, pb::EXIT_CAUSE_UNSCHEDULABLE, "pool default has no agent with 4 slots"), S::terminated,
       task_stop::none, none, true, -1, "it never started: pool default has no agent with 4 slots"},
      {S::terminated, task_stop::none, E::process_ended, exited(0), S::terminated, task_stop::none, none, false, 0, ""},
  };
  for (const auto& r : table) {
    CAPTURE(to_string(r.state));
    CAPTURE(to_string(r.stop));
    CAPTURE(static_cast<int>(r.event));
    task_facts facts{r.state, r.stop, false, 300};
    task_event event{r.event, r.exit};
    auto out = step(facts, event);
    CHECK(to_string(out.next.state) == to_string(r.next));
    CHECK(to_string(out.next.stop) == to_string(r.next_stop));
    CHECK(out.signal == r.signal);
    CHECK(out.release_slots == r.released);
    CHECK(out.exit_code == r.exit_code);
    CHECK(out.reason == r.reason);
  }
}

TEST_CASE("ready is a running task's flag, cleared when it ends") {
  task_facts facts{task_state::running};
  auto ready = step(facts, {task_event_kind::became_ready, {}});
  CHECK(ready.next.ready);
  CHECK(to_string(ready.next.state) == "RUNNING");
  CHECK_FALSE(step(task_facts{task_state::starting}, {task_event_kind::became_ready, {}}).next.ready);
  pb::ContainerExited exit;
  exit.set_cause(pb::EXIT_CAUSE_EXITED);
  CHECK_FALSE(step(ready.next, {task_event_kind::process_ended, exit}).next.ready);
}
