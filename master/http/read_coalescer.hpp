#pragma once
// Identical reads that arrive together share one answer. A read joins the next answer to be
// made, never one already under way: that one may have read the database before the request
// arrived, and a client must see every write acknowledged before it asked. So a burst of N equal
// requests (a page polled by many browsers, a load test) costs at most two reads of the database
// instead of N, and each answer is still as fresh as an unshared one. No thread waits: every
// request's response is deferred, and finished when the read it joined is done.

#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "master/http/http_types.hpp"

namespace det::runtime {

class read_coalescer {
 public:
  using read = std::function<void(http_response&)>;

  /// Defers `res` and finishes it with the answer for the read named `key` (the same key, the
  /// same answer): made by `answer` (which may defer its own response) now, or, while a read of
  /// `key` is under way, by the `answer` of one of the requests that arrived meanwhile, once that
  /// read is done. `answer` must stay callable until `res` is finished.
  void answer(const std::string& key, http_response& res, read answer);

  /// Requests for `key` not answered yet, those of the read under way included.
  int waiting(const std::string& key) const;

 private:
  struct waiter {
    std::shared_ptr<deferred_response> reply;
    read answer;
  };
  struct flight {
    std::size_t in_read = 0;    ///< requests the read under way answers
    std::vector<waiter> next;   ///< requests that arrived during it: the next read's
  };
  void run(const std::string& key, std::vector<waiter> batch, const offload_function& offload);
  void read_done(const std::string& key, const offload_function& offload);

  mutable std::mutex mutex_;
  std::map<std::string, flight> flights_;  // a key is here while a read of it is under way
};

} // namespace det::runtime
