#include "gpu/system_sampler.hpp"

#include <dlfcn.h>

#include <cctype>
#include <fstream>
#include <sstream>
#include <utility>

namespace det::harness {

namespace {

struct counters {
  double cpu_busy = 0, cpu_total = 0;
  double disk_read_bytes = 0, disk_write_bytes = 0;
  double net_recv_bytes = 0, net_send_bytes = 0;
};

counters read_counters() {
  counters c;
  std::ifstream stat("/proc/stat");
  std::string cpu;
  double user = 0, nice = 0, system = 0, idle = 0, iowait = 0, irq = 0, softirq = 0, steal = 0;
  stat >> cpu >> user >> nice >> system >> idle >> iowait >> irq >> softirq >> steal;
  c.cpu_busy = user + nice + system + irq + softirq + steal;
  c.cpu_total = c.cpu_busy + idle + iowait;
  // Whole disks only (sdX, vdX, nvmeXnY): partitions would count twice.
  std::ifstream disks("/proc/diskstats");
  std::string line;
  while (std::getline(disks, line)) {
    std::istringstream in(line);
    std::string major, minor, name;
    double reads = 0, reads_merged = 0, sectors_read = 0, read_ms = 0, writes = 0, writes_merged = 0,
           sectors_written = 0;
    if (!(in >> major >> minor >> name >> reads >> reads_merged >> sectors_read >> read_ms >> writes >>
          writes_merged >> sectors_written) ||
        name.empty())
      continue;
    bool whole = (name.rfind("nvme", 0) == 0 && name.find('p') == std::string::npos) ||
                 ((name.rfind("sd", 0) == 0 || name.rfind("vd", 0) == 0 || name.rfind("xvd", 0) == 0) &&
                  !std::isdigit(static_cast<unsigned char>(name.back())));
    if (!whole) continue;
    c.disk_read_bytes += sectors_read * 512;
    c.disk_write_bytes += sectors_written * 512;
  }
  std::ifstream net("/proc/net/dev");
  while (std::getline(net, line)) {
    auto colon = line.find(':');
    if (colon == std::string::npos) continue;
    auto name = line.substr(0, colon);
    name.erase(0, name.find_first_not_of(' '));
    if (name == "lo") continue;
    std::istringstream in(line.substr(colon + 1));
    double recv_bytes = 0, recv_packets = 0, errs = 0, drop = 0, fifo = 0, frame = 0, compressed = 0, multicast = 0,
           send_bytes = 0;
    if (!(in >> recv_bytes >> recv_packets >> errs >> drop >> fifo >> frame >> compressed >> multicast >> send_bytes))
      continue;
    c.net_recv_bytes += recv_bytes;
    c.net_send_bytes += send_bytes;
  }
  return c;
}

void add_memory(std::map<std::string, double>& sample) {
  std::ifstream meminfo("/proc/meminfo");
  std::string key;
  double value = 0, total = 0, available = 0;
  std::string unit;
  while (meminfo >> key >> value >> unit) {
    if (key == "MemTotal:") total = value;
    if (key == "MemAvailable:") available = value;
  }
  if (total <= 0) return;
  sample["memory_used_gb"] = (total - available) / (1024.0 * 1024.0);
  sample["memory_util_percent"] = 100.0 * (total - available) / total;
}

// NVML through dlopen: det builds and runs without a GPU driver.
class nvml {
 public:
  nvml() {
    lib_ = ::dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!lib_) return;
    auto init = reinterpret_cast<int (*)()>(::dlsym(lib_, "nvmlInit_v2"));
    count_ = reinterpret_cast<int (*)(unsigned*)>(::dlsym(lib_, "nvmlDeviceGetCount_v2"));
    handle_ = reinterpret_cast<int (*)(unsigned, void**)>(::dlsym(lib_, "nvmlDeviceGetHandleByIndex_v2"));
    util_ = reinterpret_cast<int (*)(void*, utilization*)>(::dlsym(lib_, "nvmlDeviceGetUtilizationRates"));
    memory_ = reinterpret_cast<int (*)(void*, memory*)>(::dlsym(lib_, "nvmlDeviceGetMemoryInfo"));
    ready_ = init && count_ && handle_ && util_ && memory_ && init() == 0;
  }
  ~nvml() {
    if (lib_) ::dlclose(lib_);
  }

  void add(std::map<std::string, double>& sample) const {
    unsigned devices = 0;
    if (!ready_ || count_(&devices) != 0) return;
    for (unsigned i = 0; i < devices; ++i) {
      void* device = nullptr;
      utilization u{};
      memory m{};
      if (handle_(i, &device) != 0) continue;
      auto prefix = "gpu" + std::to_string(i) + "_";
      if (util_(device, &u) == 0) sample[prefix + "util_percent"] = u.gpu;
      if (memory_(device, &m) == 0) sample[prefix + "memory_used_gb"] = static_cast<double>(m.used) / 1e9;
    }
  }

 private:
  struct utilization {
    unsigned gpu, memory;
  };
  struct memory {
    unsigned long long total, free, used;
  };
  void* lib_ = nullptr;
  bool ready_ = false;
  int (*count_)(unsigned*) = nullptr;
  int (*handle_)(unsigned, void**) = nullptr;
  int (*util_)(void*, utilization*) = nullptr;
  int (*memory_)(void*, memory*) = nullptr;
};

} // namespace

system_sampler::system_sampler(std::chrono::milliseconds interval)
    : interval_(interval), thread_([this] { run(); }) {}

system_sampler::~system_sampler() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_all();
  thread_.join();
}

std::vector<std::map<std::string, double>> system_sampler::take() {
  std::lock_guard<std::mutex> lock(mutex_);
  return std::exchange(samples_, {});
}

void system_sampler::run() {
  nvml gpus;
  auto before = read_counters();
  auto then = std::chrono::steady_clock::now();
  std::unique_lock<std::mutex> lock(mutex_);
  while (!wake_.wait_for(lock, interval_, [this] { return stopping_; })) {
    lock.unlock();
    auto now_counters = read_counters();
    auto now = std::chrono::steady_clock::now();
    double seconds = std::chrono::duration<double>(now - then).count();
    std::map<std::string, double> sample;
    double total = now_counters.cpu_total - before.cpu_total;
    sample["cpu_util_percent"] = total > 0 ? 100.0 * (now_counters.cpu_busy - before.cpu_busy) / total : 0;
    add_memory(sample);
    auto rate = [&](double now_bytes, double before_bytes) { return (now_bytes - before_bytes) / 1e6 / seconds; };
    sample["disk_read_mb_s"] = rate(now_counters.disk_read_bytes, before.disk_read_bytes);
    sample["disk_write_mb_s"] = rate(now_counters.disk_write_bytes, before.disk_write_bytes);
    sample["net_recv_mb_s"] = rate(now_counters.net_recv_bytes, before.net_recv_bytes);
    sample["net_send_mb_s"] = rate(now_counters.net_send_bytes, before.net_send_bytes);
    gpus.add(sample);
    before = now_counters;
    then = now;
    lock.lock();
    samples_.push_back(std::move(sample));
  }
}

} // namespace det::harness
