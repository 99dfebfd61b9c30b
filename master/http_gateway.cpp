#include "master/http_gateway.hpp"

#include <functional>
#include <memory>
#include <optional>

#include "caf/all.hpp"
#include "master/accounts/account_routes.hpp"
#include "master/experiments/alert_routes.hpp"
#include "master/experiments/checkpoint_routes.hpp"
#include "master/experiments/event_stream_routes.hpp"
#include "master/experiments/experiment_routes.hpp"
#include "master/experiments/metric_series_routes.hpp"
#include "master/experiments/searcher_routes.hpp"
#include "master/experiments/trial_routes.hpp"
#include "master/http/actor_ask.hpp"
#include "master/http/authenticator.hpp"
#include "master/http/http_replies.hpp"
#include "master/http/http_server.hpp"
#include "master/http/route_guards.hpp"
#include "master/models/model_routes.hpp"
#include "master/projects/project_routes.hpp"
#include "master/prometheus_routes.hpp"
#include "master/scheduling/scheduling_routes.hpp"
#include "master/tasks/proxy_address.hpp"
#include "master/tasks/proxy_grants.hpp"
#include "master/tasks/task_proxy.hpp"
#include "master/tasks/task_routes.hpp"
#include "master/webui_routes.hpp"
#include "messages/version.hpp"

namespace det::runtime {

struct http_gateway::impl {
  caf::actor_system& sys;
  master_handles handles;
  master_front_actor front;
  int actor_port;
  transport scheme;
  authenticator auth;
  route_guards guards;
  proxy_grants grants;
  proxy_address proxy_at;
  // Each domain's routes; the router's handlers refer to them: they live as long as the server.
  experiment_routes experiments;
  searcher_routes searchers;
  trial_routes trials;
  checkpoint_routes checkpoints;
  scheduling_routes scheduling;
  account_routes accounts;
  model_routes models;
  project_routes projects;
  task_routes tasks;
  metric_series_routes series;
  alert_routes alerts;
  event_stream_routes streams;
  prometheus_routes prometheus;
  webui_routes webui;
  task_proxy proxy;
  http_router server;  // the routes, before the HTTP server that answers with them exists
  http_router proxy_routes;  // none: the proxy listener relays /proxy/ and has nothing else
  std::unique_ptr<http_server> http;
  std::unique_ptr<http_server> proxy_http;

  impl(caf::actor_system& s, master_handles h, master_front_actor f, int p, int64_t lifespan,
       int64_t max_token_lifespan, const std::optional<auth::tls_files>& tls, std::string webui_directory,
       std::string proxy_host)
      : sys(s), handles(std::move(h)), front(std::move(f)), actor_port(p),
        scheme(tls ? transport::https : transport::http),
        auth(s, handles.accounts),
        guards(s, auth, handles.accounts, scheme),
        proxy_at(scheme, std::move(proxy_host)),
        experiments{s, handles, front, guards},
        searchers{s, handles, front, guards},
        trials{s, handles, front, guards},
        checkpoints{s, handles, guards},
        scheduling{s, handles, guards},
        accounts{s, handles.accounts, auth, lifespan, max_token_lifespan, handles.task_uid_base, guards, {}, scheme},
        models{s, handles.models, guards},
        projects{s, handles.projects, guards},
        tasks{s, handles, auth, guards, grants, proxy_at, scheme},
        series{s, handles.metric_reader, guards},
        alerts{s, front, handles.persistence},
        streams{s, handles, auth, guards},
        prometheus{s, handles, guards},
        webui{std::move(webui_directory)},
        proxy{s, handles, auth, grants, proxy_at, scheme},
        http(std::make_unique<http_server>(
            "the REST API", server, proxy_resolver{},
            [this](const http_request& req, std::function<void(bool)> done) { authenticated(req, std::move(done)); },
            handles.max_upload_bytes, tls)),
        proxy_http(std::make_unique<http_server>(
            "task services (proxy_port)", proxy_routes,
            [this](const http_request& req, std::function<void(proxy_target)> done) {
              proxy.resolve(req, ticket_use::redeem, std::move(done));
            },
            [this](const http_request& req, std::function<void(bool)> done) {
              proxy.resolve(req, ticket_use::keep, [done](proxy_target target) { done(!target.answer); });
            },
            handles.max_upload_bytes, tls)) {}

  /// Whether the caller of a request whose body has not been read yet is one det knows, handed to
  /// `done`: by the bearer token or the session cookie, or a trial's run token on the Core API's paths.
  void authenticated(const http_request& req, std::function<void(bool)> done) {
    if (auto trial = core_api_trial_of(req.path)) return holds_run_token(req, *trial, std::move(done));
    guards.signed_in_caller(req, std::move(done));
  }

  /// The trial a Core API path names (/api/v1/trials/ID/...), whose process calls with its run's token.
  static std::optional<int64_t> core_api_trial_of(const std::string& path) {
    static const std::string prefix = "/api/v1/trials/";
    if (path.rfind(prefix, 0) != 0) return std::nullopt;
    const auto slash = path.find('/', prefix.size());
    if (slash == std::string::npos) return std::nullopt;
    return parse_id(path.substr(prefix.size(), slash - prefix.size()));
  }

  /// Whether the request carries the token of trial's current run, handed to `done`: the trial
  /// checks it, with a preemption poll, the Core API call that changes nothing. A user's token
  /// passes too (the route then refuses it with its reason).
  void holds_run_token(const http_request& req, int64_t trial, std::function<void(bool)> done) {
    pb::CoreApiCall check;
    check.set_trial_id(trial);
    check.set_token(bearer_token(req.get_header_value("Authorization")));
    check.set_preemption(true);
    ask_then(
        sys, front, caf::duration{route_timeout}, [done](pb::CoreApiReply&) { done(true); },
        [this, req, done](caf::error&) { guards.signed_in_caller(req, done); }, std::move(check));
  }

  void routes() {
    server.Get("/api/v1/master", [this](const http_request& req, http_response& res) {
      pb::MasterInfo info;
      info.set_version(det_version);
      info.set_actor_port(actor_port);
      info.set_proxy_url(proxy_at.base_url(req.get_header_value("Host")));
      reply_json(res, info);
    });
    experiments.add_to(server);
    searchers.add_to(server);
    trials.add_to(server);
    checkpoints.add_to(server);
    scheduling.add_to(server);
    accounts.add_to(server);
    models.add_to(server);
    projects.add_to(server);
    tasks.add_to(server);
    series.add_to(server);
    alerts.add_to(server);
    streams.add_to(server);
    prometheus.add_to(server);
    webui.add_to(server);
  }
};

http_gateway::http_gateway(caf::actor_system& sys, master_handles handles, master_front_actor front,
                           int actor_port, int64_t session_lifespan_s, int64_t max_token_lifespan_s,
                           const std::optional<auth::tls_files>& tls, std::string webui_directory,
                           std::string proxy_host)
    : impl_(std::make_unique<impl>(sys, std::move(handles), std::move(front), actor_port, session_lifespan_s,
                                   max_token_lifespan_s, tls, std::move(webui_directory), std::move(proxy_host))) {
  impl_->routes();
}

http_gateway::~http_gateway() {
  stop();
}

http_gateway::bound_ports http_gateway::start(const std::string& address, int port, int proxy_port) {
  bound_ports bound;
  // The proxy's port first: the REST API's answers (redirects, proxy_url) name it.
  bound.proxy = impl_->proxy_http->start(address, proxy_port);
  impl_->proxy_at.set_port(bound.proxy);
  bound.http = impl_->http->start(address, port);
  return bound;
}

void http_gateway::stop() {
  if (impl_) {
    impl_->http->stop();
    impl_->proxy_http->stop();
  }
}

} // namespace det::runtime
