// The grid and the grid searcher against Determined 0.38's grid_test.go (determined-reference
// §2.8 item 12).
#include "config/experiment_config.hpp"
#include "searcher/hyperparameter_grid.hpp"
#include "searcher/searcher.hpp"

#include <doctest/doctest.h>
#include <nlohmann/json.hpp>

#include <set>

using namespace det;
using nlohmann::json;

namespace {

config::experiment_config grid_config(const std::string& hparams, const std::string& searcher_lines = "",
                                      uint32_t seed = 102932948) {
  return config::parse_experiment_config(
      "entrypoint = \"builtin:mlp\"\n[reproducibility]\nexperiment_seed = " + std::to_string(seed) +
          "\n[searcher]\nname = \"grid\"\nmetric = \"loss\"\nmax_length = { batches = 100 }\n" +
          searcher_lines + "[hyperparameters]\n" + hparams,
      "grid.toml");
}

std::vector<json> grid_of(const std::string& hparams) {
  std::vector<json> points;
  for (const auto& text : searcher::hyperparameter_grid(grid_config(hparams).hparams))
    points.push_back(json::parse(text));
  return points;
}

/// The values one hyperparameter takes over the grid, in grid order.
std::vector<json> axis(const std::string& hparams, const std::string& name) {
  std::vector<json> values;
  for (const auto& point : grid_of(hparams)) values.push_back(point.at(name));
  return values;
}

struct grid_run {
  std::vector<searcher::create_action> creates;
  int64_t stops = 0;
  bool shut_down = false;
};

/// Runs every trial to its length, oldest first; trial `invalid` reports invalid hyperparameters.
grid_run run_all(searcher::searcher& s, int64_t invalid = 0) {
  grid_run result;
  auto apply = [&](const std::vector<searcher::action>& actions) {
    for (const auto& a : actions) {
      if (const auto* create = std::get_if<searcher::create_action>(&a)) result.creates.push_back(*create);
      if (std::holds_alternative<searcher::stop_action>(a)) ++result.stops;
      if (std::holds_alternative<searcher::shutdown_action>(a)) result.shut_down = true;
    }
  };
  apply(s.initial_trials());
  for (size_t i = 0; i < result.creates.size(); ++i) {
    auto id = result.creates[i].request_id;
    auto created = s.trial_created(id);
    REQUIRE(created.size() == 1);
    CHECK(std::get<searcher::validate_after_action>(created[0]).length.value == 100);
    if (id == invalid)
      apply(s.trial_exited_early(id, searcher::exit_reason::invalid_hp));
    else
      apply(s.validation_completed(id, 0.5, 100));
    apply(s.trial_exited(id));
  }
  return result;
}

} // namespace

TEST_CASE("the grid is the product of the axes, the first name varying slowest (TestGrid)") {
  auto points = grid_of("1 = { type = \"int\", minval = 0, maxval = 20, count = 3 }\n"
                        "2 = { type = \"int\", minval = 0, maxval = 10, count = 3 }\n");
  std::vector<json> expected;
  for (int a : {0, 10, 20})
    for (int b : {0, 5, 10}) expected.push_back(json{{"1", a}, {"2", b}});
  CHECK(points == expected);
}

TEST_CASE("the grid's size is the product of the axis sizes (checkGrid)") {
  std::string hparams;
  int64_t n = 0;
  for (int count : {2, 2, 3, 3, 4, 5})
    hparams += "h" + std::to_string(n++) + " = { type = \"int\", minval = 0, maxval = 100, count = " +
               std::to_string(count) + " }\n";
  CHECK(grid_of(hparams).size() == 720);
  CHECK(searcher::hyperparameter_grid_size(grid_config(hparams).hparams) == 720);
  std::set<std::string> distinct;
  for (const auto& p : grid_of(hparams)) distinct.insert(p.dump());
  CHECK(distinct.size() == 720);
}

TEST_CASE("int axes hold count integers spread over the range (TestGridIntCount, TestGridIntCountNegative)") {
  CHECK(axis("x = { type = \"int\", minval = 0, maxval = 4, count = 5 }\n", "x") == std::vector<json>{0, 1, 2, 3, 4});
  CHECK(axis("x = { type = \"int\", minval = -4, maxval = -2, count = 3 }\n", "x") == std::vector<json>{-4, -3, -2});
  // More points than integers: one per integer.
  CHECK(axis("x = { type = \"int\", minval = 0, maxval = 2, count = 10 }\n", "x") == std::vector<json>{0, 1, 2});
  CHECK(axis("x = { type = \"int\", minval = 0, maxval = 3, count = 1 }\n", "x") == std::vector<json>{2});
  CHECK(axis("x = { type = \"int\", minval = 0, maxval = 20, count = 7 }\n", "x") ==
        std::vector<json>{0, 3, 7, 10, 13, 17, 20});
}

TEST_CASE("nested tables give one axis per entry (TestNestedGridFurther)") {
  auto points = grid_of(
      "[hyperparameters.nested]\n"
      "const = 2\n"
      "cat = { type = \"categorical\", vals = [3, 5] }\n"
      "int = { type = \"int\", minval = 7, maxval = 11, count = 2 }\n"
      "[hyperparameters.nested.further]\n"
      "double = { type = \"double\", minval = 13, maxval = 17, count = 2 }\n"
      "log = { type = \"log\", minval = 1, maxval = 2, base = 10, count = 2 }\n");
  REQUIRE(points.size() == 16);
  std::set<std::string> distinct;
  std::set<double> ints, doubles, logs;
  for (const auto& p : points) {
    distinct.insert(p.dump());
    const auto& nested = p.at("nested");
    CHECK(nested.at("const") == 2);
    ints.insert(nested.at("int").get<double>());
    doubles.insert(nested.at("further").at("double").get<double>());
    logs.insert(nested.at("further").at("log").get<double>());
  }
  CHECK(distinct.size() == 16);
  CHECK(ints == std::set<double>{7, 11});
  CHECK(doubles == std::set<double>{13, 17});
  CHECK(logs == std::set<double>{10, 100});
  // cat varies slowest within `nested`: it sorts first.
  CHECK(points.front().at("nested").at("cat") == 3);
  CHECK(points.back().at("nested").at("cat") == 5);
}

TEST_CASE("each kind of hyperparameter gives its own axis (TestHyperparameterGridMethod)") {
  CHECK(axis("d = { type = \"double\", minval = 0, maxval = 1, count = 5 }\n", "d") ==
        std::vector<json>{0.0, 0.25, 0.5, 0.75, 1.0});
  CHECK(axis("d = { type = \"double\", minval = 0, maxval = 1, count = 1 }\n", "d") == std::vector<json>{0.5});
  CHECK(axis("l = { type = \"log\", minval = -3, maxval = -1, base = 10, count = 2 }\n", "l").size() == 2);
  auto one_log = axis("l = { type = \"log\", minval = 1, maxval = 3, base = 2, count = 1 }\n", "l");
  REQUIRE(one_log.size() == 1);
  CHECK(one_log[0].get<double>() == doctest::Approx(4.0));
  CHECK(axis("c = { type = \"categorical\", vals = [1, 2, 3] }\n", "c") == std::vector<json>{1, 2, 3});
  CHECK(axis("k = { type = \"const\", val = \"x\" }\n", "k") == std::vector<json>{"x"});
  CHECK(axis("e = {}\n", "e") == std::vector<json>{json::object()});
  // No hyperparameters at all: a single trial without any.
  CHECK(searcher::hyperparameter_grid({}) == std::vector<std::string>{"{}"});
}

TEST_CASE("a range without count cannot be a grid axis") {
  auto hparams = grid_config("x = { type = \"int\", minval = 0, maxval = 3, count = 2 }\n").hparams;
  hparams.at("x").count.reset();
  std::string message;
  try {
    searcher::hyperparameter_grid(hparams);
  } catch (const config::config_error& e) {
    message = e.what();
  }
  CHECK(message.rfind("hyperparameters.x: the grid searcher needs count", 0) == 0);
}

TEST_CASE("grid: one trial per point, none stopped (TestGridSearchMethod)") {
  auto config = grid_config("x = { type = \"int\", minval = 0, maxval = 3, count = 4 }\n",
                            "max_concurrent_trials = 2\n");
  searcher::searcher s(searcher::make_search_method(config));
  auto initial = s.initial_trials();
  CHECK(initial.size() == 2);
  searcher::searcher again(searcher::make_search_method(config));
  auto result = run_all(again);
  REQUIRE(result.creates.size() == 4);
  std::vector<int> xs;
  for (const auto& c : result.creates) xs.push_back(json::parse(c.hparams_json).at("x").get<int>());
  // Points are taken from the end of the grid, as Determined pops them.
  CHECK(xs == std::vector<int>{3, 2, 1, 0});
  CHECK(result.stops == 0);
  CHECK(result.shut_down);
  CHECK(again.progress() == 1.0);
}

TEST_CASE("grid does not replace a trial with invalid hyperparameters") {
  auto config = grid_config("x = { type = \"int\", minval = 0, maxval = 2, count = 3 }\n",
                            "max_concurrent_trials = 1\n");
  searcher::searcher s(searcher::make_search_method(config));
  auto result = run_all(s, 1);
  CHECK(result.creates.size() == 3);
  CHECK(result.shut_down);
  CHECK(s.progress() == 1.0);
}

TEST_CASE("the experiment seed decides every grid trial's seed; the points keep their order") {
  auto creates = [](uint32_t seed) {
    auto config = grid_config("x = { type = \"int\", minval = 0, maxval = 5, count = 6 }\n",
                              "max_concurrent_trials = 0\n", seed);
    return searcher::searcher(searcher::make_search_method(config)).initial_trials();
  };
  auto first = creates(11), again = creates(11), other = creates(12);
  REQUIRE(first.size() == 6);
  bool same_seeds = true, other_seeds = false, same_points = true;
  for (size_t i = 0; i < first.size(); ++i) {
    const auto& a = std::get<searcher::create_action>(first[i]);
    const auto& b = std::get<searcher::create_action>(again[i]);
    const auto& c = std::get<searcher::create_action>(other[i]);
    same_seeds = same_seeds && a.trial_seed == b.trial_seed && a.hparams_json == b.hparams_json;
    other_seeds = other_seeds || a.trial_seed != c.trial_seed;
    same_points = same_points && a.hparams_json == c.hparams_json;
  }
  CHECK(same_seeds);
  CHECK(other_seeds);
  CHECK(same_points);
}

TEST_CASE("a grid's size is a product computed before any point is made, and capped") {
  auto huge = grid_config("a = { type = \"double\", minval = 0, maxval = 1, count = 4000000000 }\n"
                          "b = { type = \"double\", minval = 0, maxval = 1, count = 4000000000 }\n")
                  .hparams;
  CHECK(searcher::hyperparameter_grid_size(huge) == INT64_MAX);  // 1.6e19 saturates
  std::string message;
  try {
    searcher::hyperparameter_grid(huge);  // it once filled 16 GB in 20 s
  } catch (const config::config_error& e) {
    message = e.what();
  }
  CHECK(message.find("more than 9.2e18 points") != std::string::npos);
  CHECK(message.find("grids of at most 1000000 trials") != std::string::npos);
  auto ints = grid_config("i = { type = \"int\", minval = 0, maxval = 9, count = 1000000 }\n"
                          "j = { type = \"double\", minval = 0, maxval = 1, count = 20000 }\n").hparams;
  CHECK(searcher::hyperparameter_grid_size(ints) == 200000);  // 10 integers, not a million
  CHECK_THROWS_AS(searcher::hyperparameter_grid(ints, config::default_max_grid_trials), config::config_error);
  CHECK(searcher::hyperparameter_grid(ints).size() == 200000);
}
