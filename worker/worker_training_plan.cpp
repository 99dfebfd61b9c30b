// The harness's training plan for one trial run (worker_training_plan.hpp).

#include "worker/worker_training_plan.hpp"

#include <stdexcept>
#include <string>

#include "config/experiment_config.hpp"
#include "messages/length_unit.hpp"
#include "messages/trial.pb.h"

namespace det::runtime {
namespace {

harness::unit to_harness(config::length_unit u) {
  switch (u) {
    case config::length_unit::records: return harness::unit::records;
    case config::length_unit::epochs: return harness::unit::epochs;
    case config::length_unit::batches: break;
  }
  return harness::unit::batches;
}

const std::string builtin_prefix = "builtin:";
const std::string plugin_prefix = "plugin:";

} // namespace

harness::training_plan make_training_plan(const pb::TrialSpec& spec, const config::experiment_config& cfg,
                                          const std::filesystem::path& workdir) {
  auto entry = cfg.entrypoint.front();
  harness::training_plan plan;
  if (entry.rfind(plugin_prefix, 0) == 0) {
    auto rest = entry.substr(plugin_prefix.size());
    auto colon = rest.rfind(':');
    if (colon == std::string::npos || colon == 0 || colon + 1 == rest.size())
      throw std::runtime_error("entrypoint \"" + entry + "\" must read plugin:LIBRARY:CLASS, e.g. "
                               "plugin:build/libmytrial.so:MyTrial");
    plan.trial_name = "plugin";
    plan.plugin_library = (workdir / rest.substr(0, colon)).string();
    plan.plugin_class = rest.substr(colon + 1);
  } else {
    plan.trial_name = entry.substr(builtin_prefix.size());
  }
  plan.hparams_json = spec.hparams();
  plan.data_json = cfg.data_json;
  plan.seed = static_cast<uint64_t>(spec.seed());
  plan.length_unit = to_harness(from_proto(spec.validate_after_unit()));
  plan.length = spec.validate_after_length();
  if (cfg.min_validation_period)
    plan.min_validation_period_batches = cfg.batches_in(*cfg.min_validation_period);
  plan.report_every_batches = cfg.scheduling_unit;
  plan.records_per_epoch = cfg.records_per_epoch;
  if (cfg.min_checkpoint_period)
    plan.min_checkpoint_period_batches = cfg.batches_in(*cfg.min_checkpoint_period);
  plan.checkpoint_dir = spec.checkpoint_root();
  plan.profiling = cfg.profiling_enabled;
  plan.mixed_precision = cfg.mixed_precision;
  plan.gradient_clip_norm = cfg.gradient_clip_norm;
  plan.cuda_graph = cfg.cuda_graph;
  plan.resume_from = spec.resume_checkpoint_dir();
  plan.warm_start_from = spec.warm_start_checkpoint_dir();
  return plan;
}

} // namespace det::runtime
