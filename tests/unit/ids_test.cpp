// det's typed ids: what each formats to, and that parsing takes back exactly that and refuses the rest.
#include <doctest/doctest.h>

#include "model/ids.hpp"

using namespace det;

TEST_CASE("a job is an experiment's id or a task's, as text and back") {
  const auto experiment = job_id::of(experiment_id{12});
  CHECK(experiment.str() == "12");
  CHECK_FALSE(experiment.is_task());
  CHECK(experiment.experiment().value == 12);
  CHECK(job_id::parse("12") == experiment);

  const auto task = job_id::of(task_id{"6f1c0a4e-9d1b-4e5a-8a36-1f6b2f6c9e01"});
  CHECK(task.str() == "task 6f1c0a4e-9d1b-4e5a-8a36-1f6b2f6c9e01");
  CHECK(task.is_task());
  CHECK(task.task().value == "6f1c0a4e-9d1b-4e5a-8a36-1f6b2f6c9e01");
  CHECK(job_id::parse(task.str()) == task);
}

TEST_CASE("a job's text that str() never writes is refused") {
  for (const char* text : {"", "0", "-3", "+3", "12 ", " 12", "12x", "99999999999999999999", "task ", "task a b",
                           "task a.1", "tasks 12", "Task 12"})
    CHECK_MESSAGE(!job_id::parse(text), text);
}

TEST_CASE("an allocation is a trial's run or a task's id, as text and back") {
  const auto run = allocation_id::of(trial_id{7}, 3);
  CHECK(run.str() == "7.3");
  CHECK_FALSE(run.is_task());
  CHECK(run.trial().value == 7);
  CHECK(run.run() == 3);
  CHECK(allocation_id::parse("7.3") == run);

  const auto task = allocation_id::of(task_id{"6f1c0a4e-9d1b-4e5a-8a36-1f6b2f6c9e01"});
  CHECK(task.str() == "6f1c0a4e-9d1b-4e5a-8a36-1f6b2f6c9e01");
  CHECK(task.is_task());
  CHECK(allocation_id::parse(task.str()) == task);
  CHECK_FALSE(allocation_id::parse("7.3") == task);
}

TEST_CASE("an allocation's text that str() never writes is refused") {
  for (const char* text : {"", ".", "7.", ".3", "0.1", "7.-1", "7.3.1", "7.3x", "x.3", "a b", "7 .3", "7.99999999999999999999"})
    CHECK_MESSAGE(!allocation_id::parse(text), text);
}
