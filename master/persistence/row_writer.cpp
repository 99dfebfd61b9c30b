// The row writer: the rows a slot or a worker waits for, on a PostgreSQL connection of its own so
// that they never wait behind the persistence writer's batched work (a settle of the metric
// writers, the logs, a trial's final state): a new trial's row, which its slot waits for, and a
// checkpoint's record, which its worker waits for before it goes on. Each is committed before it
// is answered. The persistence writer asks this actor to catch up before it stores a searcher
// snapshot, which must never name a trial whose row is missing.


#include "master/persistence/change_feed.hpp"
#include "master/spawn.hpp"
#include "node/state_text.hpp"
#include "master/persistence/storage_answer.hpp"
#include "caf/all.hpp"
#include "storage/database.hpp"
#include "node/log.hpp"

namespace det {
namespace {

struct row_writer_state {
  static inline const char* name = "row writer";
  std::shared_ptr<storage::database> db;
  std::shared_ptr<change_feed> feed;  // where committed changes go, for pages that show them live
  int64_t trials_created = 0;
  int64_t checkpoints_recorded = 0;
  int64_t failures = 0;
};

row_writer_actor::behavior_type row_writer_impl(row_writer_actor::stateful_pointer<row_writer_state> self,
                                                std::shared_ptr<storage::database> db, std::shared_ptr<change_feed> feed) {
  self->state.db = std::move(db);
  self->state.feed = std::move(feed);
  return {
      [=](create_atom, pb::Trial& t) -> caf::result<int64_t> {
        auto id = attempt_storage("the trial could not be stored", [&] { return self->state.db->insert_trial(t); });
        if (!id) {
          ++self->state.failures;
          logs::error(logs::component::storage, id.error().context().get_as<std::string>(0));
          return std::move(id.error());
        }
        ++self->state.trials_created;
        // Before its first report: an experiment's event streams learn of the trial from this.
        self->state.feed->publish(change_kind::trial, *id, t.experiment_id());
        self->state.feed->publish(change_kind::experiment, t.experiment_id());
        return *id;
      },
      [=](pb::Checkpoint& c) -> bool {
        auto recorded = attempt_storage("recording a checkpoint failed", [&] {
          self->state.db->insert_checkpoint(c);
          return true;
        });
        if (!recorded) {
          ++self->state.failures;
          logs::error(logs::component::storage, recorded.error().context().get_as<std::string>(0));
          return false;
        }
        ++self->state.checkpoints_recorded;
        self->state.feed->publish(change_kind::trial, c.trial_id());
        return true;
      },
      [](flush_atom) { return true; },  // answered after everything asked before it
      [=](inspect_atom) -> std::string {
        return state_text{self}
            .add("trials created", self->state.trials_created)
            .add("checkpoints recorded", self->state.checkpoints_recorded)
            .add("failed writes", self->state.failures)
            .str();
      },
  };
}

}  // namespace

row_writer_actor spawn_row_writer(caf::actor_system& sys, const std::string& conninfo,
                                  std::shared_ptr<change_feed> feed) {
  return sys.spawn<caf::detached>(row_writer_impl, std::make_shared<storage::database>(conninfo), std::move(feed));
}

}  // namespace det
