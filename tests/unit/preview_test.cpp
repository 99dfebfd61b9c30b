// Search plans (determined-reference §2.9 and §2.8 item 11).
#include "config/experiment_config.hpp"
#include "searcher/preview.hpp"

#include <doctest/doctest.h>

#include <string>

using namespace det;
using config::length_unit;

namespace {

config::experiment_config preview_config(const std::string& searcher_lines, const std::string& extra = "") {
  return config::parse_experiment_config(
      "entrypoint = \"builtin:mlp\"\n" + extra + "\n[searcher]\nmetric = \"loss\"\n" + searcher_lines +
          "[hyperparameters]\nglobal_batch_size = 32\nx = { type = \"int\", minval = 0, maxval = 10, count = 4 }\n",
      "preview.toml");
}

/// The plan as "COUNT@LENGTH ...", for readable failures.
std::string plan(const config::experiment_config& config, length_unit unit = length_unit::batches) {
  std::string text;
  for (const auto& b : searcher::preview(config)) {
    CHECK(b.unit == unit);
    text += (text.empty() ? "" : " ") + std::to_string(b.count) + "@" + std::to_string(b.length);
  }
  return text;
}

} // namespace

TEST_CASE("single, random and grid trials all train the whole length (TestSimulateGrid)") {
  CHECK(plan(preview_config("name = \"single\"\nmax_length = { batches = 937 }\n")) == "1@937");
  CHECK(plan(preview_config("name = \"random\"\nmax_trials = 7\nmax_length = { records = 6000 }\n"),
             length_unit::records) == "7@6000");
  CHECK(plan(preview_config("name = \"grid\"\nmax_length = { batches = 300 }\n")) == "4@300");
}

TEST_CASE("adaptive_asha, 16 trials, divisor 4, 937 batches: brackets of 3 and 2 rungs") {
  // maxRungs = min(5, int(log 937 / log 4) + 1 = 5, int(log 16 / log 4) + 1 = 3) = 3; standard
  // mode: brackets [3, 2] with weights 16/3 and 4/2, so 11 + 1 and 4 trials.
  // Bracket 1, rungs 58/234/937: 12 trials, 9 stop at 58, 2 at 234, 1 at 937.
  // Bracket 2, rungs 234/937: 4 trials, 3 stop at 234, 1 at 937.
  auto config = preview_config(
      "name = \"adaptive_asha\"\nmax_trials = 16\ndivisor = 4\ntime_metric = \"batches\"\nmax_time = 937\n");
  CHECK(plan(config) == "9@58 5@234 2@937");
}

TEST_CASE("adaptive_asha in conservative mode adds a bracket that trains every trial the whole length") {
  // maxRungs = min(5, int(log 90 / log 3) + 1 = 5, int(log 9 / log 3) + 1 = 3) = 3: brackets
  // [3, 2, 1] with weights 3, 1.5 and 1, so 4 + 2, 2 and 1 trials.
  // Rungs 10/30/90: 6 trials, 4 stop at 10, 1 at 30, 1 at 90. Rungs 30/90: 2 trials, 1 at 30,
  // 1 at 90. Rung 90: 1 trial at 90.
  auto config = preview_config(
      "name = \"adaptive_asha\"\nmax_trials = 9\ndivisor = 3\nmode = \"conservative\"\n"
      "time_metric = \"epochs\"\nmax_time = 90\n",
      "records_per_epoch = 100");
  CHECK(plan(config, length_unit::epochs) == "4@10 2@30 3@90");
}

TEST_CASE("async_halving is planned as one bracket") {
  // Rungs 100/300/900: 10 trials, 7 stop at 100, 2 at 300, 1 at 900.
  auto config = preview_config(
      "name = \"async_halving\"\nmax_trials = 10\nnum_rungs = 3\ndivisor = 3\ntime_metric = \"batches\"\n"
      "max_time = 900\n");
  CHECK(plan(config) == "7@100 2@300 1@900");
  // Fewer trials than the divisor: one goes on from each rung.
  auto few = preview_config(
      "name = \"async_halving\"\nmax_trials = 2\nnum_rungs = 3\ndivisor = 3\nmax_length = { batches = 900 }\n");
  CHECK(plan(few) == "1@100 1@900");
}

TEST_CASE("asha promotes int(n / divisor) of each rung: 8, 3 and 1 of 12 trials (asha_test.go, 0.37)") {
  const std::string rungs = "name = \"asha\"\nmax_trials = 12\nnum_rungs = 3\ndivisor = 3\n";
  CHECK(plan(preview_config(rungs + "max_length = { batches = 9000 }\n")) == "8@1000 3@3000 1@9000");
  CHECK(plan(preview_config(rungs + "max_length = { records = 576000 }\n"), length_unit::records) ==
        "8@64000 3@192000 1@576000");
  CHECK(plan(preview_config(rungs + "max_length = { epochs = 12 }\n", "records_per_epoch = 100\n"),
             length_unit::epochs) == "8@1 3@4 1@12");
}

TEST_CASE("pbt: the survivors of every round train on, each copy trains one round (pbt_test.go, 0.17)") {
  auto pbt = [](int population, int rounds, int length, double truncate) {
    return preview_config("name = \"pbt\"\npopulation_size = " + std::to_string(population) +
                          "\nnum_rounds = " + std::to_string(rounds) + "\nlength_per_round = { batches = " +
                          std::to_string(length) + " }\nreplace_function = { truncate_fraction = " +
                          std::to_string(truncate) +
                          " }\nexplore_function = { resample_probability = 0.2, perturb_factor = 0.2 }\n");
  };
  CHECK(plan(pbt(2, 2, 200, 0.5)) == "2@200 1@400");
  CHECK(plan(pbt(3, 4, 400, 0)) == "3@1600");
  CHECK(plan(pbt(4, 8, 500, 0.5)) == "16@500 2@4000");
}
