#include "config/config_json.hpp"
#include "config/continuation.hpp"
#include "config/experiment_config.hpp"
#include "config/master_config.hpp"

#include <doctest/doctest.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <string>
#include <utility>
#include <vector>

using namespace det::config;

namespace {

std::string config_path(const std::string& name) {
  return std::string(DET_TEST_DATA_DIR) + "/configs/" + name;
}

/// The error text of loading `name` from tests/data/configs, or "" when it loads.
std::string load_errors(const std::string& name) {
  try {
    load_experiment_config(config_path(name));
  } catch (const config_error& e) {
    return e.what();
  }
  return "";
}

std::string parse_errors(const std::string& toml) {
  try {
    parse_experiment_config(toml, "inline.toml");
  } catch (const config_error& e) {
    return e.what();
  }
  return "";
}

size_t line_count(const std::string& text) {
  return text.empty() ? 0 : 1 + static_cast<size_t>(std::count(text.begin(), text.end(), '\n'));
}

const std::string single_searcher = R"(
[searcher]
name = "single"
metric = "loss"
max_length = { batches = 100 }
)";

} // namespace

TEST_CASE("the fashion-mnist example loads with the values it documents") {
  auto config = load_experiment_config(std::string(DET_TEST_DATA_DIR) + "/../../examples/fashion-mnist/const.toml");
  CHECK(config.entrypoint == std::vector<std::string>{"builtin:mlp"});
  CHECK(config.searcher.name == "single");
  CHECK(config.searcher.metric == "validation_accuracy");
  CHECK_FALSE(config.searcher.smaller_is_better);
  REQUIRE(config.searcher.max_length);
  CHECK(*config.searcher.max_length == length{length_unit::batches, 1500});
  REQUIRE(config.min_validation_period);
  CHECK(*config.min_validation_period == length{length_unit::batches, 500});
  CHECK(config.hparams.at("hidden_sizes").type == hyperparameter_type::constant);
  CHECK(config.hparams.at("hidden_sizes").value_json == "[256,128]");
  CHECK(config.hparams.at("learning_rate").value_json == "0.001");
  CHECK(config.hparams.at("optimizer").value_json == "\"adam\"");
  CHECK(config.global_batch_size() == 64);
  CHECK(config.data_json == R"({"dataset":"fashion-mnist"})");
  CHECK(config.experiment_seed == 1u);
  CHECK(config.experiment_seed_given);
  CHECK(config.target_batches() == 1500);
}

TEST_CASE("a config with every section keeps every value, and Determined-only keys are ignored") {
  auto config = load_experiment_config(config_path("good_full.toml"));
  CHECK(config.name == "full");
  CHECK(config.description == "exercises every section");
  CHECK(config.entrypoint == std::vector<std::string>{"plugin:libmodels.so:ResNet", "--depth", "18"});
  CHECK(config.max_restarts == 2);
  CHECK(config.records_per_epoch == 50000);
  CHECK(config.scheduling_unit == 50);
  CHECK(*config.min_validation_period == length{length_unit::epochs, 1});
  CHECK(*config.min_checkpoint_period == length{length_unit::batches, 200});

  const auto& lr = config.hparams.at("learning_rate");
  CHECK(lr.type == hyperparameter_type::log_range);
  CHECK(lr.minval == -4);
  CHECK(lr.maxval == -1);
  CHECK(lr.base == 10);
  CHECK_FALSE(lr.count);
  CHECK(config.hparams.at("layers").type == hyperparameter_type::int_range);
  CHECK(config.hparams.at("momentum").type == hyperparameter_type::double_range);
  CHECK(config.hparams.at("optimizer").vals_json == std::vector<std::string>{"\"sgd\"", "\"adam\""});
  CHECK(config.hparams.at("schedule").value_json == R"({"kind":"cosine","warmup":100})");
  const auto& model = config.hparams.at("model");
  CHECK(model.type == hyperparameter_type::nested);
  CHECK(model.nested.at("width").value_json == "64");
  CHECK(model.nested.at("activation").type == hyperparameter_type::categorical);

  CHECK(config.resources.slots_per_trial == 2);
  CHECK(config.resources.resource_pool == "gpus");
  CHECK(config.resources.priority == 10);
  CHECK(config.resources.weight == 2.5);
  CHECK(config.resources.max_slots == 8);
  CHECK(config.checkpoint_storage.type == "shared_fs");
  CHECK(config.checkpoint_storage.host_path == "/tmp/det-checkpoints");
  CHECK(config.checkpoint_storage.storage_path == "full");
  CHECK(config.checkpoint_storage.save_experiment_best == 0);
  CHECK(config.checkpoint_storage.save_trial_best == 2);
  CHECK(config.checkpoint_storage.save_trial_latest == 0);
  CHECK(config.data_json == R"({"sizes":[1,2.5,true],"url":"https://example.com/data.tgz","when":"1979-05-27"})");
  CHECK(config.experiment_seed == 4294967295u);
  // 100,000 records at 32 per batch: the last, partial batch still has to run.
  CHECK(config.target_batches() == 3125);
  CHECK(config.batches_in({length_unit::epochs, 1}) == 1563);
}

TEST_CASE("Determined's adaptive example parses, with time_metric and max_time as the length") {
  auto config = load_experiment_config(config_path("good_adaptive.toml"));
  CHECK(config.searcher.name == "adaptive_asha");
  CHECK(config.searcher.max_trials == 16);
  CHECK(config.searcher.max_concurrent_trials == 16);
  CHECK(config.searcher.divisor == 4);
  CHECK(config.searcher.max_rungs == 5);
  CHECK(config.searcher.mode == "standard");
  CHECK_FALSE(config.searcher.max_length);
  CHECK(config.searcher.time_metric == "batches");
  CHECK(config.searcher.max_time == 937);
  CHECK(config.target_batches() == 937);
  CHECK(config.hparams.at("n_filters2").maxval == 72);
}

TEST_CASE("defaults follow Determined where the config says nothing") {
  auto config = parse_experiment_config("entrypoint = \"builtin:mlp\"\n" + single_searcher, "inline.toml");
  CHECK(config.name == "Experiment (builtin:mlp)");
  CHECK(config.searcher.smaller_is_better);
  CHECK(config.max_restarts == 5);
  CHECK(config.scheduling_unit == 100);
  CHECK(config.resources.slots_per_trial == 1);
  CHECK_FALSE(config.resources.priority);
  CHECK(config.checkpoint_storage.type == "shared_fs");
  CHECK(config.checkpoint_storage.save_trial_best == 1);
  CHECK(config.data_json == "{}");
  CHECK(config.hparams.empty());
  CHECK_FALSE(config.experiment_seed_given);
  CHECK_FALSE(config.min_validation_period);
}

TEST_CASE("an unknown key names its position and path, and suggests the key it resembles") {
  auto path = config_path("bad_unknown_key.toml");
  auto errors = load_errors("bad_unknown_key.toml");
  CHECK(errors.find(path + ":2:1: max_restart: unknown key; did you mean \"max_restarts\"?") != std::string::npos);
  CHECK(errors.find(path + ":8:1: searcher.smaller_is_beter: unknown key; did you mean \"smaller_is_better\"?") !=
        std::string::npos);
  CHECK(errors.find(path + ":9:13: searcher.num_rungs: is not a setting of the single searcher") != std::string::npos);
  CHECK(errors.find(path + ":13:1: resources.gpu_count: unknown key") != std::string::npos);
  // resources.slots is a Determined key that det ignores.
  CHECK(errors.find("resources.slots:") == std::string::npos);
  CHECK(line_count(errors) == 4);
}

TEST_CASE("a value of the wrong type says what was expected and what was found") {
  auto errors = load_errors("bad_wrong_type.toml");
  CHECK(errors == config_path("bad_wrong_type.toml") + ":6:14: searcher.max_trials: expected an integer, got a string");
}

TEST_CASE("a missing metric is reported at the searcher table") {
  auto errors = load_errors("bad_missing_metric.toml");
  CHECK(errors == config_path("bad_missing_metric.toml") + ":3:1: searcher.metric: required key is missing");
}

TEST_CASE("an end-of-life searcher is rejected with what to use instead") {
  auto errors = load_errors("bad_eol_searcher.toml");
  CHECK(errors == config_path("bad_eol_searcher.toml") +
                      ":4:8: searcher.name: the adaptive_simple searcher was removed in Determined 0.15; "
                      "use adaptive_asha instead");
}

TEST_CASE("bad hyperparameter definitions are all reported, each at its own position") {
  auto path = config_path("bad_hparam_bounds.toml");
  auto errors = load_errors("bad_hparam_bounds.toml");
  CHECK(errors.find(path + ":9:17: hyperparameters.learning_rate: minval must be less than maxval, got minval = 1 "
                           "and maxval = 0.1") != std::string::npos);
  CHECK(errors.find(path + ":10:38: hyperparameters.n_filters.minval: expected an integer, got a float") !=
        std::string::npos);
  CHECK(errors.find(path + ":11:44: hyperparameters.optimizer.vals: must list at least one value") != std::string::npos);
  CHECK(errors.find(path + ":12:58: hyperparameters.layers.count: must be at least 1, got 0") != std::string::npos);
  CHECK(errors.find(path + ":13:18: hyperparameters.width.type: unknown hyperparameter type \"integer\"; expected "
                           "const, int, double, log or categorical") != std::string::npos);
  CHECK(line_count(errors) == 5);
}

TEST_CASE("a TOML syntax error names its position") {
  auto errors = load_errors("bad_syntax.toml");
  CHECK(errors.rfind(config_path("bad_syntax.toml") + ":5:", 0) == 0);
  CHECK(errors.find("TOML syntax error: ") != std::string::npos);
}

TEST_CASE("lengths in epochs and records need a global batch size and records_per_epoch") {
  auto path = config_path("bad_length_units.toml");
  auto errors = load_errors("bad_length_units.toml");
  CHECK(errors.find(path + ":2:25: min_validation_period: a length in records needs hyperparameters.global_batch_size")
        != std::string::npos);
  CHECK(errors.find(path + ":7:14: searcher.max_length: a length in epochs needs hyperparameters.global_batch_size") !=
        std::string::npos);
  CHECK(errors.find(path + ":7:14: searcher.max_length: a length in epochs needs records_per_epoch") !=
        std::string::npos);
  CHECK(line_count(errors) == 3);
}

TEST_CASE("the grid searcher needs count on every range hyperparameter") {
  auto errors = load_errors("bad_grid_without_count.toml");
  CHECK(errors == config_path("bad_grid_without_count.toml") +
                      ":4:17: hyperparameters.learning_rate: the grid searcher needs count, the number of grid "
                      "points, on every int, double and log hyperparameter");
}

TEST_CASE("an empty config lists every required key at once") {
  auto errors = parse_errors("");
  CHECK(errors == "inline.toml:1:1: entrypoint: required key is missing\n"
                  "inline.toml:1:1: searcher: required key is missing");
}

TEST_CASE("single, random and grid searches of a script need no length: its process trains until it exits") {
  for (std::string searcher : {"name = \"single\"", "name = \"random\"\nmax_trials = 3", "name = \"grid\""}) {
    CAPTURE(searcher);
    auto config = parse_experiment_config(
        "entrypoint = \"python3 train.py\"\n[searcher]\n" + searcher + "\nmetric = \"x\"\n", "inline.toml");
    CHECK_FALSE(config.searcher.training_length());
    CHECK(config.searcher.trains_until_exit());
    CHECK(config.target_batches() == 0);
  }
  auto with_length = parse_experiment_config(
      "entrypoint = \"python3 train.py\"\nrecords_per_epoch = 10\n[searcher]\nname = \"single\"\nmetric = \"x\"\n"
      "max_length = { epochs = 2 }\n[hyperparameters]\nglobal_batch_size = 5\n",
      "inline.toml");
  CHECK_FALSE(with_length.searcher.trains_until_exit());
  CHECK(with_length.target_batches() == 4);  // a length given keeps its meaning
}

TEST_CASE("det's harness trials and legacy trial classes still need a length, and say why") {
  std::string searcher = "[searcher]\nname = \"single\"\nmetric = \"loss\"\n";
  CHECK(parse_errors("entrypoint = \"builtin:mlp\"\n" + searcher) ==
        "inline.toml:2:1: searcher: det's harness trains builtin: and plugin: trials to the searcher's length, with "
        "no script of yours to decide when to stop, so the single searcher needs one here: set max_length = "
        "{ batches = N }, or time_metric and max_time");
  CHECK(parse_errors("entrypoint = \"model_def:MNistTrial\"\n" + searcher) ==
        "inline.toml:2:1: searcher: a model_def:TrialClass entrypoint trains for the searcher's length, as "
        "Determined's harness does, so the single searcher needs one here: set max_length = { batches = N } (or "
        "records, epochs), or time_metric and max_time");
  CHECK(parse_experiment_config("entrypoint = \"model_def:MNistTrial\"\n" + searcher +
                                    "time_metric = \"batches\"\nmax_time = 9\n",
                                "inline.toml")
            .target_batches() == 9);
  // Searchers that decide at lengths keep needing one, whatever the entrypoint.
  CHECK(parse_errors("entrypoint = \"python3 train.py\"\n[searcher]\nname = \"adaptive_asha\"\nmetric = \"loss\"\n"
                     "max_trials = 4\n") ==
        "inline.toml:2:1: searcher: the adaptive_asha searcher decides at training lengths, so it needs one: set "
        "time_metric and max_time (or max_length = { batches = N })");
}

TEST_CASE("entrypoints are told apart: harness, legacy trial class, or command") {
  auto kind = [](const std::string& entrypoint) {
    auto config = parse_experiment_config("entrypoint = " + entrypoint +
                                              "\n[searcher]\nname = \"single\"\nmetric = \"x\"\n"
                                              "max_length = { batches = 1 }\n",
                                          "inline.toml");
    return config.harness_entrypoint() ? "harness" : config.legacy_trial_class_entrypoint() ? "legacy" : "command";
  };
  CHECK(std::string(kind("\"builtin:mlp\"")) == "harness");
  CHECK(std::string(kind("\"plugin:libx.so:Trial\"")) == "harness");
  CHECK(std::string(kind("\"model_def:MNistTrial\"")) == "legacy");
  CHECK(std::string(kind("\"pkg.model_def:Trial_2\"")) == "legacy");
  CHECK(std::string(kind("\"python3 train.py\"")) == "command");
  CHECK(std::string(kind("\"model_def:Trial extra\"")) == "command");
  CHECK(std::string(kind("[\"model_def:Trial\"]")) == "legacy");
  CHECK(std::string(kind("[\"python3\", \"model_def:Trial\"]")) == "command");
  CHECK(std::string(kind("\"model_def:Trial:x\"")) == "command");
  CHECK(std::string(kind("\"model_def:pkg.Trial\"")) == "command");
  CHECK(std::string(kind("\":Trial\"")) == "command");
  CHECK(std::string(kind("\"" + std::string(60000, 'm') + ":Trial\"")) == "legacy");  // scanned, not a regex's recursion
}

TEST_CASE("a legacy trial class runs through Determined's harness, one process per slot; a command as it is") {
  auto command = [](const std::string& entrypoint) {
    return parse_experiment_config("entrypoint = \"" + entrypoint +
                                       "\"\n[searcher]\nname = \"single\"\nmetric = \"x\"\nmax_length = 5\n",
                                   "inline.toml")
        .process_command();
  };
  CHECK(command("model_def:MNistTrial") ==
        std::vector<std::string>{"python3", "-m", "determined.launch.torch_distributed", "--", "python3", "-m",
                                 "determined.exec.harness", "model_def:MNistTrial"});
  CHECK(command("python3 train.py") == std::vector<std::string>{"python3 train.py"});
}

TEST_CASE("a trial's process reads the config as JSON, with Determined's defaults for what its training code reads") {
  auto json = nlohmann::json::parse(experiment_config_json(
      "entrypoint = \"python3 train.py\"\nrecords_per_epoch = 60\n[searcher]\nname = \"single\"\nmetric = \"x\"\n"
      "max_length = { batches = 7 }\n[optimizations]\nmixed_precision = \"O1\"\n[data]\nurl = \"u\"\n"));
  CHECK(json["entrypoint"] == "python3 train.py");
  CHECK(json["searcher"]["max_length"]["batches"] == 7);
  CHECK(json["searcher"]["smaller_is_better"] == true);
  CHECK(json["records_per_epoch"] == 60);
  CHECK(json["scheduling_unit"] == 100);
  CHECK(json["min_validation_period"]["batches"] == 0);
  CHECK(json["checkpoint_policy"] == "best");
  CHECK(json["perform_initial_validation"] == false);
  CHECK(json["optimizations"]["mixed_precision"] == "O1");
  CHECK(json["optimizations"]["aggregation_frequency"] == 1);
  CHECK(json["data"]["url"] == "u");
  CHECK_THROWS_AS(experiment_config_json("not = = toml"), config_error);
}

TEST_CASE("a bare integer max_length, Determined's unitless length, counts batches") {
  auto config = parse_experiment_config(
      "entrypoint = \"python3 train.py\"\n[searcher]\nname = \"single\"\nmetric = \"x\"\nmax_length = 100\n",
      "inline.toml");
  REQUIRE(config.searcher.max_length);
  CHECK(config.searcher.max_length->unit == length_unit::batches);
  CHECK(config.searcher.max_length->value == 100);
  CHECK(parse_errors("entrypoint = \"x y\"\n[searcher]\nname = \"single\"\nmetric = \"x\"\nmax_length = 0\n") ==
        "inline.toml:5:14: searcher.max_length: must be at least 1, got 0");
}

TEST_CASE("the single searcher needs exactly one way of giving its length") {
  std::string head = "entrypoint = \"x\"\n[searcher]\nname = \"single\"\nmetric = \"loss\"\n";
  CHECK(parse_errors(head + "max_length = { batches = 5 }\ntime_metric = \"batches\"\nmax_time = 5\n") ==
        "inline.toml:2:1: searcher: set either max_length or time_metric and max_time, not both");
  CHECK(parse_errors(head + "time_metric = \"batches\"\n") == "inline.toml:2:1: searcher.max_time: required key is missing");
  CHECK(parse_errors(head + "time_metric = \"loss\"\nmax_time = 5\n") ==
        "inline.toml:5:15: searcher.time_metric: det measures training time in batches, records or epochs, got \"loss\"");
  auto config = parse_experiment_config(head + "time_metric = \"batches\"\nmax_time = 700\n", "inline.toml");
  CHECK(config.target_batches() == 700);
}

TEST_CASE("a length has exactly one positive unit") {
  std::string head = "entrypoint = \"x\"\n[searcher]\nname = \"single\"\nmetric = \"loss\"\n";
  CHECK(parse_errors(head + "max_length = { batches = 0 }\n") ==
        "inline.toml:5:26: searcher.max_length.batches: must be at least 1, got 0");
  CHECK(parse_errors(head + "max_length = { batches = 5, epochs = 1 }\n") ==
        "inline.toml:5:14: searcher.max_length: a length has exactly one of batches, records or epochs, as in "
        "{ batches = 100 }");
  CHECK(parse_errors(head + "max_length = \"100\"\n") ==
        "inline.toml:5:14: searcher.max_length: expected a length such as { batches = 100 }, got a string");
  CHECK(parse_errors(head + "max_length = { steps = 100 }\n") ==
        "inline.toml:5:14: searcher.max_length: a length has exactly one of batches, records or epochs, as in "
        "{ batches = 100 }\n"
        "inline.toml:5:16: searcher.max_length.steps: unknown key; a length has exactly one of batches, records or "
        "epochs");
}

TEST_CASE("searcher names: known ones parse, unknown and removed ones say what to use") {
  std::string head = "entrypoint = \"x\"\n[searcher]\nmetric = \"loss\"\nmax_length = { batches = 5 }\n";
  CHECK(parse_errors(head + "name = \"random\"\nmax_trials = 4\n").empty());
  CHECK(parse_errors(head + "name = \"grid\"\n").empty());
  CHECK(parse_errors(head + "name = \"async_halving\"\nnum_rungs = 3\nmax_trials = 9\n").empty());
  CHECK(parse_errors(head + "name = \"tpe\"\nmax_trials = 9\n").empty());
  CHECK(parse_errors(head + "name = \"random\"\n") == "inline.toml:2:1: searcher.max_trials: required key is missing");
  CHECK(parse_errors(head + "name = \"hyperband\"\n") ==
        "inline.toml:5:8: searcher.name: unknown searcher \"hyperband\"; expected single, random, grid, "
        "async_halving, asha, adaptive_asha, pbt, tpe or custom");
  CHECK(parse_errors(head + "name = \"sync_halving\"\n").find("use async_halving instead") != std::string::npos);
  CHECK(parse_errors("entrypoint = \"x\"\n[searcher]\nmetric = \"loss\"\nname = \"custom\"\nunit = \"records\"\n").empty());
  CHECK(parse_errors(head + "name = \"custom\"\nunit = \"steps\"\n").find("searcher.unit") != std::string::npos);
  CHECK(parse_errors(head + "name = \"adaptive\"\n").find("use adaptive_asha instead") != std::string::npos);
}

TEST_CASE("PBT takes its own fields, and its length is rounds times the length per round") {
  auto config = parse_experiment_config(R"(
entrypoint = "x"
[searcher]
name = "pbt"
metric = "loss"
population_size = 4
num_rounds = 8
length_per_round = { batches = 500 }
replace_function = { truncate_fraction = 0.5 }
explore_function = { resample_probability = 0.2, perturb_factor = 0.1 }
)",
                                        "inline.toml");
  CHECK(config.searcher.population_size == 4);
  CHECK(config.searcher.truncate_fraction == 0.5);
  CHECK(config.searcher.perturb_factor == 0.1);
  CHECK(config.target_batches() == 4000);
}

TEST_CASE("a search is held to a size one request may make the master simulate") {
  const std::string head = "entrypoint = \"x\"\n[searcher]\nmetric = \"loss\"\nmax_length = { batches = 9 }\n";
  CHECK(parse_errors(head + "name = \"random\"\nmax_trials = 1000000000\n") ==
        "inline.toml:6:14: searcher.max_trials: must be between 1 and 1000000, got 1000000000");
  CHECK(parse_errors(head + "name = \"async_halving\"\nnum_rungs = 65\nmax_trials = 9\n").find(
            "searcher.num_rungs: must be between 1 and 64, got 65") != std::string::npos);
  CHECK(parse_errors(head + "name = \"adaptive_asha\"\nmax_trials = 9\nbracket_rungs = [1, 100]\n").find(
            "searcher.bracket_rungs: expected an array of integers between 1 and 64") != std::string::npos);
  const std::string pbt = "entrypoint = \"x\"\n[searcher]\nname = \"pbt\"\nmetric = \"loss\"\n"
                          "length_per_round = { batches = 5 }\nreplace_function = { truncate_fraction = 0.5 }\n"
                          "explore_function = { resample_probability = 0.2, perturb_factor = 0.1 }\n";
  CHECK(parse_errors(pbt + "population_size = 10000\nnum_rounds = 100\n").empty());
  CHECK(parse_errors(pbt + "population_size = 10000\nnum_rounds = 101\n").find(
            "searcher.num_rounds: population_size × num_rounds is the number of trials pbt runs, at most 1000000, "
            "got 1010000") != std::string::npos);
  CHECK(parse_errors(pbt + "population_size = 10001\nnum_rounds = 1\n").find(
            "searcher.population_size: must be between 1 and 10000, got 10001") != std::string::npos);
}

TEST_CASE("resources and top-level numbers are range checked") {
  auto errors = parse_errors("entrypoint = \"x\"\nmax_restarts = -1\n[resources]\nslots_per_trial = -2\npriority = 100\n" +
                             single_searcher);
  CHECK(errors == "inline.toml:2:16: max_restarts: must be at least 0, got -1\n"
                  "inline.toml:4:19: resources.slots_per_trial: must be at least 0, got -2\n"
                  "inline.toml:5:12: resources.priority: must be between 1 and 99, got 100");
}

TEST_CASE("a constant global batch size must be a positive integer") {
  CHECK(parse_errors("entrypoint = \"x\"\n[hyperparameters]\nglobal_batch_size = \"64\"\n" + single_searcher) ==
        "inline.toml:3:21: hyperparameters.global_batch_size: must be a positive integer, got \"64\"");
  CHECK(parse_errors("entrypoint = \"x\"\n[hyperparameters]\nglobal_batch_size = 0\n" + single_searcher) ==
        "inline.toml:3:21: hyperparameters.global_batch_size: must be a positive integer, got 0");
  // Searching over the batch size is allowed; only a length in records or epochs needs a constant.
  CHECK(parse_errors("entrypoint = \"x\"\n[hyperparameters]\n"
                     "global_batch_size = { type = \"int\", minval = 16, maxval = 64 }\n" + single_searcher).empty());
}

TEST_CASE("entrypoint is a string or a list of strings") {
  CHECK(parse_errors("entrypoint = 3\n" + single_searcher) ==
        "inline.toml:1:14: entrypoint: expected a string or an array of strings, got an integer");
  CHECK(parse_errors("entrypoint = \"\"\n" + single_searcher) ==
        "inline.toml:1:14: entrypoint: must name what to run, such as \"builtin:mlp\"");
}

TEST_CASE("only file system checkpoint storage is accepted") {
  CHECK(parse_errors("entrypoint = \"x\"\n[checkpoint_storage]\ntype = \"s3\"\nbucket = \"b\"\n" + single_searcher) ==
        "inline.toml:3:8: checkpoint_storage.type: det stores checkpoints on a file system; use shared_fs or "
        "directory instead of s3");
  auto config = parse_experiment_config(
      "entrypoint = \"x\"\n[checkpoint_storage]\ntype = \"directory\"\ncontainer_path = \"/ckpt\"\n" + single_searcher,
      "inline.toml");
  CHECK(config.checkpoint_storage.host_path == "/ckpt");
}

TEST_CASE("each Determined key det leaves out is refused by its path with what det does instead") {
  const std::vector<std::pair<std::string, std::string>> refused = {
      {"log_policies = []\n", "log_policies: det does not match trial logs against patterns"},
      {"retention_policy = { log_retention_days = 7 }\n", "retention_policy: det keeps a trial's logs until"},
      {"[slurm]\nsbatch_args = []\n", "slurm: det schedules trials on its own agents"},
      {"[pbs]\npbsbatch_args = []\n", "pbs: det schedules trials on its own agents"},
      {"[security]\nuid = 1\n", "security: det runs a trial as its owner's agent user"},
      {"[tensorboard_storage]\ntype = \"shared_fs\"\n", "tensorboard_storage: det writes TensorBoard files under"},
      {"[data_layer]\ntype = \"shared_fs\"\n", "data_layer: was removed from Determined"},
      {"[internal]\nx = 1\n", "internal: is Determined's own"},
      {"[resources]\ndevices = []\n", "resources.devices: det gives a trial its slots' GPUs"},
      {"[resources]\nagent_label = \"a\"\n", "resources.agent_label: det has no agent labels"},
      {"[resources]\nis_single_node = true\n", "resources.is_single_node: det places a trial's slots"},
      {"[resources]\nnative_parallel = true\n", "resources.native_parallel: was removed from Determined"},
      {"[environment]\npod_spec = {}\n", "environment.pod_spec: det runs containers with podman"},
      {"[environment]\nports = { a = 1 }\n", "environment.ports: det proxies only the services of"},
      {"[[bind_mounts]]\nhost_path = \"/a\"\ncontainer_path = \"/b\"\npropagation = \"rprivate\"\n",
       "propagation: det bind-mounts with the container runtime's default propagation"},
  };
  for (const auto& [toml, expected] : refused) {
    const auto errors = parse_errors("entrypoint = \"python3 train.py\"\n" + toml + single_searcher);
    CHECK_MESSAGE(errors.find(expected) != std::string::npos, toml, " gave: ", errors);
    CHECK_MESSAGE(errors.rfind("inline.toml:", 0) == 0, errors);  // named by file and line
  }
}

TEST_CASE("a missing file is an error naming the path") {
  std::string errors;
  try {
    load_experiment_config("/nonexistent/experiment.toml");
  } catch (const config_error& e) {
    errors = e.what();
  }
  CHECK(errors.rfind("/nonexistent/experiment.toml: cannot open the config file", 0) == 0);
}

TEST_CASE("a master config reads ports, database, data directory and pools") {
  auto config = load_master_config(config_path("master.toml"));
  CHECK(config.port == 18090);
  CHECK(config.http_port == 18080);
  CHECK(config.data_dir == "/var/lib/det");
  CHECK(config.db == "host=127.0.0.1 port=5432 user=postgres password='it\\'s secret' dbname=determined");
  CHECK(config.pool_names() == std::vector<std::string>{"cpus", "gpus"});
  CHECK(config.default_resource_pool == "gpus");
  CHECK(config.default_aux_resource_pool == "cpus");
  CHECK(config.agent_reconnect_wait_s == 90);
  // The pool's own scheduler table overrides the resource manager's keys it names.
  const auto& cpus = config.resource_pools[0].scheduler;
  CHECK(cpus.type == "fair_share");
  CHECK(cpus.fitting_policy == "worst");
  CHECK(cpus.preemption);
  CHECK(cpus.default_priority == 50);
  CHECK(config.resource_pools[0].max_aux_containers_per_agent == 10);
  const auto& gpus = config.resource_pools[1];
  CHECK(gpus.description == "the GPU machines");
  CHECK(gpus.scheduler.type == "priority");
  CHECK(gpus.max_aux_containers_per_agent == 100);
}

TEST_CASE("an empty master config gives the defaults") {
  auto config = parse_master_config("", "master.toml");
  CHECK(config.port == 8090);
  CHECK(config.http_port == 8080);
  CHECK(config.db.empty());
  CHECK(config.data_dir.empty());
  CHECK(config.pool_names() == std::vector<std::string>{"default"});
  CHECK(config.default_resource_pool == "default");
  CHECK(config.agent_reconnect_wait_s == 25);
  CHECK(config.resource_pools[0].scheduler.type == "priority");
  CHECK(config.resource_pools[0].scheduler.fitting_policy == "best");
  CHECK_FALSE(config.resource_pools[0].scheduler.preemption);
  CHECK(config.resource_pools[0].scheduler.default_priority == 42);
}

TEST_CASE("security.max_upload_size: the largest body a logged-in caller sends, within bounds") {
  CHECK(parse_master_config("", "master.toml").max_upload_bytes == 160 << 20);
  CHECK(parse_master_config("[security]\nmax_upload_size = \"1GiB\"\n", "master.toml").max_upload_bytes == 1 << 30);
  std::string errors;
  try {
    parse_master_config("[security]\nmax_upload_size = \"10KiB\"\n", "master.toml");
  } catch (const config_error& e) {
    errors = e.what();
  }
  CHECK(errors == "master.toml:2:19: security.max_upload_size: must be between 64 KiB and 4 GiB, got 10 KiB");
}

TEST_CASE("proxy_port and proxy_host: the proxy's own listener, refused with the key when wrong") {
  auto config = parse_master_config("proxy_port = 9443\nproxy_host = \"*.proxy.example.com\"\n", "master.toml");
  CHECK(config.proxy_port == 9443);
  CHECK(config.proxy_host == "*.proxy.example.com");
  CHECK(parse_master_config("", "master.toml").proxy_port == 0);
  std::string errors;
  try {
    parse_master_config("http_port = 8080\nproxy_port = 8080\nproxy_host = \"proxy.example.com\"\n", "master.toml");
  } catch (const config_error& e) {
    errors = e.what();
  }
  CHECK(errors.find("master.toml:2:14: proxy_port: must differ from http_port (8080)") != std::string::npos);
  CHECK(errors.find("master.toml:3:14: proxy_host: must start with \"*.\"") != std::string::npos);
}

TEST_CASE("Determined master keys det does not implement are refused") {
  std::string errors;
  try {
    parse_master_config("[log]\nlevel = \"info\"\ncolor = true\n"
                        "[resource_manager]\nrequire_authentication = true\n"
                        "[[resource_pools]]\npool_name = \"a\"\nagent_reconnect_wait = \"10s\"\n",
                        "master.toml");
  } catch (const config_error& e) {
    errors = e.what();
  }
  CHECK(errors.find("master.toml:3:9: log.color: det's logs have no colors") != std::string::npos);
  CHECK(errors.find("resource_manager.require_authentication: det does not implement") != std::string::npos);
  CHECK(errors.find("resource_pools[0].agent_reconnect_wait: det keeps one wait for every pool: set "
                    "resource_manager.agent_reconnect_wait") != std::string::npos);
}

TEST_CASE("[log] sets the level and the format of the master's log, by Determined's names") {
  auto config = parse_master_config("[log]\nlevel = \"warn\"\nformat = \"json\"\n", "master.toml");
  CHECK(config.log.level == det::config::log_level::warning);
  CHECK(config.log.format == det::config::log_format::json);
  CHECK(parse_master_config("", "master.toml").log.level == det::config::log_level::info);
  std::string errors;
  try {
    parse_master_config("[log]\nlevel = \"loud\"\nformat = \"xml\"\nfile = \"x\"\n", "master.toml");
  } catch (const config_error& e) {
    errors = e.what();
  }
  CHECK(errors.find("master.toml:2:9: log.level: expected debug, info, warn or error, got \"loud\"") != std::string::npos);
  CHECK(errors.find("master.toml:3:10: log.format: expected text or json, got \"xml\"") != std::string::npos);
  CHECK(errors.find("log.file") != std::string::npos);
}

TEST_CASE("[security] sets the agent token file and the session lifespan") {
  auto config = parse_master_config("[security]\nagent_token_file = \"/etc/det/agent-token\"\nsession_lifespan = \"2d12h\"\n",
                                    "master.toml");
  CHECK(config.agent_token_file == "/etc/det/agent-token");
  CHECK(config.session_lifespan_s == 2 * 86400 + 12 * 3600);
  CHECK(parse_master_config("", "master.toml").session_lifespan_s == 7 * 86400);
  std::string errors;
  try {
    parse_master_config("[security]\nsession_lifespan = 0\nrequire_tls = true\n", "master.toml");
  } catch (const config_error& e) {
    errors = e.what();
  }
  CHECK(errors.find("master.toml:2:20: security.session_lifespan: expected seconds as a positive integer") != std::string::npos);
  CHECK(errors.find("security.require_tls: unknown key") != std::string::npos);
}

TEST_CASE("[security] max_token_lifespan caps access tokens: 30 days unless set, a duration or seconds") {
  CHECK(parse_master_config("", "master.toml").max_token_lifespan_s == 30 * 86400);
  CHECK(parse_master_config("[security]\nmax_token_lifespan = \"90d\"\n", "master.toml").max_token_lifespan_s == 90 * 86400);
  CHECK(parse_master_config("[security]\nmax_token_lifespan = 3600\n", "master.toml").max_token_lifespan_s == 3600);
  std::string errors;
  try {
    parse_master_config("[security]\nmax_token_lifespan = \"forever\"\n", "master.toml");
  } catch (const config_error& e) {
    errors = e.what();
  }
  CHECK(errors.find("security.max_token_lifespan: expected seconds as a positive integer") != std::string::npos);
}

TEST_CASE("[security.tls] takes the certificate, its key and the client CA, all three or none") {
  CHECK_FALSE(parse_master_config("", "master.toml").tls);
  auto config = parse_master_config("[security.tls]\ncert = \"m.pem\"\nkey = \"m.key\"\nca = \"ca.pem\"\n", "master.toml");
  REQUIRE(config.tls);
  CHECK(config.tls->cert == "m.pem");
  CHECK(config.tls->key == "m.key");
  CHECK(config.tls->ca == "ca.pem");
  std::string errors;
  try {
    // Half a section must never become plain text: it is refused as a whole.
    parse_master_config("[security.tls]\ncert = \"m.pem\"\nkey = \"\"\nclient_ca = \"ca.pem\"\n", "master.toml");
  } catch (const config_error& e) {
    errors = e.what();
  }
  CHECK(errors.find("master.toml:3:7: security.tls.key: must not be empty: the path of that certificate's private key") !=
        std::string::npos);
  CHECK(errors.find("security.tls.ca: is required: the path of the CA certificates (PEM) that agents'") != std::string::npos);
  CHECK(errors.find("security.tls.client_ca: unknown key") != std::string::npos);
  errors.clear();
  try {
    parse_master_config("[security.tls]\ncert = 5\nkey = \"m.key\"\nca = \"ca.pem\"\n", "master.toml");
  } catch (const config_error& e) {
    errors = e.what();
  }
  CHECK(errors.find("master.toml:2:8: security.tls.cert: expected a string, got an integer") != std::string::npos);
  CHECK(errors.find("is required") == std::string::npos);
}

TEST_CASE("a bad master config reports every problem") {
  std::string errors;
  try {
    load_master_config(config_path("bad_master.toml"));
  } catch (const config_error& e) {
    errors = e.what();
  }
  auto path = config_path("bad_master.toml");
  CHECK(errors == path + ":1:8: port: must be between 0 and 65535, got 70000\n" +
                      path + ":2:13: http_port: expected an integer, got a string\n" +
                      path + ":3:1: dbb: unknown key; did you mean \"db\"?\n" +
                      path + ":6:33: resource_manager.default_compute_resource_pool: names the pool \"missing\", "
                             "which resource_pools does not define\n" +
                      path + ":7:24: resource_manager.agent_reconnect_wait: expected seconds as a non-negative "
                             "integer or a duration such as \"25s\" or \"1m\"\n" +
                      path + ":13:13: resource_pools[1].pool_name: the pool \"a\" is already defined\n" +
                      path + ":15:8: resource_pools[1].scheduler.type: expected \"priority\", \"fair_share\" or "
                             "\"round_robin\", got \"lottery\"\n" +
                      path + ":16:18: resource_pools[1].scheduler.fitting_policy: expected \"best\" or \"worst\", got "
                             "\"random\"\n" +
                      path + ":18:20: resource_pools[1].scheduler.priority.default_priority: must be between 1 and 99, "
                             "got 0");
}

TEST_CASE("optimizations and profiling are read, and bad values named") {
  auto config = parse_experiment_config("entrypoint = \"builtin:mlp\"\n[optimizations]\nmixed_precision = \"O1\"\n"
                                        "gradient_clip_norm = 1.5\naggregation_frequency = 2\n[profiling]\nenabled = true\n"
                                        "begin_on_batch = 0\n" + single_searcher,
                                        "inline.toml");
  CHECK(config.mixed_precision == "O1");
  CHECK(config.gradient_clip_norm == 1.5);
  CHECK(config.profiling_enabled);
  CHECK(parse_errors("entrypoint = \"x\"\n[optimizations]\nmixed_precision = \"O4\"\n" + single_searcher) ==
        "inline.toml:3:19: optimizations.mixed_precision: expected O0 (off), O1, O2 or O3, got \"O4\"");
  CHECK(parse_errors("entrypoint = \"x\"\n[optimizations]\ngradient_clip_norm = -1\n" + single_searcher).find(
            "optimizations.gradient_clip_norm: must be 0 (no clipping) or positive") != std::string::npos);
  CHECK(parse_errors("entrypoint = \"x\"\n[profiling]\nenabeld = true\n" + single_searcher).find("profiling.enabeld") !=
        std::string::npos);
}

TEST_CASE("a continuation resumes one trial with its hyperparameters as constants, in the parent's unit") {
  const std::string parent = R"(name = "sweep"
entrypoint = "builtin:simulate"
records_per_epoch = 1000
[hyperparameters]
global_batch_size = 32
lr = { type = "log", minval = -4.0, maxval = -1.0, base = 10.0 }
[hyperparameters.optimizer]
kind = { type = "categorical", vals = ["sgd", "adam"] }
[searcher]
name = "adaptive_asha"
metric = "validation_loss"
smaller_is_better = true
max_trials = 16
max_length = { epochs = 4 }
)";
  auto text = continuation_config(parent, "continuation", 7, R"({"global_batch_size": 32, "lr": 0.01, "optimizer": {"kind": "adam"}})", 9);
  auto cfg = parse_experiment_config(text, "continuation");
  CHECK(cfg.name == "sweep (continues trial 7)");
  CHECK(cfg.searcher.name == "single");
  CHECK(cfg.searcher.metric == "validation_loss");
  CHECK(cfg.searcher.source_trial_id == 7);
  CHECK(cfg.searcher.source_resumes);
  REQUIRE(cfg.searcher.max_length);
  CHECK(cfg.searcher.max_length->value == 9);
  CHECK(to_string(cfg.searcher.max_length->unit) == "epochs");
  CHECK(cfg.hparams.at("lr").value_json == "0.01");
  CHECK(cfg.hparams.at("optimizer").nested.at("kind").value_json == "\"adam\"");
  CHECK_THROWS_AS(continuation_config("name = ", "continuation", 7, "{}", 9), config_error);
}

TEST_CASE("source_resumes needs a source") {
  std::string errors;
  try {
    parse_experiment_config("name = \"x\"\nentrypoint = \"builtin:simulate\"\n[searcher]\nname = \"single\"\nmetric = \"m\"\n"
                            "max_length = { batches = 5 }\nsource_resumes = true\n",
                            "x.toml");
  } catch (const config_error& e) {
    errors = e.what();
  }
  CHECK(errors.find("searcher.source_resumes: resumes from source_trial_id or source_checkpoint_uuid") != std::string::npos);
}

TEST_CASE("an experiment's environment: an image for Core API entrypoints only") {
  auto config = parse_experiment_config("entrypoint = \"python3 train.py\"\n" + single_searcher + R"(
[environment]
image = "localhost/det-test-python:bookworm"
environment_variables = ["A=1"]
[resources]
memory_limit = 268435456
)",
                                        "inline.toml");
  CHECK(config.environment.image(false) == "localhost/det-test-python:bookworm");
  CHECK(config.environment.image(true) == "localhost/det-test-python:bookworm");
  CHECK(config.environment.memory_limit_bytes == 268435456);
  // Found by fuzzing: a count past 2^63 bytes was converted to int64_t (undefined behaviour).
  CHECK(parse_errors("entrypoint = \"python3 x.py\"\n" + single_searcher + "[resources]\nshm_size = \"1e59\"\n")
            .find("resources.shm_size: \"1e59\" is more bytes than det can count") != std::string::npos);
  // A float is no byte count, however large (converting 9E43 was undefined behaviour).
  CHECK(parse_errors("entrypoint = \"python3 x.py\"\n" + single_searcher + "[resources]\nshm_size = 9E43\n")
            .find("resources.shm_size: expected a byte count") != std::string::npos);
  CHECK(parse_errors("entrypoint = \"builtin:mlp\"\n" + single_searcher + "[environment]\nimage = \"x\"\n")
            .find("inline.toml:8:9: environment.image: applies to Core API entrypoints: C++ trials") != std::string::npos);
}

TEST_CASE("an absolute storage_path must lie inside host_path") {
  const std::string head = "entrypoint = \"builtin:mlp\"\n" + single_searcher + "[checkpoint_storage]\ntype = \"shared_fs\"\n";
  CHECK(parse_errors(head + "storage_path = \"/mnt/ckpts\"\n")
            .find("checkpoint_storage.storage_path: is absolute, so it needs the host_path it lies in") != std::string::npos);
  CHECK(parse_errors(head + "host_path = \"/data\"\nstorage_path = \"/mnt/ckpts\"\n")
            .find("checkpoint_storage.storage_path: \"/mnt/ckpts\" is not inside host_path \"/data\"") != std::string::npos);
  auto inside = parse_experiment_config(head + "host_path = \"/data\"\nstorage_path = \"/data/team/ckpts\"\n", "inline.toml");
  CHECK(inside.checkpoint_storage.root("/default") == "/data/team/ckpts");
  auto relative = parse_experiment_config(head + "host_path = \"/data\"\nstorage_path = \"team\"\n", "inline.toml");
  CHECK(relative.checkpoint_storage.root("/default") == "/data/team");
}
