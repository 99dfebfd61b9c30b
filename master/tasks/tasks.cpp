// Every command, shell, notebook and TensorBoard, on a PostgreSQL connection of its own: it stores
// a new task before its actor starts (so a master restart finds it), stores each state its actor
// reaches, answers lists from the database (ended tasks stay listed), and passes kills to the
// live actors. On start it takes back the tasks a master restart interrupted.

#include <map>
#include <memory>

#include "master/spawn.hpp"
#include "master/persistence/storage_answer.hpp"
#include "auth/credentials.hpp"
#include "auth/random_uuid.hpp"
#include "auth/ssh_keys.hpp"
#include "caf/all.hpp"
#include "storage/database.hpp"
#include "node/log.hpp"

namespace det {
namespace {

struct tasks_state {
  static inline const char* name = "tasks";
  std::unique_ptr<storage::database> db;
  master_handles handles;
  directory_actor directory;
  std::map<std::string, task_actor> live;  // by task id, until its actor ends
};

using self_ptr = tasks_actor::stateful_pointer<tasks_state>;

void start(self_ptr self, pb::Task task, storage::task_secrets secrets, std::string context, bool restored) {
  auto& st = self->state;
  const auto id = task.id();
  auto actor = spawn_task(self->system(), {std::move(task), std::move(secrets), std::move(context), restored,
                                           tasks_actor{self}, st.handles});
  self->monitor(actor);
  self->send(st.directory, register_atom::value, std::string{"task"}, id, caf::actor_cast<caf::actor>(actor));
  st.live[id] = std::move(actor);
}

tasks_actor::behavior_type tasks_impl(self_ptr self, std::string conninfo, master_handles handles,
                                      directory_actor directory) {
  auto& st = self->state;
  st.db = std::make_unique<storage::database>(conninfo);
  st.handles = std::move(handles);
  st.directory = std::move(directory);
  self->set_down_handler([=](const caf::down_msg& dm) {
    auto& live = self->state.live;
    for (auto it = live.begin(); it != live.end(); ++it)
      if (it->second.address() == dm.source) {
        live.erase(it);
        return;
      }
  });
  try {
    for (auto& r : st.db->restorable_tasks())
      start(self, std::move(r.task), std::move(r.secrets), std::move(r.context), true);
  } catch (const std::exception& e) {
    logs::error(logs::component::master, std::string("cannot restore the tasks that were running: ") + e.what());
  }
  auto& db = *st.db;
  return {
      [=, &db](create_atom, pb::Task& task, std::string& context) {
        return answer_with(attempt_storage("cannot store the new task", [&] {
          task.set_id(auth::random_uuid());
          task.set_state(pb::TASK_STATE_QUEUED);
          storage::task_secrets secrets{auth::random_secret(), "", ""};
          // A notebook's token opens it in a browser: Jupyter's own, and good for its proxy URL.
          if (task.kind() == pb::TASK_KIND_NOTEBOOK) secrets.service_token = auth::random_secret();
          // A shell's owner logs in with a key of its own; its sshd shows a host key ssh checks.
          if (task.kind() == pb::TASK_KIND_SHELL) {
            auto login = auth::new_ssh_key_pair("det shell " + task.id());
            auto host = auth::new_ssh_key_pair("det shell " + task.id() + " host");
            task.set_private_key(login.private_key);
            task.set_public_key(login.public_key);
            task.set_host_public_key(host.public_key);
            secrets.host_private_key = host.private_key;
          }
          db.insert_task(task, secrets, context);
          auto stored = db.get_task(task.id()).value_or(task);  // with its owner's name, start time and proxy path
          start(self, stored, std::move(secrets), std::move(context), false);
          return stored;
        }));
      },
      [&db](list_atom, pb::TaskKind kind) {
        return answer_with(attempt_storage("cannot list the tasks", [&] { return db.list_tasks(kind); }));
      },
      [&db](get_atom, const std::string& id) {
        return answer_or_refusal<pb::Task>("read task " + id, [&]() -> or_refusal<pb::Task> {
          if (auto task = db.get_task(id)) return *task;
          return make_error(errc::not_found, "there is no task " + id);
        });
      },
      [=, &db](kill_atom, const std::string& id) {
        return answer_or_refusal<bool>("read task " + id, [&]() -> or_refusal<bool> {
          auto& live = self->state.live;
          if (auto it = live.find(id); it != live.end()) {
            self->send(it->second, kill_atom::value);
            return true;
          }
          if (!db.get_task(id)) return make_error(errc::not_found, "there is no task " + id);
          return false;
        });
      },
      [=](proxy_atom, const std::string& id) -> caf::result<pb::Task> {
        auto& live = self->state.live;
        auto it = live.find(id);
        if (it == live.end()) return make_error(errc::not_found, "task " + id + " is not running");
        return self->delegate(it->second, proxy_atom::value);
      },
      [=](pb::ContainerActivity& used) {
        auto& live = self->state.live;
        if (auto it = live.find(used.allocation_id()); it != live.end()) self->send(it->second, std::move(used));
      },
      [&db](list_atom) {
        return answer_with(attempt_storage("cannot list the tasks", [&] {
          pb::GetTaskSummariesResponse out;
          for (auto& s : db.task_summaries()) *out.add_tasks() = std::move(s);
          return out;
        }));
      },
      [&db](update_atom, const pb::Task& task) {
        try {
          db.update_task(task);
        } catch (const std::exception& e) {
          logs::error(logs::component::master, e.what());
        }
      },
  };
}

} // namespace

tasks_actor spawn_tasks(caf::actor_system& sys, const std::string& conninfo, const master_handles& handles,
                        const directory_actor& directory) {
  return sys.spawn<caf::detached>(tasks_impl, conninfo, handles, directory);
}

} // namespace det
