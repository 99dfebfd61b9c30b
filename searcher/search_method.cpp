#include "searcher/search_method.hpp"

#include "searcher/single_search.hpp"

namespace det::searcher {

search_method::~search_method() = default;

std::unique_ptr<search_method> make_search_method(const config::experiment_config& config) {
  const auto& name = config.searcher.name;
  if (name == "single") {
    auto length = config.searcher.training_length();
    // parse_experiment_config guarantees a length; a config built in code may lack one.
    if (!length)
      throw config::config_error("searcher: the single searcher needs max_length, or time_metric and max_time");
    return std::make_unique<single_search>(*length, trial_factory(config.hparams, config.experiment_seed));
  }
  throw config::config_error("searcher.name: " + name + " is not implemented yet");
}

} // namespace det::searcher
