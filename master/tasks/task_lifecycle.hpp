#pragma once
// A task's lifecycle (command, shell, notebook, TensorBoard) as data: its states, what may be
// asked of it, and the pure function that moves it on an event. The task actor keeps the facts
// and carries out what step() answers; tests drive step() as a table (task_lifecycle_test).
//
//   QUEUED --slots assigned--> STARTING --process started--> RUNNING --(ready)
//     |                           |                             |
//     |                           +------ kill / idle ----------+--> TERMINATING --process ends--+
//     |                                                                                          v
//     +--- kill, or the pool can never place it ----------------------------------------> TERMINATED
//                                 (the process ends, or its agent is lost, in any live state) --^
//
// Unlike a trial, a task never restarts and is never preempted (Determined's rule): whatever
// ends its process ends the task, and the reason says what it was. A kill outranks an idle stop.

#include <cstdint>
#include <string>

#include "config/task_config.hpp"
#include "messages/api.pb.h"
#include "messages/cluster.pb.h"

namespace det {

enum class task_state : uint8_t { queued, starting, running, terminating, terminated };

std::string to_string(task_state x);

/// What has been asked of a task's process, weakest first.
enum class task_stop : uint8_t {
  none,  ///< let it run
  idle,  ///< its idle timeout passed: stop it gracefully
  kill,  ///< its owner or an admin killed it
};

std::string to_string(task_stop x);

enum class task_event_kind : uint8_t {
  slots_assigned,   ///< the pool placed it: the agent is asked to start it
  process_started,  ///< the agent started its process
  became_ready,     ///< its service answers (a notebook's HTTP, a shell's sshd)
  kill_requested,
  idle_timeout,
  process_ended,    ///< `exit` says how (or that its agent was lost, or it never started)
};

struct task_event {
  task_event_kind kind = task_event_kind::slots_assigned;
  pb::ContainerExited exit;  ///< for process_ended
};

/// What the task actor keeps between events.
struct task_facts {
  task_state state = task_state::queued;
  task_stop stop = task_stop::none;
  bool ready = false;
  int64_t idle_timeout_s = 0;  ///< for the reason of an idle stop
};

/// What the actor does with a process that runs.
enum class process_signal : uint8_t {
  none,
  terminate,  ///< SIGTERM, then SIGKILL after the grace period
};

struct task_step {
  task_facts next;
  process_signal signal = process_signal::none;
  bool release_slots = false;  ///< TERMINATED: give its slots (or its request for them) back to the pool
  int32_t exit_code = 0;       ///< TERMINATED: the process's code, or -1 when none is known
  std::string reason;          ///< TERMINATED: why, as a sentence; else a line for its log, or ""
};

/// Between the lifecycle's and the config's enums and their stored, REST-facing protobuf names.
pb::TaskState to_pb(task_state x);
task_state from_pb(pb::TaskState x);  // UNSPECIFIED reads as queued
pb::TaskKind to_pb(config::task_kind x);
config::task_kind from_pb(pb::TaskKind x);  // UNSPECIFIED reads as command
/// Where REST keeps a kind: /api/v1/commands|shells|notebooks|tensorboards (Determined's paths).
const char* route_plural(pb::TaskKind x);

/// The task's next facts, and what to do, after `event`. An event that does not apply in the
/// current state (a late ready, a second kill) leaves the facts as they are.
task_step step(const task_facts& facts, const task_event& event);

} // namespace det
