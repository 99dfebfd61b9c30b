// The checkpoint collector: deletes checkpoint files, an experiment's garbage once it ends and one
// checkpoint on request, on a PostgreSQL connection of its own. Deleting many files takes long;
// here it delays neither a commit nor a read.

#include <chrono>
#include <memory>

#include "master/spawn.hpp"
#include "master/persistence/storage_answer.hpp"
#include "caf/all.hpp"
#include "config/experiment_config.hpp"
#include "storage/checkpoint_storage.hpp"
#include "storage/database.hpp"
#include "messages/states.hpp"
#include "node/log.hpp"

namespace det {
namespace {

constexpr auto flush_timeout = std::chrono::seconds(30);

struct collector_state {
  static inline const char* name = "checkpoint-collector";
  std::unique_ptr<storage::database> db;
  persistence_actor writer;
};

using self_ptr = checkpoint_collector_actor::stateful_pointer<collector_state>;

void collect(self_ptr self, experiment_id id, const std::string& config_toml) {
  try {
    auto cfg = config::parse_experiment_config(config_toml, "experiment " + std::to_string(id.value));
    const auto& storage = cfg.checkpoint_storage;
    auto deleted = storage::collect_checkpoint_garbage(
        *self->state.db, id.value,
        storage::gc_policy{storage.save_experiment_best, storage.save_trial_best, storage.save_trial_latest},
        cfg.searcher.metric, cfg.searcher.smaller_is_better);
    if (deleted > 0)
      logs::info(logs::component::experiment,
                 "deleted " + std::to_string(deleted) + " checkpoints of experiment " + std::to_string(id.value));
  } catch (const std::exception& e) {
    logs::error(logs::component::experiment, "collecting the checkpoints of experiment " + std::to_string(id.value) +
                                                  " failed: " + e.what());
  }
}

// A refusal because a model version points at a checkpoint.
caf::error registered(const pb::ModelVersion& v, const std::string& to_do) {
  return make_error(errc::invalid_input, "checkpoint " + v.checkpoint_uuid() + " is version " + std::to_string(v.version()) +
                                             " of model " + v.model_name() + ": delete the model (det model delete " +
                                             v.model_name() + ") before you " + to_do);
}

// Why the experiment's checkpoints may not go: a model version or another experiment's trial
// points at one. No error when nothing does.
caf::error still_referenced(storage::database& db, int64_t id) {
  const auto text = std::to_string(id);
  auto versions = db.versions_of_checkpoints_of(id);
  if (!versions.empty())
    return registered(versions.front(), "delete experiment " + text);
  auto dependents = db.trials_started_from_checkpoints_of(id);
  if (!dependents.empty())
    return make_error(errc::invalid_input, "trial " + std::to_string(dependents.front().id()) + " of experiment " +
                                               std::to_string(dependents.front().experiment_id()) +
                                               " started from checkpoint " + dependents.front().warm_start_checkpoint_uuid() +
                                               " of experiment " + text + ": delete that experiment first");
  return {};
}

// Deletes an ended experiment: every row of it in one transaction, then its checkpoint files.
// Answers why not (an error) when it runs, or something points at its checkpoints.
caf::error delete_experiment(storage::database& db, int64_t id) {
  const auto text = std::to_string(id);
  auto exp = db.get_experiment(id);
  if (!exp)
    return make_error(errc::not_found, "experiment " + text + " not found");
  if (!is_terminal(exp->state()))
    return make_error(errc::invalid_input, "experiment " + text + " is " + pb::State_Name(exp->state()) +
                                               ": only an ended experiment can be deleted (kill it first)");
  if (auto refusal = still_referenced(db, id))
    return refusal;
  auto checkpoints = db.experiment_checkpoints(id);
  try {
    db.delete_experiment_rows(id);
  } catch (const std::exception&) {
    // A model version or a trial may have come to point at a checkpoint since the check: the
    // database's foreign keys refused the whole transaction, and it says which.
    if (auto refusal = still_referenced(db, id))
      return refusal;
    throw;
  }
  // The rows first: a crash between leaves files nothing points at, never rows without files.
  // The experiment is deleted either way; files that would not go are named in the log.
  for (const auto& c : checkpoints) {
    if (c.state() != pb::CHECKPOINT_STATE_COMPLETED) continue;
    try {
      storage::remove_checkpoint_files(c);
    } catch (const std::exception& e) {
      logs::warn(logs::component::experiment, "experiment " + text + " is deleted, but " + e.what());
    }
  }
  logs::info(logs::component::experiment, "deleted experiment " + text);
  return {};
}

checkpoint_collector_actor::behavior_type collector_impl(self_ptr self, std::string conninfo,
                                                         persistence_actor writer) {
  self->state.db = std::make_unique<storage::database>(conninfo);
  self->state.writer = std::move(writer);
  return {
      [=](remove_atom, const std::string& uuid) -> caf::result<bool> {
        auto& db = *self->state.db;
        auto versions = attempt_storage("cannot delete checkpoint " + uuid, [&] { return db.versions_of_checkpoint(uuid); });
        if (!versions)
          return std::move(versions.error());
        if (!versions->empty())
          return registered(versions->front(), "delete it");
        return answer_with(attempt_storage("cannot delete checkpoint " + uuid,
                                           [&] { return storage::delete_checkpoint(db, uuid); }));
      },
      [=](remove_atom, experiment_id id) -> caf::result<bool> {
        // Metrics and logs the writer still buffers would land after the rows are gone: written first.
        auto rp = self->make_response_promise<bool>();
        self->request(self->state.writer, flush_timeout, flush_atom::value)
            .then(
                [=](int64_t) mutable {
                  try {
                    if (auto refusal = delete_experiment(*self->state.db, id.value))
                      rp.deliver(std::move(refusal));
                    else
                      rp.deliver(true);
                  } catch (const std::exception& e) {
                    rp.deliver(make_error(errc::storage_failed,
                                          "cannot delete experiment " + std::to_string(id.value) + ": " + e.what()));
                  }
                },
                [=](caf::error& e) mutable { rp.deliver(std::move(e)); });
        return rp;
      },
      [=](gc_atom, experiment_id id, const std::string& config_toml) {
        // GC ranks checkpoints by their validations: the writer writes those it buffers first.
        self->request(self->state.writer, flush_timeout, flush_atom::value)
            .then([=](int64_t) { collect(self, id, config_toml); },
                  [=](caf::error&) { collect(self, id, config_toml); });
      },
  };
}

} // namespace

checkpoint_collector_actor spawn_checkpoint_collector(caf::actor_system& sys, const std::string& conninfo,
                                                      const persistence_actor& writer) {
  return sys.spawn<caf::detached>(collector_impl, conninfo, writer);
}

} // namespace det
