// The pool scheduler against Determined's rules (reference §3): fitting, gangs, priority with and
// without preemption and backfilling, fair share, round robin, max_slots, 0-slot tasks, and
// disabled agents and slots.

#include "scheduler/pool_scheduler.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <set>

using namespace det::scheduler;

namespace {

pool_scheduler make(policy_kind policy, bool preemption = false, fitting_policy fitting = fitting_policy::best) {
  scheduler_options o;
  o.policy = policy;
  o.preemption = preemption;
  o.fitting = fitting;
  return pool_scheduler(o);
}

void add_agents(pool_scheduler& s, int count, int slots) {
  std::vector<int> ids;
  for (int i = 0; i < slots; ++i) ids.push_back(i);
  for (int a = 0; a < count; ++a) s.add_agent("agent-" + std::to_string(a), ids);
}

std::set<std::string> started(const decision& d) {
  std::set<std::string> ids;
  for (const auto& p : d.start) ids.insert(p.allocation_id);
  return ids;
}

std::set<std::string> preempted(const decision& d) { return {d.preempt.begin(), d.preempt.end()}; }

const placement& where(const decision& d, const std::string& id) {
  return *std::find_if(d.start.begin(), d.start.end(), [&](const placement& p) { return p.allocation_id == id; });
}

int slots_of(const pool_scheduler& s, const std::string& group) {
  int n = 0;
  for (const auto& [id, t] : s.tasks())
    if (t.running && t.request.group == group) n += t.request.slots;
  return n;
}

}  // namespace

TEST_CASE("best fit packs a task onto the fullest agent that fits; worst fit spreads") {
  for (auto fitting : {fitting_policy::best, fitting_policy::worst}) {
    auto s = make(policy_kind::priority, false, fitting);
    s.add_agent("a", {0, 1, 2, 3});
    s.add_agent("b", {0, 1, 2, 3});
    s.request({"first", "job", 2});
    auto first = s.schedule();
    REQUIRE(first.start.size() == 1);
    std::string used = first.start[0].parts[0].agent_id;
    s.request({"second", "job", 1});
    auto second = s.schedule();
    REQUIRE(second.start.size() == 1);
    if (fitting == fitting_policy::best)
      CHECK(second.start[0].parts[0].agent_id == used);  // 2 free there, 4 on the other
    else
      CHECK(second.start[0].parts[0].agent_id != used);
  }
}

TEST_CASE("gangs get all their slots at once: on one agent, or across whole idle agents of one size") {
  auto s = make(policy_kind::priority);
  add_agents(s, 2, 4);
  s.request({"four", "job", 4});
  auto d = s.schedule();
  REQUIRE(d.start.size() == 1);
  CHECK(d.start[0].parts.size() == 1);
  CHECK(d.start[0].parts[0].slot_ids.size() == 4);
  s.release("four");

  s.request({"eight", "job", 8});
  d = s.schedule();
  REQUIRE(d.start.size() == 1);
  REQUIRE(d.start[0].parts.size() == 2);
  CHECK(d.start[0].parts[0].slot_ids.size() == 4);
  CHECK(d.start[0].parts[1].slot_ids.size() == 4);
  s.release("eight");

  // 6 is not a multiple of the agents' 4 slots: it never fits, as in Determined.
  s.request({"six", "job", 6});
  CHECK(s.schedule().start.empty());
  s.release("six");

  // Only whole idle agents join a multi-agent gang.
  s.request({"one", "job", 1});
  CHECK(s.schedule().start.size() == 1);
  s.request({"eight-again", "job", 8});
  CHECK(s.schedule().start.empty());
  s.release("one");
  CHECK(started(s.schedule()) == std::set<std::string>{"eight-again"});
}

TEST_CASE("priority: lower numbers first; without preemption a blocked level holds back the levels below") {
  auto s = make(policy_kind::priority);
  add_agents(s, 1, 4);
  s.set_group("low", {60, 1, 0});
  s.set_group("high", {10, 1, 0});
  s.set_group("mid", {42, 1, 0});
  s.request({"low-1", "low", 1});
  s.request({"high-3", "high", 3});
  s.request({"mid-1", "mid", 1});
  CHECK(started(s.schedule()) == std::set<std::string>{"high-3", "mid-1"});

  // 4 slots for the high job's next task cannot fit: nothing of lower priority may start.
  s.request({"high-4", "high", 4});
  s.release("mid-1");
  CHECK(s.schedule().start.empty());
  // Within one level a smaller task behind a blocked one still starts.
  s.request({"high-1", "high", 1});
  CHECK(started(s.schedule()) == std::set<std::string>{"high-1"});
  CHECK(s.queued() == 2);  // high-4 and low-1
}

TEST_CASE("priority with preemption: the lowest priority and newest go first, nothing starts meanwhile") {
  auto s = make(policy_kind::priority, true);
  add_agents(s, 1, 4);
  s.set_group("low", {60, 1, 0});
  s.set_group("lower", {70, 1, 0});
  s.set_group("high", {10, 1, 0});
  s.request({"low-a", "low", 2});
  s.request({"lower-a", "lower", 1});
  s.request({"lower-b", "lower", 1});
  CHECK(s.schedule().start.size() == 3);

  s.request({"high", "high", 2});
  auto d = s.schedule();
  CHECK(d.start.empty());
  CHECK(preempted(d) == std::set<std::string>{"lower-a", "lower-b"});
  // A preemption is asked for once; the same pass again starts nothing and asks nothing new.
  CHECK(s.schedule().empty());
  s.release("lower-b");
  CHECK(s.schedule().empty());  // still waiting for lower-a
  s.release("lower-a");
  CHECK(started(s.schedule()) == std::set<std::string>{"high"});
}

TEST_CASE("priority with preemption spares tasks that cannot be preempted and older tasks of the same level") {
  auto s = make(policy_kind::priority, true);
  add_agents(s, 1, 2);
  s.set_group("job", {42, 1, 0});
  s.request({"old", "job", 2});
  CHECK(s.schedule().start.size() == 1);
  s.request({"new", "job", 2});
  CHECK(s.schedule().empty());  // same priority, and `old` is ahead of it in the queue

  s.release("old");
  s.release("new");
  s.set_group("fixed", {80, 1, 0});
  s.request({"notebook", "fixed", 2, false});
  CHECK(s.schedule().start.size() == 1);
  s.request({"urgent", "job", 2});
  CHECK(s.schedule().empty());  // the only candidate cannot be preempted
}

TEST_CASE("priority with preemption backfills preemptible tasks behind a blocked level") {
  auto s = make(policy_kind::priority, true);
  add_agents(s, 1, 4);
  s.set_group("high", {10, 1, 0});
  s.set_group("low", {50, 1, 0});
  s.set_group("fixed", {50, 1, 0});
  s.request({"high-3", "high", 3});
  CHECK(s.schedule().start.size() == 1);
  s.request({"high-4", "high", 4});  // blocked: 1 slot free, and nothing it may preempt
  s.request({"low-1", "low", 1});
  s.request({"fixed-1", "fixed", 1, false});
  auto d = s.schedule();
  CHECK(started(d) == std::set<std::string>{"low-1"});  // a task that cannot be preempted may not backfill
  CHECK(s.tasks().at("low-1").backfilled);
  // Once the blocked task could run, the backfilled one is preempted for it.
  s.release("high-3");
  d = s.schedule();
  CHECK(d.start.empty());
  CHECK(preempted(d) == std::set<std::string>{"low-1"});
  s.release("low-1");
  CHECK(started(s.schedule()) == std::set<std::string>{"high-4"});
}

TEST_CASE("max_slots caps a job's running slots under every policy") {
  for (auto policy : {policy_kind::priority, policy_kind::fair_share, policy_kind::round_robin}) {
    auto s = make(policy);
    add_agents(s, 2, 4);
    s.set_group("capped", {42, 1, 3});
    for (int i = 0; i < 6; ++i) s.request({"t" + std::to_string(i), "capped", 1});
    s.schedule();
    CHECK(slots_of(s, "capped") == 3);
    s.set_group("capped", {42, 1, 5});
    s.schedule();
    CHECK(slots_of(s, "capped") == 5);
  }
}

TEST_CASE("fair share splits the slots by weight and preempts a job above its share") {
  auto s = make(policy_kind::fair_share);
  add_agents(s, 2, 4);
  s.set_group("a", {42, 1, 0});
  for (int i = 0; i < 8; ++i) s.request({"a" + std::to_string(i), "a", 1});
  s.schedule();
  CHECK(slots_of(s, "a") == 8);  // alone, it gets everything

  s.set_group("b", {42, 3, 0});
  for (int i = 0; i < 8; ++i) s.request({"b" + std::to_string(i), "b", 1});
  auto d = s.schedule();
  CHECK(d.preempt.size() == 6);  // a's share is now 2 of 8
  for (const auto& id : d.preempt) {
    CHECK(id.rfind("a", 0) == 0);
    s.release(id);
  }
  s.schedule();
  CHECK(slots_of(s, "a") == 2);
  CHECK(slots_of(s, "b") == 6);
}

TEST_CASE("fair share leaves out a job whose offer cannot run its smallest task") {
  auto s = make(policy_kind::fair_share);
  add_agents(s, 1, 4);
  s.set_group("small", {42, 1, 0});
  s.set_group("gang", {42, 1, 0});
  for (int i = 0; i < 4; ++i) s.request({"small" + std::to_string(i), "small", 1});
  s.request({"gang", "gang", 4});
  s.schedule();
  // Half the slots each would strand the 4-slot gang with 2; it waits instead of holding them.
  CHECK(slots_of(s, "small") == 4);
  CHECK(slots_of(s, "gang") == 0);
}

TEST_CASE("round robin starts one task per job per round, the job with fewer slots first") {
  auto s = make(policy_kind::round_robin);
  add_agents(s, 1, 5);
  s.set_group("a", {42, 1, 0});
  s.set_group("b", {42, 1, 0});
  for (int i = 0; i < 5; ++i) s.request({"a" + std::to_string(i), "a", 1});
  for (int i = 0; i < 5; ++i) s.request({"b" + std::to_string(i), "b", 1});
  s.schedule();
  CHECK(slots_of(s, "a") == 3);
  CHECK(slots_of(s, "b") == 2);
}

TEST_CASE("0-slot tasks are scheduled apart, up to a limit per agent") {
  scheduler_options o;
  o.max_zero_slot_tasks_per_agent = 2;
  pool_scheduler s(o);
  add_agents(s, 1, 1);
  s.request({"gpu", "job", 1});
  for (int i = 0; i < 3; ++i) s.request({"aux" + std::to_string(i), "tb", 0});
  auto d = s.schedule();
  CHECK(d.start.size() == 3);  // the 1-slot task and two 0-slot ones
  CHECK(where(d, "aux0").parts[0].slot_ids.empty());
  CHECK(s.queued() == 1);
  s.release("aux0");
  CHECK(started(s.schedule()) == std::set<std::string>{"aux2"});
}

TEST_CASE("disabled agents and slots take no new tasks; a removed agent's tasks are reported lost") {
  auto s = make(policy_kind::priority);
  add_agents(s, 2, 2);
  CHECK(s.set_agent_enabled("agent-0", false));
  CHECK(s.set_slot_enabled("agent-1", 0, false));
  CHECK_FALSE(s.set_slot_enabled("agent-1", 7, false));
  CHECK_FALSE(s.set_agent_enabled("nobody", false));
  s.request({"one", "job", 1});
  s.request({"two", "job", 1});
  auto d = s.schedule();
  REQUIRE(d.start.size() == 1);
  CHECK(d.start[0].parts[0].agent_id == "agent-1");
  CHECK(d.start[0].parts[0].slot_ids == std::vector<int>{1});
  CHECK(s.total_slots() == 3);
  CHECK(s.tasks_on("agent-1") == std::vector<std::string>{d.start[0].allocation_id});
  CHECK(s.tasks_on("agent-1", 0).empty());

  CHECK(s.remove_agent("agent-1") == std::vector<std::string>{d.start[0].allocation_id});
  CHECK(s.running() == 0);
  s.set_agent_enabled("agent-0", true);
  CHECK(s.schedule().start.size() == 1);
}

TEST_CASE("a pass over an unchanged pool starts and preempts nothing, under every policy") {
  for (auto policy : {policy_kind::priority, policy_kind::fair_share, policy_kind::round_robin}) {
    auto s = make(policy, true);
    add_agents(s, 4, 4);
    for (int j = 0; j < 5; ++j) s.set_group("job" + std::to_string(j), {10 + 20 * j, 1.0 + j % 3, 0});
    for (int r = 0; r < 40; ++r)
      s.request({"t" + std::to_string(r), "job" + std::to_string(r % 5), r % 7 == 0 ? 2 : 1});
    CHECK_FALSE(s.schedule().start.empty());
    auto again = s.schedule();
    CHECK_MESSAGE(again.empty(), static_cast<int>(policy));
  }
}

TEST_CASE("a task adopted where it already runs holds its slots") {
  auto s = make(policy_kind::priority);
  add_agents(s, 1, 4);
  CHECK(s.adopt({"running", "job", 2}, {"running", {{"agent-0", {1, 2}}}}));
  CHECK(s.free_slots() == 2);
  CHECK(s.tasks_on("agent-0", 2) == std::vector<std::string>{"running"});
  CHECK_FALSE(s.adopt({"other", "job", 1}, {"other", {{"agent-0", {2}}}}));  // taken
  CHECK_FALSE(s.adopt({"lost", "job", 1}, {"lost", {{"agent-9", {0}}}}));    // no such agent
  s.request({"next", "job", 3});
  CHECK(s.schedule().start.empty());  // 2 free slots
  s.release("running");
  CHECK(s.schedule().start.size() == 1);
}

TEST_CASE("preemption releases only the tasks whose slots the waiting task takes") {
  auto s = make(policy_kind::priority, true);
  s.add_agent("a", {0, 1, 2, 3});
  s.add_agent("b", {0, 1, 2, 3});
  s.set_group("low", {60, 1, 0});
  s.set_group("fixed", {60, 1, 0});
  s.set_group("high", {10, 1, 0});
  s.request({"fixed", "fixed", 2, false});
  s.request({"low-whole", "low", 4});  // the other agent, whole
  s.request({"low-half", "low", 2});   // next to `fixed`
  auto d = s.schedule();
  REQUIRE(d.start.size() == 3);
  REQUIRE(where(d, "low-half").parts[0].agent_id == where(d, "fixed").parts[0].agent_id);
  s.request({"high", "high", 4});
  // The newest, low-half, is tried first but cannot free 4 slots beside `fixed`; low-whole then
  // frees an agent. Only low-whole is preempted.
  CHECK(preempted(s.schedule()) == std::set<std::string>{"low-whole"});
}

TEST_CASE("fair share counts slots held on a disabled agent, so healthy tasks elsewhere keep running") {
  auto s = make(policy_kind::fair_share);
  add_agents(s, 2, 4);
  for (int i = 0; i < 4; ++i) {
    s.request({"a" + std::to_string(i), "a", 1});
    s.request({"b" + std::to_string(i), "b", 1});
  }
  s.schedule();
  REQUIRE(slots_of(s, "a") == 4);
  s.set_agent_enabled("agent-1", false);  // e.g. its connection dropped for a moment
  CHECK(s.schedule().empty());
}

TEST_CASE("priority: a task too big for the pool does not hold back the levels below it") {
  auto s = make(policy_kind::priority);
  add_agents(s, 2, 4);
  s.set_group("huge", {10, 1, 0});
  s.set_group("small", {50, 1, 0});
  s.request({"six", "huge", 6});  // 6 slots fit neither one 4-slot agent nor whole agents
  s.request({"one", "small", 1});
  CHECK(started(s.schedule()) == std::set<std::string>{"one"});
  CHECK(s.queued() == 1);
}

TEST_CASE("a request that no arrangement of the agents could hold is known as such") {
  auto s = make(policy_kind::priority);
  add_agents(s, 2, 4);
  s.request({"busy", "job", 4});
  s.schedule();
  CHECK(s.set_agent_enabled("agent-1", false));
  // Whatever runs or is disabled now: one agent, or whole agents of one size.
  CHECK(s.could_ever_fit(4, false));
  CHECK(s.could_ever_fit(8, false));
  CHECK_FALSE(s.could_ever_fit(6, false));
  CHECK_FALSE(s.could_ever_fit(12, false));
  // A task that must stay on one agent never spans two.
  CHECK(s.could_ever_fit(4, true));
  CHECK_FALSE(s.could_ever_fit(8, true));
}

TEST_CASE("a task that must stay on one agent is not placed across idle agents") {
  auto s = make(policy_kind::priority);
  add_agents(s, 2, 4);
  s.request({"core-api", "job", 8, true, true});
  s.request({"harness", "job", 8});
  CHECK(started(s.schedule()) == std::set<std::string>{"harness"});
}
