#include "tools/cli_projects.hpp"

#include <iostream>
#include <iterator>
#include <stdexcept>

#include <google/protobuf/empty.pb.h>

#include "messages/api.pb.h"
#include "messages/json.hpp"
#include "tools/cli_format.hpp"
#include "tools/rest_client.hpp"

namespace det::tools {
namespace {

pb::Workspace workspace_named(rest_client& master, const std::string& name) {
  const auto all = master.get<pb::GetWorkspacesResponse>("/api/v1/workspaces");
  for (const auto& w : all.workspaces())
    if (w.name() == name)
      return w;
  throw std::runtime_error("there is no workspace " + name + " (det workspace list)");
}

pb::Project project_named(rest_client& master, const std::string& workspace, const std::string& name) {
  auto ws = workspace_named(master, workspace);
  const auto found = master.get<pb::GetWorkspaceResponse>("/api/v1/workspaces/" + std::to_string(ws.id()));
  for (const auto& p : found.projects())
    if (p.name() == name)
      return p;
  throw std::runtime_error("workspace " + workspace + " has no project " + name + " (det workspace describe " + workspace + ")");
}

void print_projects(const google::protobuf::RepeatedPtrField<pb::Project>& projects) {
  table out({"ID", "Name", "Owner", "Experiments", "Description", "Created"});
  for (const auto& p : projects)
    out.add_row({std::to_string(p.id()), p.name(), p.owner(), std::to_string(p.num_experiments()), p.description(),
                 format_time(p.created_at())});
  out.print(std::cout);
}

} // namespace

std::int64_t project_id_of(rest_client& master, const std::string& ref) {
  if (!ref.empty() && ref.find_first_not_of("0123456789") == std::string::npos)
    return std::stoll(ref);
  auto slash = ref.find('/');
  if (slash == std::string::npos)
    throw std::runtime_error("--project: expected a project id or WORKSPACE/PROJECT, not \"" + ref + "\"");
  return project_named(master, ref.substr(0, slash), ref.substr(slash + 1)).id();
}

int create_workspace(rest_client& master, const std::string& name) {
  pb::PostWorkspaceRequest request;
  request.set_name(name);
  pb::Workspace reply;
  master.post("/api/v1/workspaces", request, reply);
  std::cout << "Created workspace " << reply.name() << " (id " << reply.id() << ").\n";
  return 0;
}

int list_workspaces(rest_client& master, bool json) {
  auto all = master.get<pb::GetWorkspacesResponse>("/api/v1/workspaces");
  if (json) {
    std::cout << det::to_json(all, true) << '\n';
    return 0;
  }
  table out({"ID", "Name", "Owner", "Projects", "Created"});
  for (const auto& w : all.workspaces())
    out.add_row({std::to_string(w.id()), w.name(), w.owner(), std::to_string(w.num_projects()), format_time(w.created_at())});
  out.print(std::cout);
  return 0;
}

int describe_workspace(rest_client& master, const std::string& name, bool json) {
  auto ws = master.get<pb::GetWorkspaceResponse>("/api/v1/workspaces/" + std::to_string(workspace_named(master, name).id()));
  if (json) {
    std::cout << det::to_json(ws, true) << '\n';
    return 0;
  }
  std::cout << "Workspace " << ws.workspace().name() << " (id " << ws.workspace().id() << "), owner " << ws.workspace().owner()
            << "\n";
  print_projects(ws.projects());
  return 0;
}

int delete_workspace(rest_client& master, const std::string& name) {
  google::protobuf::Empty reply;
  master.del("/api/v1/workspaces/" + std::to_string(workspace_named(master, name).id()), reply);
  std::cout << "Deleted workspace " << name << ".\n";
  return 0;
}

int create_project(rest_client& master, const std::string& workspace, const std::string& name, const std::string& description) {
  pb::PostProjectRequest request;
  request.set_name(name);
  request.set_description(description);
  pb::Project reply;
  master.post("/api/v1/workspaces/" + std::to_string(workspace_named(master, workspace).id()) + "/projects", request, reply);
  std::cout << "Created project " << workspace << "/" << reply.name() << " (id " << reply.id() << ").\n";
  return 0;
}

int describe_project(rest_client& master, const std::string& workspace, const std::string& name, bool json) {
  auto p = project_named(master, workspace, name);
  if (json) {
    std::cout << det::to_json(p, true) << '\n';
    return 0;
  }
  google::protobuf::RepeatedPtrField<pb::Project> one;
  *one.Add() = p;
  print_projects(one);
  return 0;
}

int delete_project(rest_client& master, const std::string& workspace, const std::string& name) {
  google::protobuf::Empty reply;
  master.del("/api/v1/projects/" + std::to_string(project_named(master, workspace, name).id()), reply);
  std::cout << "Deleted project " << workspace << "/" << name << ".\n";
  return 0;
}

int project_notes(rest_client& master, const std::string& workspace, const std::string& name, const std::string& from_file) {
  auto p = project_named(master, workspace, name);
  if (!from_file.empty()) {
    pb::PatchProjectRequest change;
    change.set_notes(read_file_or_stdin(from_file));
    pb::GetProjectResponse reply;
    master.patch("/api/v1/projects/" + std::to_string(p.id()), change, reply);
    p = reply.project();
  }
  std::cout << p.notes();
  return 0;
}

int move_experiment(rest_client& master, std::int64_t id, const std::string& workspace, const std::string& project) {
  pb::MoveExperimentRequest request;
  request.set_project_id(project_named(master, workspace, project).id());
  google::protobuf::Empty reply;
  master.post(experiment_path(id) + "/move", request, reply);
  std::cout << "Moved experiment " << id << " to project " << workspace << "/" << project << ".\n";
  return 0;
}

} // namespace det::tools
