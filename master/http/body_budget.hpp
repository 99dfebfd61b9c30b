#pragma once
// The request bodies the master holds at once, over all connections: each authenticated caller
// may send a body of up to security.max_upload_size, so without a total a few hundred
// concurrent uploads would take the master's memory. A body is counted from before its first
// byte is read until its request is answered.

#include <cstddef>
#include <memory>
#include <mutex>

namespace det::runtime {

class body_budget {
 public:
  explicit body_budget(std::size_t total) : total_(total) {}

  /// Holds `bytes` of the budget until it is destroyed.
  class reservation {
   public:
    reservation(body_budget& budget, std::size_t bytes) : budget_(&budget), bytes_(bytes) {}
    ~reservation() { budget_->release(bytes_); }
    reservation(const reservation&) = delete;
    reservation& operator=(const reservation&) = delete;

   private:
    body_budget* budget_;
    std::size_t bytes_;
  };

  /// `bytes` of the budget, or nullptr when that much is not left.
  std::unique_ptr<reservation> reserve(std::size_t bytes);
  std::size_t total() const { return total_; }
  std::size_t in_use() const;

 private:
  void release(std::size_t bytes);

  const std::size_t total_;
  mutable std::mutex mutex_;
  std::size_t in_use_ = 0;
};

}  // namespace det::runtime
