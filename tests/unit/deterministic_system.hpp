#pragma once
// An actor system on CAF's deterministic test scheduler: every message runs in the test's thread
// when run() is called, so an actor test is a sequence of sends and checks.

#include <memory>

#include "caf/actor_system.hpp"
#include "caf/actor_system_config.hpp"
#include "caf/scheduler/test_coordinator.hpp"

namespace det::testing {

struct deterministic_system {
  caf::actor_system_config cfg;
  std::unique_ptr<caf::actor_system> sys;
  caf::scheduler::test_coordinator* sched = nullptr;

  deterministic_system() {
    cfg.set("scheduler.policy", caf::atom("testing"));
    sys = std::make_unique<caf::actor_system>(cfg);
    sched = &dynamic_cast<caf::scheduler::test_coordinator&>(sys->scheduler());
    sys->await_actors_before_shutdown(false);  // fakes that never quit live until the system goes
  }

  /// Runs every pending message, and those they send, until none is left.
  void run() { sched->run(); }
};

} // namespace det::testing
