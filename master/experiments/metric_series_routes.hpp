#pragma once
// The chart routes: one metric of a trial, or of every trial of an experiment, as columns
// downsampled on the server (storage/database_series.cpp), and the metric groups a trial
// reported, for anyone logged in.

#include "master/http/http_types.hpp"

#include "master/http/route_guards.hpp"
#include "master/persistence/persistence_protocol.hpp"

namespace det::runtime {

struct metric_series_routes {
  caf::actor_system& sys;
  persistence_reader_actor reader;
  route_guards& guards;

  /// GET /api/v1/trials/{id}/metrics/series?name=&group=training&max_points=1000&start_batches=&end_batches=
  /// GET /api/v1/experiments/{id}/metrics/series?name=&group=&max_points=
  /// GET /api/v1/trials/{id}/metrics/groups: the latest report of each group, by group name
  void add_to(http_router& server);
};

} // namespace det::runtime
