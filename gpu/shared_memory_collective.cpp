#include "gpu/shared_memory_collective.hpp"

#include <fcntl.h>
#include <sched.h>
#include <linux/futex.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <climits>
#include <csignal>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <new>
#include <random>
#include <sstream>
#include <stdexcept>
#include <string>

namespace det::harness {

namespace {

constexpr const char* segment_prefix = "/det-collective-";  // then the chief's pid
constexpr std::size_t cache_line = 64;
constexpr std::size_t page = 4096;
// How long a process waiting for another polls before it sleeps in the kernel: the others usually
// arrive within a millisecond, and waking a sleeping thread costs up to a few hundred microseconds
// on a virtual machine, twice per exchange. After the first microseconds the poll yields the core
// to any other thread that wants it.
constexpr auto spin_time = std::chrono::microseconds(2000);
constexpr auto busy_spin_time = std::chrono::microseconds(50);
// How often a sleeping process wakes to see whether the one it waits for still exists.
constexpr auto liveness_period = std::chrono::milliseconds(50);

// One process's progress through the exchanges, on a cache line of its own (the others poll it).
struct alignas(cache_line) progress {
  std::atomic<std::uint32_t> step;      // the last step this process has finished
  std::atomic<std::uint32_t> sleepers;  // processes waiting in the kernel for `step` to change
};
static_assert(std::atomic<std::uint32_t>::is_always_lock_free, "progress lives in shared memory");

struct process_flags {
  progress written;  // the values the others combine are in its slot
  progress reduced;  // its part of the result is written, and it has read every slot
};

struct alignas(cache_line) segment_header {
  std::uint64_t nonce;  // proves that a process mapped the chief's segment and no other
  std::uint32_t processes;
  std::uint64_t chunk_bytes;
};

// Where things are in the segment: the header, each process's flags, one slot of `chunk_bytes`
// per process for its values, and one for the result.
struct segment_layout {
  explicit segment_layout(int processes) {
    const auto n = static_cast<std::size_t>(processes);
    // 4 MB slots for a few processes (a 25 MB bucket goes in 7 steps), smaller ones for many, so
    // that the segment stays near 32 MB: a container's /dev/shm is often 64 MB.
    chunk_bytes = std::clamp(((std::size_t{32} << 20) / (n + 1)) / page * page, std::size_t{64} << 10,
                             std::size_t{4} << 20);
    flags_offset = sizeof(segment_header);
    slots_offset = (flags_offset + n * sizeof(process_flags) + page - 1) / page * page;
    result_offset = slots_offset + n * chunk_bytes;
    bytes = result_offset + chunk_bytes;
  }
  std::size_t chunk_bytes, flags_offset, slots_offset, result_offset, bytes;
};

std::uint64_t random_word() {
  std::random_device device;
  return (static_cast<std::uint64_t>(device()) << 32) ^ device();
}

std::string hex(std::uint64_t word) {
  std::ostringstream out;
  out << std::hex << word;
  return out.str();
}

long futex(std::atomic<std::uint32_t>& word, int operation, std::uint32_t value, const timespec* timeout) {
  // Not FUTEX_PRIVATE_FLAG: the word is shared between processes.
  return syscall(SYS_futex, reinterpret_cast<std::uint32_t*>(&word), operation, value, timeout, nullptr, 0);
}

void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#endif
}

// A lock on byte `rank` of the segment's file: held by a process's open file description for as
// long as the process maps the segment, and released by the kernel when it ends however it ends.
struct flock byte_lock(int rank) {
  struct flock lock {};
  lock.l_type = F_WRLCK;
  lock.l_whence = SEEK_SET;
  lock.l_start = rank;
  lock.l_len = 1;
  return lock;
}

enum class combine { sum, average, broadcast };

class shared_memory_collective final : public collective {
 public:
  // Creates the segment (the chief); nothing if this host cannot give it.
  static std::unique_ptr<shared_memory_collective> create(int size, std::chrono::milliseconds timeout) {
    remove_abandoned_segments();
    const std::string name = segment_prefix + std::to_string(getpid()) + "-" + hex(random_word());
    const int fd = shm_open(name.c_str(), O_CREAT | O_EXCL | O_RDWR, 0600);
    if (fd < 0) return nullptr;
    std::unique_ptr<shared_memory_collective> made(new shared_memory_collective(0, size, fd, name, timeout));
    const auto bytes = static_cast<off_t>(made->layout_.bytes);
    // Reserved now, so that no process dies of SIGBUS later on a full /dev/shm.
    if (ftruncate(fd, bytes) != 0 || posix_fallocate(fd, 0, bytes) != 0 || !made->map()) return nullptr;
    auto* header = new (made->base_) segment_header{};
    header->nonce = random_word();
    header->processes = static_cast<std::uint32_t>(size);
    header->chunk_bytes = made->layout_.chunk_bytes;
    for (int p = 0; p < size; ++p) new (&made->flags(p)) process_flags{};
    if (!made->hold_lock()) return nullptr;
    return made;
  }

  // Maps the chief's segment, named in `where` ("NAME NONCE"); nothing if this process cannot.
  static std::unique_ptr<shared_memory_collective> open(int rank, int size, const std::string& where,
                                                        std::chrono::milliseconds timeout) {
    std::istringstream words(where);
    std::string name, nonce;
    if (!(words >> name >> nonce)) return nullptr;
    const int fd = shm_open(name.c_str(), O_RDWR, 0);
    if (fd < 0) return nullptr;
    std::unique_ptr<shared_memory_collective> joined(new shared_memory_collective(rank, size, fd, "", timeout));
    struct stat file {};
    if (fstat(fd, &file) != 0 || static_cast<std::size_t>(file.st_size) != joined->layout_.bytes || !joined->map())
      return nullptr;
    const auto* header = static_cast<const segment_header*>(joined->base_);
    if (hex(header->nonce) != nonce || header->processes != static_cast<std::uint32_t>(size) ||
        header->chunk_bytes != joined->layout_.chunk_bytes || !joined->hold_lock())
      return nullptr;
    return joined;
  }

  // The names a killed chief left (its segment keeps its name until every process has mapped it):
  // each holds its creator's pid, and one whose creator is gone is removed, memory and all.
  static void remove_abandoned_segments() {
    std::error_code error;
    for (const auto& entry : std::filesystem::directory_iterator("/dev/shm", error)) {
      const auto file = entry.path().filename().string();
      if (file.rfind(segment_prefix + 1, 0) != 0) continue;
      const auto pid = std::strtol(file.c_str() + std::strlen(segment_prefix + 1), nullptr, 10);
      if (pid > 0 && kill(static_cast<pid_t>(pid), 0) != 0 && errno == ESRCH) shm_unlink(("/" + file).c_str());
    }
  }

  ~shared_memory_collective() override {
    if (base_ != MAP_FAILED) munmap(base_, layout_.bytes);
    close(fd_);  // releases this process's lock: the others see that it has gone
    unlink_name();
  }

  /// The segment's name and nonce, for the others to find it.
  std::string where() const { return name_ + " " + hex(static_cast<const segment_header*>(base_)->nonce); }
  /// Once every process has mapped the segment (or failed to), its name is no longer needed: it
  /// goes, so that the memory goes with the last process, whatever ends them.
  void unlink_name() {
    if (!name_.empty()) shm_unlink(name_.c_str());
    name_.clear();
  }

  int rank() const override { return rank_; }
  int size() const override { return size_; }
  std::uint64_t exchanges() const override { return exchanges_; }
  void sum(float* values, std::size_t count) override { exchange(values, count, combine::sum); }
  void sum(double* values, std::size_t count) override { exchange(values, count, combine::sum); }
  void average(float* values, std::size_t count) override { exchange(values, count, combine::average); }
  void broadcast(float* values, std::size_t count) override { exchange(values, count, combine::broadcast); }

 private:
  shared_memory_collective(int rank, int size, int fd, std::string name, std::chrono::milliseconds timeout)
      : rank_(rank), size_(size), fd_(fd), name_(std::move(name)), timeout_(timeout), layout_(size) {}

  bool map() {
    base_ = mmap(nullptr, layout_.bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd_, 0);
    return base_ != MAP_FAILED;
  }

  bool hold_lock() {
    auto lock = byte_lock(rank_);
    return fcntl(fd_, F_OFD_SETLK, &lock) == 0;
  }

  process_flags& flags(int process) const {
    return *reinterpret_cast<process_flags*>(static_cast<char*>(base_) + layout_.flags_offset +
                                             static_cast<std::size_t>(process) * sizeof(process_flags));
  }
  template <class T>
  T* slot(int process) const {
    return reinterpret_cast<T*>(static_cast<char*>(base_) + layout_.slots_offset +
                                static_cast<std::size_t>(process) * layout_.chunk_bytes);
  }
  template <class T>
  T* result() const {
    return reinterpret_cast<T*>(static_cast<char*>(base_) + layout_.result_offset);
  }

  // Each chunk of `values` in two steps: every process copies into its slot the values the others
  // combine; once all have, each combines its own part of the values, its own taken from where
  // they are and the others' from their slots, into the result and into its values; once all
  // have, each copies the others' parts of the result out. Every value is combined once, in
  // process order, so all processes get the same bits; no process copies the part it combines.
  template <class T>
  void exchange(T* values, std::size_t count, combine how) {
    if (count == 0) return;
    ++exchanges_;
    const std::size_t per_chunk = layout_.chunk_bytes / sizeof(T);
    for (std::size_t first = 0; first < count; first += per_chunk) {
      const std::size_t n = std::min(per_chunk, count - first);
      T* mine = values + first;
      ++step_;
      if (how == combine::broadcast) {
        if (rank_ == 0) std::memcpy(slot<T>(0), mine, n * sizeof(T));
        announce(flags(rank_).written);
        await_others(&process_flags::written);
        if (rank_ != 0) std::memcpy(mine, slot<T>(0), n * sizeof(T));
        announce(flags(rank_).reduced);
        await_others(&process_flags::reduced);
        continue;
      }
      const std::size_t begin = part_bound<T>(n, rank_), end = part_bound<T>(n, rank_ + 1);
      std::memcpy(slot<T>(rank_), mine, begin * sizeof(T));
      std::memcpy(slot<T>(rank_) + end, mine + end, (n - end) * sizeof(T));
      announce(flags(rank_).written);
      await_others(&process_flags::written);
      combine_part<T>(mine, begin, end, how);
      announce(flags(rank_).reduced);
      await_others(&process_flags::reduced);
      std::memcpy(mine, result<T>(), begin * sizeof(T));
      std::memcpy(mine + end, result<T>() + end, (n - end) * sizeof(T));
    }
  }

  // Where `process`'s part of n values begins (process == size_: n), on 64-byte boundaries.
  template <class T>
  std::size_t part_bound(std::size_t n, int process) const {
    constexpr std::size_t line = cache_line / sizeof(T);
    return process == size_ ? n : n * static_cast<std::size_t>(process) / static_cast<std::size_t>(size_) / line * line;
  }

  // Combines [begin, end) of every process's values, this one's in `mine`, into the result and
  // into `mine`.
  template <class T>
  void combine_part(T* mine, std::size_t begin, std::size_t end, combine how) {
    T* out = result<T>();
    const auto from = [&](int process) -> const T* { return process == rank_ ? mine : slot<T>(process); };
    const T processes = static_cast<T>(size_);
    // A block at a time, so that each pass over it after the first reads from the L1 cache.
    constexpr std::size_t block = 4096 / sizeof(T);
    for (std::size_t b = begin; b < end; b += block) {
      const std::size_t e = std::min(end, b + block);
      const T* first = from(0);
      for (std::size_t i = b; i < e; ++i) out[i] = first[i];
      for (int p = 1; p < size_; ++p) {
        const T* in = from(p);
        for (std::size_t i = b; i < e; ++i) out[i] += in[i];
      }
      if (how == combine::average)
        for (std::size_t i = b; i < e; ++i) out[i] /= processes;
      std::memcpy(mine + b, out + b, (e - b) * sizeof(T));
    }
  }

  void announce(progress& mine) {
    mine.step.store(step_);
    if (mine.sleepers.load() > 0) futex(mine.step, FUTEX_WAKE, INT_MAX, nullptr);
  }

  void await_others(progress process_flags::*which) {
    for (int p = 0; p < size_; ++p)
      if (p != rank_) await(flags(p).*which, p);
  }

  bool reached(const progress& other) const {
    return static_cast<std::int32_t>(other.step.load(std::memory_order_acquire) - step_) >= 0;
  }

  void await(progress& other, int process) {
    if (reached(other)) return;
    const auto start = std::chrono::steady_clock::now();
    for (auto waited = std::chrono::steady_clock::duration{}; waited < spin_time;
         waited = std::chrono::steady_clock::now() - start) {
      if (waited < busy_spin_time)
        for (int i = 0; i < 32; ++i) cpu_relax();
      else
        sched_yield();
      if (reached(other)) return;
    }
    const timespec nap{0, std::chrono::nanoseconds(liveness_period).count()};
    for (;;) {
      // Counted before the step is read again: a process that announces after this read sees the
      // sleeper and wakes it; one that announced before it is seen here.
      other.sleepers.fetch_add(1);
      const std::uint32_t seen = other.step.load();
      if (static_cast<std::int32_t>(seen - step_) < 0) futex(other.step, FUTEX_WAIT, seen, &nap);
      other.sleepers.fetch_sub(1);
      if (reached(other)) return;
      if (!alive(process))
        throw std::runtime_error("an exchange with the trial's other processes failed: process " +
                                 std::to_string(process) + " of " + std::to_string(size_) + " has ended");
      if (std::chrono::steady_clock::now() - start > timeout_)
        throw std::runtime_error("an exchange with the trial's other processes failed: process " +
                                 std::to_string(process) + " of " + std::to_string(size_) + " did not take part within " +
                                 std::to_string((timeout_.count() + 999) / 1000) + " s");
    }
  }

  // Whether `process` still holds its lock, that is, still exists.
  bool alive(int process) const {
    auto lock = byte_lock(process);
    if (fcntl(fd_, F_OFD_GETLK, &lock) != 0) return true;  // cannot tell: the deadline decides
    return lock.l_type != F_UNLCK;
  }

  const int rank_, size_;
  const int fd_;
  std::string name_;  // the chief's, until every process has mapped the segment
  const std::chrono::milliseconds timeout_;
  const segment_layout layout_;
  void* base_ = MAP_FAILED;
  std::uint32_t step_ = 0;
  std::uint64_t exchanges_ = 0;
};

// Whether this process's environment declines shared memory: then every process uses Gloo.
bool declined() {
  const char* disable = std::getenv("DET_SHM_DISABLE");
  return disable && std::string(disable) == "1";
}

}  // namespace

std::unique_ptr<collective> join_shared_memory(int rank, int size, rendezvous_store& store,
                                               std::chrono::milliseconds connect_timeout,
                                               std::chrono::milliseconds exchange_timeout) {
  const std::string segment_key = "shared-memory/segment";
  std::unique_ptr<shared_memory_collective> mine;
  if (rank == 0) {
    if (!declined()) mine = shared_memory_collective::create(size, exchange_timeout);
    store.set(segment_key, mine ? mine->where() : "none");
    if (!mine) return nullptr;
  } else {
    const auto where = store.await(segment_key, connect_timeout);
    if (where == "none") return nullptr;
    if (!declined()) mine = shared_memory_collective::open(rank, size, where, exchange_timeout);
    store.set("shared-memory/" + std::to_string(rank), mine ? "mapped" : "not mapped");
  }
  // Every process reads every answer, so that all of them choose alike.
  bool everyone = true;
  for (int other = 1; other < size; ++other)
    everyone = store.await("shared-memory/" + std::to_string(other), connect_timeout) == "mapped" && everyone;
  if (mine) mine->unlink_name();
  if (!everyone) return nullptr;
  return mine;
}

}  // namespace det::harness
