#include "searcher/search_method.hpp"

#include "searcher/adaptive_asha_search.hpp"
#include "searcher/asha_promotion_search.hpp"
#include "searcher/asha_stopping_search.hpp"
#include "searcher/custom_search.hpp"
#include "searcher/grid_search.hpp"
#include "searcher/hyperparameter_grid.hpp"
#include "searcher/pbt_search.hpp"
#include "searcher/random_search.hpp"
#include "searcher/single_search.hpp"
#include "searcher/tpe_search.hpp"

namespace det::searcher {

search_method::~search_method() = default;

int64_t search_method::rung_of(int64_t) const {
  return -1;
}

void search_method::trial_progress(int64_t, double) {}

bool search_method::trials_wait_at_length() const {
  return false;
}

std::optional<config::length> search_method::training_target(int64_t) const {
  return std::nullopt;
}

namespace {

// parse_experiment_config guarantees these; a config built in code may lack them.

// Single, random and grid trials of a process that decides its own length train until it exits
// without one (Determined 0.38); the config reader refuses a missing length everywhere else.
std::optional<config::length> optional_length(const config::searcher_config& searcher) {
  return searcher.training_length();
}

config::length required_length(const config::searcher_config& searcher) {
  auto length = searcher.training_length();
  if (!length)
    throw config::config_error("searcher: the " + searcher.name +
                               " searcher needs max_length, or time_metric and max_time");
  return *length;
}

void require_trials(const config::searcher_config& searcher) {
  if (searcher.max_trials < 1)
    throw config::config_error("searcher.max_trials: the " + searcher.name +
                               " searcher needs at least one trial");
}

} // namespace

std::unique_ptr<search_method> make_search_method(const config::experiment_config& config) {
  const auto& searcher = config.searcher;
  const auto& name = searcher.name;
  auto trials = [&] { return trial_factory(config.hparams, config.experiment_seed); };
  if (name == "single") return std::make_unique<single_search>(optional_length(searcher), trials());
  if (name == "random") {
    require_trials(searcher);
    return std::make_unique<random_search>(searcher.max_trials, searcher.max_concurrent_trials,
                                           optional_length(searcher), trials());
  }
  if (name == "grid")
    return std::make_unique<grid_search>(hyperparameter_grid(config.hparams), searcher.max_concurrent_trials,
                                         optional_length(searcher), config.experiment_seed);
  if (name == "async_halving" || name == "asha") {
    require_trials(searcher);
    if (searcher.num_rungs < 1)
      throw config::config_error("searcher.num_rungs: the " + name + " searcher needs at least one rung");
    asha_settings settings{searcher.num_rungs,
                           searcher.divisor,
                           searcher.max_trials,
                           searcher.max_concurrent_trials,
                           required_length(searcher),
                           searcher.smaller_is_better};
    if (name == "asha") return std::make_unique<asha_promotion_search>(settings, trials());
    return std::make_unique<asha_stopping_search>(settings, std::make_shared<trial_factory>(trials()));
  }
  if (name == "pbt") {
    if (searcher.population_size < 1 || searcher.num_rounds < 1 || !searcher.length_per_round)
      throw config::config_error(
          "searcher: the pbt searcher needs population_size, num_rounds and length_per_round");
    pbt_settings settings{searcher.population_size,      searcher.num_rounds,
                          *searcher.length_per_round,    searcher.truncate_fraction,
                          searcher.resample_probability, searcher.perturb_factor,
                          searcher.smaller_is_better};
    return std::make_unique<pbt_search>(settings, config.hparams, trials());
  }
  if (name == "adaptive_asha") {
    require_trials(searcher);
    return std::make_unique<adaptive_asha_search>(adaptive_asha_brackets(searcher, required_length(searcher)),
                                                  trials());
  }
  if (name == "tpe") {
    require_trials(searcher);
    return std::make_unique<tpe_search>(tpe_settings_for(searcher, required_length(searcher)),
                                        config.hparams, config.experiment_seed);
  }
  if (name == "custom") return std::make_unique<custom_search>(searcher.unit, config.hparams, config.experiment_seed);
  throw config::config_error("searcher.name: " + name + " is not a searcher det knows");
}

} // namespace det::searcher
