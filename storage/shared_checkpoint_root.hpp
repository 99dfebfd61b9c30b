#pragma once
// A checkpoint root that every det user's trials write into: each trial's workers run as its
// owner's Unix user (auth/task_user.hpp), so the root, and the TensorBoard directories that all
// experiments share below it, are made sticky and writable by all, as /tmp is: anyone may create
// a directory there, and only its owner (or root: the master, which reads and deletes
// checkpoints) may remove or rename it.

#include <string>

namespace det::storage {

/// Makes `root`, root/tensorboard and root/tensorboard/experiment exist with mode 1777. A
/// directory someone else owns keeps its mode. Returns "" or the sentence why it could not.
std::string prepare_shared_checkpoint_root(const std::string& root);

/// Lets every user pass through `dir` (o+x) without listing it: the master's data directory,
/// which holds the default checkpoint root and otherwise only the master's own files (0600) and
/// directories (0700). Returns "" or the sentence why it could not.
std::string let_everyone_through(const std::string& dir);

}  // namespace det::storage
