#include "master/http/body_budget.hpp"

namespace det::runtime {

std::unique_ptr<body_budget::reservation> body_budget::reserve(std::size_t bytes) {
  std::lock_guard<std::mutex> lock{mutex_};
  if (bytes > total_ - in_use_) return nullptr;
  in_use_ += bytes;
  return std::make_unique<reservation>(*this, bytes);
}

std::size_t body_budget::in_use() const {
  std::lock_guard<std::mutex> lock{mutex_};
  return in_use_;
}

void body_budget::release(std::size_t bytes) {
  std::lock_guard<std::mutex> lock{mutex_};
  in_use_ -= bytes;
}

}  // namespace det::runtime
