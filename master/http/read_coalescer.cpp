#include "master/http/read_coalescer.hpp"

#include <exception>
#include <utility>

namespace det::runtime {

void read_coalescer::answer(const std::string& key, http_response& res, read answer) {
  waiter mine{res.defer(), std::move(answer)};
  {
    std::lock_guard lock{mutex_};
    auto [it, first] = flights_.try_emplace(key);
    if (!first) {
      it->second.next.push_back(std::move(mine));
      return;
    }
    it->second.in_read = 1;
  }
  run(key, {std::move(mine)}, res.offload);
}

void read_coalescer::run(const std::string& key, std::vector<waiter> batch, const offload_function& offload) {
  auto made = std::make_shared<http_response>();
  made->offload = offload;
  try {
    batch.front().answer(*made);
  } catch (const std::exception& e) {
    // The batch is answered, and the key stays usable for the next one.
    auto failed = answer_failed(e.what());
    if (made->deferred) made->deferred->finish(std::move(failed));
    else *made = std::move(failed);
  }
  auto deliver = [this, key, offload, batch = std::move(batch)](const http_response& answer) {
    for (const auto& w : batch) w.reply->finish(answer);
    read_done(key, offload);
  };
  if (made->deferred)
    made->deferred->when_finished(std::move(deliver));
  else
    deliver(*made);
}

void read_coalescer::read_done(const std::string& key, const offload_function& offload) {
  std::vector<waiter> batch;
  {
    std::lock_guard lock{mutex_};
    auto it = flights_.find(key);
    if (it->second.next.empty()) {
      flights_.erase(it);
      return;
    }
    batch = std::move(it->second.next);
    it->second.next.clear();
    it->second.in_read = batch.size();
  }
  // On a handler thread: this one may be one of CAF's, which finished the read just done.
  auto next = [this, key, offload, batch = std::move(batch)]() mutable { run(key, std::move(batch), offload); };
  if (offload)
    offload(std::move(next));
  else
    next();
}

int read_coalescer::waiting(const std::string& key) const {
  std::lock_guard lock{mutex_};
  auto it = flights_.find(key);
  return it == flights_.end() ? 0 : static_cast<int>(it->second.in_read + it->second.next.size());
}

} // namespace det::runtime
