#pragma once
// The TensorBoard event file of one trial run, opened by the run's chief worker.

#include <memory>

#include "tensorboard/event_file_writer.hpp"

namespace det::pb {
class TrialSpec;
}

namespace det::runtime {

/// A new event file in the trial's TensorBoard directory under its checkpoint storage, holding
/// the trial's hyperparameters. Null, with the reason in the trial's log, when the file cannot be
/// made: the run trains on without one.
std::unique_ptr<tensorboard::event_file_writer> open_event_file(const pb::TrialSpec& spec);

}  // namespace det::runtime
