// One scheduling pass with 1,000 pending requests on 100 agents of 8 slots, with the real
// scheduler code (scheduler/pool_scheduler), for each policy: the first pass, which places 800
// of them, and the steady pass on the full cluster, which is what most passes are while a queue
// is long. The baseline, in the same process, is what any scheduler must at least do: look for
// a fit for every pending request once (scheduler/fitting), without placing any.
//   bench_scheduler [--rounds 21]

#include "scheduler/pool_scheduler.hpp"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

namespace {

using namespace det::scheduler;
using clock_type = std::chrono::steady_clock;

constexpr int agents = 100, slots_per_agent = 8, requests = 1000, jobs = 50;

pool_scheduler make_pool(policy_kind policy) {
  scheduler_options o;
  o.policy = policy;
  o.preemption = policy == policy_kind::priority;
  pool_scheduler s(o);
  std::vector<int> slots;
  for (int i = 0; i < slots_per_agent; ++i) slots.push_back(i);
  for (int a = 0; a < agents; ++a) s.add_agent("agent-" + std::to_string(a), slots);
  for (int j = 0; j < jobs; ++j) s.set_group("job-" + std::to_string(j), {1 + (j * 7) % 99, 1.0 + j % 3, 0});
  for (int r = 0; r < requests; ++r)
    s.request({"alloc-" + std::to_string(r), "job-" + std::to_string(r % jobs), 1 + (r % 10 == 0 ? 1 : 0), true});
  return s;
}

double seconds_since(clock_type::time_point start) {
  return std::chrono::duration<double>(clock_type::now() - start).count();
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// Every pending request's fit on the pool's agents, once.
double baseline_seconds(const pool_scheduler& s) {
  auto start = clock_type::now();
  int fits = 0;
  for (const auto& [id, task] : s.tasks())
    if (!task.running)
      fits += find_fit(id, task.request.slots, s.agents(), fitting_policy::best, 100).has_value() ? 1 : 0;
  double took = seconds_since(start);
  if (fits < 0) std::puts("");  // keeps the loop from being optimised away
  return took;
}

}  // namespace

int main(int argc, char** argv) {
  int rounds = 21;
  for (int i = 1; i + 1 < argc; i += 2)
    if (!std::strcmp(argv[i], "--rounds")) rounds = std::stoi(argv[i + 1]);
  struct named {
    const char* name;
    policy_kind policy;
  };
  for (auto [name, policy] : {named{"priority+preemption", policy_kind::priority},
                              named{"fair_share", policy_kind::fair_share},
                              named{"round_robin", policy_kind::round_robin}}) {
    std::vector<double> first, steady, baseline_empty, baseline_full;
    size_t started = 0, preempted = 0;
    for (int r = 0; r < rounds; ++r) {
      auto s = make_pool(policy);
      baseline_empty.push_back(baseline_seconds(s));
      auto start = clock_type::now();
      auto d = s.schedule();
      first.push_back(seconds_since(start));
      started = d.start.size();
      baseline_full.push_back(baseline_seconds(s));
      start = clock_type::now();
      auto again = s.schedule();
      steady.push_back(seconds_since(start));
      preempted = again.preempt.size();
    }
    std::printf("%-20s first pass %.2f ms (%zu started; baseline %.2f ms, ratio %.1f), steady pass %.2f ms "
                "(%zu preempted; baseline %.2f ms, ratio %.1f)\n",
                name, median(first) * 1e3, started, median(baseline_empty) * 1e3,
                median(first) / median(baseline_empty), median(steady) * 1e3, preempted,
                median(baseline_full) * 1e3, median(steady) / median(baseline_full));
  }
  return 0;
}
