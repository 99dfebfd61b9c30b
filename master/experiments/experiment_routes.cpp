#include "master/experiments/experiment_routes.hpp"

#include <type_traits>

#include "caf/all.hpp"
#include "master/local_interfaces.hpp"
#include "master/experiments/experiment_rules.hpp"
#include "master/http/route_helpers.hpp"
#include "messages/errc.hpp"
#include "messages/preview_json.hpp"
#include "storage/stored_rows.hpp"

namespace det::runtime {
namespace {

// Determined's default page of 100 experiments, at most 1,000.
constexpr int32_t default_experiment_page = 100;
constexpr int32_t max_experiment_page = 1000;

/// Why `who` may not put experiments into project `id` (Uncategorized is everyone's, another
/// project takes them from its owner or an admin), from the projects actor's answer; or none.
caf::error project_refusal(asked<pb::Project>& project, int64_t id, const principal& who) {
  if (!project)
    return project.error == errc::not_found
               ? make_error(errc::invalid_input, "project_id: there is no project " + std::to_string(id))
               : std::move(project.error);
  if (project->id() == storage::default_project_id) return {};
  return require_owner(who, project->owner_id(), project->owner(),
                       "project " + project->workspace() + "/" + project->name(), "add experiments to");
}

} // namespace

route_coroutine experiment_routes::create(pb::CreateExperimentRequest body, principal who, reply_to out) {
  if (body.parent_id() < 0)
    co_return out.error(errc::invalid_input, "parent_id must be an experiment's id");
  if (const auto parent_id = body.parent_id(); parent_id > 0) {
    auto parent = co_await ask<pb::GetExperimentResponse>(out, handles.reader, get_atom::value, experiment_id{parent_id});
    if (!parent) co_return out.error(parent.error);
    if (parent->experiment().id() == 0)
      co_return out.error(errc::not_found, "parent_id: experiment " + std::to_string(parent_id) + " not found");
    std::string parent_model;
    if (body.model_definition().empty()) {
      auto archive = co_await ask<std::string>(out, handles.reader, model_atom::value, experiment_id{parent_id});
      if (!archive) co_return out.error(archive.error);
      parent_model = std::move(*archive);
    }
    inherit_from_parent(body, parent->experiment(), std::move(parent_model));
  }
  if (const auto project_id = body.project_id(); project_id != 0) {
    auto project = co_await ask<pb::Project>(out, handles.projects, get_atom::value, det::project_id{project_id});
    if (auto refusal = project_refusal(project, project_id, who)) co_return out.error(refusal);
  }
  auto path = config_source(body.config_path(), body.config());
  auto cfg = checked_submission(body, path, handles);
  if (!cfg) co_return out.error(cfg.error());
  if (body.validate_only()) {
    pb::CreateExperimentResponse resp;
    resp.mutable_experiment()->set_name(cfg->name);
    co_return out.json(resp);
  }
  body.set_config_path(path);
  auto created = co_await ask<pb::CreateExperimentResponse>(out, front, std::move(body), user_id{who.user_id});
  if (!created) co_return out.error(created.error);
  created->mutable_experiment()->set_owner(who.username);
  out.json(*created);
}

route_coroutine experiment_routes::continue_trial(int64_t id, pb::ContinueTrialRequest body, principal who,
                                                  reply_to out) {
  auto found = co_await ask<pb::GetTrialResponse>(out, handles.reader, get_atom::value, trial_id{id});
  if (!found) co_return out.error(found.error);
  if (found->trial().id() == 0) co_return out.error(errc::not_found, "trial " + std::to_string(id) + " not found");
  auto parent = co_await ask<pb::GetExperimentResponse>(out, handles.reader, get_atom::value,
                                                        experiment_id{found->trial().experiment_id()});
  if (!parent) co_return out.error(parent.error);
  auto continuation = continuation_of(found->trial(), parent->experiment(), body.max_length());
  if (!continuation) co_return out.error(continuation.error());
  create(std::move(*continuation), std::move(who), std::move(out));
}

template <class... Msg>
route_coroutine experiment_routes::signal(int64_t id, const char* verb, reply_to out, Msg... msg) {
  auto live = co_await ask<bool>(out, front, std::move(msg)...);
  if (!live) co_return out.error(live.error);
  if (*live) co_return out.empty_json();
  auto found = co_await ask<pb::GetExperimentResponse>(out, handles.reader, get_atom::value, experiment_id{id});
  if (!found) co_return out.error(found.error);
  auto stored = stored_experiment(id, *found);
  if (!stored) co_return out.error(stored.error());
  if ((std::is_same_v<Msg, kill_atom> || ...)) co_return out.empty_json();  // already ended: nothing to kill
  out.error(errc::invalid_input, "experiment " + std::to_string(id) + " has ended (" + pb::State_Name(stored->state()) +
                                     ") and cannot be " + verb);
}

route_coroutine experiment_routes::patch(int64_t id, std::optional<pb::PatchExperimentRequest> annotation,
                                         std::optional<pb::JobSettings> change, reply_to out) {
  if (annotation) {
    auto stored = co_await ask<bool>(out, handles.persistence, update_atom::value, experiment_id{id},
                                     std::move(*annotation));
    if (!stored) co_return out.error(stored.error);
  }
  if (!change) co_return out.empty_json();
  signal(id, "changed", std::move(out), experiment_id{id}, std::move(*change));
}

route_coroutine experiment_routes::move(int64_t id, int64_t to, principal who, reply_to out) {
  auto project = co_await ask<pb::Project>(out, handles.projects, get_atom::value, project_id{to});
  if (auto refusal = project_refusal(project, to, who)) co_return out.error(refusal);
  auto moved = co_await ask<bool>(out, handles.projects, update_atom::value, experiment_id{id}, project_id{to});
  if (!moved) co_return out.error(moved.error);
  out.empty_json();
}

void experiment_routes::archive(int64_t id, bool archived, http_response& res) {
  ask_deferred<bool>(
      sys, res, handles.persistence,
      [id, archived](bool done, http_response& made) {
        if (done) return made.set_content("{}", "application/json");
        reply_error(made, errc::invalid_input, "experiment " + std::to_string(id) +
                                                   " has not ended: kill it or let it finish before " +
                                                   (archived ? "archiving" : "unarchiving") + " it");
      },
      archive_atom::value, experiment_id{id}, archived);
}

void experiment_routes::add_to(http_router& server) {
  server.Post("/api/v1/experiments", guards.signed_in([this](const http_request& req, http_response& res,
                                                             const principal& who) {
    if (auto body = body_of<pb::CreateExperimentRequest>(req, res)) create(std::move(*body), who, reply_to{sys, res});
  }));
  server.Post(R"(/api/v1/trials/(\d+)/continue)", guards.signed_in([this](const http_request& req, http_response& res,
                                                                          const principal& who) {
    if (auto body = body_of<pb::ContinueTrialRequest>(req, res))
      continue_trial(path_id(req), std::move(*body), who, reply_to{sys, res});
  }));
  server.Post("/api/v1/preview-hp-search", guards.reader([this](const http_request& req, http_response& res) {
    auto body = body_of<pb::PreviewSearchRequest>(req, res);
    if (!body) return;
    auto plan = search_preview(*body, handles.max_grid_trials);
    if (!plan) return reply_error(res, sys, plan.error());
    res.set_content(preview_to_json(*plan), "application/json");
  }));
  server.Get("/api/v1/experiments", guards.shared_reader([this](const http_request& req, http_response& res) {
    auto p = page_of(req, res, "offset", default_experiment_page, max_experiment_page);
    if (!p) return;
    auto filter = experiment_filter_of(req);
    if (!filter) return reply_error(res, sys, filter.error());
    answer_json<pb::GetExperimentsResponse>(sys, res, handles.reader, list_atom::value, p->start, p->limit,
                                            std::move(*filter));
  }));
  server.Get(R"(/api/v1/experiments/(\d+))", guards.shared_reader([this](const http_request& req, http_response& res) {
    answer_json_found<pb::GetExperimentResponse>(
        sys, res, [](auto& r) { return r.experiment().id() != 0; }, "experiment " + req.matches[1].str() + " not found",
        handles.reader, get_atom::value, experiment_id{path_id(req)});
  }));
  server.Post(R"(/api/v1/experiments/(\d+)/kill)", guards.experiment_owner("kill", [this](const http_request& req,
                                                                                          http_response& res) {
    signal(path_id(req), "killed", reply_to{sys, res}, kill_atom::value, experiment_id{path_id(req)});
  }));
  server.Post(R"(/api/v1/experiments/(\d+)/pause)", guards.experiment_owner("pause", [this](const http_request& req,
                                                                                            http_response& res) {
    signal(path_id(req), "paused", reply_to{sys, res}, pause_atom::value, experiment_id{path_id(req)});
  }));
  server.Post(R"(/api/v1/experiments/(\d+)/activate)",
              guards.experiment_owner("activate", [this](const http_request& req, http_response& res) {
                signal(path_id(req), "activated", reply_to{sys, res}, activate_atom::value, experiment_id{path_id(req)});
              }));
  server.Patch(R"(/api/v1/experiments/(\d+))", guards.experiment_owner("change", [this](const http_request& req,
                                                                                        http_response& res) {
    auto body = body_of<pb::PatchExperimentRequest>(req, res);
    if (!body) return;
    auto changes = patch_of(*body);
    if (!changes) return reply_error(res, sys, changes.error());
    patch(path_id(req), std::move(changes->annotation), std::move(changes->scheduling), reply_to{sys, res});
  }));
  for (bool archived : {true, false})
    server.Post(archived ? R"(/api/v1/experiments/(\d+)/archive)" : R"(/api/v1/experiments/(\d+)/unarchive)",
                guards.experiment_owner(archived ? "archive" : "unarchive",
                                        [this, archived](const http_request& req, http_response& res) {
                                          archive(path_id(req), archived, res);
                                        }));
  server.Post(R"(/api/v1/experiments/(\d+)/labels)", guards.experiment_owner("label", [this](const http_request& req,
                                                                                             http_response& res) {
    auto body = body_of<pb::LabelRequest>(req, res);
    if (!body) return;
    if (auto refusal = label_refusal(body->label())) return reply_error(res, sys, refusal);
    answer_done(sys, res, handles.persistence, add_atom::value, experiment_id{path_id(req)}, body->label());
  }));
  server.Delete(R"(/api/v1/experiments/(\d+)/labels/(.+))",
                guards.experiment_owner("remove a label of", [this](const http_request& req, http_response& res) {
                  answer_done(sys, res, handles.persistence, remove_atom::value, experiment_id{path_id(req)},
                              req.matches[2].str());
                }));
  server.Post(R"(/api/v1/experiments/(\d+)/move)", guards.experiment_owner("move", [this](const http_request& req,
                                                                                          http_response& res,
                                                                                          const principal& who) {
    auto body = body_of<pb::MoveExperimentRequest>(req, res);
    if (body) move(path_id(req), body->project_id(), who, reply_to{sys, res});
  }));
  server.Delete(R"(/api/v1/experiments/(\d+))", guards.experiment_owner("delete", [this](const http_request& req,
                                                                                         http_response& res) {
    answer_done(sys, res, handles.collector, remove_atom::value, experiment_id{path_id(req)});
  }));
}

} // namespace det::runtime
