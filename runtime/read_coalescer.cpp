#include "runtime/read_coalescer.hpp"

namespace det::runtime {

void read_coalescer::answer(const std::string& key, http_response& res,
                            const std::function<void(http_response&)>& answer) {
  std::unique_lock lock{mutex_};
  auto& f = flights_[key];
  // The first run to begin after now: any later one would be as fresh, but slower to come.
  const std::uint64_t wanted = f.started + 1;
  ++f.waiting;
  // However this request ends (an answer, or a read that threw), it stops waiting, and the last
  // request of a burst takes its key's entry away: keys are as many as reads in flight.
  struct leaving {
    std::unique_lock<std::mutex>& lock;
    std::map<std::string, flight>& flights;
    const std::string& key;
    flight& f;
    ~leaving() {
      if (!lock.owns_lock()) lock.lock();
      if (--f.waiting == 0) flights.erase(key);
    }
  } leave{lock, flights_, key, f};
  for (;;) {
    if (f.finished >= wanted) {
      res = *f.latest;
      break;
    }
    if (!f.running) {
      f.running = true;
      ++f.started;
      lock.unlock();
      auto made = std::make_shared<http_response>();
      try {
        answer(*made);
      } catch (...) {
        // The waiters start a run of their own rather than wait for one that never ends.
        lock.lock();
        f.running = false;
        done_.notify_all();
        throw;
      }
      lock.lock();
      f.latest = made;
      f.finished = f.started;
      f.running = false;
      done_.notify_all();
      res = *made;
      break;
    }
    done_.wait(lock);
  }
}

int read_coalescer::waiting(const std::string& key) const {
  std::lock_guard lock{mutex_};
  auto it = flights_.find(key);
  return it == flights_.end() ? 0 : it->second.waiting;
}

} // namespace det::runtime
