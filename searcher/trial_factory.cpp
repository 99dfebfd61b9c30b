#include "searcher/trial_factory.hpp"

#include "searcher/hyperparameter_sampling.hpp"
#include "searcher/random_draw.hpp"
#include "searcher/snapshot_parts.hpp"

namespace det::searcher {

trial_factory::trial_factory(config::hyperparameters hparams, uint32_t experiment_seed)
    : hparams_(std::move(hparams)), rng_(experiment_seed) {}

create_action trial_factory::next() {
  return next_with([this](std::mt19937_64& rng) { return sample_hyperparameters(hparams_, rng); });
}

create_action trial_factory::next_with(const std::function<std::string(std::mt19937_64&)>& make_hparams) {
  create_action create;
  create.request_id = next_request_id_++;
  create.hparams_json = make_hparams(rng_);
  create.trial_seed = static_cast<uint32_t>(draw_below(rng_, uint64_t{1} << 31));
  return create;
}

void trial_factory::snapshot(pb::TrialSourceState& state) const {
  state.set_rng(rng_text(rng_));
  state.set_next_request_id(next_request_id_);
}

void trial_factory::restore(const pb::TrialSourceState& state) {
  rng_ = rng_from_text(state.rng());
  next_request_id_ = state.next_request_id();
}

} // namespace det::searcher
