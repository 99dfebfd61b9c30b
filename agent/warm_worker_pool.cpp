#include "agent/warm_worker_pool.hpp"
#include "node/log.hpp"

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstring>
#include <fcntl.h>
#include <mutex>
#include <optional>
#include <pthread.h>
#include <unistd.h>

namespace det::runtime {

namespace {

/// Writes all of `text` to `fd`, as far as the reader stays. SIGPIPE is blocked on this thread
/// for the write, so that a worker that died while waiting cannot take the agent with it.
void write_all(int fd, const std::string& text) {
  sigset_t pipe_signal, before;
  sigemptyset(&pipe_signal);
  sigaddset(&pipe_signal, SIGPIPE);
  pthread_sigmask(SIG_BLOCK, &pipe_signal, &before);
  std::size_t done = 0;
  bool ok = true;
  while (done < text.size()) {
    auto n = ::write(fd, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      ok = false;
      break;
    }
    done += static_cast<std::size_t>(n);
  }
  if (!ok) {  // take the SIGPIPE the failed write raised, so that it is not delivered later
    timespec none{0, 0};
    sigtimedwait(&pipe_signal, nullptr, &none);
  }
  pthread_sigmask(SIG_SETMASK, &before, nullptr);
}

}  // namespace

struct warm_worker_pool::owner {
  std::mutex mutex;
  bool ready = false;
  bool handed = false;
  bool exited = false;
  child_process::line_handler on_line;
  child_process::exit_handler on_exit;
};

warm_worker_pool::warm_worker_pool(std::vector<std::string> argv, std::map<std::string, std::string> env,
                                   std::size_t size)
    : argv_(std::move(argv)), env_(std::move(env)), size_(size) {}

warm_worker_pool::~warm_worker_pool() {
  // Their stdin ends: each exits without a run.
  for (auto& w : waiting_) ::close(w.handover_fd);
}

void warm_worker_pool::fill() {
  // One that died waiting (killed, out of memory) is replaced.
  for (auto it = waiting_.begin(); it != waiting_.end();) {
    std::unique_lock lock{it->owned_by->mutex};
    if (!it->owned_by->exited) {
      ++it;
      continue;
    }
    lock.unlock();
    ::close(it->handover_fd);
    it = waiting_.erase(it);
  }
  while (waiting_.size() < size_) {
    int fds[2];
    if (::pipe2(fds, O_CLOEXEC) != 0) {
      logs::error(logs::component::agent, std::string("cannot start a warm worker: ") + std::strerror(errno));
      return;
    }
    auto owned_by = std::make_shared<owner>();
    process::spawn_request request;
    request.argv = argv_;
    // Before --title-room, which must stay last.
    request.argv.insert(request.argv.end() - 1, "--preload=" + to_string(next_preload_));
    request.env = env_;
    request.stdin_fd = fds[0];
    std::shared_ptr<child_process> process;
    try {
      process = child_process::start(
          std::move(request),
          [owned_by](const std::string& stream, std::string line) {
            std::lock_guard lock{owned_by->mutex};
            // Its first such line, which comes before it reads its run, even when it was handed one
            // before it was ready: not a line of the run's.
            if (!owned_by->ready && line == warm_ready_line) owned_by->ready = true;
            else if (owned_by->handed) owned_by->on_line(stream, std::move(line));
            else logs::warn(logs::component::agent, "a warm worker says: " + line);
          },
          [owned_by](process::process_exit e) {
            std::lock_guard lock{owned_by->mutex};
            owned_by->exited = true;
            if (owned_by->handed) owned_by->on_exit(e);
            else logs::warn(logs::component::agent, "a warm worker ended before it was handed a run");
          });
    } catch (const std::exception& e) {
      ::close(fds[0]);
      ::close(fds[1]);
      logs::error(logs::component::agent, std::string("cannot start a warm worker: ") + e.what());
      return;
    }
    ::close(fds[0]);
    waiting_.push_back({std::move(process), fds[1], std::move(owned_by), next_preload_});
  }
}

std::shared_ptr<child_process> warm_worker_pool::hand_over(const run_handover& run, warm_preload wants,
                                                           child_process::line_handler on_line,
                                                           child_process::exit_handler on_exit) {
  const auto text = encode_handover(run);
  next_preload_ = wants;
  // How well a waiting worker fits the run: 0 best; nullopt not at all.
  auto fit = [&](const waiting_worker& w) -> std::optional<int> {
    std::lock_guard lock{w.owned_by->mutex};
    if (w.owned_by->ready) return w.preloaded == wants ? 0 : 1;
    if (w.preloaded == warm_preload::nothing || wants == warm_preload::libtorch) return 2;
    return std::nullopt;  // still loading LibTorch, which the run does not need: a cold start is sooner
  };
  for (;;) {
    auto best = waiting_.end();
    std::optional<int> best_fit;
    for (auto it = waiting_.begin(); it != waiting_.end(); ++it)
      if (auto f = fit(*it); f && (!best_fit || *f < *best_fit)) {
        best = it;
        best_fit = f;
      }
    if (best == waiting_.end()) return nullptr;
    auto w = std::move(*best);
    waiting_.erase(best);
    {
      std::lock_guard lock{w.owned_by->mutex};
      if (!w.owned_by->exited) {
        w.owned_by->handed = true;
        w.owned_by->on_line = std::move(on_line);
        w.owned_by->on_exit = std::move(on_exit);
      }
    }
    if (!w.owned_by->handed) {  // it died waiting: the next one
      ::close(w.handover_fd);
      continue;
    }
    // A worker that dies between the check and the write fails the run: its exit goes to the
    // run's handler, as a cold worker's early death would.
    write_all(w.handover_fd, text);
    ::close(w.handover_fd);
    return w.process;
  }
}

} // namespace det::runtime
