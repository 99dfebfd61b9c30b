#include "storage/checkpoint_storage.hpp"

#include <filesystem>
#include <stdexcept>

namespace det::storage {

void remove_checkpoint_files(const pb::Checkpoint& c) {
  std::error_code error;
  std::filesystem::remove_all(std::filesystem::path(c.storage_path()) / c.uuid(), error);
  if (error)
    throw std::runtime_error("cannot delete the files of checkpoint " + c.uuid() + " under " + c.storage_path() +
                             ": " + error.message());
}

int64_t collect_checkpoint_garbage(database& db, int64_t experiment_id, const gc_policy& policy,
                                   const std::string& metric, bool smaller_is_better) {
  auto checkpoints = db.experiment_checkpoints(experiment_id);
  std::vector<gc_candidate> candidates;
  for (const auto& c : checkpoints) {
    if (c.state() != pb::CHECKPOINT_STATE_COMPLETED) continue;
    gc_candidate candidate{c.uuid(), c.trial_id(), c.steps_completed(), std::nullopt,
                           static_cast<int64_t>(candidates.size())};
    if (auto it = c.validation_metrics().find(metric); it != c.validation_metrics().end()) candidate.metric = it->second;
    candidates.push_back(std::move(candidate));
  }
  auto doomed = checkpoints_to_delete(candidates, policy, smaller_is_better, db.checkpoints_gc_keeps());
  for (const auto& c : checkpoints) {
    if (!doomed.count(c.uuid())) continue;
    remove_checkpoint_files(c);
    db.mark_checkpoint_deleted(c.uuid());
  }
  return static_cast<int64_t>(doomed.size());
}

bool delete_checkpoint(database& db, const std::string& uuid) {
  auto c = db.get_checkpoint(uuid);
  if (!c) return false;
  if (c->state() == pb::CHECKPOINT_STATE_DELETED) return true;
  remove_checkpoint_files(*c);
  db.mark_checkpoint_deleted(uuid);
  return true;
}

} // namespace det::storage
