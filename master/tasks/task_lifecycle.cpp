#include "master/tasks/task_lifecycle.hpp"

namespace det {

std::string to_string(task_state x) {
  switch (x) {
    case task_state::queued: return "QUEUED";
    case task_state::starting: return "STARTING";
    case task_state::running: return "RUNNING";
    case task_state::terminating: return "TERMINATING";
    case task_state::terminated: return "TERMINATED";
  }
  return "UNKNOWN";
}

std::string to_string(task_stop x) {
  switch (x) {
    case task_stop::none: return "none";
    case task_stop::idle: return "idle";
    case task_stop::kill: return "kill";
  }
  return "none";
}

pb::TaskState to_pb(task_state x) {
  switch (x) {
    case task_state::queued: return pb::TASK_STATE_QUEUED;
    case task_state::starting: return pb::TASK_STATE_STARTING;
    case task_state::running: return pb::TASK_STATE_RUNNING;
    case task_state::terminating: return pb::TASK_STATE_TERMINATING;
    case task_state::terminated: return pb::TASK_STATE_TERMINATED;
  }
  return pb::TASK_STATE_QUEUED;
}

task_state from_pb(pb::TaskState x) {
  switch (x) {
    case pb::TASK_STATE_STARTING: return task_state::starting;
    case pb::TASK_STATE_RUNNING: return task_state::running;
    case pb::TASK_STATE_TERMINATING: return task_state::terminating;
    case pb::TASK_STATE_TERMINATED: return task_state::terminated;
    default: return task_state::queued;
  }
}

pb::TaskKind to_pb(config::task_kind x) {
  switch (x) {
    case config::task_kind::command: return pb::TASK_KIND_COMMAND;
    case config::task_kind::shell: return pb::TASK_KIND_SHELL;
    case config::task_kind::notebook: return pb::TASK_KIND_NOTEBOOK;
    case config::task_kind::tensorboard: return pb::TASK_KIND_TENSORBOARD;
  }
  return pb::TASK_KIND_COMMAND;
}

config::task_kind from_pb(pb::TaskKind x) {
  switch (x) {
    case pb::TASK_KIND_SHELL: return config::task_kind::shell;
    case pb::TASK_KIND_NOTEBOOK: return config::task_kind::notebook;
    case pb::TASK_KIND_TENSORBOARD: return config::task_kind::tensorboard;
    default: return config::task_kind::command;
  }
}

const char* route_plural(pb::TaskKind x) {
  switch (x) {
    case pb::TASK_KIND_SHELL: return "shells";
    case pb::TASK_KIND_NOTEBOOK: return "notebooks";
    case pb::TASK_KIND_TENSORBOARD: return "tensorboards";
    default: return "commands";
  }
}

namespace {

// How the process ended, as a sentence, given what had been asked of it.
std::string ended_reason(const task_facts& facts, const pb::ContainerExited& exit) {
  switch (exit.cause()) {
    case pb::EXIT_CAUSE_LOST_WITH_AGENT:
      return "its agent was lost" + (exit.message().empty() ? std::string() : ": " + exit.message());
    case pb::EXIT_CAUSE_UNSCHEDULABLE:
    case pb::EXIT_CAUSE_NEVER_STARTED:
      return "it never started: " + exit.message();
    default:
      break;
  }
  std::string how = exit.signal() != 0 ? "killed by signal " + std::to_string(exit.signal())
                                       : "exited with code " + std::to_string(exit.exit_code());
  switch (facts.stop) {
    case task_stop::kill: return "killed on request (" + how + ")";
    case task_stop::idle:
      return "stopped after " + std::to_string(facts.idle_timeout_s) + " s without use (" + how + ")";
    case task_stop::none: break;
  }
  return how;
}

bool is_live(task_state x) { return x != task_state::terminated; }

} // namespace

task_step step(const task_facts& facts, const task_event& event) {
  task_step out{facts};
  auto& next = out.next;
  switch (event.kind) {
    case task_event_kind::slots_assigned:
      if (facts.state == task_state::queued) next.state = task_state::starting;
      break;
    case task_event_kind::process_started:
      if (facts.state == task_state::starting) next.state = task_state::running;
      break;
    case task_event_kind::became_ready:
      if (facts.state == task_state::running) next.ready = true;
      break;
    case task_event_kind::kill_requested:
    case task_event_kind::idle_timeout: {
      const auto wanted = event.kind == task_event_kind::kill_requested ? task_stop::kill : task_stop::idle;
      if (!is_live(facts.state) || wanted <= facts.stop) break;
      // The idle clock runs while the task runs: one still waiting for slots or starting is not idle.
      if (wanted == task_stop::idle && facts.state != task_state::running) break;
      next.stop = wanted;
      if (facts.state == task_state::queued) {  // nothing runs: it ends here
        next.state = task_state::terminated;
        out.release_slots = true;
        out.exit_code = -1;
        out.reason = "killed on request before it started";
        break;
      }
      // A process that is starting is stopped as soon as it runs: the agent holds the signal.
      next.state = task_state::terminating;
      out.signal = process_signal::terminate;
      out.reason = wanted == task_stop::kill ? "killing it on request"
                                             : "stopping it after " + std::to_string(facts.idle_timeout_s) +
                                                   " s without use";
      break;
    }
    case task_event_kind::process_ended:
      if (!is_live(facts.state)) break;
      next.state = task_state::terminated;
      next.ready = false;
      out.release_slots = true;
      out.exit_code = event.exit.cause() == pb::EXIT_CAUSE_EXITED && event.exit.signal() == 0 ? event.exit.exit_code() : -1;
      out.reason = ended_reason(facts, event.exit);
      break;
  }
  return out;
}

} // namespace det
