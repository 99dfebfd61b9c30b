#pragma once
// Identical reads that arrive together share one answer. A read joins the next answer to be
// made, never one already under way: that one may have read the database before the request
// arrived, and a client must see every write acknowledged before it asked. So a burst of N equal
// requests (a page polled by many browsers, a load test) costs at most two reads of the database
// instead of N, and each answer is still as fresh as an unshared one.

#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "runtime/http_types.hpp"

namespace det::runtime {

class read_coalescer {
 public:
  /// Fills `res` for the read named `key` (the same key, the same answer): with `answer`, run by
  /// this thread, or with the answer of a run that started after this call began.
  void answer(const std::string& key, http_response& res, const std::function<void(http_response&)>& answer);

  /// Requests for `key` now being answered, the one running its read included.
  int waiting(const std::string& key) const;

 private:
  struct flight {
    std::uint64_t started = 0;   ///< runs of this key begun
    std::uint64_t finished = 0;  ///< runs of this key done; `latest` is the last one's
    bool running = false;
    int waiting = 0;             ///< requests that wait on a run of this key
    std::shared_ptr<const http_response> latest;
  };
  mutable std::mutex mutex_;
  std::condition_variable done_;
  std::map<std::string, flight> flights_;
};

} // namespace det::runtime
