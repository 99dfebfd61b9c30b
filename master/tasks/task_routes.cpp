#include "master/tasks/task_routes.hpp"

#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "master/tasks/task_lifecycle.hpp"
#include "auth/credentials.hpp"
#include "caf/all.hpp"
#include "messages/caf_types.hpp"
#include "config/config_error.hpp"
#include "config/experiment_config.hpp"
#include "config/host_access_policy.hpp"
#include "config/task_config.hpp"
#include "master/http/route_coroutine.hpp"
#include "master/http/route_helpers.hpp"
#include "master/http/session_cookie.hpp"
#include "master/tasks/task_proxy.hpp"
#include "messages/errc.hpp"

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

route_coroutine_of<bool> task_routes::add_event_directories(const pb::CreateTaskRequest& body, pb::Task& task,
                                                            reply_to out) {
  if (body.experiment_ids_size() == 0 && body.trial_ids_size() == 0) {
    out.error(errc::invalid_input, "a TensorBoard needs experiment_ids or trial_ids: the trials whose event files it shows");
    co_return false;
  }
  std::map<int64_t, pb::GetExperimentResponse> experiments;  // each read once
  std::vector<std::pair<int64_t, int64_t>> trials;            // (experiment, trial)
  std::vector<int64_t> wanted{body.experiment_ids().begin(), body.experiment_ids().end()};
  for (auto id : body.trial_ids()) {
    auto found = co_await ask<pb::GetTrialResponse>(out, handles.reader, get_atom::value, trial_id{id});
    if (!found) {
      out.error(found.error);
      co_return false;
    }
    if (found->trial().id() == 0) {
      out.error(errc::not_found, "trial " + std::to_string(id) + " not found");
      co_return false;
    }
    trials.emplace_back(found->trial().experiment_id(), id);
    wanted.push_back(found->trial().experiment_id());
  }
  for (auto id : wanted) {
    if (experiments.count(id)) continue;
    auto found = co_await ask<pb::GetExperimentResponse>(out, handles.reader, get_atom::value, experiment_id{id});
    if (!found) {
      out.error(found.error);
      co_return false;
    }
    if (found->experiment().id() == 0) {
      out.error(errc::not_found, "experiment " + std::to_string(id) + " not found");
      co_return false;
    }
    experiments[id] = std::move(*found);
  }
  std::vector<std::pair<int64_t, int64_t>> all;
  for (auto id : body.experiment_ids())
    for (const auto& t : experiments[id].trials()) all.emplace_back(id, t.id());
  all.insert(all.end(), trials.begin(), trials.end());
  std::map<int64_t, config::checkpoint_storage_config> storage;  // each experiment's, parsed once
  std::string spec, experiment_names;
  for (const auto& [exp, trial] : all) {
    if (!storage.count(exp))
      storage[exp] = config::parse_experiment_config(experiments[exp].experiment().config(),
                                                     "experiment " + std::to_string(exp))
                         .checkpoint_storage;
    spec += (spec.empty() ? "" : ",") + std::string("trial_") + std::to_string(trial) + ":" +
            storage[exp].tensorboard_dir(handles.default_checkpoint_root, exp, trial);
  }
  for (const auto& [id, e] : experiments) experiment_names += (experiment_names.empty() ? "" : ", ") + std::to_string(id);
  task.clear_entrypoint();
  for (const auto& word : {std::string("tensorboard"), std::string("--logdir_spec"), spec}) task.add_entrypoint(word);
  if (task.description() == "TensorBoard") task.set_description("TensorBoard: experiment " + experiment_names);
  co_return true;
}

route_coroutine task_routes::open_service(http_request req, reply_to out) {
  const auto id = req.matches[1].str();
  auto task = co_await ask<pb::Task>(out, handles.tasks, proxy_atom::value, id);
  if (!task) co_return out.error(task.error);
  const auto token = service_token_of(*task);
  std::string location;
  http_response res;
  if (req.get_header_value("Authorization").empty() && req.cookie(session_cookie_name).empty() &&
      (token.empty() || !auth::same_secret(req.get_param_value("token"), token))) {
    location = "/login?next=" + query_value(req.target);
  } else if (auto origin = proxy_origin_of(id, req, res); origin.empty()) {
    co_return out.finish(std::move(res));
  } else if (!token.empty() && auth::same_secret(req.get_param_value("token"), token)) {
    location = origin + req.target;  // a notebook's own link opens it there as it did here
  } else {
    auto sha = presented_token_sha256(req, scheme);
    if (!sha) co_return out.error(sha.error());
    auto who = co_await user_of_token(auth, std::move(*sha), out);
    if (!who) co_return out.error(who.error());
    location = ticket_url(*task, origin + req.target, *who, res);
    if (location.empty()) co_return out.finish(std::move(res));
  }
  res.status = 302;
  res.set_header("Location", location);
  res.set_header("Cache-Control", "no-store");
  out.finish(std::move(res));
}

route_coroutine task_routes::proxy_ticket(http_request req, principal who, reply_to out) {
  const auto id = req.matches[1].str();
  auto task = co_await ask<pb::Task>(out, handles.tasks, proxy_atom::value, id);
  if (!task) co_return out.error(task.error);
  http_response refused;
  const auto origin = proxy_origin_of(id, req, refused);
  if (origin.empty()) co_return out.finish(std::move(refused));
  const auto url = ticket_url(*task, origin + "/proxy/" + id + "/", who, refused);
  if (url.empty()) co_return out.finish(std::move(refused));
  pb::ProxyTicketResponse ticket;
  ticket.set_url(url);
  out.json(ticket);
}

std::string task_routes::proxy_origin_of(const std::string& id, const http_request& req, http_response& res) {
  auto origin = address.origin_of(id, req.get_header_value("Host"));
  if (origin.empty()) reply_error(res, errc::invalid_input, "the Host header names no host that the proxy's address can be made from");
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

route_coroutine task_routes::create_task(pb::TaskKind kind, pb::CreateTaskRequest body, principal who, reply_to out) {
  if (body.context().size() > max_context_bytes)
    co_return out.error(errc::invalid_input, "the context is " + std::to_string(body.context().size() >> 20) +
                                 " MiB; at most 96 MiB may be uploaded");
  const auto path = body.config_path().empty() ? std::string{"<request>"} : body.config_path();
  config::task_config cfg;
  try {
    cfg = config::parse_task_config(body.config(), path, from_pb(kind));
  } catch (const config::config_error& e) {
    co_return out.error(errc::invalid_input, e.what());
  }
  const auto pool = handles.pool_name(cfg.resource_pool, cfg.slots);
  if (!handles.pools_at(pool))
    co_return out.error(errc::invalid_input, path + ": resources.resource_pool: there is no resource pool named " + pool);
  if (auto refusal = config::host_access_refusal(handles.host_access, handles.default_checkpoint_root, cfg);
      !refusal.empty())
    co_return out.error(errc::forbidden, path + ": " + refusal);
  pb::Task task;
  task.set_kind(kind);
  task.set_owner_id(who.user_id);
  task.set_description(cfg.description.empty() ? default_description(from_pb(kind), cfg.entrypoint) : cfg.description);
  task.set_config(body.config());
  task.set_slots(cfg.slots);
  task.set_resource_pool(pool);
  for (const auto& word : cfg.entrypoint) task.add_entrypoint(word);
  if (kind == pb::TASK_KIND_TENSORBOARD) {
    const bool found = co_await add_event_directories(body, task, out);
    if (!found) co_return;
  }
  if (kind != pb::TASK_KIND_TENSORBOARD && (body.experiment_ids_size() || body.trial_ids_size()))
    co_return out.error(errc::invalid_input, "experiment_ids and trial_ids are a TensorBoard's");
  auto created = co_await ask<pb::Task>(out, handles.tasks, create_atom::value, std::move(task),
                                        std::move(*body.mutable_context()));
  if (!created) co_return out.error(created.error);
  out.json(reply_of(as_seen_by(std::move(*created), who)));
}

route_coroutine_of<std::optional<pb::Task>> task_routes::owned_task(std::string id, pb::TaskKind kind, principal who,
                                                                    std::string verb, reply_to out) {
  auto task = co_await ask<pb::Task>(out, handles.tasks, get_atom::value, id);
  if (!task) {
    out.error(task.error);
    co_return std::nullopt;
  }
  const auto what = config::to_string(from_pb(kind)) + " " + id;
  if (task->kind() != kind) {
    out.error(errc::not_found, "there is no " + what);
    co_return std::nullopt;
  }
  if (auto e = require_owner(who, task->owner_id(), task->owner(), what, verb)) {
    out.error(e);
    co_return std::nullopt;
  }
  co_return std::move(*task);
}

void task_routes::add_to(http_router& server) {
  auto route = [this](auto coroutine) { return guards.signed_in(coroutine_route(sys, std::move(coroutine))); };
  for (const auto kind : kinds) {
    const std::string base = std::string("/api/v1/") + route_plural(kind);
    server.Post(base, guards.signed_in([this, kind](const http_request& req, http_response& res, const principal& who) {
      if (auto body = body_of<pb::CreateTaskRequest>(req, res)) create_task(kind, std::move(*body), who, reply_to{sys, res});
    }));
    server.Get(base, route([this, kind](http_request, principal who, reply_to out) -> route_coroutine {
      auto tasks = co_await ask<std::vector<pb::Task>>(out, handles.tasks, list_atom::value, kind);
      if (!tasks) co_return out.error(tasks.error);
      out.json(list_of(kind, *tasks, who));
    }));
    server.Get(base + "/" + uuid_pattern, route([this, kind](http_request req, principal who, reply_to out) -> route_coroutine {
      const auto id = req.matches[1].str();
      auto task = co_await ask<pb::Task>(out, handles.tasks, get_atom::value, id);
      if (!task) co_return out.error(task.error);
      if (task->kind() != kind) co_return out.error(errc::not_found, "there is no " + config::to_string(from_pb(kind)) + " " + id);
      out.json(reply_of(as_seen_by(std::move(*task), who)));
    }));
    server.Post(base + "/" + uuid_pattern + "/kill",
                route([this, kind](http_request req, principal who, reply_to out) -> route_coroutine {
                  const auto id = req.matches[1].str();
                  auto owned = co_await owned_task(id, kind, who, "kill", out);
                  if (!owned) co_return;
                  auto killed = co_await ask<bool>(out, handles.tasks, kill_atom::value, id);
                  if (!killed) co_return out.error(killed.error);
                  out.empty_json();
                }));
  }
  server.Get("/api/v1/tasks", route([this](http_request, principal, reply_to out) -> route_coroutine {
    auto summaries = co_await ask<pb::GetTaskSummariesResponse>(out, handles.tasks, list_atom::value);
    json_or_error(out, summaries);
  }));
  server.Get(std::string("/api/v1/tasks/") + uuid_pattern,
             route([this](http_request req, principal who, reply_to out) -> route_coroutine {
               auto task = co_await ask<pb::Task>(out, handles.tasks, get_atom::value, req.matches[1].str());
               if (!task) co_return out.error(task.error);
               out.json(reply_of(as_seen_by(std::move(*task), who)));
             }));
  server.Post(std::string("/api/v1/tasks/") + uuid_pattern + "/proxy_ticket",
              guards.signed_in([this](const http_request& req, http_response& res, const principal& who) {
                proxy_ticket(req, who, reply_to{sys, res});
              }));
  server.Get(std::string("/proxy/") + uuid_pattern + "/.*",
             [this](const http_request& req, http_response& res) { open_service(req, reply_to{sys, res}); });
  server.Get(std::string("/api/v1/tasks/") + uuid_pattern + "/logs",
             guards.signed_in([this](const http_request& req, http_response& res, const principal&) {
               if (auto p = page_of(req, res, "after_id", default_log_page, max_log_page))
                 ask_deferred<pb::TaskLogsResponse>(
                     sys, res, handles.reader, [](const pb::TaskLogsResponse& logs, http_response& made) { reply_json(made, logs); },
                     logs_atom::value, req.matches[1].str(), p->start, p->limit);
             }));
}

} // namespace det::runtime
