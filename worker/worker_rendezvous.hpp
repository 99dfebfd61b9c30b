#pragma once
// Where the workers of a distributed run find each other: keys kept by their trial on the master.

#include <optional>
#include <string>

#include "gpu/collective.hpp"

namespace det::runtime {

class worker_connection;

/// A distributed run's rendezvous through its trial on the master.
class worker_rendezvous final : public harness::rendezvous_store {
 public:
  worker_rendezvous(worker_connection& link, std::string allocation_id);

  void set(const std::string& key, const std::string& value) override;
  std::optional<std::string> get(const std::string& key) override;

 private:
  worker_connection& link_;
  std::string allocation_id_;
};

} // namespace det::runtime
