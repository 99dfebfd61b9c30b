#pragma once
// Profiling's system metrics: a thread that samples the machine every interval while a trial
// trains, for the harness to report as the metric group "system".

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace det::harness {

class system_sampler {
 public:
  /// Starts sampling: cpu_util_percent, memory_used_gb, memory_util_percent, disk_read_mb_s,
  /// disk_write_mb_s, net_recv_mb_s, net_send_mb_s, and per GPU (through NVML, when a driver is
  /// present) gpu<N>_util_percent and gpu<N>_memory_used_gb.
  explicit system_sampler(std::chrono::milliseconds interval = std::chrono::seconds(1));
  ~system_sampler();
  system_sampler(const system_sampler&) = delete;
  system_sampler& operator=(const system_sampler&) = delete;

  /// The samples taken since the last call, oldest first.
  std::vector<std::map<std::string, double>> take();

 private:
  void run();

  std::chrono::milliseconds interval_;
  std::mutex mutex_;
  std::condition_variable wake_;
  bool stopping_ = false;
  std::vector<std::map<std::string, double>> samples_;
  std::thread thread_;
};

} // namespace det::harness
