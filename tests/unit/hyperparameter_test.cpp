#include "config/experiment_config.hpp"
#include "searcher/hyperparameter_sampling.hpp"

#include <doctest/doctest.h>
#include <nlohmann/json.hpp>

#include <cmath>
#include <set>

using namespace det;

namespace {

config::hyperparameters parse_hparams(const std::string& toml) {
  std::string text = "entrypoint = \"x\"\n[searcher]\nname = \"single\"\nmetric = \"loss\"\n"
                     "max_length = { batches = 1 }\n[hyperparameters]\n" + toml;
  return config::parse_experiment_config(text, "hparams.toml").hparams;
}

nlohmann::json sample(const config::hyperparameters& hparams, std::mt19937_64& rng) {
  return nlohmann::json::parse(searcher::sample_hyperparameters(hparams, rng));
}

const char* every_type = R"(
cat = { type = "categorical", vals = [1, "two", { three = 3 }] }
const = { type = "const", val = [1, 2] }
double = { type = "double", minval = -1.5, maxval = 2.5 }
int = { type = "int", minval = -3, maxval = 3 }
log = { type = "log", minval = -4, maxval = -1, base = 10 }
bare = 0.25
)";

} // namespace

TEST_CASE("the same seed gives the same samples, for every type, over many seeds") {
  auto hparams = parse_hparams(every_type);
  for (uint32_t seed = 0; seed < 50; ++seed) {
    std::mt19937_64 a(seed), b(seed);
    CHECK(searcher::sample_hyperparameters(hparams, a) == searcher::sample_hyperparameters(hparams, b));
    // Identical draws leave identical engine states, so later samples match too.
    CHECK(a == b);
  }
  std::mt19937_64 a(1), b(2);
  CHECK(searcher::sample_hyperparameters(hparams, a) != searcher::sample_hyperparameters(hparams, b));
}

TEST_CASE("every sample lies within its hyperparameter's range and reaches all of it") {
  auto hparams = parse_hparams(every_type);
  std::mt19937_64 rng(7);
  std::set<int64_t> ints;
  std::set<std::string> cats;
  double double_min = 10, double_max = -10;
  for (int i = 0; i < 2000; ++i) {
    auto s = sample(hparams, rng);
    REQUIRE(s["int"].is_number_integer());
    auto v = s["int"].get<int64_t>();
    CHECK((v >= -3 && v <= 3));
    ints.insert(v);
    auto d = s["double"].get<double>();
    CHECK((d >= -1.5 && d < 2.5));
    double_min = std::min(double_min, d);
    double_max = std::max(double_max, d);
    auto l = s["log"].get<double>();
    CHECK((l >= 1e-4 && l <= 1e-1));
    cats.insert(s["cat"].dump());
    CHECK(s["const"] == nlohmann::json::array({1, 2}));
    CHECK(s["bare"] == 0.25);
  }
  // Both ends of the int range are inclusive.
  CHECK(ints == std::set<int64_t>{-3, -2, -1, 0, 1, 2, 3});
  CHECK(cats == std::set<std::string>{"1", "\"two\"", R"({"three":3})"});
  CHECK(double_min < -1.4);
  CHECK(double_max > 2.4);
}

TEST_CASE("log samples are spread evenly over the exponent") {
  auto hparams = parse_hparams(R"(lr = { type = "log", minval = -4, maxval = 0 })");
  std::mt19937_64 rng(3);
  int below_one_percent = 0;
  const int draws = 4000;
  for (int i = 0; i < draws; ++i)
    if (sample(hparams, rng)["lr"].get<double>() < 1e-2) ++below_one_percent;
  // Exponents below -2 are half the range; a uniform draw of the value itself would give ~1 %.
  CHECK(below_one_percent > draws * 0.45);
  CHECK(below_one_percent < draws * 0.55);
}

TEST_CASE("nested hyperparameters sample into nested objects, in name order") {
  auto hparams = parse_hparams(R"(
[hyperparameters.model]
width = { type = "categorical", vals = [8] }
name = "mlp"
[hyperparameters.model.head]
dropout = 0.5
)");
  std::mt19937_64 rng(0);
  CHECK(searcher::sample_hyperparameters(hparams, rng) == R"({"model":{"head":{"dropout":0.5},"name":"mlp","width":8}})");
}

TEST_CASE("constants draw nothing from the engine") {
  auto hparams = parse_hparams("a = 1\nb = { type = \"const\", val = \"x\" }\n");
  std::mt19937_64 used(5), fresh(5);
  CHECK(searcher::sample_hyperparameters(hparams, used) == R"({"a":1,"b":"x"})");
  CHECK(used == fresh);
  CHECK(searcher::sample_hyperparameters({}, used) == "{}");
}
