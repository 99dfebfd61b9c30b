// Commands, shells, notebooks and TensorBoards: their rows, their log lines (which share the
// trials' task_logs table with trial_id 0), and the list of everything that holds or waits for
// slots (`det task list`).

#include "storage/database_impl.hpp"
#include "storage/sql_values.hpp"

namespace det::storage {

namespace {

// task_from reads these columns; its callers may select more after them.
const std::string task_columns =
    "SELECT t.id, t.kind, t.description, t.state, t.owner_id, u.username, t.config, t.slots, t.resource_pool, " +
    micros_of("t.start_time") + ", " + micros_of("t.end_time") +
    ", t.exit_code, t.exit_reason, t.agent_id, t.entrypoint, t.ready, t.service_address, t.service_token, "
    "t.service_user, t.ssh_private_key, t.ssh_public_key, t.host_public_key";
constexpr int task_column_count = 22;
constexpr int service_token_column = 17;  // a notebook's token, which its proxy path carries
const std::string task_from_clause = " FROM tasks t JOIN users u ON u.id = t.owner_id ";
const std::string task_select = task_columns + task_from_clause;

pb::Task task_from(const pqxx::row& row) {
  pb::Task t;
  t.set_id(row[0].as<std::string>());
  pb::TaskKind kind{};
  pb::TaskKind_Parse(row[1].as<std::string>(), &kind);
  t.set_kind(kind);
  t.set_description(row[2].as<std::string>());
  pb::TaskState state{};
  pb::TaskState_Parse(row[3].as<std::string>(), &state);
  t.set_state(state);
  t.set_owner_id(row[4].as<int64_t>());
  t.set_owner(row[5].as<std::string>());
  t.set_config(row[6].as<std::string>());
  t.set_slots(row[7].as<int32_t>());
  t.set_resource_pool(row[8].as<std::string>());
  if (auto time = time_from(row[9])) *t.mutable_start_time() = *time;
  if (auto time = time_from(row[10])) *t.mutable_end_time() = *time;
  if (!row[11].is_null()) t.set_exit_code(row[11].as<int32_t>());
  t.set_exit_reason(row[12].as<std::string>());
  t.set_agent_id(row[13].as<std::string>());
  text_array_from(row[14], t.mutable_entrypoint());
  t.set_ready(row[15].as<bool>());
  t.set_service_address(row[16].as<std::string>());
  const auto token = row[service_token_column].as<std::string>();
  t.set_proxy_path("/proxy/" + t.id() + "/" + (token.empty() ? "" : "?token=" + token));
  t.set_service_user(row[18].as<std::string>());
  t.set_private_key(row[19].as<std::string>());
  t.set_public_key(row[20].as<std::string>());
  t.set_host_public_key(row[21].as<std::string>());
  return t;
}

}  // namespace

void database::insert_task(const pb::Task& task, const task_secrets& secrets, const std::string& context) {
  describing_failure("store task " + task.id(), [&] {
    pqxx::work tx{impl_->connection};
    tx.exec_params("INSERT INTO tasks (id, kind, owner_id, description, config, entrypoint, slots, resource_pool, "
                   "state, allocation_token, service_token, context, ssh_private_key, ssh_public_key, host_private_key, "
                   "host_public_key) VALUES ($1, $2, $3, $4, $5, $6::text[], $7, $8, $9, $10, $11, $12, $13, $14, $15, $16)",
                   task.id(), pb::TaskKind_Name(task.kind()), task.owner_id(), task.description(), task.config(),
                   text_array_literal({task.entrypoint().begin(), task.entrypoint().end()}), task.slots(),
                   task.resource_pool(), pb::TaskState_Name(task.state()), secrets.allocation_token,
                   secrets.service_token, pqxx::binarystring(context), task.private_key(), task.public_key(),
                   secrets.host_private_key, task.host_public_key());
    tx.commit();
  });
}

void database::update_task(const pb::Task& task) {
  describing_failure("store the state of task " + task.id(), [&] {
    pqxx::work tx{impl_->connection};
    const bool ended = task.state() == pb::TASK_STATE_TERMINATED;
    tx.exec_params("UPDATE tasks SET state = $2, agent_id = $3, exit_code = $4, exit_reason = $5, "
                   "end_time = CASE WHEN $6 THEN COALESCE(end_time, now()) END, ready = $7, service_address = $8, "
                   "service_user = $9 WHERE id = $1",
                   task.id(), pb::TaskState_Name(task.state()), task.agent_id(),
                   task.has_exit_code() ? std::optional<int32_t>{task.exit_code()} : std::nullopt, task.exit_reason(),
                   ended, task.ready(), task.service_address(), task.service_user());
    tx.commit();
  });
}

std::optional<pb::Task> database::get_task(const std::string& id) {
  return describing_failure("read task " + id, [&]() -> std::optional<pb::Task> {
    pqxx::read_transaction tx{impl_->connection};
    const auto rows = tx.exec_params(task_select + "WHERE t.id = $1", id);
    if (rows.empty()) return std::nullopt;
    return task_from(rows[0]);
  });
}

std::vector<pb::Task> database::list_tasks(pb::TaskKind kind) {
  return describing_failure("list the tasks", [&] {
    pqxx::read_transaction tx{impl_->connection};
    std::vector<pb::Task> tasks;
    const auto rows = kind == pb::TASK_KIND_UNSPECIFIED
                          ? tx.exec(task_select + "ORDER BY t.start_time, t.id")
                          : tx.exec_params(task_select + "WHERE t.kind = $1 ORDER BY t.start_time, t.id",
                                           pb::TaskKind_Name(kind));
    for (const auto& row : rows) tasks.push_back(task_from(row));
    return tasks;
  });
}

std::vector<database::restorable_task> database::restorable_tasks() {
  return describing_failure("read the tasks to restore", [&] {
    pqxx::read_transaction tx{impl_->connection};
    std::vector<restorable_task> out;
    const auto rows = tx.exec_params(task_columns + ", t.allocation_token, t.host_private_key, t.context" +
                                         task_from_clause + "WHERE t.state <> $1 ORDER BY t.start_time",
                                     pb::TaskState_Name(pb::TASK_STATE_TERMINATED));
    for (const auto& row : rows)
      out.push_back({task_from(row),
                     {row[task_column_count].as<std::string>(), row[service_token_column].as<std::string>(),
                      row[task_column_count + 1].as<std::string>()},
                     pqxx::binarystring(row[task_column_count + 2]).str()});
    return out;
  });
}

std::vector<pb::LogEntry> database::task_logs(const std::string& task_id, int64_t after_id, int limit) {
  return describing_failure("read the logs of task " + task_id, [&] {
    pqxx::read_transaction tx{impl_->connection};
    std::vector<pb::LogEntry> entries;
    const auto rows = tx.exec_params("SELECT " + log_columns() +
                                         " FROM task_logs WHERE task_id = $1 AND id > $2 ORDER BY id LIMIT $3",
                                     task_id, after_id, limit);
    for (const auto& row : rows) {
      entries.push_back(log_entry_from(row));
      entries.back().set_task_id(task_id);
    }
    return entries;
  });
}

std::vector<pb::TaskSummary> database::task_summaries() {
  return describing_failure("list the tasks and running trials", [&] {
    pqxx::read_transaction tx{impl_->connection};
    std::vector<pb::TaskSummary> out;
    const auto rows = tx.exec(
        "SELECT t.id, replace(t.kind, 'TASK_KIND_', ''), replace(t.state, 'TASK_STATE_', ''), t.description, "
        "u.username, t.slots, t.resource_pool, " + micros_of("t.start_time") +
        " FROM tasks t JOIN users u ON u.id = t.owner_id "
        "UNION ALL "
        "SELECT r.id || '.' || r.runs, 'TRIAL', replace(r.state, 'STATE_', ''), "
        "'trial ' || r.id || ' of experiment ' || e.id, u.username, 0, '', " + micros_of("r.start_time") +
        " FROM trials r JOIN experiments e ON e.id = r.experiment_id JOIN users u ON u.id = e.owner_id "
        "WHERE r.state IN ('STATE_QUEUED', 'STATE_STARTING', 'STATE_RUNNING') "
        "ORDER BY 8, 1");
    for (const auto& row : rows) {
      auto& s = out.emplace_back();
      s.set_id(row[0].as<std::string>());
      s.set_type(row[1].as<std::string>());
      s.set_state(row[2].as<std::string>());
      s.set_description(row[3].as<std::string>());
      s.set_owner(row[4].as<std::string>());
      s.set_slots(row[5].as<int32_t>());
      s.set_resource_pool(row[6].as<std::string>());
      if (auto time = time_from(row[7])) *s.mutable_start_time() = *time;
    }
    return out;
  });
}

}  // namespace det::storage
