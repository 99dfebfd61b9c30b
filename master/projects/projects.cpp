// Workspaces and projects in PostgreSQL, on a connection of its own. Who may change them is the
// gateway's to decide; what may be deleted (nothing that holds experiments, never the
// Uncategorized workspace and project) is decided here.

#include <memory>
#include <variant>

#include "master/spawn.hpp"
#include "master/persistence/storage_answer.hpp"
#include "caf/all.hpp"
#include "storage/database.hpp"

namespace det {
namespace {

struct projects_state {
  static inline const char* name = "projects";
  std::unique_ptr<storage::database> db;
};

using self_ptr = projects_actor::stateful_pointer<projects_state>;

caf::error refused(const std::string& sentence) {
  return make_error(errc::invalid_input, sentence);
}

projects_actor::behavior_type projects_impl(self_ptr self, std::string conninfo) {
  self->state.db = std::make_unique<storage::database>(conninfo);
  auto& db = *self->state.db;
  return {
      [&db](create_atom, pb::PostWorkspaceRequest& req, user_id owner) {
        return answer_or_refusal<pb::Workspace>("store workspace " + req.name(), [&]() -> or_refusal<pb::Workspace> {
          if (auto w = db.insert_workspace(req.name(), owner.value))
            return *w;
          return refused("the workspace name " + req.name() + " is taken");
        });
      },
      [&db](list_atom) {
        return answer_with(attempt_storage("cannot list the workspaces", [&] {
          pb::GetWorkspacesResponse out;
          for (auto& w : db.list_workspaces()) *out.add_workspaces() = std::move(w);
          return out;
        }));
      },
      [&db](get_atom, workspace_id id) {
        return answer_or_refusal<pb::GetWorkspaceResponse>("read workspace " + std::to_string(id.value),
                                                [&]() -> or_refusal<pb::GetWorkspaceResponse> {
                                                  auto w = db.get_workspace(id.value);
                                                  if (!w)
                                                    return make_error(errc::not_found, "there is no workspace " + std::to_string(id.value));
                                                  pb::GetWorkspaceResponse out;
                                                  *out.mutable_workspace() = std::move(*w);
                                                  for (auto& p : db.projects_of(id.value)) *out.add_projects() = std::move(p);
                                                  return out;
                                                });
      },
      [&db](remove_atom, workspace_id id) {
        return answer_or_refusal<bool>("delete workspace " + std::to_string(id.value), [&]() -> or_refusal<bool> {
          auto workspace = db.get_workspace(id.value);
          if (!workspace)
            return make_error(errc::not_found, "there is no workspace " + std::to_string(id.value));
          if (id.value == storage::default_workspace_id)
            return refused("workspace " + workspace->name() + " holds the Uncategorized project and cannot be deleted");
          for (const auto& p : db.projects_of(id.value))
            if (p.num_experiments() > 0)
              return refused("project " + p.workspace() + "/" + p.name() + " holds " + std::to_string(p.num_experiments()) +
                             " experiments: move or delete them first");
          db.delete_workspace(id.value);
          return true;
        });
      },
      [&db](create_atom, workspace_id ws, pb::PostProjectRequest& req, user_id owner) {
        return answer_or_refusal<pb::Project>("store project " + req.name(), [&]() -> or_refusal<pb::Project> {
          auto w = db.get_workspace(ws.value);
          if (!w)
            return make_error(errc::not_found, "there is no workspace " + std::to_string(ws.value));
          if (auto p = db.insert_project(ws.value, req.name(), req.description(), owner.value))
            return *p;
          return refused("workspace " + w->name() + " already has a project " + req.name());
        });
      },
      [&db](get_atom, project_id id) {
        return answer_or_refusal<pb::Project>("read project " + std::to_string(id.value), [&]() -> or_refusal<pb::Project> {
          if (auto p = db.get_project(id.value))
            return *p;
          return make_error(errc::not_found, "there is no project " + std::to_string(id.value));
        });
      },
      [&db](update_atom, project_id id, pb::PatchProjectRequest& change) {
        return answer_or_refusal<pb::Project>("change project " + std::to_string(id.value), [&]() -> or_refusal<pb::Project> {
          db.annotate_project(id.value, change);
          return *db.get_project(id.value);
        });
      },
      [&db](remove_atom, project_id id) {
        return answer_or_refusal<bool>("delete project " + std::to_string(id.value), [&]() -> or_refusal<bool> {
          auto p = db.get_project(id.value);
          if (!p)
            return make_error(errc::not_found, "there is no project " + std::to_string(id.value));
          if (p->id() == storage::default_project_id)
            return refused("the Uncategorized project cannot be deleted");
          if (p->num_experiments() > 0)
            return refused("project " + p->workspace() + "/" + p->name() + " holds " + std::to_string(p->num_experiments()) +
                           " experiments: move or delete them first");
          db.delete_project(id.value);
          return true;
        });
      },
      [&db](update_atom, experiment_id exp, project_id id) {
        return answer_or_refusal<bool>("move experiment " + std::to_string(exp.value), [&]() -> or_refusal<bool> {
          if (!db.get_project(id.value))
            return make_error(errc::not_found, "there is no project " + std::to_string(id.value));
          db.move_experiment(exp.value, id.value);
          return true;
        });
      },
  };
}

} // namespace

projects_actor spawn_projects(caf::actor_system& sys, const std::string& conninfo) {
  return sys.spawn<caf::detached>(projects_impl, conninfo);
}

} // namespace det
