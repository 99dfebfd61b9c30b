#pragma once
// A trial run's event file: a new file in the trial's TensorBoard directory that starts with the
// trial's hyperparameters, for the harness's workers and, for Core API trials, the master.

#include <memory>
#include <string>

#include "tensorboard/event_file_writer.hpp"

namespace det::tensorboard {

/// A new event file in `directory` holding the HParams session start of `hparams_json` (a JSON
/// object; nested objects flattened as `outer.inner`, lists written as their JSON text). Throws
/// std::runtime_error with a sentence naming the file when it cannot be made.
std::unique_ptr<event_file_writer> open_trial_event_file(const std::string& directory, const std::string& hparams_json);

/// The same in `relative_directory` beneath `root`, made without following any symlink: the master
/// writes Core API trials' files there, in a tree those trials write to as well.
std::unique_ptr<event_file_writer> open_trial_event_file_beneath(const std::string& root,
                                                                 const std::string& relative_directory,
                                                                 const std::string& hparams_json);

}  // namespace det::tensorboard
