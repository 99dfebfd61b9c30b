#include <doctest/doctest.h>

#include <chrono>
#include <thread>
#include <filesystem>
#include <unistd.h>
#include <stdexcept>
#include <vector>

#include "gpu/harness.hpp"
#include "gpu/simulated_trial.hpp"
#include "gpu/system_sampler.hpp"

using namespace det::harness;

namespace {

struct recorder final : reporter {
  std::vector<std::pair<int64_t, double>> validations;  // batches, validation_loss
  std::vector<int64_t> training_at;
  int64_t stop_after = -1;
  int64_t seen = 0;
  void training_metrics(const progress& p, const std::map<std::string, double>& m) override {
    training_at.push_back(p.batches);
    seen = p.batches;
    CHECK(m.count("loss") == 1);
  }
  void validation_metrics(const progress& p, const std::map<std::string, double>& m) override {
    validations.emplace_back(p.batches, m.at("validation_loss"));
    CHECK(m.at("validation_accuracy") == doctest::Approx(1 - m.at("validation_loss")));
  }
  void log(const std::string&) override {}
  bool should_stop() override { return stop_after >= 0 && seen >= stop_after; }
  void checkpoint_saved(const saved_checkpoint& c) override { checkpoints.push_back(c); }
  std::vector<saved_checkpoint> checkpoints;
};

training_plan plan(const std::string& hparams, const std::string& data, int64_t length) {
  training_plan p;
  p.trial_name = "simulate";
  p.hparams_json = hparams;
  p.data_json = data;
  p.length = length;
  p.seed = 7;
  p.min_validation_period_batches = 100;
  p.report_every_batches = 50;
  return p;
}

} // namespace

TEST_CASE("the simulated loss floor depends on the hyperparameters alone") {
  auto a = simulated_loss_floor(R"({"lr": 0.01, "layers": 3})");
  CHECK(a == simulated_loss_floor(R"({"layers": 3, "lr": 0.01})"));
  CHECK(a != simulated_loss_floor(R"({"lr": 0.02, "layers": 3})"));
  for (double lr : {1e-5, 0.001, 0.5, 3.0, 400.0, -2.0}) {
    auto f = simulated_loss_floor(R"({"lr": )" + std::to_string(lr) + "}");
    CHECK(f >= 0.05);
    CHECK(f < 1.0);
  }
}

TEST_CASE("builtin:simulate validates on schedule and its loss falls toward the floor") {
  recorder r;
  run_trial(plan(R"({"x": 2.5})", "{}", 300), r);
  REQUIRE(r.validations.size() == 3);
  CHECK(r.validations[0].first == 100);
  CHECK(r.validations[2].first == 300);
  CHECK(r.validations[0].second > r.validations[1].second);
  CHECK(r.validations[1].second > r.validations[2].second);
  CHECK(r.validations[2].second > simulated_loss_floor(R"({"x": 2.5})"));
  CHECK(r.training_at == std::vector<int64_t>{50, 100, 150, 200, 250, 300});
}

TEST_CASE("builtin:simulate takes the configured time and honours a stop") {
  recorder r;
  auto start = std::chrono::steady_clock::now();
  run_trial(plan("{}", R"({"seconds_per_batch": 0.001})", 200), r);
  CHECK(std::chrono::steady_clock::now() - start >= std::chrono::milliseconds(200));

  recorder stopped;
  stopped.stop_after = 100;
  run_trial(plan("{}", "{}", 1000), stopped);
  CHECK(stopped.seen == 100);
  CHECK(stopped.validations.size() == 1);
}

TEST_CASE("builtin:simulate names a bad setting") {
  recorder r;
  CHECK_THROWS_WITH_AS(run_trial(plan("{}", R"({"noise": "lots"})", 10), r),
                       "data.noise of builtin:simulate must be a number.", std::runtime_error);
  CHECK_THROWS_WITH_AS(run_trial(plan("{}", "{}", 0), r),
                       "The trial's length must be positive, not 0.", std::runtime_error);
}

TEST_CASE("builtin:simulate resumes from its checkpoint with the same noise as an uninterrupted run") {
  char name[] = "/tmp/det-simulate-XXXXXX";
  std::filesystem::path storage = ::mkdtemp(name);
  auto p = plan(R"({"x": 0.3})", R"({"noise": 0.05})", 500);
  p.checkpoint_dir = storage.string();
  recorder whole;
  run_simulated_trial(p, whole);
  recorder first;
  first.stop_after = 250;
  run_simulated_trial(p, first);
  REQUIRE(first.checkpoints.size() == 1);
  CHECK(first.checkpoints[0].at.batches == 250);
  recorder second;
  p.resume_from = (storage / first.checkpoints[0].uuid).string();
  run_simulated_trial(p, second);
  // 300, 400 and 500 after the resume; the uninterrupted run also validated at 100 and 200.
  REQUIRE(second.validations.size() == 3);
  REQUIRE(whole.validations.size() == 5);
  for (size_t i = 0; i < 3; ++i) CHECK(second.validations[i] == whole.validations[i + 2]);
  std::filesystem::remove_all(storage);
}

TEST_CASE("the profiling sampler reports the machine's utilisation every interval") {
  det::harness::system_sampler sampler(std::chrono::milliseconds(50));
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  auto samples = sampler.take();
  REQUIRE(samples.size() >= 2);
  for (const auto& s : samples) {
    CHECK(s.at("cpu_util_percent") >= 0);
    CHECK(s.at("cpu_util_percent") <= 100);
    CHECK(s.at("memory_used_gb") > 0);
    CHECK(s.count("disk_write_mb_s") == 1);
    CHECK(s.count("net_recv_mb_s") == 1);
  }
  CHECK(sampler.take().size() <= 1);  // taken samples are gone
}
