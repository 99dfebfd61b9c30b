// The model registry, and what it protects: deleting an experiment removes its rows only when no
// model version (and no other experiment's trial) points at one of its checkpoints.

#include "storage/database_impl.hpp"
#include "storage/sql_values.hpp"

namespace det::storage {

namespace {

const std::string model_select =
    "SELECT m.id, m.name, m.description, m.labels, m.owner_id, u.username, " + micros_of("m.created_at") +
    ", (SELECT count(*) FROM model_versions v WHERE v.model_id = m.id) FROM models m JOIN users u ON u.id = m.owner_id ";

pb::Model model_from(const pqxx::row& row) {
  pb::Model m;
  m.set_id(row[0].as<int64_t>());
  m.set_name(row[1].as<std::string>());
  m.set_description(row[2].as<std::string>());
  text_array_from(row[3], m.mutable_labels());
  m.set_owner_id(row[4].as<int64_t>());
  m.set_owner(row[5].as<std::string>());
  if (auto time = time_from(row[6])) *m.mutable_created_at() = *time;
  m.set_num_versions(row[7].as<int32_t>());
  return m;
}

const std::string version_select =
    "SELECT v.model_id, m.name, v.version, v.checkpoint_uuid::text, v.name, v.metadata::text, u.username, " +
    micros_of("v.created_at") + " FROM model_versions v JOIN models m ON m.id = v.model_id JOIN users u ON u.id = v.owner_id ";

pb::ModelVersion version_from(const pqxx::row& row) {
  pb::ModelVersion v;
  v.set_model_id(row[0].as<int64_t>());
  v.set_model_name(row[1].as<std::string>());
  v.set_version(row[2].as<int32_t>());
  v.set_checkpoint_uuid(row[3].as<std::string>());
  v.set_name(row[4].as<std::string>());
  v.set_metadata(row[5].as<std::string>());
  v.set_owner(row[6].as<std::string>());
  if (auto time = time_from(row[7])) *v.mutable_created_at() = *time;
  return v;
}

}  // namespace

std::optional<pb::Model> database::insert_model(const std::string& name, const std::string& description,
                                                const std::vector<std::string>& labels, int64_t owner_id) {
  return describing_failure("store model " + name, [&]() -> std::optional<pb::Model> {
    pqxx::work tx{impl_->connection};
    auto rows = tx.exec_params("INSERT INTO models (name, description, labels, owner_id) VALUES ($1, $2, $3::text[], $4) "
                               "ON CONFLICT (name) DO NOTHING RETURNING id",
                               name, description, text_array_literal(labels), owner_id);
    if (rows.empty()) return std::nullopt;
    auto row = tx.exec_params1(model_select + "WHERE m.id = $1", rows[0][0].as<int64_t>());
    tx.commit();
    return model_from(row);
  });
}

std::vector<pb::Model> database::list_models() {
  return describing_failure("list the models", [&] {
    pqxx::read_transaction tx{impl_->connection};
    std::vector<pb::Model> models;
    for (const auto& row : tx.exec(model_select + "ORDER BY m.id")) models.push_back(model_from(row));
    return models;
  });
}

std::optional<pb::Model> database::get_model(const std::string& name) {
  return describing_failure("read model " + name, [&]() -> std::optional<pb::Model> {
    pqxx::read_transaction tx{impl_->connection};
    auto rows = tx.exec_params(model_select + "WHERE m.name = $1", name);
    if (rows.empty()) return std::nullopt;
    return model_from(rows[0]);
  });
}

std::vector<pb::ModelVersion> database::model_versions(int64_t model_id) {
  return describing_failure("list the versions of model " + std::to_string(model_id), [&] {
    pqxx::read_transaction tx{impl_->connection};
    std::vector<pb::ModelVersion> versions;
    for (const auto& row : tx.exec_params(version_select + "WHERE v.model_id = $1 ORDER BY v.version", model_id))
      versions.push_back(version_from(row));
    return versions;
  });
}

pb::ModelVersion database::insert_model_version(int64_t model_id, const std::string& checkpoint_uuid, const std::string& name,
                                                const std::string& metadata_json, int64_t owner_id) {
  return describing_failure("register checkpoint " + checkpoint_uuid, [&] {
    pqxx::work tx{impl_->connection};
    // The model's row, locked: two registrations at once number their versions one after the other.
    tx.exec_params("SELECT id FROM models WHERE id = $1 FOR UPDATE", model_id);
    auto version = tx.exec_params1("INSERT INTO model_versions (model_id, version, checkpoint_uuid, name, metadata, owner_id) "
                                   "SELECT $1, COALESCE(MAX(version), 0) + 1, $2::uuid, $3, $4::jsonb, $5 "
                                   "FROM model_versions WHERE model_id = $1 RETURNING version",
                                   model_id, checkpoint_uuid, name, metadata_json.empty() ? "{}" : metadata_json, owner_id)[0]
                       .as<int32_t>();
    auto row = tx.exec_params1(version_select + "WHERE v.model_id = $1 AND v.version = $2", model_id, version);
    tx.commit();
    return version_from(row);
  });
}

void database::delete_model(int64_t model_id) {
  describing_failure("delete model " + std::to_string(model_id), [&] {
    pqxx::work tx{impl_->connection};
    tx.exec_params("DELETE FROM models WHERE id = $1", model_id);  // its versions go with it
    tx.commit();
  });
}

std::vector<pb::ModelVersion> database::versions_of_checkpoints_of(int64_t experiment_id) {
  return describing_failure("list the model versions of experiment " + std::to_string(experiment_id), [&] {
    pqxx::read_transaction tx{impl_->connection};
    std::vector<pb::ModelVersion> versions;
    for (const auto& row : tx.exec_params(version_select + "JOIN checkpoints c ON c.uuid = v.checkpoint_uuid "
                                                           "JOIN trials t ON t.id = c.trial_id WHERE t.experiment_id = $1 "
                                                           "ORDER BY m.name, v.version",
                                          experiment_id))
      versions.push_back(version_from(row));
    return versions;
  });
}

std::vector<pb::ModelVersion> database::versions_of_checkpoint(const std::string& uuid) {
  return describing_failure("list the model versions of checkpoint " + uuid, [&] {
    pqxx::read_transaction tx{impl_->connection};
    std::vector<pb::ModelVersion> versions;
    for (const auto& row : tx.exec_params(version_select + "WHERE v.checkpoint_uuid = $1::uuid ORDER BY m.name, v.version", uuid))
      versions.push_back(version_from(row));
    return versions;
  });
}

std::vector<pb::Trial> database::trials_started_from_checkpoints_of(int64_t experiment_id) {
  return describing_failure("list the trials started from experiment " + std::to_string(experiment_id), [&] {
    pqxx::read_transaction tx{impl_->connection};
    std::vector<pb::Trial> trials;
    for (const auto& row : tx.exec_params("SELECT t.id, t.experiment_id, t.warm_start_checkpoint::text FROM trials t "
                                          "JOIN checkpoints c ON c.uuid = t.warm_start_checkpoint JOIN trials s ON s.id = c.trial_id "
                                          "WHERE s.experiment_id = $1 AND t.experiment_id <> $1 ORDER BY t.id",
                                          experiment_id)) {
      pb::Trial t;
      t.set_id(row[0].as<int64_t>());
      t.set_experiment_id(row[1].as<int64_t>());
      t.set_warm_start_checkpoint_uuid(row[2].as<std::string>());
      trials.push_back(std::move(t));
    }
    return trials;
  });
}

void database::delete_experiment_rows(int64_t experiment_id) {
  describing_failure("delete experiment " + std::to_string(experiment_id), [&] {
    pqxx::work tx{impl_->connection};
    const std::string trials = "(SELECT id FROM trials WHERE experiment_id = $1)";
    tx.exec_params("UPDATE trials SET warm_start_checkpoint = NULL WHERE experiment_id = $1", experiment_id);
    tx.exec_params("DELETE FROM checkpoints WHERE trial_id IN " + trials, experiment_id);
    tx.exec_params("DELETE FROM metrics WHERE trial_id IN " + trials, experiment_id);
    tx.exec_params("DELETE FROM task_logs WHERE trial_id IN " + trials, experiment_id);
    tx.exec_params("DELETE FROM trials WHERE experiment_id = $1", experiment_id);
    tx.exec_params("DELETE FROM experiment_snapshots WHERE experiment_id = $1", experiment_id);
    tx.exec_params("DELETE FROM model_definitions WHERE experiment_id = $1", experiment_id);
    expect_one_row(tx.exec_params("DELETE FROM experiments WHERE id = $1", experiment_id),
                   "experiment " + std::to_string(experiment_id));
    tx.commit();
  });
}

std::string database::model_definition(int64_t experiment_id) {
  return describing_failure("read the model definition of experiment " + std::to_string(experiment_id), [&] {
    pqxx::read_transaction tx{impl_->connection};
    auto rows = tx.exec_params("SELECT archive FROM model_definitions WHERE experiment_id = $1", experiment_id);
    if (rows.empty()) return std::string{};
    return pqxx::binarystring(rows[0][0]).str();
  });
}

}  // namespace det::storage
