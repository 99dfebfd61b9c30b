// Where the workers of a distributed run find each other (worker_rendezvous.hpp).

#include "worker/worker_rendezvous.hpp"

#include <utility>

#include "messages/trial.pb.h"
#include "worker/worker_connection.hpp"

namespace det::runtime {

worker_rendezvous::worker_rendezvous(worker_connection& link, std::string allocation_id)
    : link_(link), allocation_id_(std::move(allocation_id)) {}

void worker_rendezvous::set(const std::string& key, const std::string& value) {
  pb::Rendezvous r;
  r.set_allocation_id(allocation_id_);
  r.set_key(key);
  r.set_value(value);
  r.set_set(true);
  link_.call(r, "the rendezvous");
}

std::optional<std::string> worker_rendezvous::get(const std::string& key) {
  pb::Rendezvous r;
  r.set_allocation_id(allocation_id_);
  r.set_key(key);
  auto answer = link_.call(r, "the rendezvous");
  if (!answer.found())
    return std::nullopt;
  return std::move(*answer.mutable_value());
}

} // namespace det::runtime
