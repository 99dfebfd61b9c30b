#include "master/projects/project_routes.hpp"

#include <optional>

#include "caf/all.hpp"
#include "master/http/route_coroutine.hpp"
#include "master/http/route_helpers.hpp"
#include "messages/errc.hpp"
#include "storage/stored_rows.hpp"

namespace det::runtime {

void project_routes::add_to(http_router& server) {
  auto route = [this](auto coroutine) { return guards.signed_in(coroutine_route(sys, std::move(coroutine))); };

  server.Post("/api/v1/workspaces", route([this](http_request req, principal who, reply_to out) -> route_coroutine {
    http_response refused;
    auto body = body_of<pb::PostWorkspaceRequest>(req, refused);
    if (!body) co_return out.finish(std::move(refused));
    if (auto why = bad_name_reason("workspace", body->name()); !why.empty()) co_return out.error(errc::invalid_input, why);
    auto created = co_await ask<pb::Workspace>(out, projects, create_atom::value, std::move(*body), user_id{who.user_id});
    json_or_error(out, created);
  }));
  server.Get("/api/v1/workspaces", route([this](http_request, principal, reply_to out) -> route_coroutine {
    auto all = co_await ask<pb::GetWorkspacesResponse>(out, projects, list_atom::value);
    json_or_error(out, all);
  }));
  server.Get(R"(/api/v1/workspaces/(\d+))", route([this](http_request req, principal, reply_to out) -> route_coroutine {
    auto found = co_await ask<pb::GetWorkspaceResponse>(out, projects, get_atom::value, workspace_id{path_id(req)});
    json_or_error(out, found);
  }));
  server.Get(R"(/api/v1/workspaces/(\d+)/projects)",
             route([this](http_request req, principal, reply_to out) -> route_coroutine {
               auto w = co_await ask<pb::GetWorkspaceResponse>(out, projects, get_atom::value, workspace_id{path_id(req)});
               if (!w) co_return out.error(w.error);
               pb::GetProjectsResponse found;
               *found.mutable_projects() = std::move(*w->mutable_projects());
               out.json(found);
             }));
  server.Delete(R"(/api/v1/workspaces/(\d+))",
                route([this](http_request req, principal who, reply_to out) -> route_coroutine {
                  const auto id = path_id(req);
                  auto w = co_await ask<pb::GetWorkspaceResponse>(out, projects, get_atom::value, workspace_id{id});
                  if (!w) co_return out.error(w.error);
                  const auto& ws = w->workspace();
                  if (auto e = require_owner(who, ws.owner_id(), ws.owner(), "workspace " + ws.name(), "delete"))
                    co_return out.error(e);
                  auto removed = co_await ask<bool>(out, projects, remove_atom::value, workspace_id{id});
                  if (!removed) co_return out.error(removed.error);
                  out.empty_json();
                }));
  server.Post(R"(/api/v1/workspaces/(\d+)/projects)",
              route([this](http_request req, principal who, reply_to out) -> route_coroutine {
                http_response refused;
                auto body = body_of<pb::PostProjectRequest>(req, refused);
                if (!body) co_return out.finish(std::move(refused));
                if (auto why = bad_name_reason("project", body->name()); !why.empty()) co_return out.error(errc::invalid_input, why);
                const auto id = path_id(req);
                auto w = co_await ask<pb::GetWorkspaceResponse>(out, projects, get_atom::value, workspace_id{id});
                if (!w) co_return out.error(w.error);
                // Uncategorized is everyone's; another workspace takes projects from its owner or an admin.
                const auto& ws = w->workspace();
                if (ws.id() != storage::default_workspace_id)
                  if (auto e = require_owner(who, ws.owner_id(), ws.owner(), "workspace " + ws.name(), "add projects to"))
                    co_return out.error(e);
                auto created = co_await ask<pb::Project>(out, projects, create_atom::value, workspace_id{id},
                                                         std::move(*body), user_id{who.user_id});
                json_or_error(out, created);
              }));
  server.Get(R"(/api/v1/projects/(\d+))", route([this](http_request req, principal, reply_to out) -> route_coroutine {
    auto p = co_await ask<pb::Project>(out, projects, get_atom::value, project_id{path_id(req)});
    if (!p) co_return out.error(p.error);
    pb::GetProjectResponse found;
    *found.mutable_project() = std::move(*p);
    out.json(found);
  }));
  // The project the path names, for its owner or an admin: nullopt once `out` has the refusal.
  auto owned_project = [this](int64_t id, principal who, std::string verb, reply_to out)
      -> route_coroutine_of<std::optional<pb::Project>> {
    auto p = co_await ask<pb::Project>(out, projects, get_atom::value, project_id{id});
    if (!p) {
      out.error(p.error);
      co_return std::nullopt;
    }
    if (auto e = require_owner(who, p->owner_id(), p->owner(), "project " + p->workspace() + "/" + p->name(), verb)) {
      out.error(e);
      co_return std::nullopt;
    }
    co_return std::move(*p);
  };
  server.Patch(R"(/api/v1/projects/(\d+))",
               route([this, owned_project](http_request req, principal who, reply_to out) -> route_coroutine {
                 http_response refused;
                 auto body = body_of<pb::PatchProjectRequest>(req, refused);
                 if (!body) co_return out.finish(std::move(refused));
                 if (!body->has_description() && !body->has_notes())
                   co_return out.error(errc::invalid_input, "the request changes nothing: set description or notes");
                 const auto id = path_id(req);
                 auto owned = co_await owned_project(id, who, "change", out);
                 if (!owned) co_return;
                 auto p = co_await ask<pb::Project>(out, projects, update_atom::value, project_id{id}, *body);
                 if (!p) co_return out.error(p.error);
                 pb::GetProjectResponse changed;
                 *changed.mutable_project() = std::move(*p);
                 out.json(changed);
               }));
  server.Delete(R"(/api/v1/projects/(\d+))",
                route([this, owned_project](http_request req, principal who, reply_to out) -> route_coroutine {
                  const auto id = path_id(req);
                  auto owned = co_await owned_project(id, who, "delete", out);
                  if (!owned) co_return;
                  auto removed = co_await ask<bool>(out, projects, remove_atom::value, project_id{id});
                  if (!removed) co_return out.error(removed.error);
                  out.empty_json();
                }));
}

} // namespace det::runtime
