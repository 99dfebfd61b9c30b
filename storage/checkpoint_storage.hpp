#pragma once
// Deleting checkpoints: their files on the checkpoint storage, then their rows marked DELETED.

#include "storage/checkpoint_gc.hpp"
#include "storage/database.hpp"

#include <string>

namespace det::storage {

/// Applies the GC policy to every COMPLETED checkpoint of the experiment, ranking by the
/// validation metric `metric` at each checkpoint's steps; keeps those trials started from.
/// Returns how many it deleted. Throws std::runtime_error when a directory cannot be removed.
int64_t collect_checkpoint_garbage(database& db, int64_t experiment_id, const gc_policy& policy,
                                   const std::string& metric, bool smaller_is_better);

/// Removes a checkpoint's directory from the checkpoint storage; throws std::runtime_error when it
/// cannot.
void remove_checkpoint_files(const pb::Checkpoint& c);

/// Deletes one checkpoint's files and marks it DELETED. False when there is no such checkpoint.
bool delete_checkpoint(database& db, const std::string& uuid);

} // namespace det::storage
