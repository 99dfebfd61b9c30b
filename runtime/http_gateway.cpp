#include "runtime/http_gateway.hpp"

#include <filesystem>
#include <sstream>
#include <chrono>
#include <optional>
#include <set>
#include <stdexcept>
#include <type_traits>
#include <memory>
#include <mutex>
#include <variant>
#include <vector>

#include "runtime/http_types.hpp"

#include "caf/all.hpp"
#include "config/continuation.hpp"
#include "config/experiment_config.hpp"
#include "config/host_access_policy.hpp"
#include "messages/caf_types.hpp"
#include "config/yaml_config.hpp"
#include "messages/errc.hpp"
#include "messages/states.hpp"
#include "messages/json.hpp"
#include "messages/preview_json.hpp"
#include "searcher/hyperparameter_grid.hpp"
#include "searcher/preview.hpp"
#include "messages/version.hpp"
#include "runtime/account_routes.hpp"
#include "runtime/alert_routes.hpp"
#include "runtime/authenticator.hpp"
#include "runtime/model_routes.hpp"
#include "runtime/event_stream_routes.hpp"
#include "runtime/metric_series_routes.hpp"
#include "runtime/project_routes.hpp"
#include "runtime/read_coalescer.hpp"
#include "runtime/prometheus_routes.hpp"
#include "runtime/task_routes.hpp"
#include "runtime/task_proxy.hpp"
#include "runtime/proxy_address.hpp"
#include "runtime/proxy_grants.hpp"
#include "runtime/session_cookie.hpp"
#include "runtime/webui_routes.hpp"
#include "runtime/http_replies.hpp"
#include "runtime/http_server.hpp"
#include "auth/untrusted_names.hpp"
#include "runtime/open_beneath.hpp"
#include "runtime/route_coroutine.hpp"
#include "runtime/route_helpers.hpp"
#include "storage/stored_rows.hpp"

namespace det::runtime {
namespace {

constexpr std::size_t max_model_definition_bytes = std::size_t{96} << 20;

// Pages: Determined's default of 100 experiments, at most 1,000; a trial's metrics in one page.
constexpr int32_t default_experiment_page = 100;
constexpr int32_t max_experiment_page = 1000;
constexpr int32_t metric_page = 100000;
// How long a custom searcher's read of its events waits for one before it is answered with none.
constexpr auto searcher_events_wait = std::chrono::seconds(20);

/// What one ask for a custom searcher's events gets: the events (none is an answer too), or the
/// response that answers the read instead (no such experiment, a storage error).
using searcher_events_answer = std::variant<pb::GetSearcherEventsResponse, http_response>;
/// Asks for them without waiting; the callback gets the answer on one of CAF's threads.
using searcher_events_ask = std::function<void(std::function<void(searcher_events_answer)>)>;

/// A custom searcher's read of its events while there are none: asked again whenever the last ask
/// came back without any, and the connection holds no thread in between, until it has events (or
/// the experiment's end) or the wait is over (then none: the client reads again). One chunk.
class searcher_events_poll final : public response_stream {
 public:
  explicit searcher_events_poll(searcher_events_ask ask)
      : ask_(std::move(ask)), deadline_(std::chrono::steady_clock::now() + searcher_events_wait) {}

  std::optional<std::string> next() override {
    if (answered_) return std::nullopt;
    auto body = events_asked();
    if (!body && std::chrono::steady_clock::now() < deadline_) return std::string{};
    answered_ = true;
    return body ? std::move(*body) : to_json(pb::GetSearcherEventsResponse{});
  }

 private:
  struct ask_in_flight {
    std::mutex mutex;
    bool answered = false;
    std::optional<std::string> body;  // events, as JSON; none when the answer had none
  };

  // The events of the last ask, once it came back with some; else nullopt, asking again when it
  // came back without (a restarted master that has not restored the experiment is asked again too).
  std::optional<std::string> events_asked() {
    if (in_flight_) {
      std::lock_guard lock{in_flight_->mutex};
      if (!in_flight_->answered) return std::nullopt;
      if (in_flight_->body) return std::move(in_flight_->body);
    }
    auto asked = std::make_shared<ask_in_flight>();
    in_flight_ = asked;
    ask_([asked](searcher_events_answer answer) {
      std::lock_guard lock{asked->mutex};
      const auto* events = std::get_if<pb::GetSearcherEventsResponse>(&answer);
      if (events && events->searcher_events_size() > 0) asked->body = to_json(*events);
      asked->answered = true;
    });
    return std::nullopt;
  }

  searcher_events_ask ask_;
  std::chrono::steady_clock::time_point deadline_;
  std::shared_ptr<ask_in_flight> in_flight_;
  bool answered_ = false;
};

} // namespace

struct http_gateway::impl {
  caf::actor_system& sys;
  master_handles handles;
  master_front_actor front;
  int actor_port;
  transport scheme;
  authenticator auth;
  proxy_grants grants;
  proxy_address proxy_at;
  account_routes accounts;  // its routes refer to it: it lives as long as the server
  model_routes models;
  project_routes projects;
  task_routes tasks;
  metric_series_routes series;
  alert_routes alerts;
  event_stream_routes streams;
  prometheus_routes prometheus;
  webui_routes webui;
  read_coalescer coalescer;
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
        proxy_at(scheme, std::move(proxy_host)),
        accounts{s, handles.accounts, auth, lifespan, max_token_lifespan, handles.task_uid_base,
                 [this](signed_in_handler h) { return signed_in(std::move(h)); }, {}, scheme},
        models{s, handles.models, [this](signed_in_handler h) { return signed_in(std::move(h)); }},
        projects{s, handles.projects, [this](signed_in_handler h) { return signed_in(std::move(h)); }},
        tasks{s, handles, auth, [this](signed_in_handler h) { return signed_in(std::move(h)); }, grants, proxy_at,
              scheme},
        series{s, handles.metric_reader, [this](signed_in_handler h) { return signed_in(std::move(h)); }},
        alerts{s, front, handles.persistence},
        streams{s, handles, auth, [this](signed_in_handler h) { return signed_in(std::move(h)); }},
        prometheus{s, handles, [this](signed_in_handler h) { return signed_in(std::move(h)); }},
        webui{std::move(webui_directory)},
        proxy{s, handles, auth, grants, proxy_at, scheme},
        http(std::make_unique<http_server>("the REST API", server, proxy_resolver{},
                                           [this](const http_request& req) { return authenticated(req); },
                                           handles.max_upload_bytes, tls)),
        proxy_http(std::make_unique<http_server>(
            "task services (proxy_port)", proxy_routes,
            [this](const http_request& req) { return proxy.target_of(req, ticket_use::redeem); },
            [this](const http_request& req) { return !proxy.target_of(req, ticket_use::keep).answer; },
            handles.max_upload_bytes, tls)) {}

  /// Whether the caller of a request whose body has not been read yet is one det knows: by the
  /// bearer token or the session cookie, or a trial's run token on the Core API's paths.
  bool authenticated(const http_request& req) {
    if (auto trial = core_api_trial_of(req.path)) return holds_run_token(req, *trial);
    return static_cast<bool>(caller_of(auth, req, scheme));
  }

  /// The trial a Core API path names (/api/v1/trials/ID/...), whose process calls with its run's token.
  static std::optional<int64_t> core_api_trial_of(const std::string& path) {
    static const std::string prefix = "/api/v1/trials/";
    if (path.rfind(prefix, 0) != 0) return std::nullopt;
    const auto slash = path.find('/', prefix.size());
    if (slash == std::string::npos) return std::nullopt;
    return parse_id(path.substr(prefix.size(), slash - prefix.size()));
  }

  /// Whether the request carries the token of trial's current run: the trial checks it, with a
  /// preemption poll, the Core API call that changes nothing.
  bool holds_run_token(const http_request& req, int64_t trial) {
    pb::CoreApiCall check;
    check.set_trial_id(trial);
    check.set_token(bearer_token(req.get_header_value("Authorization")));
    check.set_preemption(true);
    bool allowed = false;
    caf::scoped_actor self{sys};
    self->request(front, route_timeout, std::move(check))
        .receive([&](pb::CoreApiReply&) { allowed = true; }, [](caf::error&) {});
    return allowed || static_cast<bool>(auth.authenticate(req.get_header_value("Authorization")));
  }

  /// `handler`, run only for a caller whose bearer token is valid; 401 with the reason otherwise.
  http_handler signed_in(signed_in_handler handler) {
    return [this, handler = std::move(handler)](const http_request& req, http_response& res) {
#ifdef DET_BENCH_WITHOUT_AUTH
      // bench/auth_bench.py's baseline only (bench_det_node_without_auth, never installed): the
      // same gateway with every caller taken for admin, so that the ratio is authentication's cost.
      return handler(req, res, principal{storage::admin_user_id, "admin", true});
#endif
      auto who = caller_of(auth, req, scheme);
      if (!who)
        return reply_error(res, sys, who.error());
      handler(req, res, *who);
    };
  }
  /// As signed_in(), for any user: reads are open to everyone logged in.
  http_handler reader(http_handler handler) {
    return signed_in([handler = std::move(handler)](const http_request& req, http_response& res,
                                                    const principal&) { handler(req, res); });
  }
  /// As reader(), with identical GETs that arrive together answered by one read: a reader's
  /// answer is the same for every user, so the key is the path with its query.
  http_handler shared_reader(http_handler handler) {
    auto route = std::make_shared<const http_handler>(std::move(handler));
    return reader([this, route](const http_request& req, http_response& res) {
      // A copy: another request's read may be made with it after this route has returned.
      auto request = std::make_shared<const http_request>(req);
      coalescer.answer(req.target, res, [route, request](http_response& shared) { (*route)(*request, shared); });
    });
  }
  /// As signed_in(), for admins only: `action` names what needs one in the 403's sentence.
  http_handler admin_only(std::string action, http_handler handler) {
    return signed_in([this, action = std::move(action), handler = std::move(handler)](
                         const http_request& req, http_response& res, const principal& who) {
      if (auto e = require_admin(who, action))
        return reply_error(res, sys, e);
      handler(req, res);
    });
  }
  /// The owner of experiment `id`, to co_await.
  auto owner_of_experiment(const reply_to& out, int64_t id) {
    return ask<pb::User>(out, handles.accounts, owner_atom::value, experiment_id{id});
  }
  /// No error when `who` is the `owner` asked for, or an admin; else why not (forbidden,
  /// not_found, or a storage failure). `thing` names what is asked about ("experiment 3",
  /// "checkpoint U").
  static caf::error owner_refusal(asked<pb::User>& owner, const principal& who, const std::string& thing,
                                  const std::string& verb) {
    return owner ? require_owner(who, *owner, thing, verb) : std::move(owner.error);
  }

  /// As signed_in(), for the owner of the experiment the path's first number names, or an admin.
  http_handler experiment_owner(std::string verb, signed_in_handler handler) {
    auto route = std::make_shared<const signed_in_handler>(std::move(handler));
    return signed_in([this, verb = std::move(verb), route](const http_request& req, http_response& res,
                                                           const principal& who) {
      auto id = parse_id(req.matches[1]);
      if (!id)
        return reply_error(res, errc::not_found, "experiment " + req.matches[1].str() + " not found");
      for_experiment_owner(*id, who, verb, route, std::make_shared<const http_request>(req), reply_to{sys, res});
    });
  }
  route_coroutine for_experiment_owner(int64_t id, principal who, std::string verb,
                                       std::shared_ptr<const signed_in_handler> route,
                                       std::shared_ptr<const http_request> req, reply_to out) {
    auto owner = co_await owner_of_experiment(out, id);
    if (auto refusal = owner_refusal(owner, who, "experiment " + std::to_string(id), verb))
      co_return out.error(refusal);
    out.answer_with([&](const http_request& r, http_response& res) { (*route)(r, res, who); }, *req);
  }
  http_handler experiment_owner(std::string verb, http_handler handler) {
    return experiment_owner(std::move(verb), [handler = std::move(handler)](const http_request& req, http_response& res,
                                                                            const principal&) { handler(req, res); });
  }

  /// Asks `dest` and answers the HTTP request, deferred, with the reply, or with the error's
  /// status (status_of) and sentence.
  template <class Reply, class Handle, class... Ts>
  void answer(http_response& res, const Handle& dest, Ts... xs) {
    ask_deferred<Reply>(
        sys, res, dest, [](const Reply& reply, http_response& made) { reply_json(made, reply); }, std::move(xs)...);
  }

  /// As answer(), but answers 404 with `missing` when `found(reply)` is false.
  template <class Reply, class Found, class Handle, class... Ts>
  void answer_found(http_response& res, Found found, std::string missing, const Handle& dest, Ts... xs) {
    ask_deferred<Reply>(
        sys, res, dest,
        [found, missing = std::move(missing)](const Reply& reply, http_response& made) {
          if (found(reply))
            reply_json(made, reply);
          else
            reply_error(made, errc::not_found, missing);
        },
        std::move(xs)...);
  }

  /// Asks the writer to store a change and answers {}, or the error.
  template <class... Ts>
  void store(http_response& res, Ts... xs) {
    ask_deferred<bool>(
        sys, res, handles.persistence, [](bool, http_response& made) { made.set_content("{}", "application/json"); },
        std::move(xs)...);
  }

  /// The filter of GET /api/v1/experiments from its query; nullopt with a 400 naming the bad parameter.
  std::optional<pb::ExperimentFilter> experiment_filter(const http_request& req, http_response& res) {
    pb::ExperimentFilter filter;
    filter.set_user(req.get_param_value("user"));
    filter.set_label(req.get_param_value("label"));
    if (req.has_param("project_id")) {
      auto project = parse_id(req.get_param_value("project_id"));
      if (!project || *project < 0) {
        reply_error(res, errc::invalid_input, "query parameter project_id must be a project's id, not \"" + req.get_param_value("project_id") + "\"");
        return std::nullopt;
      }
      filter.set_project_id(*project);
    }
    for (size_t i = 0; i < req.get_param_value_count("state"); ++i) {
      auto text = req.get_param_value("state", i);
      pb::State state = pb::STATE_UNSPECIFIED;
      if (!pb::State_Parse(text.rfind("STATE_", 0) == 0 ? text : "STATE_" + text, &state) || state == pb::STATE_UNSPECIFIED) {
        reply_error(res, errc::invalid_input, "query parameter state: \"" + text + "\" is not a state (ACTIVE, PAUSED, COMPLETED, CANCELED, ERROR, ...)");
        return std::nullopt;
      }
      filter.add_states(state);
    }
    if (req.has_param("archived")) {
      const auto text = req.get_param_value("archived");
      if (text == "false") filter.set_archived(pb::ARCHIVED_FILTER_HIDDEN);
      else if (text == "true") filter.set_archived(pb::ARCHIVED_FILTER_ONLY);
      else if (text == "any") filter.set_archived(pb::ARCHIVED_FILTER_INCLUDED);
      else {
        reply_error(res, errc::invalid_input, "query parameter archived: expected false, true or any, not \"" + text + "\"");
        return std::nullopt;
      }
    }
    filter.set_sort_by(req.has_param("sort_by") ? req.get_param_value("sort_by") : "id");
    static const std::set<std::string> sortable{"id", "name", "state", "start_time", "end_time", "owner"};
    if (!sortable.count(filter.sort_by())) {
      reply_error(res, errc::invalid_input, "query parameter sort_by: expected id, name, state, start_time, end_time or owner, not \"" +
                                filter.sort_by() + "\"");
      return std::nullopt;
    }
    const auto order = req.has_param("order_by") ? req.get_param_value("order_by") : "asc";
    if (order != "asc" && order != "desc") {
      reply_error(res, errc::invalid_input, "query parameter order_by: expected asc or desc, not \"" + order + "\"");
      return std::nullopt;
    }
    filter.set_descending(order == "desc");
    return filter;
  }

  /// archive or unarchive, for an ended experiment only.
  void archive(int64_t id, bool archived, http_response& res) {
    ask_deferred<bool>(
        sys, res, handles.persistence,
        [id, archived](bool done, http_response& made) {
          if (done) return made.set_content("{}", "application/json");
          reply_error(made, errc::invalid_input, "experiment " + std::to_string(id) + " has not ended: kill it or let it finish before " +
                                     (archived ? "archiving" : "unarchiving") + " it");
        },
        archive_atom::value, experiment_id{id}, archived);
  }

  /// Why `who` may not put experiments into project `id` (Uncategorized is everyone's, another
  /// project takes them from its owner or an admin), from the projects actor's answer; or none.
  static caf::error project_refusal(asked<pb::Project>& project, int64_t id, const principal& who) {
    if (!project)
      return project.error == errc::not_found
                 ? make_error(errc::invalid_input, "project_id: there is no project " + std::to_string(id))
                 : std::move(project.error);
    if (project->id() == storage::default_project_id) return {};
    return require_owner(who, project->owner_id(), project->owner(),
                         "project " + project->workspace() + "/" + project->name(), "add experiments to");
  }

  /// Deletes a checkpoint's files for its experiment's owner or an admin.
  route_coroutine delete_checkpoint(std::string uuid, principal who, reply_to out) {
    auto found = co_await ask<pb::GetCheckpointResponse>(out, handles.reader, get_atom::value, uuid);
    if (!found) co_return out.error(found.error);
    if (found->checkpoint().uuid().empty()) co_return out.error(errc::not_found, "checkpoint " + uuid + " not found");
    auto owner = co_await owner_of_experiment(out, found->checkpoint().experiment_id());
    if (auto refusal = owner_refusal(owner, who, "checkpoint " + uuid, "delete")) co_return out.error(refusal);
    auto deleted = co_await ask<bool>(out, handles.collector, remove_atom::value, uuid);
    if (!deleted) co_return out.error(deleted.error);
    if (!*deleted) co_return out.error(errc::not_found, "checkpoint " + uuid + " not found");
    out.empty_json();
  }

  /// det trial continue: a new experiment that resumes the trial from its latest checkpoint.
  route_coroutine continue_trial(int64_t id, pb::ContinueTrialRequest body, principal who, reply_to out) {
    auto found = co_await ask<pb::GetTrialResponse>(out, handles.reader, get_atom::value, trial_id{id});
    if (!found) co_return out.error(found.error);
    if (found->trial().id() == 0) co_return out.error(errc::not_found, "trial " + std::to_string(id) + " not found");
    const auto& t = found->trial();
    auto parent = co_await ask<pb::GetExperimentResponse>(out, handles.reader, get_atom::value,
                                                          experiment_id{t.experiment_id()});
    if (!parent) co_return out.error(parent.error);
    if (t.latest_checkpoint_uuid().empty())
      co_return out.error(errc::invalid_input, "trial " + std::to_string(id) + " has no checkpoint to continue from");
    if (body.max_length() <= 0)
      co_return out.error(errc::invalid_input, "max_length must be positive: how far the trial trains, in its searcher's unit");
    pb::CreateExperimentRequest create;
    create.set_parent_id(parent->experiment().id());
    create.set_config_path("the continuation of trial " + std::to_string(id));
    try {
      create.set_config(config::continuation_config(parent->experiment().config(), create.config_path(), id,
                                                    t.hparams(), body.max_length()));
    } catch (const config::config_error& e) {
      co_return out.error(errc::invalid_input, e.what());
    }
    create_from(std::move(create), std::move(who), std::move(out));
  }

  void create_experiment(const http_request& req, http_response& res, const principal& who) {
    if (auto body = body_of<pb::CreateExperimentRequest>(req, res))
      create_from(std::move(*body), who, reply_to{sys, res});
  }

  // The name a config's errors give it: its path, else "<request>", or "<request>.yaml" for YAML
  // that came without one (Determined's clients send none), so that it is read as YAML.
  static std::string config_source(const std::string& config_path, const std::string& text) {
    if (!config_path.empty()) return config_path;
    return config::is_yaml_text(text) ? "<request>.yaml" : "<request>";
  }

  route_coroutine create_from(pb::CreateExperimentRequest body, principal who, reply_to out) {
    if (body.parent_id() < 0)
      co_return out.error(errc::invalid_input, "parent_id must be an experiment's id");
    if (const auto parent_id = body.parent_id(); parent_id > 0) {
      // A fork: what the request leaves empty (config, model definition) comes from its parent.
      auto parent = co_await ask<pb::GetExperimentResponse>(out, handles.reader, get_atom::value, experiment_id{parent_id});
      if (!parent) co_return out.error(parent.error);
      if (parent->experiment().id() == 0)
        co_return out.error(errc::not_found, "parent_id: experiment " + std::to_string(parent_id) + " not found");
      if (body.model_definition().empty()) {
        auto archive = co_await ask<std::string>(out, handles.reader, model_atom::value, experiment_id{parent_id});
        if (!archive) co_return out.error(archive.error);
        body.set_model_definition(std::move(*archive));
      }
      if (body.config().empty()) {
        body.set_config(parent->experiment().config());
        body.set_config_path("experiment " + std::to_string(parent_id) + "'s config");
      }
    }
    if (const auto project_id = body.project_id(); project_id != 0) {
      auto project = co_await ask<pb::Project>(out, handles.projects, get_atom::value, det::project_id{project_id});
      if (auto refusal = project_refusal(project, project_id, who)) co_return out.error(refusal);
    }
    auto path = config_source(body.config_path(), body.config());
    if (body.model_definition().size() > max_model_definition_bytes)
      co_return out.error(errc::invalid_input, "the model definition is " + std::to_string(body.model_definition().size() >> 20) +
                                   " MiB; det takes at most 96 MiB: leave data sets and outputs out of the directory");
    config::experiment_config cfg;
    try {
      // Determined's YAML, named by its path's suffix, is checked by its own lines and stored as
      // det's TOML.
      if (config::is_yaml_path(path)) {
        cfg = config::parse_yaml_experiment_config(body.config(), path);
        body.set_config(config::yaml_to_toml(body.config(), path));
      } else {
        cfg = config::parse_experiment_config(body.config(), path);
      }
    } catch (const config::config_error& e) {
      co_return out.error(errc::invalid_input, e.what());
    }
    if (!handles.pool(cfg.resources.resource_pool))
      co_return out.error(errc::invalid_input, path + ": resources.resource_pool: there is no resource pool named \"" +
                                   cfg.resources.resource_pool + "\"");
    if (auto refusal = config::host_access_refusal(handles.host_access, handles.default_checkpoint_root, cfg);
        !refusal.empty())
      co_return out.error(errc::forbidden, path + ": " + refusal);
    if (auto refusal = grid_too_large(cfg, path)) co_return out.error(errc::invalid_input, *refusal);
    if (body.validate_only()) {
      pb::CreateExperimentResponse resp;
      resp.mutable_experiment()->set_name(cfg.name);
      co_return out.json(resp);
    }
    body.set_config_path(path);
    auto created = co_await ask<pb::CreateExperimentResponse>(out, front, std::move(body), user_id{who.user_id});
    if (!created) co_return out.error(created.error);
    created->mutable_experiment()->set_owner(who.username);
    out.json(*created);
  }

  /// Why a grid search has more trials than this master runs, counted before any is made.
  std::optional<std::string> grid_too_large(const config::experiment_config& cfg, const std::string& path) const {
    if (cfg.searcher.name != "grid") return std::nullopt;
    auto refusal = searcher::grid_too_large(cfg.hparams, handles.max_grid_trials,
                                            "this master (max_grid_trials in its master.toml) runs grids of");
    if (!refusal) return std::nullopt;
    return path + ": " + *refusal;
  }

  void preview_search(const http_request& req, http_response& res) {
    auto parsed = body_of<pb::PreviewSearchRequest>(req, res);
    if (!parsed)
      return;
    const auto& body = *parsed;
    auto path = config_source(body.config_path(), body.config());
    pb::PreviewSearchResponse plan;
    try {
      auto cfg = config::is_yaml_path(path) ? config::parse_yaml_experiment_config(body.config(), path)
                                            : config::parse_experiment_config(body.config(), path);
      if (auto refusal = grid_too_large(cfg, path)) return reply_error(res, errc::invalid_input, *refusal);
      plan.set_searcher(cfg.searcher.name);
      for (auto& b : searcher::preview(cfg)) {
        auto* t = plan.add_trials();
        t->set_count(b.count);
        t->set_length(b.length);
        t->set_unit(config::to_string(b.unit));
      }
    } catch (const config::config_error& e) {
      return reply_error(res, errc::invalid_input, e.what());
    }
    res.set_content(preview_to_json(plan), "application/json");
  }

  /// kill, pause, activate or new scheduling settings (`msg`): sent to the live experiment; an
  /// experiment that already ended answers {} for kill and 400 for the others.
  template <class... Msg>
  route_coroutine signal_experiment(int64_t id, const char* verb, reply_to out, Msg... msg) {
    auto live = co_await ask<bool>(out, front, std::move(msg)...);
    if (!live) co_return out.error(live.error);
    if (*live) co_return out.empty_json();
    auto found = co_await ask<pb::GetExperimentResponse>(out, handles.reader, get_atom::value, experiment_id{id});
    if (!found) co_return out.error(found.error);
    http_response refused;
    auto stored = stored_experiment_of(id, *found, refused);
    if (!stored) co_return out.finish(std::move(refused));
    if ((std::is_same_v<Msg, kill_atom> || ...)) co_return out.empty_json();  // already ended: nothing to kill
    out.error(errc::invalid_input, "experiment " + std::to_string(id) + " has ended (" + pb::State_Name(stored->state()) +
                       ") and cannot be " + verb);
  }

  /// The experiment of the reader's answer `found` about `id`; nullopt with 404 answered when there is none.
  static std::optional<pb::Experiment> stored_experiment_of(int64_t id, pb::GetExperimentResponse& found,
                                                            http_response& res) {
    if (found.experiment().id() == 0) {
      reply_error(res, errc::not_found, "experiment " + std::to_string(id) + " not found");
      return std::nullopt;
    }
    return std::move(*found.mutable_experiment());
  }

  /// Experiment `id` of the reader's answer `found`, when it is not live: the experiment if it
  /// ended; else nullopt, answered with 404, or with 503 while a restarted master has not restored it.
  static std::optional<pb::Experiment> ended_experiment_of(int64_t id, pb::GetExperimentResponse& found,
                                                           http_response& res) {
    return ended(id, stored_experiment_of(id, found, res), res);
  }
  static std::optional<pb::Experiment> ended(int64_t id, std::optional<pb::Experiment> exp, http_response& res) {
    if (exp && !is_terminal(exp->state())) {
      reply_error(res, errc::unavailable, "experiment " + std::to_string(id) + " is not running yet; ask again");
      return std::nullopt;
    }
    return exp;
  }

  /// A custom searcher's events not yet acknowledged, after waiting up to 20 s for one (a long
  /// poll that holds no handler thread); an experiment that ended answers an experiment_inactive
  /// event.
  void searcher_events(int64_t id, http_response& res) {
    auto later = res.defer();
    searcher_events_then(id, [this, id, later](searcher_events_answer first) {
      if (auto* refused = std::get_if<http_response>(&first)) return later->finish(std::move(*refused));
      auto events = std::get<pb::GetSearcherEventsResponse>(std::move(first));
      if (events.searcher_events_size() > 0)
        return later->finish_with([events = std::move(events)](http_response& made) { reply_json(made, events); });
      http_response waiting;
      waiting.content_type = "application/json";
      waiting.stream = std::make_shared<searcher_events_poll>(
          [this, id](std::function<void(searcher_events_answer)> done) { searcher_events_then(id, std::move(done)); });
      later->finish(std::move(waiting));
    });
  }

  /// Asks what experiment `id`'s searcher has for its process now (none is an answer too), without
  /// waiting: `done` gets the events (an experiment that is no longer live: its end, as an
  /// experiment_inactive event) or the response that refuses the read, on one of CAF's threads.
  void searcher_events_then(int64_t id, std::function<void(searcher_events_answer)> done) {
    auto refused = [this, done](caf::error& e) {
      http_response failed;
      reply_error(failed, sys, e);
      done(std::move(failed));
    };
    ask_then(
        sys, front, caf::duration{route_timeout},
        [done](pb::GetSearcherEventsResponse& events) { done(std::move(events)); },
        [this, id, done, refused](caf::error& e) {
          if (e != errc::not_found) return refused(e);
          // Not live: ended, or not restored yet by a restarted master.
          ask_then(
              sys, handles.reader, caf::duration{route_timeout},
              [id, done](pb::GetExperimentResponse& found) {
                http_response not_ended;
                auto ended = ended_experiment_of(id, found, not_ended);
                if (!ended) return done(std::move(not_ended));
                pb::GetSearcherEventsResponse events;
                events.add_searcher_events()->mutable_experiment_inactive()->set_experiment_state(ended->state());
                done(std::move(events));
              },
              refused, get_atom::value, experiment_id{id});
        },
        searcher_atom::value, experiment_id{id});
  }

  /// A custom searcher's operations, acknowledging its events up to triggered_by_event.
  void searcher_operations(const http_request& req, int64_t id, http_response& res) {
    auto body = body_of<pb::PostSearcherOperationsRequest>(req, res);
    if (!body)
      return;
    if (body->experiment_id() != 0 && body->experiment_id() != id)
      return reply_error(res, errc::invalid_input, "experiment_id " + std::to_string(body->experiment_id()) +
                                       " in the body does not match experiment " + std::to_string(id) + " in the path");
    apply_searcher_operations(id, std::move(*body), reply_to{sys, res});
  }
  route_coroutine apply_searcher_operations(int64_t id, pb::PostSearcherOperationsRequest body, reply_to out) {
    auto applied = co_await ask<bool>(out, front, experiment_id{id}, std::move(body));
    if (applied) co_return out.empty_json();
    if (applied.error != errc::not_found) co_return out.error(applied.error);
    // Not live: ended (or not restored yet by a restarted master).
    auto found = co_await ask<pb::GetExperimentResponse>(out, handles.reader, get_atom::value, experiment_id{id});
    if (!found) co_return out.error(found.error);
    http_response refused;
    if (auto ended = ended_experiment_of(id, *found, refused))
      co_return out.error(errc::invalid_input, "experiment " + std::to_string(id) + " has ended (" + pb::State_Name(ended->state()) +
                                   "): its searcher takes no operations");
    out.finish(std::move(refused));
  }

  /// det agent|slot enable|disable: `slot` -1 for the whole agent.
  void enable_agent(const http_request& req, http_response& res, int32_t slot) {
    const auto agent = req.matches[1].str();
    const bool enable = req.matches[req.matches.size() - 1].str() == "enable";
    auto body = body_of<pb::DisableRequest>(req, res);
    if (!body)
      return;
    const auto change = enable ? slot_switch::enable : body->drain() ? slot_switch::drain : slot_switch::disable;
    ask_deferred<bool>(
        sys, res, handles.registry,
        [agent, slot](bool found, http_response& made) {
          if (found) return made.set_content("{}", "application/json");
          reply_error(made, errc::not_found, slot < 0 ? "agent " + agent + " not found"
                                          : "agent " + agent + " has no slot " + std::to_string(slot));
        },
        enable_atom::value, agent, slot, change);
  }

  /// archive, unarchive and labels: the owner's or an admin's.
  void annotation_routes() {
    for (bool archived : {true, false})
      server.Post(archived ? R"(/api/v1/experiments/(\d+)/archive)" : R"(/api/v1/experiments/(\d+)/unarchive)",
                  experiment_owner(archived ? "archive" : "unarchive", [this, archived](const http_request& req, http_response& res) {
                    archive(*parse_id(req.matches[1]), archived, res);
                  }));
    server.Post(R"(/api/v1/experiments/(\d+)/labels)", experiment_owner("label", [this](const http_request& req, http_response& res) {
      auto parsed = body_of<pb::LabelRequest>(req, res);
      if (!parsed) return;
      const auto& body = *parsed;
      if (body.label().empty() || body.label().size() > 255 || body.label().find(',') != std::string::npos)
        return reply_error(res, errc::invalid_input, "a label has 1 to 255 characters and no comma, not \"" + body.label() + "\"");
      store(res, add_atom::value, experiment_id{*parse_id(req.matches[1])}, body.label());
    }));
    server.Delete(R"(/api/v1/experiments/(\d+)/labels/(.+))", experiment_owner("remove a label of", [this](const http_request& req, http_response& res) {
      store(res, remove_atom::value, experiment_id{*parse_id(req.matches[1])}, req.matches[2].str());
    }));
  }

  /// PATCH /api/v1/experiments/N: its name, description and notes stored, then its new
  /// scheduling settings sent to it.
  route_coroutine patch_experiment(int64_t id, std::optional<pb::PatchExperimentRequest> annotation,
                                   std::optional<pb::JobSettings> change, reply_to out) {
    if (annotation) {
      auto stored = co_await ask<bool>(out, handles.persistence, update_atom::value, experiment_id{id},
                                       std::move(*annotation));
      if (!stored) co_return out.error(stored.error);
    }
    if (!change) co_return out.empty_json();
    signal_experiment(id, "changed", std::move(out), experiment_id{id}, std::move(*change));
  }

  /// det experiment move: into a project that takes experiments from `who`.
  route_coroutine move_experiment(int64_t id, int64_t to, principal who, reply_to out) {
    auto project = co_await ask<pb::Project>(out, handles.projects, get_atom::value, project_id{to});
    if (auto refusal = project_refusal(project, to, who)) co_return out.error(refusal);
    auto moved = co_await ask<bool>(out, handles.projects, update_atom::value, experiment_id{id}, project_id{to});
    if (!moved) co_return out.error(moved.error);
    out.empty_json();
  }

  /// What a route shows of the pools.
  enum class pool_view { resource_pools, provisioners, job_queues };

  /// Each pool's state and jobs, and its provisioner's (a provisioner busy in a long launch
  /// command answers late: its pool then shows none rather than hold up the route), as `view`
  /// shows them; job queues of `only_pool` alone when it is not empty.
  route_coroutine answer_pools(pool_view view, std::string only_pool, reply_to out) {
    constexpr auto provisioner_timeout = std::chrono::seconds(2);
    pb::GetResourcePoolsResponse pools;
    pb::GetProvisionersResponse provisioners;
    pb::GetJobsResponse queues;
    for (const auto& [name, pool] : handles.pools) {
      auto state = co_await ask<std::tuple<pb::ResourcePoolInfo, pb::GetJobsResponse>>(out, pool, list_atom::value);
      if (!state) co_return out.error(state.error);
      auto& [info, jobs] = *state;
      if (view == pool_view::job_queues) {
        if (only_pool.empty() || info.name() == only_pool)
          for (auto& job : *jobs.mutable_jobs()) *queues.add_jobs() = std::move(job);
        continue;
      }
      info.set_default_compute_pool(name == handles.default_pool);
      info.set_default_aux_pool(name == handles.default_aux_pool);
      if (auto p = handles.provisioners.find(name); p != handles.provisioners.end()) {
        auto provisioner = co_await ask_within<pb::Provisioner>(out, caf::duration{provisioner_timeout}, p->second,
                                                                get_atom::value);
        if (provisioner) *info.mutable_provisioner() = std::move(*provisioner);
      }
      if (view == pool_view::provisioners && info.has_provisioner())
        *provisioners.add_provisioners() = std::move(*info.mutable_provisioner());
      else if (view == pool_view::resource_pools)
        *pools.add_resource_pools() = std::move(info);
    }
    switch (view) {
      case pool_view::resource_pools: co_return out.json(pools);
      case pool_view::provisioners: co_return out.json(provisioners);
      case pool_view::job_queues: co_return out.json(queues);
    }
  }

  void scheduling_routes() {
    server.Get("/api/v1/resource-pools", reader([this](const http_request&, http_response& res) {
      answer_pools(pool_view::resource_pools, "", reply_to{sys, res});
    }));
    server.Get("/api/v1/provisioners", reader([this](const http_request&, http_response& res) {
      answer_pools(pool_view::provisioners, "", reply_to{sys, res});
    }));
    server.Get("/api/v1/job-queues", reader([this](const http_request& req, http_response& res) {
      answer_pools(pool_view::job_queues, req.get_param_value("resource_pool"), reply_to{sys, res});
    }));
    server.Patch(R"(/api/v1/experiments/(\d+))", experiment_owner("change", [this](const http_request& req, http_response& res) {
      auto id = parse_id(req.matches[1]);  // experiment_owner() found the experiment
      auto parsed = body_of<pb::PatchExperimentRequest>(req, res);
      if (!parsed) return;
      const auto& body = *parsed;
      const auto& change = body.resources();
      if (change.has_priority() && (change.priority() < 1 || change.priority() > 99))
        return reply_error(res, errc::invalid_input, "resources.priority must be between 1 and 99, not " +
                                         std::to_string(change.priority()));
      if (change.has_weight() && !(change.weight() >= 0))
        return reply_error(res, errc::invalid_input, "resources.weight must not be negative");
      if (change.has_max_slots() && change.max_slots() < 0)
        return reply_error(res, errc::invalid_input, "resources.max_slots must be 0 (no limit) or positive, not " +
                                         std::to_string(change.max_slots()));
      const bool annotates = body.has_name() || body.has_description() || body.has_notes();
      const bool reschedules = change.has_priority() || change.has_weight() || change.has_max_slots();
      if (!annotates && !reschedules)
        return reply_error(res, errc::invalid_input, "the request changes nothing: set resources.priority, weight or max_slots, "
                                     "name, description or notes");
      if (body.has_name() && body.name().empty())
        return reply_error(res, errc::invalid_input, "an experiment's name may not be empty");
      pb::PatchExperimentRequest annotation = body;
      annotation.clear_resources();
      patch_experiment(*id, annotates ? std::optional{std::move(annotation)} : std::nullopt,
                       reschedules ? std::optional{change} : std::nullopt, reply_to{sys, res});
    }));
    server.Post(R"(/api/v1/agents/([^/]+)/(enable|disable))",
                admin_only("enabling or disabling an agent", [this](const http_request& req, http_response& res) { enable_agent(req, res, -1); }));
    server.Post(R"(/api/v1/agents/([^/]+)/slots/(\d+)/(enable|disable))",
                admin_only("enabling or disabling a slot", [this](const http_request& req, http_response& res) {
                  auto slot = parse_id(req.matches[2]);
                  if (!slot || *slot > INT32_MAX) return reply_error(res, errc::not_found, "no slot " + req.matches[2].str());
                  enable_agent(req, res, static_cast<int32_t>(*slot));
                }));
  }

  /// A Core API call: `call` with the trial id and the bearer token of the request filled in.
  void core_api(const http_request& req, http_response& res, int64_t trial, pb::CoreApiCall call) {
    call.set_trial_id(trial);
    call.set_token(bearer_token(req.get_header_value("Authorization")));
    answer<pb::CoreApiReply>(res, front, std::move(call));
  }


  /// A Core API route: `fill` turns the request (with its JSON body parsed into a Body, for a
  /// POST) into the call for the trial the path's first number names.
  template <class Body, class Fill>
  void core_api_post(const char* pattern, Fill fill) {
    server.Post(pattern, [this, fill](const http_request& req, http_response& res) {
      auto body = body_of<Body>(req, res);
      if (!body)
        return;
      pb::CoreApiCall call;
      fill(*body, call);
      core_api(req, res, parse_id(req.matches[1]).value_or(0), std::move(call));
    });
  }
  template <class Fill>
  void core_api_get(const char* pattern, Fill fill) {
    server.Get(pattern, [this, fill](const http_request& req, http_response& res) {
      pb::CoreApiCall call;
      fill(call);
      core_api(req, res, parse_id(req.matches[1]).value_or(0), std::move(call));
    });
  }

  void core_api_routes() {
    core_api_post<pb::MetricReport>(R"(/api/v1/trials/(\d+)/metrics)",
                                    [](pb::MetricReport& r, pb::CoreApiCall& c) { *c.mutable_metrics() = std::move(r); });
    core_api_post<pb::Checkpoint>(R"(/api/v1/trials/(\d+)/checkpoints)",
                                  [](pb::Checkpoint& k, pb::CoreApiCall& c) { *c.mutable_checkpoint() = std::move(k); });
    core_api_post<pb::ProgressRequest>(R"(/api/v1/trials/(\d+)/progress)",
                                       [](pb::ProgressRequest& p, pb::CoreApiCall& c) { c.set_progress(p.progress()); });
    core_api_post<pb::CompleteOperationRequest>(
        R"(/api/v1/trials/(\d+)/searcher/completed_operation)",
        [](pb::CompleteOperationRequest& o, pb::CoreApiCall& c) { c.set_completed_length(o.length()); });
    core_api_post<pb::EarlyExitRequest>(R"(/api/v1/trials/(\d+)/early_exit)",
                                        [](pb::EarlyExitRequest& e, pb::CoreApiCall& c) { c.set_early_exit(e.reason()); });
    core_api_get(R"(/api/v1/trials/(\d+)/searcher/operation)",
                 [](pb::CoreApiCall& c) { c.set_searcher_operation(true); });
    core_api_get(R"(/api/v1/allocations/(\d+)\.\d+/signals/preemption)",
                 [](pb::CoreApiCall& c) { c.set_preemption(true); });
  }

  /// One file of a checkpoint, read from the checkpoint storage; `name` may be in a subdirectory
  /// (code/model_def.py).
  void checkpoint_file(const http_request& req, http_response& res) {
    auto uuid = req.matches[1].str();
    auto name = req.matches[2].str();
    ask_deferred<pb::GetCheckpointResponse>(
        sys, res, handles.reader,
        [uuid, name](const pb::GetCheckpointResponse& found, http_response& made) { send_checkpoint_file(found, uuid, name, made); },
        get_atom::value, uuid);
  }
  static void send_checkpoint_file(const pb::GetCheckpointResponse& found, const std::string& uuid,
                                   const std::string& name, http_response& res) {
    const auto& c = found.checkpoint();
    if (c.uuid().empty() || c.state() != pb::CHECKPOINT_STATE_COMPLETED || !c.resources().count(name) ||
        !auth::is_plain_relative_path(name))
      return reply_error(res, errc::not_found, "checkpoint " + uuid + " has no file " + name);
    // Streamed from disk (checkpoints can be larger than the master's spare memory), opened
    // beneath the storage root: the trial wrote the directory, and a link in it must not lead
    // the master to send its own files.
    auto file = open_beneath(c.storage_path(), c.uuid() + "/" + name);
    if (!file)
      return reply_error(res, errno == ENOENT ? errc::not_found : errc::forbidden,
                         "cannot send " + name + " of checkpoint " + uuid + ": it is " +
                             (errno == ENOENT ? "gone from " + c.storage_path()
                                              : "not a regular file beneath the checkpoint storage (a link, or a directory)"));
    res.content_type = "application/octet-stream";
    res.file = std::make_shared<unique_fd>(std::move(file));
  }

  void routes() {
    server.Get("/api/v1/master", [this](const http_request& req, http_response& res) {
      pb::MasterInfo info;
      info.set_version(det_version);
      info.set_actor_port(actor_port);
      info.set_proxy_url(proxy_at.base_url(req.get_header_value("Host")));
      reply_json(res, info);
    });
    server.Post("/api/v1/experiments", signed_in([this](const http_request& req, http_response& res,
                                                         const principal& who) { create_experiment(req, res, who); }));
    server.Post("/api/v1/preview-hp-search",
                reader([this](const http_request& req, http_response& res) { preview_search(req, res); }));
    server.Get("/api/v1/experiments", shared_reader([this](const http_request& req, http_response& res) {
      auto p = page_of(req, res, "offset", default_experiment_page, max_experiment_page);
      if (!p)
        return;
      if (auto filter = experiment_filter(req, res))
        answer<pb::GetExperimentsResponse>(res, handles.reader, list_atom::value, p->start, p->limit, std::move(*filter));
    }));
    server.Get(R"(/api/v1/experiments/(\d+))",
               shared_reader([this](const http_request& req, http_response& res) {
                 auto id = parse_id(req.matches[1]).value_or(0);
                 answer_found<pb::GetExperimentResponse>(
                     res, [](auto& r) { return r.experiment().id() != 0; },
                     "experiment " + req.matches[1].str() + " not found", handles.reader,
                     get_atom::value, experiment_id{id});
               }));
    server.Post(R"(/api/v1/experiments/(\d+)/kill)", experiment_owner("kill", [this](const http_request& req, http_response& res) {
      auto id = *parse_id(req.matches[1]);
      signal_experiment(id, "killed", reply_to{sys, res}, kill_atom::value, experiment_id{id});
    }));
    server.Post(R"(/api/v1/experiments/(\d+)/pause)", experiment_owner("pause", [this](const http_request& req, http_response& res) {
      auto id = *parse_id(req.matches[1]);
      signal_experiment(id, "paused", reply_to{sys, res}, pause_atom::value, experiment_id{id});
    }));
    server.Post(R"(/api/v1/experiments/(\d+)/activate)", experiment_owner("activate", [this](const http_request& req, http_response& res) {
      auto id = *parse_id(req.matches[1]);
      signal_experiment(id, "activated", reply_to{sys, res}, activate_atom::value, experiment_id{id});
    }));
    server.Get(R"(/api/v1/experiments/(\d+)/searcher_events)",
               experiment_owner("drive the searcher of", [this](const http_request& req, http_response& res) {
                 searcher_events(*parse_id(req.matches[1]), res);
               }));
    server.Post(R"(/api/v1/experiments/(\d+)/searcher_operations)",
                experiment_owner("drive the searcher of", [this](const http_request& req, http_response& res) {
                  searcher_operations(req, *parse_id(req.matches[1]), res);
                }));
    scheduling_routes();
    annotation_routes();
    accounts.add_to(server);
    models.add_to(server);
    projects.add_to(server);
    tasks.add_to(server);
    series.add_to(server);
    alerts.add_to(server);
    streams.add_to(server);
    prometheus.add_to(server);
    webui.add_to(server);
    server.Post(R"(/api/v1/trials/(\d+)/continue)", signed_in([this](const http_request& req, http_response& res,
                                                                      const principal& who) {
      if (auto body = body_of<pb::ContinueTrialRequest>(req, res))
        continue_trial(parse_id(req.matches[1]).value_or(0), std::move(*body), who, reply_to{sys, res});
    }));
    server.Post(R"(/api/v1/experiments/(\d+)/move)", experiment_owner("move", [this](const http_request& req,
                                                                                http_response& res, const principal& who) {
      pb::MoveExperimentRequest body;
      std::string error;
      if (!from_json(req.body, body, error)) return reply_error(res, errc::invalid_input, error);
      move_experiment(*parse_id(req.matches[1]), body.project_id(), who, reply_to{sys, res});
    }));
    server.Delete(R"(/api/v1/experiments/(\d+))", experiment_owner("delete", [this](const http_request& req, http_response& res) {
      ask_deferred<bool>(
          sys, res, handles.collector, [](bool, http_response& made) { made.set_content("{}", "application/json"); },
          remove_atom::value, experiment_id{*parse_id(req.matches[1])});
    }));
    server.Get(R"(/api/v1/trials/(\d+))", shared_reader([this](const http_request& req, http_response& res) {
      auto id = parse_id(req.matches[1]).value_or(0);
      answer_found<pb::GetTrialResponse>(
          res, [](auto& r) { return r.trial().id() != 0; }, "trial " + req.matches[1].str() + " not found",
          handles.reader, get_atom::value, trial_id{id});
    }));
    server.Get(R"(/api/v1/trials/(\d+)/metrics)",
               shared_reader([this](const http_request& req, http_response& res) {
                 auto id = parse_id(req.matches[1]).value_or(0);
                 auto group = req.get_param_value("group");
                 if (auto p = page_of(req, res, "offset", metric_page, metric_page))
                   answer<pb::GetTrialMetricsResponse>(res, handles.metric_reader, metrics_atom::value, trial_id{id}, group,
                                                    p->start, p->limit);
               }));
    server.Get(R"(/api/v1/trials/(\d+)/logs)",
               reader([this](const http_request& req, http_response& res) {
                 auto id = parse_id(req.matches[1]).value_or(0);
                 if (auto p = page_of(req, res, "after_id", default_log_page, max_log_page))
                   answer<pb::TrialLogsResponse>(res, handles.reader, logs_atom::value, trial_id{id}, p->start, p->limit);
               }));
    server.Get(R"(/api/v1/experiments/(\d+)/checkpoints)",
               reader([this](const http_request& req, http_response& res) {
                 auto id = parse_id(req.matches[1]).value_or(0);
                 answer<pb::GetCheckpointsResponse>(res, handles.reader, checkpoints_atom::value,
                                                 experiment_id{id});
               }));
    server.Get(R"(/api/v1/trials/(\d+)/checkpoints)",
               reader([this](const http_request& req, http_response& res) {
                 auto id = parse_id(req.matches[1]).value_or(0);
                 answer<pb::GetCheckpointsResponse>(res, handles.reader, checkpoints_atom::value, trial_id{id});
               }));
    server.Get(R"(/api/v1/checkpoints/([0-9a-fA-F-]+))",
               reader([this](const http_request& req, http_response& res) {
                 answer_found<pb::GetCheckpointResponse>(
                     res, [](auto& r) { return !r.checkpoint().uuid().empty(); },
                     "checkpoint " + req.matches[1].str() + " not found", handles.reader, get_atom::value,
                     req.matches[1].str());
               }));
    server.Delete(R"(/api/v1/checkpoints/([0-9a-fA-F-]+))",
                  signed_in([this](const http_request& req, http_response& res, const principal& who) {
                    delete_checkpoint(req.matches[1].str(), who, reply_to{sys, res});
                  }));
    server.Get(R"(/api/v1/checkpoints/([0-9a-fA-F-]+)/files/(.+))",
               reader([this](const http_request& req, http_response& res) { checkpoint_file(req, res); }));
    core_api_routes();
    server.Get("/api/v1/agents", shared_reader([this](const http_request&, http_response& res) {
      answer<pb::GetAgentsResponse>(res, handles.registry, list_atom::value);
    }));
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
