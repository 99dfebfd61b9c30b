#include "searcher/hyperparameter_sampling.hpp"

#include "searcher/random_draw.hpp"

#include <nlohmann/json.hpp>

#include <cmath>

namespace det::searcher {

namespace {

nlohmann::json sample(const config::hyperparameters& hparams, std::mt19937_64& rng);

nlohmann::json sample(const config::hyperparameter& hp, std::mt19937_64& rng) {
  using config::hyperparameter_type;
  switch (hp.type) {
    case hyperparameter_type::constant: return nlohmann::json::parse(hp.value_json);
    case hyperparameter_type::int_range: {
      auto lo = std::llround(hp.minval);
      auto span = static_cast<uint64_t>(std::llround(hp.maxval) - lo) + 1;
      return lo + static_cast<int64_t>(draw_below(rng, span));
    }
    case hyperparameter_type::double_range:
      return hp.minval + draw_unit(rng) * (hp.maxval - hp.minval);
    case hyperparameter_type::log_range:
      return std::pow(hp.base, hp.minval + draw_unit(rng) * (hp.maxval - hp.minval));
    case hyperparameter_type::categorical:
      return nlohmann::json::parse(hp.vals_json.at(draw_below(rng, hp.vals_json.size())));
    case hyperparameter_type::nested: return sample(hp.nested, rng);
  }
  return nullptr;
}

nlohmann::json sample(const config::hyperparameters& hparams, std::mt19937_64& rng) {
  auto object = nlohmann::json::object();
  for (const auto& [name, hp] : hparams) object[name] = sample(hp, rng);
  return object;
}

} // namespace

std::string sample_hyperparameters(const config::hyperparameters& hparams, std::mt19937_64& rng) {
  return sample(hparams, rng).dump();
}

} // namespace det::searcher
