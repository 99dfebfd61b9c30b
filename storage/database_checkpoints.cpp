#include <stdexcept>

#include <nlohmann/json.hpp>

#include "storage/database_impl.hpp"
#include "storage/json_maps.hpp"
#include "storage/sql_values.hpp"

namespace det::storage {

namespace {

std::string resources_to_json(const google::protobuf::Map<std::string, int64_t>& resources) {
  auto object = nlohmann::json::object();
  for (const auto& [name, size] : resources) object[name] = size;
  return object.dump();
}

void resources_from_json(const std::string& text, google::protobuf::Map<std::string, int64_t>* resources) {
  const auto object = nlohmann::json::parse(text);  // items() refers to it: it must outlive the loop
  for (const auto& [name, size] : object.items()) (*resources)[name] = size.get<int64_t>();
}

// The validation at the checkpoint's steps, if the trial reported one there.
const std::string checkpoint_select =
    "SELECT c.uuid::text, c.trial_id, t.experiment_id, c.steps_completed, c.total_records, c.total_epochs, "
    "c.state, c.resources::text, " + micros_of("c.report_time") + ", c.storage_path, "
    "(SELECT m.metrics::text FROM metrics m WHERE m.trial_id = c.trial_id AND m.\"group\" = 'validation' "
    "AND m.total_batches = c.steps_completed ORDER BY m.time DESC LIMIT 1), "
    "(SELECT u.username FROM experiments e JOIN users u ON u.id = e.owner_id WHERE e.id = t.experiment_id) "
    "FROM checkpoints c JOIN trials t ON t.id = c.trial_id ";

// The column holds the enum's name without its prefix ('COMPLETED', 'DELETED'), as its CHECK says.
pb::CheckpointState checkpoint_state_from(const std::string& stored) {
  pb::CheckpointState state = pb::CHECKPOINT_STATE_UNSPECIFIED;
  pb::CheckpointState_Parse("CHECKPOINT_STATE_" + stored, &state);
  return state;
}

pb::Checkpoint checkpoint_from(const pqxx::row& row) {
  pb::Checkpoint c;
  c.set_uuid(row[0].as<std::string>());
  c.set_trial_id(row[1].as<int64_t>());
  c.set_experiment_id(row[2].as<int64_t>());
  c.set_steps_completed(row[3].as<int64_t>());
  c.set_total_records(row[4].as<int64_t>());
  c.set_total_epochs(row[5].as<double>());
  c.set_state(checkpoint_state_from(row[6].as<std::string>()));
  resources_from_json(row[7].as<std::string>(), c.mutable_resources());
  if (auto time = time_from(row[8])) *c.mutable_report_time() = *time;
  c.set_storage_path(row[9].as<std::string>());
  if (!row[10].is_null()) metrics_from_json(row[10].as<std::string>(), c.mutable_validation_metrics());
  c.set_owner(row[11].as<std::string>());
  return c;
}

std::vector<pb::Checkpoint> checkpoints_where(pqxx::connection& connection, const std::string& where, int64_t id) {
  pqxx::read_transaction tx{connection};
  std::vector<pb::Checkpoint> checkpoints;
  for (const auto& row : tx.exec_params(checkpoint_select + where + " ORDER BY c.trial_id, c.steps_completed", id))
    checkpoints.push_back(checkpoint_from(row));
  return checkpoints;
}

}  // namespace

void database::insert_checkpoint(const pb::Checkpoint& c) {
  describing_failure("record checkpoint " + c.uuid() + " of trial " + std::to_string(c.trial_id()), [&] {
    pqxx::work tx{impl_->connection};
    const auto inserted = tx.exec_params(
        "INSERT INTO checkpoints (uuid, trial_id, steps_completed, total_records, total_epochs, resources, "
        "storage_path) VALUES ($1, $2, $3, $4, $5, $6, $7) ON CONFLICT (uuid) DO NOTHING",
        c.uuid(), c.trial_id(), c.steps_completed(), c.total_records(), c.total_epochs(),
        resources_to_json(c.resources()), c.storage_path());
    // A worker resends a checkpoint whose acknowledgement a master's crash took with it: the row
    // that committed is the same one. Anything else under its uuid is another checkpoint.
    if (inserted.affected_rows() == 0) {
      const auto same = tx.exec_params("SELECT 1 FROM checkpoints WHERE uuid = $1 AND trial_id = $2 AND "
                                       "steps_completed = $3",
                                       c.uuid(), c.trial_id(), c.steps_completed());
      if (same.empty())
        throw std::runtime_error("uuid " + c.uuid() + " names another checkpoint already");
    }
    tx.commit();
  });
}

std::vector<pb::Checkpoint> database::experiment_checkpoints(int64_t experiment_id) {
  return describing_failure("list the checkpoints of experiment " + std::to_string(experiment_id), [&] {
    return checkpoints_where(impl_->connection, "WHERE t.experiment_id = $1", experiment_id);
  });
}

std::vector<pb::Checkpoint> database::trial_checkpoints(int64_t trial_id) {
  return describing_failure("list the checkpoints of trial " + std::to_string(trial_id), [&] {
    return checkpoints_where(impl_->connection, "WHERE c.trial_id = $1", trial_id);
  });
}

std::optional<pb::Checkpoint> database::get_checkpoint(const std::string& uuid) {
  return describing_failure("read checkpoint " + uuid, [&]() -> std::optional<pb::Checkpoint> {
    pqxx::read_transaction tx{impl_->connection};
    // Not a uuid at all: no such checkpoint, rather than a SQL error.
    auto rows = tx.exec_params(checkpoint_select + "WHERE c.uuid::text = $1", uuid);
    if (rows.empty()) return std::nullopt;
    return checkpoint_from(rows[0]);
  });
}

std::set<std::string> database::checkpoints_gc_keeps() {
  return describing_failure("list the checkpoints trials started from or models registered", [&] {
    pqxx::read_transaction tx{impl_->connection};
    std::set<std::string> uuids;
    for (const auto& row : tx.exec("SELECT warm_start_checkpoint::text FROM trials WHERE warm_start_checkpoint IS NOT NULL "
                                   "UNION SELECT checkpoint_uuid::text FROM model_versions"))
      uuids.insert(row[0].as<std::string>());
    return uuids;
  });
}

void database::mark_checkpoint_deleted(const std::string& uuid) {
  describing_failure("mark checkpoint " + uuid + " deleted", [&] {
    pqxx::work tx{impl_->connection};
    tx.exec_params("UPDATE checkpoints SET state = 'DELETED' WHERE uuid::text = $1", uuid);
    tx.commit();
  });
}

}  // namespace det::storage
