#include "runtime/project_routes.hpp"

#include <optional>

#include "caf/all.hpp"
#include "runtime/route_helpers.hpp"

namespace det::runtime {

void project_routes::add_to(http_router& server) {
  auto ask = [this](http_response& res, auto done, auto... xs) { ask_actor(sys, res, projects, done, xs...); };
  auto id_of = [](const http_request& req) { return parse_id(req.matches[1]).value_or(0); };

  server.Post("/api/v1/workspaces", signed_in([ask](const http_request& req, http_response& res, const principal& who) {
    auto body = body_of<pb::PostWorkspaceRequest>(req, res);
    if (!body)
      return;
    if (auto why = bad_name_reason("workspace", body->name()); !why.empty())
      return reply_error(res, 400, why);
    ask(res, [&](pb::Workspace& w) { reply_json(res, w); }, create_atom::value, std::move(*body), user_id{who.user_id});
  }));
  server.Get("/api/v1/workspaces", signed_in([ask](const http_request&, http_response& res, const principal&) {
    ask(res, [&](pb::GetWorkspacesResponse& out) { reply_json(res, out); }, list_atom::value);
  }));
  server.Get(R"(/api/v1/workspaces/(\d+))", signed_in([ask, id_of](const http_request& req, http_response& res, const principal&) {
    ask(res, [&](pb::GetWorkspaceResponse& out) { reply_json(res, out); }, get_atom::value, workspace_id{id_of(req)});
  }));
  server.Get(R"(/api/v1/workspaces/(\d+)/projects)",
             signed_in([ask, id_of](const http_request& req, http_response& res, const principal&) {
               ask(res, [&](pb::GetWorkspaceResponse& w) {
                 pb::GetProjectsResponse out;
                 *out.mutable_projects() = std::move(*w.mutable_projects());
                 reply_json(res, out);
               }, get_atom::value, workspace_id{id_of(req)});
             }));
  server.Delete(R"(/api/v1/workspaces/(\d+))",
                signed_in([this, ask, id_of](const http_request& req, http_response& res, const principal& who) {
                  const auto id = id_of(req);
                  ask(res, [&](pb::GetWorkspaceResponse& w) {
                    const auto& ws = w.workspace();
                    if (auto e = require_owner(who, ws.owner_id(), ws.owner(), "workspace " + ws.name(), "delete"))
                      return reply_error(res, sys, e);
                    ask(res, [&](bool) { res.set_content("{}", "application/json"); }, remove_atom::value, workspace_id{id});
                  }, get_atom::value, workspace_id{id});
                }));
  server.Post(R"(/api/v1/workspaces/(\d+)/projects)",
              signed_in([this, ask, id_of](const http_request& req, http_response& res, const principal& who) {
                auto body = body_of<pb::PostProjectRequest>(req, res);
                if (!body)
                  return;
                if (auto why = bad_name_reason("project", body->name()); !why.empty())
                  return reply_error(res, 400, why);
                const auto id = id_of(req);
                ask(res, [&](pb::GetWorkspaceResponse& w) {
                  // Uncategorized is everyone's; another workspace takes projects from its owner or an admin.
                  const auto& ws = w.workspace();
                  if (ws.id() != storage::database::default_workspace_id)
                    if (auto e = require_owner(who, ws.owner_id(), ws.owner(), "workspace " + ws.name(), "add projects to"))
                      return reply_error(res, sys, e);
                  ask(res, [&](pb::Project& p) { reply_json(res, p); }, create_atom::value, workspace_id{id}, std::move(*body),
                      user_id{who.user_id});
                }, get_atom::value, workspace_id{id});
              }));
  server.Get(R"(/api/v1/projects/(\d+))", signed_in([ask, id_of](const http_request& req, http_response& res, const principal&) {
    ask(res, [&](pb::Project& p) {
      pb::GetProjectResponse out;
      *out.mutable_project() = std::move(p);
      reply_json(res, out);
    }, get_atom::value, project_id{id_of(req)});
  }));
  // The project the path names, checked for its owner or an admin, then `then(id)`.
  auto owned_project = [this, ask, id_of](const http_request& req, http_response& res, const principal& who,
                                          const std::string& verb, auto then) {
    const auto id = id_of(req);
    ask(res, [&](pb::Project& p) {
      if (auto e = require_owner(who, p.owner_id(), p.owner(), "project " + p.workspace() + "/" + p.name(), verb))
        return reply_error(res, sys, e);
      then(id);
    }, get_atom::value, project_id{id});
  };
  server.Patch(R"(/api/v1/projects/(\d+))",
               signed_in([ask, owned_project](const http_request& req, http_response& res, const principal& who) {
                 auto body = body_of<pb::PatchProjectRequest>(req, res);
                 if (!body)
                   return;
                 if (!body->has_description() && !body->has_notes())
                   return reply_error(res, 400, "the request changes nothing: set description or notes");
                 owned_project(req, res, who, "change", [&](int64_t id) {
                   ask(res, [&](pb::Project& p) {
                     pb::GetProjectResponse out;
                     *out.mutable_project() = std::move(p);
                     reply_json(res, out);
                   }, update_atom::value, project_id{id}, *body);
                 });
               }));
  server.Delete(R"(/api/v1/projects/(\d+))",
                signed_in([ask, owned_project](const http_request& req, http_response& res, const principal& who) {
                  owned_project(req, res, who, "delete", [&](int64_t id) {
                    ask(res, [&](bool) { res.set_content("{}", "application/json"); }, remove_atom::value, project_id{id});
                  });
                }));
}

} // namespace det::runtime
