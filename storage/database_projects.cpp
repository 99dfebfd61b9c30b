// Workspaces and projects: where experiments are kept. The first workspace and project
// (Uncategorized, made by migration 0015) hold what names none and cannot be deleted.

#include "storage/database_impl.hpp"
#include "storage/sql_values.hpp"

namespace det::storage {

namespace {

const std::string workspace_select =
    "SELECT w.id, w.name, w.owner_id, u.username, " + micros_of("w.created_at") +
    ", (SELECT count(*) FROM projects p WHERE p.workspace_id = w.id) FROM workspaces w JOIN users u ON u.id = w.owner_id ";

pb::Workspace workspace_from(const pqxx::row& row) {
  pb::Workspace w;
  w.set_id(row[0].as<int64_t>());
  w.set_name(row[1].as<std::string>());
  w.set_owner_id(row[2].as<int64_t>());
  w.set_owner(row[3].as<std::string>());
  if (auto time = time_from(row[4])) *w.mutable_created_at() = *time;
  w.set_num_projects(row[5].as<int32_t>());
  return w;
}

const std::string project_select =
    "SELECT p.id, p.workspace_id, w.name, p.name, p.description, p.notes, p.owner_id, u.username, " +
    micros_of("p.created_at") + ", (SELECT count(*) FROM experiments e WHERE e.project_id = p.id) "
    "FROM projects p JOIN workspaces w ON w.id = p.workspace_id JOIN users u ON u.id = p.owner_id ";

pb::Project project_from(const pqxx::row& row) {
  pb::Project p;
  p.set_id(row[0].as<int64_t>());
  p.set_workspace_id(row[1].as<int64_t>());
  p.set_workspace(row[2].as<std::string>());
  p.set_name(row[3].as<std::string>());
  p.set_description(row[4].as<std::string>());
  p.set_notes(row[5].as<std::string>());
  p.set_owner_id(row[6].as<int64_t>());
  p.set_owner(row[7].as<std::string>());
  if (auto time = time_from(row[8])) *p.mutable_created_at() = *time;
  p.set_num_experiments(row[9].as<int32_t>());
  return p;
}

}  // namespace

std::optional<pb::Workspace> database::insert_workspace(const std::string& name, int64_t owner_id) {
  return describing_failure("store workspace " + name, [&]() -> std::optional<pb::Workspace> {
    pqxx::work tx{impl_->connection};
    auto rows = tx.exec_params("INSERT INTO workspaces (name, owner_id) VALUES ($1, $2) ON CONFLICT (name) DO NOTHING RETURNING id",
                               name, owner_id);
    if (rows.empty()) return std::nullopt;
    auto row = tx.exec_params1(workspace_select + "WHERE w.id = $1", rows[0][0].as<int64_t>());
    tx.commit();
    return workspace_from(row);
  });
}

std::vector<pb::Workspace> database::list_workspaces() {
  return describing_failure("list the workspaces", [&] {
    pqxx::read_transaction tx{impl_->connection};
    std::vector<pb::Workspace> out;
    for (const auto& row : tx.exec(workspace_select + "ORDER BY w.id")) out.push_back(workspace_from(row));
    return out;
  });
}

std::optional<pb::Workspace> database::get_workspace(int64_t id) {
  return describing_failure("read workspace " + std::to_string(id), [&]() -> std::optional<pb::Workspace> {
    pqxx::read_transaction tx{impl_->connection};
    auto rows = tx.exec_params(workspace_select + "WHERE w.id = $1", id);
    if (rows.empty()) return std::nullopt;
    return workspace_from(rows[0]);
  });
}

std::vector<pb::Project> database::projects_of(int64_t workspace_id) {
  return describing_failure("list the projects of workspace " + std::to_string(workspace_id), [&] {
    pqxx::read_transaction tx{impl_->connection};
    std::vector<pb::Project> out;
    for (const auto& row : tx.exec_params(project_select + "WHERE p.workspace_id = $1 ORDER BY p.id", workspace_id))
      out.push_back(project_from(row));
    return out;
  });
}

std::optional<pb::Project> database::insert_project(int64_t workspace_id, const std::string& name,
                                                    const std::string& description, int64_t owner_id) {
  return describing_failure("store project " + name, [&]() -> std::optional<pb::Project> {
    pqxx::work tx{impl_->connection};
    auto rows = tx.exec_params("INSERT INTO projects (workspace_id, name, description, owner_id) VALUES ($1, $2, $3, $4) "
                               "ON CONFLICT (workspace_id, name) DO NOTHING RETURNING id",
                               workspace_id, name, description, owner_id);
    if (rows.empty()) return std::nullopt;
    auto row = tx.exec_params1(project_select + "WHERE p.id = $1", rows[0][0].as<int64_t>());
    tx.commit();
    return project_from(row);
  });
}

std::optional<pb::Project> database::get_project(int64_t id) {
  return describing_failure("read project " + std::to_string(id), [&]() -> std::optional<pb::Project> {
    pqxx::read_transaction tx{impl_->connection};
    auto rows = tx.exec_params(project_select + "WHERE p.id = $1", id);
    if (rows.empty()) return std::nullopt;
    return project_from(rows[0]);
  });
}

void database::annotate_project(int64_t id, const pb::PatchProjectRequest& change) {
  describing_failure("change project " + std::to_string(id), [&] {
    pqxx::work tx{impl_->connection};
    expect_one_row(tx.exec_params("UPDATE projects SET description = COALESCE($2, description), notes = COALESCE($3, notes) "
                                  "WHERE id = $1",
                                  id, text_or_null(change.has_description(), change.description()),
                                  text_or_null(change.has_notes(), change.notes())),
                   "project " + std::to_string(id));
    tx.commit();
  });
}

void database::delete_project(int64_t id) {
  describing_failure("delete project " + std::to_string(id), [&] {
    pqxx::work tx{impl_->connection};
    tx.exec_params("DELETE FROM projects WHERE id = $1", id);
    tx.commit();
  });
}

void database::delete_workspace(int64_t id) {
  describing_failure("delete workspace " + std::to_string(id), [&] {
    pqxx::work tx{impl_->connection};
    tx.exec_params("DELETE FROM projects WHERE workspace_id = $1", id);
    tx.exec_params("DELETE FROM workspaces WHERE id = $1", id);
    tx.commit();
  });
}

void database::move_experiment(int64_t experiment_id, int64_t project_id) {
  describing_failure("move experiment " + std::to_string(experiment_id), [&] {
    pqxx::work tx{impl_->connection};
    expect_one_row(tx.exec_params("UPDATE experiments SET project_id = $2 WHERE id = $1", experiment_id, project_id),
                   "experiment " + std::to_string(experiment_id));
    tx.commit();
  });
}

}  // namespace det::storage
