#include "runtime/metric_series_routes.hpp"

#include <cstdint>
#include <optional>
#include <string>

#include "runtime/route_helpers.hpp"

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
  reply_error(res, 400, std::string("the query parameter ") + key + " must be an integer from " + std::to_string(low) +
                            " to " + std::to_string(high) + ", not \"" + text + "\"");
  return std::nullopt;
}

std::optional<series_query> series_query_of(const http_request& req, http_response& res,
                                            int64_t largest = largest_max_points) {
  series_query q;
  q.name = req.get_param_value("name");
  if (q.name.empty()) {
    reply_error(res, 400, "the query parameter name is required: the metric to draw, such as loss");
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
    reply_error(res, 400, "end_batches (" + std::to_string(*end) + ") is before start_batches (" +
                              std::to_string(*start) + ")");
    return std::nullopt;
  }
  q.start_batches = *start;
  q.end_batches = *end;
  return q;
}

}  // namespace

void metric_series_routes::add_to(http_router& server) {
  auto reads = [this](http_handler h) {
    return signed_in([h = std::move(h)](const http_request& req, http_response& res, const principal&) { h(req, res); });
  };
  server.Get(R"(/api/v1/trials/(\d+)/metrics/series)", reads([this](const http_request& req, http_response& res) {
    auto q = series_query_of(req, res);
    if (!q) return;
    const auto id = parse_id(req.matches[1]);
    if (!id) return reply_error(res, 404, "trial " + req.matches[1].str() + " not found");
    const trial_id trial{*id};
    ask_actor(sys, res, reader, [&](pb::MetricSeries& series) {
      // Empty: a trial without the metric yet, or no such trial.
      if (series.points_in_range() > 0 || exists_or_reply(sys, res, reader, trial)) reply_json(res, series);
    }, series_atom::value, trial, q->group, q->name, q->start_batches, q->end_batches, q->max_points);
  }));
  server.Get(R"(/api/v1/trials/(\d+)/metrics/groups)", reads([this](const http_request& req, http_response& res) {
    const auto id = parse_id(req.matches[1]);
    if (!id) return reply_error(res, 404, "trial " + req.matches[1].str() + " not found");
    const trial_id trial{*id};
    ask_actor(sys, res, reader, [&](pb::GetTrialMetricsResponse& latest) {
      if (latest.metrics_size() > 0 || exists_or_reply(sys, res, reader, trial)) reply_json(res, latest);
    }, metrics_atom::value, trial, max_metric_groups);
  }));
  server.Get(R"(/api/v1/experiments/(\d+)/metrics/series)", reads([this](const http_request& req, http_response& res) {
    auto q = series_query_of(req, res, largest_max_points_per_trial);
    if (!q) return;
    const auto id = parse_id(req.matches[1]);
    if (!id) return reply_error(res, 404, "experiment " + req.matches[1].str() + " not found");
    const experiment_id experiment{*id};
    if (!exists_or_reply(sys, res, reader, experiment)) return;
    ask_actor(sys, res, reader, [&](pb::ExperimentMetricSeries& all) { reply_json(res, all); }, series_atom::value,
              experiment, q->group, q->name, q->max_points);
  }));
}

} // namespace det::runtime
