// How a run's slots become workers: one per GPU slot for a LibTorch run on GPUs, one per agent
// otherwise; and how an agent splits its container into those workers and ends it.

#include "master/scheduling/worker_layout.hpp"
#include "agent/container_workers.hpp"

#include <doctest/doctest.h>

#include <stdexcept>

using namespace det;

TEST_CASE("worker layout: a LibTorch run on GPUs has a worker per slot, ranked agent by agent") {
  auto layout = lay_out_workers({{slot_kind::cuda, 4}, {slot_kind::cuda, 4}}, pb::WORKER_RUNTIME_LIBTORCH);
  CHECK(layout.world_size == 8);
  REQUIRE(layout.parts.size() == 2);
  CHECK(layout.parts[0].first_rank == 0);
  CHECK(layout.parts[0].workers == 4);
  CHECK(layout.parts[1].first_rank == 4);
  CHECK(layout.parts[1].workers == 4);
  // One GPU: world size 1, trained alone.
  layout = lay_out_workers({{slot_kind::cuda, 1}}, pb::WORKER_RUNTIME_LIBTORCH);
  CHECK(layout.world_size == 1);
}

TEST_CASE("worker layout: CPU slots, Core API trials and tasks have one process per agent") {
  auto cpu = lay_out_workers({{slot_kind::cpu, 2}, {slot_kind::cpu, 2}}, pb::WORKER_RUNTIME_LIBTORCH);
  CHECK(cpu.world_size == 2);
  CHECK(cpu.parts[1].first_rank == 1);
  CHECK(cpu.parts[1].workers == 1);
  // A Core API trial's launcher starts a process per slot itself, as Determined's does.
  auto core_api = lay_out_workers({{slot_kind::cuda, 4}, {slot_kind::cuda, 4}}, pb::WORKER_RUNTIME_OTHER);
  CHECK(core_api.world_size == 2);
  auto task = lay_out_workers({{slot_kind::cuda, 2}}, pb::WORKER_RUNTIME_UNSPECIFIED);
  CHECK(task.world_size == 1);
  CHECK(task.parts[0].workers == 1);
}

TEST_CASE("container workers: a container of several workers gives each one slot and its rank") {
  pb::StartContainer start;
  start.set_allocation_id("a.1");
  start.add_slot_ids(2);
  start.add_slot_ids(3);
  start.set_rank(4);
  start.set_workers(2);
  start.set_world_size(8);
  auto workers = runtime::split_into_workers(start);
  REQUIRE(workers.size() == 2);
  CHECK(workers[0].rank() == 4);
  CHECK(workers[1].rank() == 5);
  CHECK(workers[0].slot_ids_size() == 1);
  CHECK(workers[0].slot_ids(0) == 2);
  CHECK(workers[1].slot_ids(0) == 3);
  CHECK(workers[1].world_size() == 8);
  CHECK(workers[1].allocation_id() == "a.1");
  // One worker keeps every slot: Gloo on an agent's CPUs.
  start.set_workers(1);
  workers = runtime::split_into_workers(start);
  REQUIRE(workers.size() == 1);
  CHECK(workers[0].slot_ids_size() == 2);
  CHECK(workers[0].rank() == 4);
  // Any other count would leave the run's other workers waiting for ranks that never come.
  start.set_workers(3);
  CHECK_THROWS_WITH_AS(runtime::split_into_workers(start),
                       "the master asked for 3 workers on 2 slots; a container has one worker or one per slot",
                       std::runtime_error);
}

TEST_CASE("container workers: the container ends when every worker has, as the first failure did") {
  runtime::container_exits exits{3};
  CHECK_FALSE(exits.ended(1, {0, 0}));  // a worker that finished waits for the others
  CHECK_FALSE(exits.all_ended());
  CHECK(exits.has_ended(1));             // and is signalled no more
  CHECK_FALSE(exits.has_ended(0));
  CHECK(exits.ended(0, {1, 0}));        // the first failure: the others are to be killed
  CHECK_FALSE(exits.ended(0, {1, 0}));  // told twice, nothing more
  CHECK_FALSE(exits.ended(2, {0, 9}));  // killed as asked: not a second first failure
  CHECK(exits.all_ended());
  CHECK(exits.outcome().exit_code == 1);
  CHECK(exits.outcome().signal == 0);

  runtime::container_exits alone{1};
  CHECK_FALSE(alone.ended(0, {0, 0}));
  CHECK(alone.all_ended());
  CHECK(alone.outcome().exit_code == 0);
}
