#include "runtime/task_routes.hpp"

#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "actors/task_lifecycle.hpp"
#include "auth/credentials.hpp"
#include "caf/all.hpp"
#include "messages/caf_types.hpp"
#include "config/config_error.hpp"
#include "config/experiment_config.hpp"
#include "config/host_access_policy.hpp"
#include "config/task_config.hpp"
#include "runtime/route_helpers.hpp"
#include "runtime/session_cookie.hpp"
#include "runtime/task_proxy.hpp"

namespace det::runtime {
namespace {

constexpr std::size_t max_context_bytes = std::size_t{96} << 20;
// A task's id, as the routes' patterns match it.
constexpr const char* uuid_pattern = "([0-9a-f-]{36})";

constexpr pb::TaskKind kinds[] = {pb::TASK_KIND_COMMAND, pb::TASK_KIND_SHELL, pb::TASK_KIND_NOTEBOOK,
                                  pb::TASK_KIND_TENSORBOARD};

// A notebook's token opens it: only its owner and admins see it in the proxy path.
pb::Task as_seen_by(pb::Task task, const principal& who) {
  if (!who.admin && who.user_id != task.owner_id()) {
    task.set_proxy_path("/proxy/" + task.id() + "/");
    task.clear_private_key();
  }
  return task;
}

pb::TaskReply reply_of(pb::Task task) {
  pb::TaskReply out;
  switch (task.kind()) {
    case pb::TASK_KIND_SHELL: *out.mutable_shell() = std::move(task); break;
    case pb::TASK_KIND_NOTEBOOK: *out.mutable_notebook() = std::move(task); break;
    case pb::TASK_KIND_TENSORBOARD: *out.mutable_tensorboard() = std::move(task); break;
    default: *out.mutable_command() = std::move(task); break;
  }
  return out;
}

pb::TasksReply list_of(pb::TaskKind kind, std::vector<pb::Task>& tasks, const principal& who) {
  pb::TasksReply out;
  auto* list = kind == pb::TASK_KIND_SHELL         ? out.mutable_shells()
               : kind == pb::TASK_KIND_NOTEBOOK    ? out.mutable_notebooks()
               : kind == pb::TASK_KIND_TENSORBOARD ? out.mutable_tensorboards()
                                                   : out.mutable_commands();
  for (auto& t : tasks) *list->Add() = as_seen_by(std::move(t), who);
  return out;
}

// "Command: python3 prep.py", at most 80 characters, when the config names no description.
std::string default_description(config::task_kind kind, const std::vector<std::string>& entrypoint) {
  auto name = config::to_string(kind);
  name[0] = static_cast<char>(std::toupper(static_cast<unsigned char>(name[0])));
  std::string words;
  for (const auto& w : entrypoint) words += (words.empty() ? "" : " ") + w;
  if (words.rfind("/bin/sh -c ", 0) == 0) words.erase(0, 11);
  auto text = words.empty() ? name : name + ": " + words;
  return text.size() > 80 ? text.substr(0, 77) + "..." : text;
}

// `text` percent-encoded for a query parameter's value (the login page's ?next=).
std::string query_value(const std::string& text) {
  static const char* hex = "0123456789ABCDEF";
  std::string out;
  for (unsigned char c : text) {
    if (std::isalnum(c) || c == '-' || c == '_' || c == '.' || c == '~' || c == '/') {
      out += static_cast<char>(c);
    } else {
      out += '%';
      out += hex[c >> 4];
      out += hex[c & 15];
    }
  }
  return out;
}

} // namespace

bool task_routes::add_event_directories(const pb::CreateTaskRequest& body, pb::Task& task, http_response& res) {
  if (body.experiment_ids_size() == 0 && body.trial_ids_size() == 0) {
    reply_error(res, 400, "a TensorBoard needs experiment_ids or trial_ids: the trials whose event files it shows");
    return false;
  }
  caf::scoped_actor self{sys};
  std::map<int64_t, pb::GetExperimentResponse> experiments;
  auto experiment = [&](int64_t id) -> const pb::GetExperimentResponse* {
    if (auto it = experiments.find(id); it != experiments.end()) return &it->second;
    const pb::GetExperimentResponse* found = nullptr;
    self->request(handles.reader, route_timeout, get_atom::value, experiment_id{id})
        .receive([&](pb::GetExperimentResponse& r) {
          if (r.experiment().id() != 0) found = &(experiments[id] = std::move(r));
        }, [&](caf::error& e) { reply_error(res, sys, e); });
    return found;
  };
  std::vector<std::pair<int64_t, int64_t>> trials;  // (experiment, trial)
  for (auto id : body.experiment_ids()) {
    const auto* e = experiment(id);
    if (!e) {
      if (res.body.empty()) reply_error(res, 404, "experiment " + std::to_string(id) + " not found");
      return false;
    }
    for (const auto& t : e->trials()) trials.emplace_back(id, t.id());
  }
  for (auto id : body.trial_ids()) {
    pb::GetTrialResponse found;
    self->request(handles.reader, route_timeout, get_atom::value, trial_id{id})
        .receive([&](pb::GetTrialResponse& r) { found = std::move(r); }, [&](caf::error& e) { reply_error(res, sys, e); });
    if (found.trial().id() == 0) {
      if (res.body.empty()) reply_error(res, 404, "trial " + std::to_string(id) + " not found");
      return false;
    }
    trials.emplace_back(found.trial().experiment_id(), id);
  }
  std::map<int64_t, config::checkpoint_storage_config> storage;  // each experiment's, read once
  std::string spec, experiment_names;
  for (const auto& [exp, trial] : trials) {
    if (!storage.count(exp)) {
      const auto* e = experiment(exp);
      if (!e) return false;
      storage[exp] = config::parse_experiment_config(e->experiment().config(), "experiment " + std::to_string(exp))
                         .checkpoint_storage;
    }
    spec += (spec.empty() ? "" : ",") + std::string("trial_") + std::to_string(trial) + ":" +
            storage[exp].tensorboard_dir(handles.default_checkpoint_root, exp, trial);
  }
  for (const auto& [id, e] : experiments) experiment_names += (experiment_names.empty() ? "" : ", ") + std::to_string(id);
  task.clear_entrypoint();
  for (const auto& word : {std::string("tensorboard"), std::string("--logdir_spec"), spec}) task.add_entrypoint(word);
  if (task.description() == "TensorBoard") task.set_description("TensorBoard: experiment " + experiment_names);
  return true;
}

void task_routes::open_service(const http_request& req, http_response& res) {
  const auto id = req.matches[1].str();
  auto task = proxied_task(sys, handles, id);
  if (!task) return reply_error(res, sys, task.error());
  const auto token = service_token_of(*task);
  std::string location;
  if (req.get_header_value("Authorization").empty() && req.cookie(session_cookie_name).empty() &&
      (token.empty() || !auth::same_secret(req.get_param_value("token"), token))) {
    location = "/login?next=" + query_value(req.target);
  } else if (auto origin = proxy_origin_of(id, req, res); origin.empty()) {
    return;
  } else if (!token.empty() && auth::same_secret(req.get_param_value("token"), token)) {
    location = origin + req.target;  // a notebook's own link opens it there as it did here
  } else {
    auto who = caller_of(auth, req, scheme);
    if (!who) return reply_error(res, sys, who.error());
    location = ticket_url(*task, origin + req.target, *who, res);
    if (location.empty()) return;
  }
  res.status = 302;
  res.set_header("Location", location);
  res.set_header("Cache-Control", "no-store");
}

std::string task_routes::proxy_origin_of(const std::string& id, const http_request& req, http_response& res) {
  auto origin = address.origin_of(id, req.get_header_value("Host"));
  if (origin.empty()) reply_error(res, 400, "the Host header names no host that the proxy's address can be made from");
  return origin;
}

std::string task_routes::ticket_url(const pb::Task& task, const std::string& url, const principal& who,
                                    http_response& res) {
  const auto what = config::to_string(from_pb(task.kind())) + " " + task.id();
  auto refusal = require_personal_token(who, "opening " + what);
  if (!refusal) refusal = require_owner(who, task.owner_id(), task.owner(), what, "open");
  if (refusal) {
    reply_error(res, sys, refusal);
    return "";
  }
  const auto ticket = grants.issue_ticket(task.id(), who.token_sha256);
  return url + (url.find('?') == std::string::npos ? "?" : "&") + proxy_ticket_parameter + "=" + ticket;
}

void task_routes::add_to(http_router& server) {
  auto ask = [this](http_response& res, auto done, auto... xs) { ask_actor(sys, res, handles.tasks, done, xs...); };

  // The live task the path names, of the route's kind, checked for its owner or an admin, then `then(task)`.
  auto owned_task = [this, ask](const std::string& id, pb::TaskKind kind, http_response& res, const principal& who,
                                const std::string& verb, auto then) {
    ask(res, [&](pb::Task& task) {
      if (task.kind() != kind) return reply_error(res, 404, "there is no " + config::to_string(from_pb(kind)) + " " + id);
      if (auto e = require_owner(who, task.owner_id(), task.owner(), config::to_string(from_pb(kind)) + " " + id, verb))
        return reply_error(res, sys, e);
      then(task);
    }, get_atom::value, id);
  };

  for (const auto kind : kinds) {
    const std::string base = std::string("/api/v1/") + route_plural(kind);
      server.Post(base, signed_in([this, ask, kind](const http_request& req, http_response& res, const principal& who) {
        auto body = body_of<pb::CreateTaskRequest>(req, res);
        if (!body) return;
        if (body->context().size() > max_context_bytes)
          return reply_error(res, 400, "the context is " + std::to_string(body->context().size() >> 20) +
                                           " MiB; at most 96 MiB may be uploaded");
        const auto path = body->config_path().empty() ? std::string{"<request>"} : body->config_path();
        config::task_config cfg;
        try {
          cfg = config::parse_task_config(body->config(), path, from_pb(kind));
        } catch (const config::config_error& e) {
          return reply_error(res, 400, e.what());
        }
        const auto pool = handles.pool_name(cfg.resource_pool, cfg.slots);
        if (!handles.pools_at(pool))
          return reply_error(res, 400, path + ": resources.resource_pool: there is no resource pool named " + pool);
        if (auto refusal = config::host_access_refusal(handles.host_access, handles.default_checkpoint_root, cfg);
            !refusal.empty())
          return reply_error(res, 403, path + ": " + refusal);
        pb::Task task;
        task.set_kind(kind);
        task.set_owner_id(who.user_id);
        task.set_description(cfg.description.empty() ? default_description(from_pb(kind), cfg.entrypoint) : cfg.description);
        task.set_config(body->config());
        task.set_slots(cfg.slots);
        task.set_resource_pool(pool);
        for (const auto& word : cfg.entrypoint) task.add_entrypoint(word);
        if (kind == pb::TASK_KIND_TENSORBOARD && !add_event_directories(*body, task, res)) return;
        if (kind != pb::TASK_KIND_TENSORBOARD && (body->experiment_ids_size() || body->trial_ids_size()))
          return reply_error(res, 400, "experiment_ids and trial_ids are a TensorBoard's");
        ask(res, [&](pb::Task& created) { reply_json(res, reply_of(as_seen_by(std::move(created), who))); }, create_atom::value,
            std::move(task), std::move(*body->mutable_context()));
      }));
    server.Get(base, signed_in([ask, kind](const http_request&, http_response& res, const principal& who) {
      ask(res, [&](std::vector<pb::Task>& tasks) { reply_json(res, list_of(kind, tasks, who)); }, list_atom::value, kind);
    }));
    server.Get(base + "/" + uuid_pattern, signed_in([ask, kind](const http_request& req, http_response& res, const principal& who) {
      const auto id = req.matches[1].str();
      ask(res, [&](pb::Task& task) {
        if (task.kind() != kind) return reply_error(res, 404, "there is no " + config::to_string(from_pb(kind)) + " " + id);
        reply_json(res, reply_of(as_seen_by(std::move(task), who)));
      }, get_atom::value, id);
    }));
    server.Post(base + "/" + uuid_pattern + "/kill",
                signed_in([ask, owned_task, kind](const http_request& req, http_response& res, const principal& who) {
                  const auto id = req.matches[1].str();
                  owned_task(id, kind, res, who, "kill", [&](const pb::Task&) {
                    ask(res, [&](bool) { res.set_content("{}", "application/json"); }, kill_atom::value, id);
                  });
                }));
  }
  server.Get("/api/v1/tasks", signed_in([ask](const http_request&, http_response& res, const principal&) {
    ask(res, [&](pb::GetTaskSummariesResponse& out) { reply_json(res, out); }, list_atom::value);
  }));
  server.Get(std::string("/api/v1/tasks/") + uuid_pattern,
             signed_in([ask](const http_request& req, http_response& res, const principal& who) {
               ask(res, [&](pb::Task& task) { reply_json(res, reply_of(as_seen_by(std::move(task), who))); },
                   get_atom::value, req.matches[1].str());
             }));
  server.Post(std::string("/api/v1/tasks/") + uuid_pattern + "/proxy_ticket",
              signed_in([this](const http_request& req, http_response& res, const principal& who) {
                const auto id = req.matches[1].str();
                auto task = proxied_task(sys, handles, id);
                if (!task) return reply_error(res, sys, task.error());
                const auto origin = proxy_origin_of(id, req, res);
                if (origin.empty()) return;
                const auto url = ticket_url(*task, origin + "/proxy/" + id + "/", who, res);
                if (url.empty()) return;
                pb::ProxyTicketResponse out;
                out.set_url(url);
                reply_json(res, out);
              }));
  server.Get(std::string("/proxy/") + uuid_pattern + "/.*",
             [this](const http_request& req, http_response& res) { open_service(req, res); });
  server.Get(std::string("/api/v1/tasks/") + uuid_pattern + "/logs",
             signed_in([this](const http_request& req, http_response& res, const principal&) {
               if (auto p = page_of(req, res, "after_id", default_log_page, max_log_page))
                 ask_actor(sys, res, handles.reader, [&](pb::TaskLogsResponse& out) { reply_json(res, out); },
                           logs_atom::value, req.matches[1].str(), p->start, p->limit);
             }));
}

} // namespace det::runtime
