#include "master/http/deferred_response.hpp"

#include <exception>
#include <string>
#include <utility>

#include <nlohmann/json.hpp>

#include "master/http/http_types.hpp"

namespace det::runtime {

http_response answer_failed(const std::string& why) {
  http_response res;
  res.status = 500;
  // As reply_error() words it (master/http/http_replies.cpp), which this library does not link.
  res.set_content(nlohmann::json{{"error", "the master failed to answer: " + why}, {"code", 500}}.dump(),
                  "application/json");
  return res;
}

deferred_response::deferred_response(offload_function offload) : offload_(std::move(offload)) {}

deferred_response::~deferred_response() {
  // No lock: whoever could still call us holds no reference any more.
  if (!answer_) deliver(answer_failed("its answer was dropped unmade"), std::move(waiting_));
}

void deferred_response::finish(http_response res) {
  std::vector<on_finished> callbacks;
  std::shared_ptr<const http_response> answer;
  {
    std::lock_guard lock{mutex_};
    if (answer_) return;
    answer_ = answer = std::make_shared<const http_response>(std::move(res));
    callbacks = std::move(waiting_);
    waiting_.clear();
  }
  deliver(*answer, std::move(callbacks));
}

void deferred_response::finish_with(std::function<void(http_response&)> make) {
  auto work = [self = shared_from_this(), make = std::move(make)] {
    http_response res;
    try {
      make(res);
    } catch (const std::exception& e) {
      res = answer_failed(e.what());
    }
    self->finish(std::move(res));
  };
  if (offload_)
    offload_(std::move(work));
  else
    work();
}

void deferred_response::when_finished(on_finished f) {
  std::shared_ptr<const http_response> answer;
  {
    std::lock_guard lock{mutex_};
    if (!answer_) {
      waiting_.push_back(std::move(f));
      return;
    }
    answer = answer_;
  }
  f(*answer);
}

void deferred_response::deliver(const http_response& res, std::vector<on_finished> callbacks) {
  for (auto& f : callbacks) f(res);
}

}  // namespace det::runtime
