#include "searcher/hyperparameter_sampling.hpp"

#include "searcher/random_draw.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <stdexcept>

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

struct explore_settings {
  double resample_probability;
  double perturb_factor;
};

nlohmann::json explore(const config::hyperparameters& hparams, const nlohmann::json& parent,
                       const explore_settings& settings, std::mt19937_64& rng);

nlohmann::json explore(const config::hyperparameter& hp, const nlohmann::json& parent,
                       const explore_settings& settings, std::mt19937_64& rng) {
  using config::hyperparameter_type;
  if (hp.type == hyperparameter_type::constant) return nlohmann::json::parse(hp.value_json);
  if (hp.type == hyperparameter_type::nested) return explore(hp.nested, parent, settings, rng);
  if (draw_unit(rng) < settings.resample_probability) return sample(hp, rng);
  bool increase = draw_unit(rng) < 0.5;
  double factor = increase ? 1 + settings.perturb_factor : 1 - settings.perturb_factor;
  switch (hp.type) {
    case hyperparameter_type::int_range: {
      double scaled = parent.get<double>() * factor;
      auto value = static_cast<int64_t>(increase ? std::ceil(scaled) : std::floor(scaled));
      return std::clamp<int64_t>(value, std::llround(hp.minval), std::llround(hp.maxval));
    }
    case hyperparameter_type::double_range:
      return std::clamp(parent.get<double>() * factor, hp.minval, hp.maxval);
    case hyperparameter_type::log_range:
      return std::clamp(parent.get<double>() * factor, std::pow(hp.base, hp.minval), std::pow(hp.base, hp.maxval));
    default: return parent;  // categorical: kept unless resampled
  }
}

nlohmann::json explore(const config::hyperparameters& hparams, const nlohmann::json& parent,
                       const explore_settings& settings, std::mt19937_64& rng) {
  auto object = nlohmann::json::object();
  for (const auto& [name, hp] : hparams) {
    if (!parent.is_object() || !parent.contains(name))
      throw std::runtime_error("cannot explore from hyperparameters without \"" + name + "\"");
    object[name] = explore(hp, parent.at(name), settings, rng);
  }
  return object;
}

} // namespace

std::string explore_hyperparameters(const config::hyperparameters& hparams, const std::string& parent_json,
                                    double resample_probability, double perturb_factor,
                                    std::mt19937_64& rng) {
  return explore(hparams, nlohmann::json::parse(parent_json),
                 explore_settings{resample_probability, perturb_factor}, rng)
      .dump();
}

std::string sample_hyperparameters(const config::hyperparameters& hparams, std::mt19937_64& rng) {
  return sample(hparams, rng).dump();
}

} // namespace det::searcher
