#include "actors/task_lifecycle.hpp"

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
