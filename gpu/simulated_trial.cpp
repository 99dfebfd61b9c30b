#include "gpu/simulated_trial.hpp"

#include "gpu/checkpoint_files.hpp"
#include "gpu/trial_loop.hpp"

#include <algorithm>
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

constexpr const char* checkpoint_format = "det.simulate/2";  // 2: noise.txt begins with the batches trained

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

/// builtin:simulate on the Trial API: each batch sleeps its share of simulated time and reports
/// the curve's loss there; a validation reports the curve at the batches trained.
class simulated_trial final : public det::trial {
 public:
  explicit simulated_trial(det::trial_context& context)
      : context_(context),
        settings_(parse_simulation_settings(context.hparams_json(), context.data_json())),
        floor_(simulated_loss_floor(context.hparams_json())),
        noise_{std::mt19937_64{context.seed()}} {
    context.log("Simulating builtin:simulate (loss floor " + std::to_string(floor_) + ", " +
                std::to_string(settings_.seconds_per_batch) + " s per batch).");
  }

  int64_t batch_size() const override { return settings_.batch_size; }
  int64_t records_per_epoch() const override { return 1000; }

  det::metrics train_batch(det::batch&, int64_t, int64_t batch) override {
    using clock_type = std::chrono::steady_clock;
    if (!started_) {  // paced from the first batch of this run, so that time does not drift
      started_ = true;
      start_ = clock_type::now();
      first_batch_ = batch;
    }
    trained_ = batch + 1;
    if (settings_.seconds_per_batch > 0)
      std::this_thread::sleep_until(start_ + std::chrono::duration_cast<clock_type::duration>(std::chrono::duration<double>(
                                                 static_cast<double>(trained_ - first_batch_) * settings_.seconds_per_batch)));
    // Across agents it exchanges one value per batch where a real trial averages its gradients.
    float gradient = 0;
    context_.average(&gradient, 1);
    return {{"loss", loss_at(trained_)}};
  }

  det::metrics evaluate_full() override {
    double loss = loss_at(trained_);
    return {{"validation_loss", loss}, {"validation_accuracy", std::clamp(1 - loss, 0.0, 1.0)}};
  }

  // noise.txt: the batches trained, then the noise generator's state.
  void save(const std::string& dir) override {
    std::ofstream(std::filesystem::path(dir) / "noise.txt") << trained_ << ' ' << noise_.text() << '\n';
  }

  // A simulation has no weights: a warm start only checks that the checkpoint is there.
  void load(const std::string& dir, bool weights_only) override {
    std::ifstream in(std::filesystem::path(dir) / "noise.txt");
    std::string text;
    if (!std::getline(in, text)) throw std::runtime_error("Checkpoint " + dir + " is corrupt: noise.txt is missing.");
    if (weights_only) return;
    auto space = text.find(' ');
    try {
      trained_ = std::stoll(text.substr(0, space));
    } catch (const std::exception&) {
      throw std::runtime_error("Checkpoint " + dir + " is corrupt: noise.txt does not start with a batch count.");
    }
    noise_.load(space == std::string::npos ? "" : text.substr(space + 1), dir);
  }

 private:
  double loss_at(int64_t batches) {
    double clean = floor_ + (1 - floor_) * std::exp(-static_cast<double>(batches) / settings_.time_constant);
    return clean + settings_.noise * noise_.gauss(noise_.rng);
  }

  det::trial_context& context_;
  simulation_settings settings_;
  double floor_;
  noise_source noise_;
  int64_t trained_ = 0;
  bool started_ = false;
  std::chrono::steady_clock::time_point start_;
  int64_t first_batch_ = 0;
};

} // namespace

bool run_simulated_trial(const training_plan& plan, reporter& out) {
  step_timings timings(plan.profiling);
  auto context = make_trial_context(plan, out, timings);
  simulated_trial trial(*context);
  return run_trial_loop(trial, plan, out, checkpoint_format, timings);
}

} // namespace det::harness
