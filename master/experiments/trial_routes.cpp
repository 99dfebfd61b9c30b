#include "master/experiments/trial_routes.hpp"

#include "caf/all.hpp"
#include "master/local_interfaces.hpp"
#include "master/http/route_helpers.hpp"

namespace det::runtime {
namespace {

// A trial's metrics come in one page.
constexpr int32_t metric_page = 100000;

} // namespace

void trial_routes::core_api(const http_request& req, http_response& res, int64_t trial, pb::CoreApiCall call) {
  call.set_trial_id(trial);
  call.set_token(bearer_token(req.get_header_value("Authorization")));
  answer_json<pb::CoreApiReply>(sys, res, front, std::move(call));
}

template <class Body, class Fill>
void trial_routes::core_api_post(http_router& server, const char* pattern, Fill fill) {
  server.Post(pattern, [this, fill](const http_request& req, http_response& res) {
    auto body = body_of<Body>(req, res);
    if (!body) return;
    pb::CoreApiCall call;
    fill(*body, call);
    core_api(req, res, path_id(req), std::move(call));
  });
}

template <class Fill>
void trial_routes::core_api_get(http_router& server, const char* pattern, Fill fill) {
  server.Get(pattern, [this, fill](const http_request& req, http_response& res) {
    pb::CoreApiCall call;
    fill(call);
    core_api(req, res, path_id(req), std::move(call));
  });
}

void trial_routes::core_api_routes(http_router& server) {
  core_api_post<pb::MetricReport>(server, R"(/api/v1/trials/(\d+)/metrics)",
                                  [](pb::MetricReport& r, pb::CoreApiCall& c) { *c.mutable_metrics() = std::move(r); });
  core_api_post<pb::Checkpoint>(server, R"(/api/v1/trials/(\d+)/checkpoints)",
                                [](pb::Checkpoint& k, pb::CoreApiCall& c) { *c.mutable_checkpoint() = std::move(k); });
  core_api_post<pb::ProgressRequest>(server, R"(/api/v1/trials/(\d+)/progress)",
                                     [](pb::ProgressRequest& p, pb::CoreApiCall& c) { c.set_progress(p.progress()); });
  core_api_post<pb::CompleteOperationRequest>(
      server, R"(/api/v1/trials/(\d+)/searcher/completed_operation)",
      [](pb::CompleteOperationRequest& o, pb::CoreApiCall& c) { c.set_completed_length(o.length()); });
  core_api_post<pb::EarlyExitRequest>(server, R"(/api/v1/trials/(\d+)/early_exit)",
                                      [](pb::EarlyExitRequest& e, pb::CoreApiCall& c) { c.set_early_exit(e.reason()); });
  core_api_get(server, R"(/api/v1/trials/(\d+)/searcher/operation)",
               [](pb::CoreApiCall& c) { c.set_searcher_operation(true); });
  core_api_get(server, R"(/api/v1/allocations/(\d+)\.\d+/signals/preemption)",
               [](pb::CoreApiCall& c) { c.set_preemption(true); });
}

void trial_routes::add_to(http_router& server) {
  server.Get(R"(/api/v1/trials/(\d+))", guards.shared_reader([this](const http_request& req, http_response& res) {
    answer_json_found<pb::GetTrialResponse>(
        sys, res, [](auto& r) { return r.trial().id() != 0; }, "trial " + req.matches[1].str() + " not found",
        handles.reader, get_atom::value, trial_id{path_id(req)});
  }));
  server.Get(R"(/api/v1/trials/(\d+)/metrics)", guards.shared_reader([this](const http_request& req, http_response& res) {
    if (auto p = page_of(req, res, "offset", metric_page, metric_page))
      answer_json<pb::GetTrialMetricsResponse>(sys, res, handles.metric_reader, metrics_atom::value, trial_id{path_id(req)},
                                               req.get_param_value("group"), p->start, p->limit);
  }));
  server.Get(R"(/api/v1/trials/(\d+)/logs)", guards.reader([this](const http_request& req, http_response& res) {
    if (auto p = page_of(req, res, "after_id", default_log_page, max_log_page))
      answer_json<pb::TrialLogsResponse>(sys, res, handles.reader, logs_atom::value, trial_id{path_id(req)}, p->start,
                                         p->limit);
  }));
  core_api_routes(server);
}

} // namespace det::runtime
