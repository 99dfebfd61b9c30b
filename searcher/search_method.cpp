#include "searcher/search_method.hpp"

#include "searcher/adaptive_asha_search.hpp"
#include "searcher/asha_stopping_search.hpp"
#include "searcher/grid_search.hpp"
#include "searcher/hyperparameter_grid.hpp"
#include "searcher/random_search.hpp"
#include "searcher/single_search.hpp"
#include "searcher/tpe_search.hpp"

namespace det::searcher {

search_method::~search_method() = default;

namespace {

// parse_experiment_config guarantees these; a config built in code may lack them.

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
  if (name == "single") return std::make_unique<single_search>(required_length(searcher), trials());
  if (name == "random") {
    require_trials(searcher);
    return std::make_unique<random_search>(searcher.max_trials, searcher.max_concurrent_trials,
                                           required_length(searcher), trials());
  }
  if (name == "grid")
    return std::make_unique<grid_search>(hyperparameter_grid(config.hparams), searcher.max_concurrent_trials,
                                         required_length(searcher), config.experiment_seed);
  if (name == "async_halving") {
    require_trials(searcher);
    if (searcher.num_rungs < 1)
      throw config::config_error("searcher.num_rungs: the async_halving searcher needs at least one rung");
    asha_settings settings{searcher.num_rungs,
                           searcher.divisor,
                           searcher.max_trials,
                           searcher.max_concurrent_trials,
                           required_length(searcher),
                           searcher.smaller_is_better};
    return std::make_unique<asha_stopping_search>(settings, std::make_shared<trial_factory>(trials()));
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
  throw config::config_error("searcher.name: " + name + " is not implemented yet");
}

} // namespace det::searcher
