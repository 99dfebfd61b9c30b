#pragma once

#include "config/hyperparameter.hpp"
#include "searcher/action.hpp"

#include <cstdint>
#include <functional>
#include <random>
#include <string>

namespace det::pb {
class TrialSourceState;
}

namespace det::searcher {

/// Makes the create_action of each new trial: the next request id, a trial seed and a sample of
/// every hyperparameter, all drawn from one RNG seeded with the experiment seed.
class trial_factory {
 public:
  trial_factory(config::hyperparameters hparams, uint32_t experiment_seed);

  /// Request ids count from 1; the seed is in [0, 2^31), as Determined's.
  create_action next();
  /// The next trial with the hyperparameters `make_hparams` returns, drawing from this factory's
  /// RNG (PBT's explored copies), so that one RNG state replays the whole search.
  create_action next_with(const std::function<std::string(std::mt19937_64&)>& make_hparams);

  /// The request id the next trial gets: every id below it was handed out.
  int64_t next_request_id() const { return next_request_id_; }

  void snapshot(pb::TrialSourceState& state) const;
  /// Throws std::runtime_error, changing nothing, when `state` holds no valid RNG state.
  void restore(const pb::TrialSourceState& state);

 private:
  config::hyperparameters hparams_;
  std::mt19937_64 rng_;
  int64_t next_request_id_ = 1;
};

} // namespace det::searcher
