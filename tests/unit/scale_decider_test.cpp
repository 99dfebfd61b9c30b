// The provisioner's decisions against Determined's own test vectors (determined-platform §2.8:
// scale_decider_test.go and agentrm/scaling_test.go).

#include "provisioner/scale_decider.hpp"

#include <doctest/doctest.h>

using namespace det::provisioner;
using namespace std::chrono_literals;

namespace {

const time_point now = std::chrono::system_clock::now();

scale_limits limits(int min, int max, duration periods = 10min) {
  scale_limits l;
  l.min_instances = min;
  l.max_instances = max;
  l.max_idle_agent_period = periods;
  l.max_agent_starting_period = periods;
  l.max_disconnect_period = periods;
  return l;
}

instance running(const std::string& id, duration ago) { return {id, now - ago, instance_state::running}; }

}  // namespace

TEST_CASE("instance states: Determined's overall vector") {
  instance_classes previous;
  previous.disconnected["long disconnected"] = now - 1h;
  previous.idle["long idle"] = now - 1h;
  std::vector<instance> listed{
      {"stopped", now - 1h, instance_state::stopped},
      running("starting 1", 1min),
      {"starting 2", now - 1min, instance_state::starting},
      running("long disconnected", 1h),
      running("disconnected", 1h),
      running("idle", 1h),
      running("long idle", 1h),
      running("busy", 1h),
      {"going", now - 1h, instance_state::terminating},
  };
  std::map<std::string, bool> agents{{"idle", true}, {"long idle", true}, {"busy", false}};
  auto c = classify(now, listed, agents, previous, limits(0, 10));
  CHECK(c.stopped == std::set<std::string>{"stopped"});
  CHECK(c.recently_launched == std::set<std::string>{"starting 1", "starting 2"});
  CHECK(c.long_disconnected == std::set<std::string>{"long disconnected"});
  CHECK(c.disconnected.at("disconnected") == now);
  CHECK(c.disconnected.at("long disconnected") == now - 1h);
  CHECK(c.idle.at("idle") == now);
  CHECK(c.long_idle == std::set<std::string>{"long idle"});
  CHECK(c.instances.size() == 7);  // neither the stopped one nor the one terminating
  CHECK_FALSE(c.idle.count("busy"));
}

TEST_CASE("termination: stopped, long idle and long disconnected instances go") {
  instance_classes stopped;
  stopped.stopped = {"s"};
  CHECK(instances_to_terminate(stopped, limits(0, 10)) == std::vector<termination>{{"s", "stopped"}});

  instance_classes idle;
  idle.instances["i"] = running("i", 1h);
  idle.idle["i"] = now - 1h;
  idle.long_idle = {"i"};
  CHECK(instances_to_terminate(idle, limits(0, 10)) == std::vector<termination>{{"i", "long idle"}});

  instance_classes gone;
  gone.instances["d"] = running("d", 1h);
  gone.disconnected["d"] = now - 1h;
  gone.long_disconnected = {"d"};
  CHECK(instances_to_terminate(gone, limits(0, 10)) == std::vector<termination>{{"d", "long disconnected"}});
}

TEST_CASE("termination above the maximum: idle first, then the newest") {
  instance_classes c;
  c.instances["earliest"] = running("earliest", 1h);
  for (auto id : {"most recent", "new idle", "long idle"}) c.instances[id] = running(id, 1min);
  c.idle["new idle"] = now;
  c.idle["long idle"] = now - 1h;
  c.long_idle = {"long idle"};
  const std::string over = "instance number exceeds maximum";
  CHECK(instances_to_terminate(c, limits(0, 1)) ==
        std::vector<termination>{{"long idle", "long idle"}, {"new idle", over}, {"most recent", over}});
}

TEST_CASE("termination keeps min_instances: a long idle instance stays when fewer would be left") {
  instance_classes c;
  for (int i = 0; i < 7; ++i) c.instances["r" + std::to_string(i)] = running("r" + std::to_string(i), 1h);
  c.stopped = {"stopped"};
  c.long_idle = {"r0"};
  c.idle["r0"] = now - 1h;
  c.long_disconnected = {"r1"};
  c.disconnected["r1"] = now - 1h;
  // 8 instances in Determined's vector counts the stopped one; 7 here are running: 7 - 1 = 6 = min.
  CHECK(instances_to_terminate(c, limits(6, 10)) ==
        std::vector<termination>{{"stopped", "stopped"}, {"r1", "long disconnected"}});
}

TEST_CASE("launch count: Determined's vectors") {
  instance_classes none;
  CHECK(instances_to_launch(none, 1, limits(1, 10)) == 1);

  instance_classes one;
  one.instances["a"] = running("a", 1h);
  CHECK(instances_to_launch(one, 4, limits(0, 2)) == 1);

  instance_classes starting = one;
  starting.instances["b"] = running("b", 1min);
  starting.recently_launched = {"b"};
  CHECK(instances_to_launch(starting, 4, limits(0, 10)) == 3);

  instance_classes two_starting;
  for (auto id : {"a", "b"}) {
    two_starting.instances[id] = running(id, 1min);
    two_starting.recently_launched.insert(id);
  }
  CHECK(instances_to_launch(two_starting, 1, limits(0, 10)) == 0);
  CHECK(instances_to_launch(none, 0, limits(0, 10)) == 0);
  CHECK(instances_to_launch(none, 9, limits(0, 3)) == 3);  // the test below: 5 slots on 2-slot instances, max 3
}

TEST_CASE("desired instances: jobs' max_slots cap their share") {
  std::map<std::string, int> caps{{"g1", 1}, {"g2", 2}, {"g4", 10}};  // g3 has none
  std::vector<pending_task> tasks{{1, "g1"}, {1, "g1"}, {3, "g1"}, {4, "g2"}, {1, "g2"},
                                  {1, "g3"}, {3, "g3"}, {15, "g4"}, {10, "g3"}};
  CHECK(desired_new_instances(tasks, caps, 5, 10) == 6);
}

TEST_CASE("desired instances: Determined's cumulative sequence") {
  // f(slots per instance, aux per agent) over the pending tasks, as tasks arrive (allocated ones
  // are not pending and are left out).
  std::vector<pending_task> pending{{1, "t2"}};
  auto f = [&](int per, int aux) { return desired_new_instances(pending, {}, per, aux); };
  CHECK(f(0, 100) == 0);
  CHECK(f(1, 100) == 1);
  CHECK(f(2, 100) == 1);
  pending.push_back({1, "t3"});
  CHECK(f(0, 100) == 0);
  CHECK(f(1, 100) == 2);
  CHECK(f(2, 100) == 1);
  pending.push_back({0, "t5"});
  CHECK(f(0, 100) == 1);
  CHECK(f(0, 0) == 0);
  CHECK(f(0, 1) == 1);
  CHECK(f(0, 2) == 1);
  CHECK(f(1, 100) == 2);
  CHECK(f(2, 100) == 1);
  pending.push_back({4, "t7"});
  CHECK(f(0, 100) == 1);
  CHECK(f(0, 0) == 0);
  CHECK(f(1, 100) == 6);
  CHECK(f(2, 100) == 3);
  pending.push_back({3, "t9"});
  CHECK(f(1, 100) == 9);
  CHECK(f(2, 100) == 3);  // 3 slots never fit 2-slot instances
}

TEST_CASE("provider words map to states") {
  CHECK(instance_state_from("pending") == instance_state::starting);
  CHECK(instance_state_from("PROVISIONING") == instance_state::starting);
  CHECK(instance_state_from("RUNNING") == instance_state::running);
  CHECK(instance_state_from("shutting-down") == instance_state::terminating);
  CHECK(instance_state_from("COMPLETED") == instance_state::stopped);
  CHECK(instance_state_from("banana") == instance_state::unknown);
}
