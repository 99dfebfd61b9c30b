#pragma once
// `det workspace ...`, `det project ...` and `det experiment move`, after Determined's CLI.

#include <cstdint>
#include <string>

namespace det::tools {

class rest_client;

/// The id of the project `ref` names: an id, or "WORKSPACE/PROJECT"; throws a sentence otherwise.
std::int64_t project_id_of(rest_client& master, const std::string& ref);

int create_workspace(rest_client& master, const std::string& name);
int list_workspaces(rest_client& master, bool json);
/// The workspace and its projects.
int describe_workspace(rest_client& master, const std::string& name, bool json);
int delete_workspace(rest_client& master, const std::string& name);

int create_project(rest_client& master, const std::string& workspace, const std::string& name, const std::string& description);
int describe_project(rest_client& master, const std::string& workspace, const std::string& name, bool json);
int delete_project(rest_client& master, const std::string& workspace, const std::string& name);
/// Prints the notes; with `from_file` ("-": stdin) replaces them first.
int project_notes(rest_client& master, const std::string& workspace, const std::string& name, const std::string& from_file);

int move_experiment(rest_client& master, std::int64_t id, const std::string& workspace, const std::string& project);

} // namespace det::tools
