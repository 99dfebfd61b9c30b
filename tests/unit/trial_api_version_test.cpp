// The worker refuses a plugin built against another Trial API version (include/det/trial.hpp),
// naming the library and both versions; a plugin built with this det's DET_TRIAL trains.

#include <doctest/doctest.h>

#include <map>
#include <stdexcept>
#include <string>

#include "det/trial.hpp"
#include "gpu/builtin_trials.hpp"

using namespace det::harness;

namespace {

const std::string plugins = DET_TEST_TRIAL_PLUGINS;

struct counting_reporter final : reporter {
  int training_reports = 0;
  int validations = 0;
  void training_metrics(const progress&, const std::map<std::string, double>&) override { ++training_reports; }
  void validation_metrics(const progress&, const std::map<std::string, double>&) override { ++validations; }
  void log(const std::string&) override {}
  bool should_stop() override { return false; }
  void checkpoint_saved(const saved_checkpoint&) override {}
};

training_plan plugin_plan(const std::string& trial_class) {
  training_plan plan;
  plan.trial_name = "plugin";
  plan.plugin_library = plugins;
  plan.plugin_class = trial_class;
  plan.length = 2;
  plan.report_every_batches = 1;
  return plan;
}

std::string refusal(const std::string& built_against) {
  return "The trial library " + plugins + " was built against Trial API version " + built_against +
         "; this det needs version " + std::to_string(DET_TRIAL_API_VERSION) +
         ": rebuild it against this det's include/det/trial.hpp.";
}

}  // namespace

TEST_CASE("a plugin that exports no Trial API version is refused with both versions named") {
  counting_reporter out;
  CHECK_THROWS_WITH_AS(run_plugin_trial(plugin_plan("Unversioned"), out), refusal("0 (none exported)").c_str(),
                       std::runtime_error);
  CHECK(out.training_reports == 0);
}

TEST_CASE("a plugin built against another Trial API version is refused with both versions named") {
  counting_reporter out;
  CHECK_THROWS_WITH_AS(run_plugin_trial(plugin_plan("Newer"), out),
                       refusal(std::to_string(DET_TRIAL_API_VERSION + 1)).c_str(), std::runtime_error);
  CHECK(out.training_reports == 0);
}

TEST_CASE("a plugin exported with this det's DET_TRIAL trains") {
  counting_reporter out;
  CHECK_FALSE(run_plugin_trial(plugin_plan("Current"), out));
  CHECK(out.training_reports == 2);
  CHECK(out.validations == 1);
}
