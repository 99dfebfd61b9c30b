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

// The notebook token in a task's proxy path ("/proxy/ID/?token=T"), or "".
std::string service_token_of(const pb::Task& task) {
  const auto at = task.proxy_path().find("?token=");
  return at == std::string::npos ? std::string{} : task.proxy_path().substr(at + 7);
}

proxy_target refusal(int status, std::string sentence) {
  proxy_target t;
  t.refusal_status = status;
  t.refusal = std::move(sentence);
  return t;
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

void task_routes::mark_used(const std::string& task_id) {
  pb::ContainerActivity used;
  used.set_allocation_id(task_id);
  caf::anon_send(handles.tasks, std::move(used));
}

proxy_target task_routes::proxy_target_of(const http_request& req) {
  constexpr std::string_view prefix = "/proxy/";
  const auto rest = req.path.substr(prefix.size());
  const auto slash = rest.find('/');
  const auto id = rest.substr(0, slash);
  if (slash == std::string::npos)
    return refusal(404, "a task's service is under /proxy/" + id + "/ (with the trailing slash)");
  pb::Task task;
  caf::error failure;
  caf::scoped_actor self{sys};
  self->request(handles.tasks, route_timeout, proxy_atom::value, id)
      .receive([&](pb::Task& t) { task = std::move(t); }, [&](caf::error& e) { failure = std::move(e); });
  if (failure) return refusal(status_of(failure), error_sentence(sys, failure));
  const auto cookie_name = "det_task_" + id;
  const auto token = service_token_of(task);
  const auto authorization = req.get_header_value("Authorization");
  const bool token_given =
      !token.empty() && (auth::same_secret(req.get_param_value("token"), token) ||
                         auth::same_secret(authorization.rfind("token ", 0) == 0 ? authorization.substr(6) : "", token) ||
                         auth::same_secret(req.cookie(cookie_name), token));
  proxy_target target;
  if (token_given) {
    target.set_cookie = cookie_name + "=" + token + "; Path=/proxy/" + id + "/; HttpOnly; SameSite=Lax";
  } else {
    const auto session = req.cookie("auth");
    auto who = auth.authenticate(authorization.rfind("Bearer ", 0) == 0 || session.empty() ? authorization
                                                                                            : "Bearer " + session);
    if (!who) return refusal(status_of(who.error()), error_sentence(sys, who.error()));
    const auto what = config::to_string(from_pb(task.kind())) + " " + id;
    if (auto e = require_owner(*who, task.owner_id(), task.owner(), what, "open"))
      return refusal(status_of(e), error_sentence(sys, e));
  }
  if (!task.ready() || task.service_address().empty())
    return refusal(503, config::to_string(from_pb(task.kind())) + " " + id + " is not ready yet; try again shortly");
  const auto colon = task.service_address().rfind(':');
  const auto port = colon == std::string::npos ? std::nullopt : parse_int<int>(task.service_address().substr(colon + 1));
  if (!port) return refusal(502, "the agent reported no usable address for " + id + ": " + task.service_address());
  target.host = task.service_address().substr(0, colon);
  target.port = *port;
  target.raw_tcp = task.kind() == pb::TASK_KIND_SHELL;
  mark_used(task.id());
  return target;
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
  server.Get(std::string("/api/v1/tasks/") + uuid_pattern + "/logs",
             signed_in([this](const http_request& req, http_response& res, const principal&) {
               if (auto p = page_of(req, res, "after_id", default_log_page, max_log_page))
                 ask_actor(sys, res, handles.reader, [&](pb::TaskLogsResponse& out) { reply_json(res, out); },
                           logs_atom::value, req.matches[1].str(), p->start, p->limit);
             }));
}

} // namespace det::runtime
