#include "master/experiments/metric_series_routes.hpp"

#include <cstdint>
#include <optional>
#include <string>
#include <type_traits>

#include "master/http/route_coroutine.hpp"
#include "master/http/route_helpers.hpp"
#include "messages/errc.hpp"

namespace det::runtime {

namespace {

constexpr int32_t default_max_points = 1000;
constexpr int32_t largest_max_points = 100000;
// An experiment's route answers for every trial at once: its answer stays a few MB per trial.
constexpr int32_t largest_max_points_per_trial = 10000;
// A trial names its own groups (Core API's report_metrics): the page of them stays bounded.
constexpr int32_t max_metric_groups = 1000;

/// What a series request asks for, read from its query; nullopt with a 400 naming the parameter.
struct series_query {
  std::string group;
  std::string name;
  int32_t max_points = default_max_points;
  int64_t start_batches = 0;
  int64_t end_batches = INT64_MAX;
};

std::optional<int64_t> integer_param(const http_request& req, http_response& res, const char* key, int64_t low,
                                     int64_t high, int64_t fallback) {
  if (!req.has_param(key)) return fallback;
  const auto text = req.get_param_value(key);
  try {
    size_t used = 0;
    const auto value = std::stoll(text, &used);
    if (used == text.size() && value >= low && value <= high) return value;
  } catch (const std::exception&) {
  }
  reply_error(res, errc::invalid_input, std::string("the query parameter ") + key + " must be an integer from " + std::to_string(low) +
                            " to " + std::to_string(high) + ", not \"" + text + "\"");
  return std::nullopt;
}

std::optional<series_query> series_query_of(const http_request& req, http_response& res,
                                            int64_t largest = largest_max_points) {
  series_query q;
  q.name = req.get_param_value("name");
  if (q.name.empty()) {
    reply_error(res, errc::invalid_input, "the query parameter name is required: the metric to draw, such as loss");
    return std::nullopt;
  }
  q.group = req.has_param("group") ? req.get_param_value("group") : "training";
  auto max_points = integer_param(req, res, "max_points", 2, largest, default_max_points);
  if (!max_points) return std::nullopt;
  q.max_points = static_cast<int32_t>(*max_points);
  auto start = integer_param(req, res, "start_batches", 0, INT64_MAX, 0);
  if (!start) return std::nullopt;
  auto end = integer_param(req, res, "end_batches", 0, INT64_MAX, INT64_MAX);
  if (!end) return std::nullopt;
  if (*end < *start) {
    reply_error(res, errc::invalid_input, "end_batches (" + std::to_string(*end) + ") is before start_batches (" +
                              std::to_string(*start) + ")");
    return std::nullopt;
  }
  q.start_batches = *start;
  q.end_batches = *end;
  return q;
}

/// Whether the reader finds experiment or trial `id`: true, or false once `out` has the refusal
/// (404 naming it, or the reader's error).
template <class Id>
route_coroutine_of<bool> found(persistence_reader_actor reader, Id id, reply_to out) {
  constexpr bool experiment = std::is_same_v<Id, experiment_id>;
  using Reply = std::conditional_t<experiment, pb::GetExperimentResponse, pb::GetTrialResponse>;
  auto r = co_await ask<Reply>(out, reader, get_atom::value, id);
  if (!r) {
    out.error(r.error);
    co_return false;
  }
  bool exists = false;
  if constexpr (experiment) exists = r->experiment().id() != 0;
  else exists = r->trial().id() != 0;
  if (!exists) out.error(errc::not_found, std::string(experiment ? "experiment " : "trial ") + std::to_string(id.value) + " not found");
  co_return exists;
}

}  // namespace

void metric_series_routes::add_to(http_router& server) {
  auto route = [this](auto coroutine) { return guards.signed_in(coroutine_route(sys, std::move(coroutine))); };
  server.Get(R"(/api/v1/trials/(\d+)/metrics/series)", route([this](http_request req, principal, reply_to out) -> route_coroutine {
    http_response refused;
    auto q = series_query_of(req, refused);
    if (!q) co_return out.finish(std::move(refused));
    const auto id = parse_id(req.matches[1]);
    if (!id) co_return out.error(errc::not_found, "trial " + req.matches[1].str() + " not found");
    const trial_id trial{*id};
    auto series = co_await ask<pb::MetricSeries>(out, reader, series_atom::value, trial, q->group, q->name,
                                                 q->start_batches, q->end_batches, q->max_points);
    if (!series) co_return out.error(series.error);
    // Empty: a trial without the metric yet, or no such trial.
    if (series->points_in_range() > 0) co_return out.json(*series);
    const bool exists = co_await found(reader, trial, out);
    if (exists) out.json(*series);
  }));
  server.Get(R"(/api/v1/trials/(\d+)/metrics/groups)", route([this](http_request req, principal, reply_to out) -> route_coroutine {
    const auto id = parse_id(req.matches[1]);
    if (!id) co_return out.error(errc::not_found, "trial " + req.matches[1].str() + " not found");
    const trial_id trial{*id};
    auto latest = co_await ask<pb::GetTrialMetricsResponse>(out, reader, metrics_atom::value, trial, max_metric_groups);
    if (!latest) co_return out.error(latest.error);
    if (latest->metrics_size() > 0) co_return out.json(*latest);
    const bool exists = co_await found(reader, trial, out);
    if (exists) out.json(*latest);
  }));
  server.Get(R"(/api/v1/experiments/(\d+)/metrics/series)",
             route([this](http_request req, principal, reply_to out) -> route_coroutine {
               http_response refused;
               auto q = series_query_of(req, refused, largest_max_points_per_trial);
               if (!q) co_return out.finish(std::move(refused));
               const auto id = parse_id(req.matches[1]);
               if (!id) co_return out.error(errc::not_found, "experiment " + req.matches[1].str() + " not found");
               const experiment_id experiment{*id};
               const bool exists = co_await found(reader, experiment, out);
               if (!exists) co_return;
               auto all = co_await ask<pb::ExperimentMetricSeries>(out, reader, series_atom::value, experiment, q->group,
                                                                   q->name, q->max_points);
               json_or_error(out, all);
             }));
}

} // namespace det::runtime
