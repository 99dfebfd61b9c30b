// The checkpoint collector: deletes checkpoint files, an experiment's garbage once it ends and one
// checkpoint on request, on a PostgreSQL connection of its own. Deleting many files takes long;
// here it delays neither a commit nor a read.

#include <chrono>
#include <iostream>
#include <memory>

#include "actors/spawn.hpp"
#include "actors/storage_answer.hpp"
#include "caf/all.hpp"
#include "config/experiment_config.hpp"
#include "storage/checkpoint_storage.hpp"
#include "storage/database.hpp"

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
      std::cout << "master: deleted " << deleted << " checkpoints of experiment " << id.value << std::endl;
  } catch (const std::exception& e) {
    std::cerr << "master: collecting the checkpoints of experiment " << id.value << " failed: " << e.what()
              << std::endl;
  }
}

checkpoint_collector_actor::behavior_type collector_impl(self_ptr self, std::string conninfo,
                                                         persistence_actor writer) {
  self->state.db = std::make_unique<storage::database>(conninfo);
  self->state.writer = std::move(writer);
  return {
      [=](remove_atom, const std::string& uuid) -> caf::result<bool> {
        return answer_with(attempt_storage("cannot delete checkpoint " + uuid,
                                           [&] { return storage::delete_checkpoint(*self->state.db, uuid); }));
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
