#pragma once
// The projects actor's protocol (master/projects/projects.cpp).

#include "caf/typed_actor.hpp"
#include "master/atoms.hpp"
#include "messages/interfaces.hpp"
#include "model/ids.hpp"

namespace det {

/// Workspaces and projects, on a PostgreSQL connection of its own. Deleting is refused (invalid_input)
/// for anything that holds experiments and for the Uncategorized workspace and project.
using projects_actor = caf::typed_actor<
    caf::replies_to<create_atom, pb::PostWorkspaceRequest, user_id>::with<pb::Workspace>,
    caf::replies_to<list_atom>::with<pb::GetWorkspacesResponse>,
    caf::replies_to<get_atom, workspace_id>::with<pb::GetWorkspaceResponse>,  // with its projects
    caf::replies_to<remove_atom, workspace_id>::with<bool>,
    caf::replies_to<create_atom, workspace_id, pb::PostProjectRequest, user_id>::with<pb::Project>,
    caf::replies_to<get_atom, project_id>::with<pb::Project>,
    caf::replies_to<update_atom, project_id, pb::PatchProjectRequest>::with<pb::Project>,
    caf::replies_to<remove_atom, project_id>::with<bool>,
    caf::replies_to<update_atom, experiment_id, project_id>::with<bool>>;  // moves it

} // namespace det
