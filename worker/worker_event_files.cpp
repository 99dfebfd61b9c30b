#include "worker/worker_event_files.hpp"

#include <iostream>
#include <stdexcept>

#include "config/experiment_config.hpp"
#include "messages/trial.pb.h"
#include "tensorboard/trial_event_file.hpp"

namespace det::runtime {

std::unique_ptr<tensorboard::event_file_writer> open_event_file(const pb::TrialSpec& spec) {
  try {
    return tensorboard::open_trial_event_file(
        config::tensorboard_dir_under(spec.checkpoint_root(), spec.experiment_id(), spec.trial_id()), spec.hparams());
  } catch (const std::exception& e) {
    std::cout << "trial " << spec.trial_id() << ": writing no TensorBoard event files: " << e.what() << std::endl;
    return nullptr;
  }
}

}  // namespace det::runtime
