#pragma once
// The REST routes of the model registry, after Determined's /api/v1/models: models and their
// versions; changing a model needs its owner or an admin.

#include <functional>

#include "runtime/http_types.hpp"

#include "runtime/account_routes.hpp"

namespace det::runtime {

struct model_routes {
  caf::actor_system& sys;
  model_registry_actor models;
  std::function<http_handler(signed_in_handler)> signed_in;

  void add_to(http_router& server);
};


} // namespace det::runtime
