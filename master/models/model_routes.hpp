#pragma once
// The REST routes of the model registry, after Determined's /api/v1/models: models and their
// versions; changing a model needs its owner or an admin.

#include "master/http/http_types.hpp"

#include "master/http/route_guards.hpp"
#include "master/models/model_registry_protocol.hpp"

namespace det::runtime {

struct model_routes {
  caf::actor_system& sys;
  model_registry_actor models;
  route_guards& guards;

  void add_to(http_router& server);
};


} // namespace det::runtime
