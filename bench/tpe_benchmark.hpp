#pragma once
// The 5-d objective that det's TPE is judged on: the tpe unit test (it must beat random search)
// and bench/tpe_vs_optuna.py (against Optuna's TPE) search the same space for the same function.

#include <cmath>
#include <map>
#include <string>

#include <nlohmann/json.hpp>

namespace det::bench {

// Five searched dimensions of every kind the model treats apart (double, int, log inside a
// nested table, categorical) and two constants.
inline const std::string tpe_benchmark_hparams =
    "[hyperparameters]\n"
    "x = { type = \"double\", minval = -5.0, maxval = 10.0 }\n"
    "y = { type = \"double\", minval = 0.0, maxval = 15.0 }\n"
    "width = { type = \"int\", minval = 1, maxval = 128 }\n"
    "activation = { type = \"categorical\", vals = [\"relu\", \"tanh\", \"sigmoid\", \"gelu\"] }\n"
    "batch_size = { type = \"const\", val = 32 }\n"
    "[hyperparameters.optimizer]\n"
    "lr = { type = \"log\", minval = -5, maxval = 0 }\n"
    "kind = { type = \"const\", val = \"sgd\" }\n";

/// Branin over (x, y), whose minimum 0.397887 it takes at three points, plus a bowl in each other
/// hyperparameter with its floor at 0: log10(lr) at -3, width at 80, activation at relu.
inline double tpe_benchmark(const nlohmann::json& hp) {
  constexpr double pi = 3.14159265358979323846;
  double x = hp.at("x").get<double>();
  double y = hp.at("y").get<double>();
  const double b = 5.1 / (4 * pi * pi), c = 5 / pi, t = 1 / (8 * pi);
  double branin = std::pow(y - b * x * x + c * x - 6, 2) + 10 * (1 - t) * std::cos(x) + 10;
  double lr = std::log10(hp.at("optimizer").at("lr").get<double>()) + 3;
  double width = (hp.at("width").get<double>() - 80) / 32;
  static const std::map<std::string, double> activation = {{"relu", 0}, {"gelu", 0.25}, {"tanh", 0.5}, {"sigmoid", 1}};
  return branin + lr * lr + width * width + activation.at(hp.at("activation").get<std::string>());
}

}  // namespace det::bench
