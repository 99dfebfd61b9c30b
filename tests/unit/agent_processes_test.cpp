// Which process is a pool's agent: the process provider terminates an instance by signalling it.

#include "provisioner/agent_processes.hpp"

#include <doctest/doctest.h>

using namespace det::provisioner;

namespace {

agent_process agent(pid_t pid, pid_t parent, const std::string& pool, const std::string& id) {
  return {pid, parent, {"/usr/bin/det-node", "--role=agent", "--master=127.0.0.1:1", "--pool=" + pool, "--id=" + id,
                        "--slots=cpu:2"}, ""};
}

}  // namespace

TEST_CASE("pool agents: a child the agent is starting, which shows its command line, is not the agent") {
  // pids wrap around, so the child may have the smaller one; /proc lists by pid.
  for (pid_t child : {50, 150}) {
    CAPTURE(child);
    const auto found = pool_agents({agent(100, 1, "elastic", "elastic-a"), agent(child, 100, "elastic", "elastic-a")},
                                   "elastic", {"elastic-a"});
    REQUIRE(found.size() == 1);
    CHECK(found.at("elastic-a").pid == 100);
  }
}

TEST_CASE("pool agents: other pools' agents and instances not asked about are left out") {
  const std::vector<agent_process> processes{agent(10, 1, "elastic", "elastic-a"), agent(11, 1, "other", "elastic-b"),
                                             agent(12, 1, "elastic", "elastic-c"), agent(13, 1, "elastic-2", "elastic-d")};
  const auto found = pool_agents(processes, "elastic", {"elastic-a", "elastic-b", "elastic-d"});
  REQUIRE(found.size() == 1);
  CHECK(found.at("elastic-a").pid == 10);
}

TEST_CASE("pool agents: two agents of one pool, each with a child starting") {
  const auto found = pool_agents({agent(10, 1, "elastic", "elastic-a"), agent(20, 1, "elastic", "elastic-b"),
                                  agent(21, 20, "elastic", "elastic-b"), agent(11, 10, "elastic", "elastic-a")},
                                 "elastic", {"elastic-a", "elastic-b"});
  REQUIRE(found.size() == 2);
  CHECK(found.at("elastic-a").pid == 10);
  CHECK(found.at("elastic-b").pid == 20);
}
