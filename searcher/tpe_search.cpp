#include "searcher/tpe_search.hpp"

#include "searcher/asha_rungs.hpp"
#include "searcher/parzen_estimator.hpp"
#include "searcher/random_draw.hpp"
#include "searcher/snapshot_parts.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <sstream>
#include <stdexcept>

namespace det::searcher {

namespace {

using config::hyperparameter_type;

/// Mixed into the experiment seed for the model's RNG: the trial factory draws the startup
/// samples from the bare seed, and the model's draws must not replay those.
constexpr uint64_t model_stream = 0x9E3779B97F4A7C15;

/// Every hyperparameter other than const, depth first in name order: one per coordinate.
void collect_dimensions(const config::hyperparameters& hparams, std::vector<const config::hyperparameter*>& out) {
  for (const auto& [name, hp] : hparams) {
    if (hp.type == hyperparameter_type::nested)
      collect_dimensions(hp.nested, out);
    else if (hp.type != hyperparameter_type::constant)
      out.push_back(&hp);
  }
}

/// The coordinates of a hyperparameter object as sample_hyperparameters writes it.
void append_point(const config::hyperparameters& hparams, const nlohmann::json& values, std::vector<double>& point) {
  for (const auto& [name, hp] : hparams) {
    const auto& value = values.at(name);
    switch (hp.type) {
      case hyperparameter_type::constant: break;
      case hyperparameter_type::nested: append_point(hp.nested, value, point); break;
      case hyperparameter_type::int_range:
      case hyperparameter_type::double_range: point.push_back(value.get<double>()); break;
      case hyperparameter_type::log_range:
        // Rounding in pow and log may step just outside the exponent range.
        point.push_back(std::clamp(std::log(value.get<double>()) / std::log(hp.base), hp.minval, hp.maxval));
        break;
      case hyperparameter_type::categorical: {
        size_t index = 0;
        while (index + 1 < hp.vals_json.size() && nlohmann::json::parse(hp.vals_json[index]) != value) ++index;
        point.push_back(static_cast<double>(index));
        break;
      }
    }
  }
}

/// The hyperparameter object of a point, written as sample_hyperparameters writes one.
nlohmann::json values_of(const config::hyperparameters& hparams, const std::vector<double>& point, size_t& next) {
  auto object = nlohmann::json::object();
  for (const auto& [name, hp] : hparams) {
    switch (hp.type) {
      case hyperparameter_type::constant: object[name] = nlohmann::json::parse(hp.value_json); break;
      case hyperparameter_type::nested: object[name] = values_of(hp.nested, point, next); break;
      case hyperparameter_type::int_range: object[name] = static_cast<int64_t>(std::llround(point[next++])); break;
      case hyperparameter_type::double_range: object[name] = point[next++]; break;
      case hyperparameter_type::log_range: object[name] = std::pow(hp.base, point[next++]); break;
      case hyperparameter_type::categorical:
        object[name] = nlohmann::json::parse(hp.vals_json.at(static_cast<size_t>(point[next++])));
        break;
    }
  }
  return object;
}

/// Of `candidates` draws from `good`, the first with the largest log l(x) - log g(x). Optuna
/// ranks by a monotone function of that ratio, so it picks the same draw.
template <typename estimator>
double best_candidate(const estimator& good, const estimator& bad, int64_t candidates, std::mt19937_64& rng) {
  double best = 0;
  double best_score = 0;
  for (int64_t i = 0; i < candidates; ++i) {
    auto x = good.sample(rng);
    double score = good.log_likelihood(x) - bad.log_likelihood(x);
    if (i == 0 || score > best_score) {
      best = static_cast<double>(x);
      best_score = score;
    }
  }
  return best;
}

double propose_value(const config::hyperparameter& hp, const std::vector<double>& good,
                     const std::vector<double>& bad, int64_t candidates, std::mt19937_64& rng) {
  if (hp.type == hyperparameter_type::categorical) {
    auto indices = [](const std::vector<double>& coordinates) {
      return std::vector<size_t>(coordinates.begin(), coordinates.end());
    };
    auto choices = hp.vals_json.size();
    return best_candidate(categorical_parzen_estimator(indices(good), choices),
                          categorical_parzen_estimator(indices(bad), choices), candidates, rng);
  }
  // A range of one value leaves nothing to model.
  if (hp.maxval <= hp.minval) return hp.minval;
  bool integral = hp.type == hyperparameter_type::int_range;
  return best_candidate(numeric_parzen_estimator(good, hp.minval, hp.maxval, integral),
                        numeric_parzen_estimator(bad, hp.minval, hp.maxval, integral), candidates, rng);
}

void write_point(const std::vector<double>& point, pb::TpeSearchState::Point& into) {
  for (double x : point) into.add_coordinates(x);
}

/// Whether `x` is a coordinate the hyperparameter can take.
bool fits(const config::hyperparameter& hp, double x) {
  if (hp.type == hyperparameter_type::categorical)
    return x >= 0 && x == std::floor(x) && x < static_cast<double>(hp.vals_json.size());
  if (hp.type == hyperparameter_type::int_range && x != std::floor(x)) return false;
  return x >= hp.minval && x <= hp.maxval;
}

/// Throws std::runtime_error unless the point is one of the searched hyperparameters.
std::vector<double> read_point(const pb::TpeSearchState::Point& point,
                               const std::vector<const config::hyperparameter*>& dimensions) {
  if (static_cast<size_t>(point.coordinates_size()) != dimensions.size())
    throw std::runtime_error("the tpe snapshot holds a point of " + std::to_string(point.coordinates_size()) +
                             " hyperparameters, but the experiment searches " + std::to_string(dimensions.size()));
  std::vector<double> read(point.coordinates().begin(), point.coordinates().end());
  for (size_t d = 0; d < read.size(); ++d)
    if (!fits(*dimensions[d], read[d]))
      throw std::runtime_error("the tpe snapshot holds hyperparameters outside the experiment's ranges");
  return read;
}

} // namespace

tpe_settings tpe_settings_for(const config::searcher_config& searcher, config::length max_length) {
  tpe_settings settings;
  settings.max_trials = searcher.max_trials;
  settings.max_concurrent_trials = searcher.max_concurrent_trials;
  settings.max_length = max_length;
  settings.smaller_is_better = searcher.smaller_is_better;
  settings.n_startup_trials = searcher.n_startup_trials;
  settings.n_ei_candidates = searcher.n_ei_candidates;
  settings.gamma = searcher.gamma;
  return settings;
}

tpe_search::tpe_search(tpe_settings settings, config::hyperparameters hparams, uint32_t experiment_seed)
    : settings_(settings),
      hparams_(std::move(hparams)),
      startup_trials_(hparams_, experiment_seed),
      rng_(experiment_seed ^ model_stream) {
  if (settings_.n_ei_candidates < 1)
    throw config::config_error("searcher.n_ei_candidates: the tpe searcher needs at least one candidate");
  if (!(settings_.gamma > 0 && settings_.gamma <= 1)) {
    std::ostringstream sentence;
    sentence << "searcher.gamma: must be greater than 0 and at most 1, got " << settings_.gamma;
    throw config::config_error(sentence.str());
  }
}

create_action tpe_search::next_trial() {
  create_action create;
  std::vector<double> point;
  // Observations only accumulate, so the random trials are the first ones, exactly those
  // random_search would start with the same seed.
  if (static_cast<int64_t>(observations_.size()) < settings_.n_startup_trials) {
    create = startup_trials_.next();
    append_point(hparams_, nlohmann::json::parse(create.hparams_json), point);
  } else {
    point = propose();
    size_t next = 0;
    create.hparams_json = values_of(hparams_, point, next).dump();
    create.trial_seed = static_cast<uint32_t>(draw_below(rng_, uint64_t{1} << 31));
  }
  // The factory numbers only the trials it makes; the search numbers them all.
  create.request_id = next_request_id_++;
  points_[create.request_id] = std::move(point);
  return create;
}

std::vector<double> tpe_search::propose() {
  // The good observations are the lowest losses, ties going to the older trial.
  std::vector<std::pair<double, int64_t>> ranked;
  for (const auto& [id, seen] : observations_) ranked.emplace_back(seen.loss, id);
  std::stable_sort(ranked.begin(), ranked.end(),
                   [](const auto& a, const auto& b) { return a.first < b.first; });
  std::set<int64_t> good_ids;
  auto good_count = tpe_good_count(ranked.size(), settings_.gamma);
  for (size_t i = 0; i < good_count; ++i) good_ids.insert(ranked[i].second);

  std::vector<const config::hyperparameter*> dimensions;
  collect_dimensions(hparams_, dimensions);
  std::vector<double> point;
  for (size_t d = 0; d < dimensions.size(); ++d) {
    std::vector<double> good, bad;
    for (const auto& [id, seen] : observations_) (good_ids.count(id) ? good : bad).push_back(seen.point[d]);
    point.push_back(propose_value(*dimensions[d], good, bad, settings_.n_ei_candidates, rng_));
  }
  return point;
}

std::vector<action> tpe_search::initial_trials() {
  auto count = settings_.max_concurrent_trials > 0
                   ? std::min(settings_.max_trials, settings_.max_concurrent_trials)
                   : settings_.max_trials;
  std::vector<action> actions;
  for (; counted_ < count; ++counted_) actions.push_back(next_trial());
  return actions;
}

std::vector<action> tpe_search::trial_created(int64_t request_id) {
  trial_progress_.emplace(request_id, 0.0);
  return {validate_after_action{request_id, settings_.max_length}};
}

std::vector<action> tpe_search::validation_completed(int64_t request_id, double metric, int64_t length_trained) {
  if (points_.count(request_id)) last_loss_[request_id] = ranked_metric(metric, settings_.smaller_is_better);
  auto it = trial_progress_.find(request_id);
  const auto max_length = settings_.max_length.value;
  if (it != trial_progress_.end() && max_length > 0)
    it->second = std::max(it->second, std::clamp(static_cast<double>(length_trained) /
                                                     static_cast<double>(max_length), 0.0, 1.0));
  return {};
}

std::vector<action> tpe_search::trial_exited(int64_t request_id) {
  auto point = points_.find(request_id);
  auto loss = last_loss_.find(request_id);
  if (!invalid_.count(request_id)) {
    trial_progress_[request_id] = 1.0;
    // A trial that never validated has no result to learn from.
    if (point != points_.end() && loss != last_loss_.end())
      observations_[request_id] = observation{point->second, loss->second};
  }
  if (point != points_.end()) points_.erase(point);
  if (loss != last_loss_.end()) last_loss_.erase(loss);
  if (counted_ >= settings_.max_trials) return {};
  ++counted_;
  return {next_trial()};
}

std::vector<action> tpe_search::trial_exited_early(int64_t request_id, exit_reason reason) {
  if (reason == exit_reason::invalid_hp && invalid_.insert(request_id).second) {
    // Its replacement is created when the trial exits, as any trial's successor is.
    --counted_;
    trial_progress_.erase(request_id);
  }
  return {};
}

double tpe_search::progress() const {
  if (settings_.max_trials <= 0) return 0.0;
  double sum = 0;
  for (const auto& [id, share] : trial_progress_) sum += share;
  return std::clamp(sum / static_cast<double>(settings_.max_trials), 0.0, 1.0);
}

void tpe_search::snapshot(pb::SearcherSnapshot& snapshot) const {
  auto& state = *snapshot.mutable_tpe();
  startup_trials_.snapshot(*state.mutable_trials());
  state.set_rng(rng_text(rng_));
  state.set_next_request_id(next_request_id_);
  state.set_counted(counted_);
  for (const auto& [id, point] : points_) write_point(point, (*state.mutable_points())[id]);
  for (const auto& [id, loss] : last_loss_) (*state.mutable_last_loss())[id] = loss;
  for (const auto& [id, seen] : observations_) {
    auto& into = (*state.mutable_observations())[id];
    write_point(seen.point, *into.mutable_point());
    into.set_loss(seen.loss);
  }
  write_progress(trial_progress_, *state.mutable_trial_progress());
  for (auto id : invalid_) state.add_invalid_hp(id);
}

void tpe_search::restore(const pb::SearcherSnapshot& snapshot) {
  require_method(snapshot, pb::SearcherSnapshot::kTpe);
  const auto& state = snapshot.tpe();
  // Everything is read before anything changes, so that a refused snapshot changes nothing.
  std::vector<const config::hyperparameter*> dimensions;
  collect_dimensions(hparams_, dimensions);
  auto rng = rng_from_text(state.rng());
  std::map<int64_t, std::vector<double>> points;
  for (const auto& [id, point] : state.points()) points[id] = read_point(point, dimensions);
  std::map<int64_t, observation> observations;
  for (const auto& [id, seen] : state.observations())
    observations[id] = observation{read_point(seen.point(), dimensions), seen.loss()};
  startup_trials_.restore(state.trials());

  rng_ = rng;
  next_request_id_ = state.next_request_id();
  counted_ = state.counted();
  points_ = std::move(points);
  last_loss_ = {state.last_loss().begin(), state.last_loss().end()};
  observations_ = std::move(observations);
  trial_progress_ = read_progress(state.trial_progress());
  invalid_ = {state.invalid_hp().begin(), state.invalid_hp().end()};
}

} // namespace det::searcher
