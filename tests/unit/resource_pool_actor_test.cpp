// The resource pool actor driven deterministically by CAF's test_coordinator: requests placed on
// an agent with room, a release that lets the next one in, a request no agent could ever hold
// refused as unschedulable, and an agent disabled without --drain preempting what runs there.

#include <doctest/doctest.h>

#include <map>
#include <memory>
#include <optional>
#include <string>

#include "master/spawn.hpp"
#include "caf/all.hpp"
#include "model/ids.hpp"
#include "tests/unit/deterministic_system.hpp"

using namespace det;

namespace {

/// What each allocation heard from the pool, by allocation id.
struct heard {
  std::map<std::string, allocation_parts> placed;
  std::map<std::string, caf::error> refused;
  std::map<std::string, int> preempted;
};

/// An allocation as the pool sees it: asks for slots and keeps the answer.
caf::behavior fake_allocation(caf::event_based_actor* self, std::shared_ptr<heard> h, resource_pool_actor pool,
                              std::string id, int32_t slots, std::string job) {
  self->request(pool, caf::infinite, allocate_atom::value, allocation_ask{id, job, slots, false, true})
      .then([=](const allocation_parts& parts) { h->placed[id] = parts; },
            [=](caf::error& e) { h->refused[id] = e; });
  return {[=](preempt_atom) { ++h->preempted[id]; }};
}

caf::behavior fake_agent_proxy(caf::event_based_actor*) {
  return {[](const pb::KillContainer&) {}};
}

struct pool_fixture : testing::deterministic_system {
  std::shared_ptr<heard> h = std::make_shared<heard>();
  resource_pool_actor pool;

  pool_fixture() {
    config::resource_pool_config spec;
    spec.name = "default";
    pool = spawn_resource_pool(*sys, spec, 0);  // no reconnect wait: oversized requests are refused at once
    auto proxy = caf::actor_cast<agent_proxy_actor>(sys->spawn(fake_agent_proxy));
    caf::anon_send(pool, add_atom::value, std::string{"agent-1"}, std::vector<int32_t>{0, 1}, slot_kind::cpu, proxy,
                   std::vector<pb::RunningContainer>{});
    run();
  }

  // The pool and the allocations hold each other's handles: the pool quits, or both outlive the
  // actor system (LeakSanitizer's report under scripts/sanitize.sh).
  ~pool_fixture() {
    caf::anon_send_exit(pool, caf::exit_reason::user_shutdown);
    run();
  }

  void ask(const std::string& id, int32_t slots, const std::string& job = job_id::of(experiment_id{1}).str()) {
    sys->spawn(fake_allocation, h, pool, id, slots, job);
    run();
  }

  /// The jobs the pool lists, as GET /api/v1/job-queues shows them.
  pb::GetJobsResponse jobs() {
    auto listed = std::make_shared<pb::GetJobsResponse>();
    sys->spawn([=](caf::event_based_actor* self) {
      self->request(pool, caf::infinite, list_atom::value)
          .then([=](const pb::ResourcePoolInfo&, const pb::GetJobsResponse& j) { *listed = j; });
    });
    run();
    return *listed;
  }
};

} // namespace

TEST_CASE("the pool places a request where it fits and the next one once slots are released") {
  pool_fixture f;
  f.ask("1.1", 2);
  REQUIRE(f.h->placed.count("1.1") == 1);
  CHECK(f.h->placed["1.1"][0].agent_id == "agent-1");
  CHECK(f.h->placed["1.1"][0].slot_ids.size() == 2);
  f.ask("2.1", 1);
  CHECK(f.h->placed.count("2.1") == 0);  // waits: the agent is full
  caf::anon_send(f.pool, release_atom::value, std::string{"1.1"});
  f.run();
  CHECK(f.h->placed.count("2.1") == 1);
}

TEST_CASE("the pool lists an experiment's job by the experiment's id and a task's by the task's") {
  pool_fixture f;
  const task_id notebook{"6f1c0a4e-9d1b-4e5a-8a36-1f6b2f6c9e01"};
  f.ask("7.1", 2, job_id::of(experiment_id{7}).str());
  f.ask(notebook.value, 1, job_id::of(notebook).str());  // waits: the agent is full
  const auto jobs = f.jobs();
  REQUIRE(jobs.jobs_size() == 2);
  CHECK(jobs.jobs(0).experiment_id() == 7);
  CHECK(jobs.jobs(0).task_id().empty());
  CHECK(jobs.jobs(1).task_id() == notebook.value);
  CHECK(jobs.jobs(1).experiment_id() == 0);
}

TEST_CASE("a request no agent of the pool could ever hold is refused as unschedulable") {
  pool_fixture f;
  f.ask("1.1", 4);
  REQUIRE(f.h->refused.count("1.1") == 1);
  CHECK(f.h->refused["1.1"] == errc::unschedulable);
  CHECK(f.h->placed.empty());
}

TEST_CASE("an agent disabled without --drain has what runs there preempted; --drain lets it finish") {
  pool_fixture f;
  f.ask("1.1", 1);
  REQUIRE(f.h->placed.count("1.1") == 1);
  caf::anon_send(f.pool, enable_atom::value, std::string{"agent-1"}, int32_t{-1}, slot_switch::drain);
  f.run();
  CHECK(f.h->preempted["1.1"] == 0);
  f.ask("2.1", 1);
  CHECK(f.h->placed.count("2.1") == 0);  // draining: no new work
  caf::anon_send(f.pool, enable_atom::value, std::string{"agent-1"}, int32_t{-1}, slot_switch::disable);
  f.run();
  CHECK(f.h->preempted["1.1"] == 1);
}
