#include "gpu/simulated_trial.hpp"

#include "gpu/checkpoint_files.hpp"

#include <chrono>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <cmath>
#include <random>
#include <stdexcept>
#include <thread>

#include <nlohmann/json.hpp>

namespace det::harness {
namespace {

using json = nlohmann::json;

json parse_object(const std::string& text, const char* what) {
  if (text.empty())
    return json::object();
  auto j = json::parse(text, nullptr, false);
  if (j.is_discarded() || !j.is_object())
    throw std::runtime_error(std::string("The ") + what + " of builtin:simulate must be a JSON object.");
  return j;
}

double number(const json& obj, const char* key, double fallback, double min) {
  auto it = obj.find(key);
  if (it == obj.end())
    return fallback;
  if (!it->is_number())
    throw std::runtime_error(std::string("data.") + key + " of builtin:simulate must be a number.");
  double v = it->get<double>();
  if (v < min)
    throw std::runtime_error(std::string("data.") + key + " of builtin:simulate must be at least " +
                             std::to_string(min) + ".");
  return v;
}

// Every numeric leaf, in the JSON's (sorted) key order, nested objects included.
void numeric_leaves(const json& j, std::vector<double>& out) {
  if (j.is_number()) {
    out.push_back(j.get<double>());
  } else if (j.is_object() || j.is_array()) {
    for (auto& v : j)
      numeric_leaves(v, out);
  }
}

int64_t batches_for(const training_plan& plan, int64_t batch_size) {
  if (plan.length <= 0)
    throw std::runtime_error("The trial's length must be positive, not " +
                             std::to_string(plan.length) + ".");
  auto records_per_epoch = plan.records_per_epoch > 0 ? plan.records_per_epoch : 1000;
  switch (plan.length_unit) {
    case unit::batches:
      return plan.length;
    case unit::records:
      return (plan.length + batch_size - 1) / batch_size;
    case unit::epochs:
      return (plan.length * records_per_epoch + batch_size - 1) / batch_size;
  }
  throw std::logic_error("unhandled length unit");
}

} // namespace

simulation_settings parse_simulation_settings(const std::string& hparams_json,
                                              const std::string& data_json) {
  auto data = parse_object(data_json, "data table");
  auto hparams = parse_object(hparams_json, "hyperparameters");
  simulation_settings s;
  s.seconds_per_batch = number(data, "seconds_per_batch", 0, 0);
  s.noise = number(data, "noise", 0, 0);
  s.time_constant = number(data, "time_constant", 100, 1e-9);
  try {
    s.batch_size = static_cast<int64_t>(number(hparams, "global_batch_size", 1, 1));
  } catch (const std::runtime_error& e) {
    throw invalid_hyperparameters(std::string(e.what()).replace(0, 5, "hyperparameters."));
  }
  return s;
}

double simulated_loss_floor(const std::string& hparams_json) {
  std::vector<double> values;
  numeric_leaves(parse_object(hparams_json, "hyperparameters"), values);
  // A smooth bowl per value (different centre per position), mapped into [0.05, 1).
  double sum = 0;
  for (std::size_t i = 0; i < values.size(); ++i) {
    double v = values[i];
    double scaled = std::log1p(std::fabs(v)) * (v < 0 ? -1 : 1);
    sum += 1 - std::cos(scaled - 0.7 * static_cast<double>(i + 1));
  }
  double mean = values.empty() ? 0 : sum / static_cast<double>(values.size());
  return 0.05 + 0.95 * (mean / 2.0) * 0.999;
}

namespace {

constexpr const char* checkpoint_format = "det.simulate/1";

/// The noise generator's whole state, so that a resumed run draws what an uninterrupted one would.
struct noise_source {
  std::mt19937_64 rng;
  std::normal_distribution<double> gauss{0.0, 1.0};

  std::string text() const {
    std::ostringstream out;
    out << rng << ' ' << gauss;
    return out.str();
  }
  void load(const std::string& text, const std::string& dir) {
    std::istringstream in(text);
    in >> rng >> gauss;
    if (!in) throw std::runtime_error("Checkpoint " + dir + " is corrupt: its noise state cannot be read.");
  }
};

saved_checkpoint save_simulation(const std::string& root, const progress& at, const noise_source& noise) {
  checkpoint_writer writer(root);
  std::ofstream(std::filesystem::path(writer.dir()) / "noise.txt") << noise.text() << '\n';
  return writer.commit(checkpoint_format, at);
}

progress load_simulation(const std::string& dir, noise_source& noise) {
  auto metadata = read_checkpoint(dir, checkpoint_format);
  std::ifstream in(std::filesystem::path(dir) / "noise.txt");
  std::string text;
  if (!std::getline(in, text)) throw std::runtime_error("Checkpoint " + dir + " is corrupt: noise.txt is missing.");
  noise.load(text, dir);
  return metadata.at;
}

} // namespace

void run_simulated_trial(const training_plan& plan, reporter& out) {
  using clock_type = std::chrono::steady_clock;
  auto settings = parse_simulation_settings(plan.hparams_json, plan.data_json);
  const double floor = simulated_loss_floor(plan.hparams_json);
  const int64_t goal = batches_for(plan, settings.batch_size);
  const int64_t records_per_epoch = plan.records_per_epoch > 0 ? plan.records_per_epoch : 1000;
  noise_source noise{std::mt19937_64{plan.seed}};
  auto loss_at = [&](int64_t batches) {
    double clean = floor + (1 - floor) * std::exp(-static_cast<double>(batches) / settings.time_constant);
    return clean + settings.noise * noise.gauss(noise.rng);
  };
  progress at;
  if (!plan.resume_from.empty()) {
    at = load_simulation(plan.resume_from, noise);
    out.log("Resuming from checkpoint " + plan.resume_from + " at batch " + std::to_string(at.batches) + ".");
  } else if (!plan.warm_start_from.empty()) {
    noise_source ignored;
    load_simulation(plan.warm_start_from, ignored);  // a simulation has no weights: it only checks the checkpoint
    out.log("Starting from the weights of checkpoint " + plan.warm_start_from + ".");
  }
  out.log("Simulating builtin:simulate for " + std::to_string(goal) + " batches (loss floor " +
          std::to_string(floor) + ", " + std::to_string(settings.seconds_per_batch) +
          " s per batch).");
  int64_t checkpointed_at = plan.resume_from.empty() ? -1 : at.batches;
  auto checkpoint = [&] {
    if (plan.checkpoint_dir.empty() || checkpointed_at == at.batches) return;
    out.checkpoint_saved(save_simulation(plan.checkpoint_dir, at, noise));
    checkpointed_at = at.batches;
  };
  const int64_t first_batch = at.batches;
  auto advance = [&](int64_t batches) {
    at.batches += batches;
    at.records += batches * settings.batch_size;
    at.epochs = static_cast<double>(at.records) / static_cast<double>(records_per_epoch);
  };
  auto validate = [&] {
    double loss = loss_at(at.batches);
    out.validation_metrics(at, {{"validation_loss", loss},
                                {"validation_accuracy", std::clamp(1 - loss, 0.0, 1.0)}});
  };
  // Simulated time is slept in steps of at most one report period, checking
  // for a stop request between steps, so a stop is honoured promptly.
  const int64_t report = plan.report_every_batches > 0 ? plan.report_every_batches : goal;
  const int64_t validate_every = plan.min_validation_period_batches;
  int64_t validated_at = -1;
  auto start = clock_type::now();
  while (at.batches < goal) {
    if (out.should_stop()) {
      out.log("Stopped after " + std::to_string(at.batches) + " of " + std::to_string(goal) +
              " batches as requested.");
      checkpoint();
      return;
    }
    int64_t step = std::min(goal - at.batches, report - at.batches % report);
    if (validate_every > 0)
      step = std::min(step, validate_every - at.batches % validate_every);
    const int64_t period = plan.min_checkpoint_period_batches;
    if (period > 0)
      step = std::min(step, period - at.batches % period);
    advance(step);
    if (settings.seconds_per_batch > 0)
      std::this_thread::sleep_until(start + std::chrono::duration<double>(
                                                static_cast<double>(at.batches - first_batch) *
                                                settings.seconds_per_batch));
    if (at.batches % report == 0 || at.batches == goal)
      out.training_metrics(at, {{"loss", loss_at(at.batches)}});
    if (validate_every > 0 && at.batches % validate_every == 0) {
      validate();
      validated_at = at.batches;
    }
    if (period > 0 && at.batches % period == 0)
      checkpoint();
  }
  if (validated_at != at.batches)
    validate();
  checkpoint();
}

} // namespace det::harness
