// Determined's YAML experiment configs: read as det's TOML would be, errors at YAML lines.

#include "config/document_limits.hpp"
#include "config/yaml_config.hpp"

#include <doctest/doctest.h>

#include <fstream>
#include <sstream>

using namespace det::config;

namespace {

std::string data_file(const std::string& name) {
  std::ifstream in(std::string(DET_TEST_DATA_DIR) + "/configs/" + name);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

std::string yaml_errors(const std::string& yaml) {
  try {
    parse_yaml_experiment_config(yaml, "exp.yaml");
  } catch (const config_error& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST_CASE("a Determined YAML config reads as its TOML would") {
  auto cfg = parse_yaml_experiment_config(data_file("determined_adaptive.yaml"), "determined_adaptive.yaml");
  CHECK(cfg.name == "mnist-adaptive");
  CHECK(cfg.entrypoint == std::vector<std::string>{"builtin:simulate"});
  CHECK(cfg.max_restarts == 2);
  CHECK(cfg.searcher.name == "adaptive_asha");
  CHECK(cfg.searcher.smaller_is_better);  // YAML 1.1's "yes", as PyYAML reads it
  CHECK(cfg.searcher.max_trials == 8);
  CHECK(cfg.searcher.mode == "aggressive");
  CHECK(cfg.target_batches() == 800);
  CHECK(cfg.hparams.at("learning_rate").maxval == -1);
  CHECK(cfg.hparams.at("optimizer").vals_json.size() == 2);
  REQUIRE(cfg.environment.bind_mounts.size() == 1);
  CHECK(cfg.environment.bind_mounts[0].read_only);
  CHECK(cfg.environment.variables(false) == std::vector<std::pair<std::string, std::string>>{{"A", "1"}});
  CHECK(cfg.data_json.find("seconds_per_batch") != std::string::npos);
  CHECK(cfg.data_json.find("note") == std::string::npos);  // null: not set
}

TEST_CASE("YAML errors name the YAML file's line, column and key") {
  CHECK(yaml_errors("entrypoint: builtin:mlp\nsearcher:\n  name: single\n  metric: loss\n  max_lenght:\n    batches: 10\n")
            .find("exp.yaml:5:3: searcher.max_lenght: unknown key") != std::string::npos);
  CHECK(yaml_errors("entrypoint: builtin:mlp\nmax_restarts: many\n")
            .find("exp.yaml:2:15: max_restarts:") != std::string::npos);
  CHECK(yaml_errors("entrypoint: [unclosed\n").find("exp.yaml:") == 0);
  CHECK(yaml_errors("- a list\n").find("exp.yaml:1:1: an experiment config is a mapping") == 0);
}

// Determined 0.38's Core API tutorial, stage 2: a single search with no length.
const char* const tutorial_stage_2 =
    "name: core-api-stage-2\n"
    "entrypoint: python3 2_checkpoints.py\n"
    "\n"
    "# the rest as in stage 0\n"
    "searcher:\n"
    "   name: single\n"
    "   metric: x\n"
    "\n"
    "max_restarts: 0\n";

TEST_CASE("Determined 0.38's tutorial YAML without a length reads, and a harness entrypoint's error names the key's line") {
  auto cfg = parse_yaml_experiment_config(tutorial_stage_2, "2_checkpoints.yaml");
  CHECK(cfg.searcher.trains_until_exit());
  CHECK(cfg.max_restarts == 0);
  std::string harness = tutorial_stage_2;
  harness.replace(harness.find("python3 2_checkpoints.py"), 24, "builtin:mlp");
  CHECK(yaml_errors(harness).rfind("exp.yaml:5:1: searcher: det's harness trains builtin: and plugin: trials", 0) == 0);
  // The TOML it is stored as reads the same: the master and the worker parse that.
  CHECK(parse_experiment_config(yaml_to_toml(tutorial_stage_2, "2_checkpoints.yaml"), "stored").searcher.trains_until_exit());
}

TEST_CASE("config text without a file name is told YAML or TOML by what it parses as") {
  CHECK(is_yaml_text(tutorial_stage_2));
  CHECK_FALSE(is_yaml_text("entrypoint = \"x\"\n[searcher]\nname = \"single\"\n"));
  CHECK_FALSE(is_yaml_text("- a list\n"));
  CHECK_FALSE(is_yaml_text("name: [unclosed\n"));
}

TEST_CASE("a stored TOML config shows as YAML that reads back the same") {
  auto toml = yaml_to_toml(data_file("determined_adaptive.yaml"), "determined_adaptive.yaml");
  auto again = parse_yaml_experiment_config(toml_to_yaml(toml), "again.yaml");
  auto first = parse_experiment_config(toml, "first.toml");
  CHECK(again.name == first.name);
  CHECK(again.hparams.at("learning_rate").minval == first.hparams.at("learning_rate").minval);
  CHECK(again.searcher.max_length->value == first.searcher.max_length->value);
  CHECK(again.environment.bind_mounts.size() == 1);
}

TEST_CASE("a document past det's limits is refused by name and position, never parsed to exhaustion") {
  const std::string head = "name: x\nentrypoint: builtin:simulate\n";
  // 60,000 digits: std::regex once recursed a frame a digit here and took the master down.
  CHECK(yaml_errors(head + "max_restarts: " + std::string(60000, '7') + "\n").rfind("exp.yaml:3:", 0) == 0);
  CHECK(yaml_errors(head + "max_restarts: " + std::string(70000, '7') + "\n") ==
        "exp.yaml:3:15: a value of 70000 bytes is longer than det's limit of 65536");
  // YAML refuses implicit keys past 1024 characters itself; an explicit key ("? KEY") can be longer.
  CHECK(yaml_errors(head + "? " + std::string(2000, 'k') + "\n: 1\n") ==
        "exp.yaml:3:3: a key of 2000 bytes is longer than det's limit of 1024");
  CHECK(yaml_errors(head + "description: \"" + std::string(max_document_bytes, 'a') + "\"\n")
            .find("det reads configs of at most 1048576 bytes") != std::string::npos);
  CHECK(yaml_errors(head + "data: " + std::string(100000, '[') + "\n") == "exp.yaml:3:39: nests more than 32 levels deep");
  // A hex prefix with no digit after it (fuzz_yaml_scalar found "0x__") is a string, not a throw.
  CHECK(yaml_errors(head + "max_restarts: 0x__\n").find("max_restarts") != std::string::npos);
  CHECK(yaml_errors(head + "max_restarts: 0x1_0\n").find("max_restarts") == std::string::npos);
  // Aliases: ten lists of ten, each naming the one before, would write out 10^10 values.
  std::string laughs = head + "data:\n  a0: &a0 [x, x, x, x, x, x, x, x, x, x]\n";
  for (int i = 1; i < 10; ++i) {
    std::string prev = "*a" + std::to_string(i - 1);
    laughs += "  a" + std::to_string(i) + ": &a" + std::to_string(i) + " [" + prev;
    for (int j = 1; j < 10; ++j) laughs += ", " + prev;
    laughs += "]\n";
  }
  CHECK(yaml_errors(laughs).find("the config expands to more than 100000 values") != std::string::npos);
}

TEST_CASE("a config's depth is checked before a parser recurses: TOML's dotted keys, brackets after a quote") {
  std::string dotted;
  for (int i = 0; i < 40; ++i) dotted += "a.";
  CHECK_THROWS_AS(check_document_shape(dotted + "b = 1\n", "deep.toml"), config_error);
  CHECK_THROWS_AS(check_document_shape("[" + dotted + "b]\n", "deep.toml"), config_error);
  // An apostrophe inside a word opens no quote that would hide the brackets of the next line.
  CHECK_THROWS_AS(check_document_shape("k: it's\nv: " + std::string(40, '[') + "\n", "deep.yaml"), config_error);
  CHECK_NOTHROW(check_document_shape("url: http://a.b.c.d.e.f.g.h.i.j.k.l.m.n.o.p.q.r.s.t.u.v.w.x.y.z.a.b.c.d.e.f.g.h\n"
                                     "name = \"x\"\n", "ok.yaml"));
}
