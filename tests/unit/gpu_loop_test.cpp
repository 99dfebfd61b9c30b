// The training loop's hand-over of metrics without per-batch reads, the fused Adam, and the data
// settings that keep a data set on the training device: what makes the loop keep a GPU busy,
// checked on the CPU paths CI has.

#include "det/torch_metrics.hpp"
#include "gpu/fused_adam.hpp"
#include "gpu/harness.hpp"
#include "gpu/trial_loop.hpp"
#include "gpu/trial_settings.hpp"

#include <doctest/doctest.h>

#include <torch/torch.h>

#include <filesystem>
#include <string>
#include <unistd.h>
#include <vector>

namespace {

struct counting_reporter : det::harness::reporter {
  std::vector<std::map<std::string, double>> training;
  void training_metrics(const det::harness::progress&, const std::map<std::string, double>& m) override {
    training.push_back(m);
  }
  void validation_metrics(const det::harness::progress&, const std::map<std::string, double>&) override {}
  void log(const std::string&) override {}
  bool should_stop() override { return false; }
  void checkpoint_saved(const det::harness::saved_checkpoint&) override {}
};

// One Adam step after another on a fixed least-squares problem; the parameters after `steps`.
template <class Optimizer>
std::vector<torch::Tensor> train_linear(int steps, torch::Device device) {
  torch::manual_seed(3);
  auto weight = torch::randn({8, 4}).to(device).requires_grad_(true);
  auto bias = torch::zeros({8}).to(device).requires_grad_(true);
  auto inputs = torch::randn({32, 4}).to(device);
  auto targets = torch::randn({32, 8}).to(device);
  Optimizer optimizer(std::vector<torch::Tensor>{weight, bias}, torch::optim::AdamOptions(0.01).weight_decay(0.01));
  for (int i = 0; i < steps; ++i) {
    optimizer.zero_grad();
    torch::mse_loss(torch::addmm(bias, inputs, weight.t()), targets).backward();
    optimizer.step();
  }
  return {weight.detach().cpu(), bias.detach().cpu()};
}

// Trains nothing; counts the harness's calls to synchronize().
struct counting_trial final : det::trial {
  int synchronized = 0;
  int64_t batch_size() const override { return 1; }
  det::metrics train_batch(det::batch&, int64_t, int64_t) override { return {}; }
  det::metrics evaluate_full() override { return {{"validation_loss", 1.0}}; }
  void synchronize() override { ++synchronized; }
  void save(const std::string&) override {}
  void load(const std::string&, bool) override {}
};

}  // namespace

TEST_CASE("the harness waits for the trial's device before it stops the training clock to validate") {
  det::harness::training_plan plan;
  plan.length = 30;
  plan.report_every_batches = 7;  // reports that do not line up with the validations
  plan.min_validation_period_batches = 10;
  counting_reporter out;
  det::harness::step_timings timings(false);
  counting_trial t;
  det::harness::run_trial_loop(t, plan, out, "det.test/1", timings);
  CHECK(t.synchronized == 3);  // at batches 10, 20 and 30
}

TEST_CASE("a built-in trial hands its training metrics over once per report period, not at every batch") {
  det::harness::training_plan plan;
  plan.hparams_json = R"({"global_batch_size":32,"hidden_sizes":[32]})";
  plan.data_json = R"({"dataset":"synthetic","synthetic_train_size":1024,"synthetic_val_size":64})";
  plan.length = 100;
  plan.report_every_batches = 10;
  det::harness::loop_statistics statistics;
  plan.statistics = &statistics;
  counting_reporter out;
  det::harness::run_trial(plan, out);
  CHECK(statistics.batches == 100);
  CHECK(statistics.batches_with_metrics == 0);  // no batch's loss was read on its own
  CHECK(statistics.reports == 10);
  CHECK(statistics.metric_takes == 10);         // one read of the summed losses per period
  REQUIRE(out.training.size() == 10);
  // The loss is still each period's mean: it falls as the MLP learns.
  CHECK(out.training.front().at("loss") > out.training.back().at("loss"));
  CHECK(out.training.front().at("loss") > 0);
}

TEST_CASE("metric_sums reads the device once per take and averages over the batches since the last") {
  det::metric_sums sums;
  for (int i = 1; i <= 4; ++i) {
    sums.add("loss", torch::tensor(static_cast<float>(i)));
    sums.add("accuracy", torch::tensor(0.5f));
    sums.end_batch();
  }
  auto means = sums.take();
  CHECK(sums.reads() == 1);
  CHECK(means.at("loss") == doctest::Approx(2.5));
  CHECK(means.at("accuracy") == doctest::Approx(0.5));
  sums.add("loss", torch::tensor(10.0f));
  sums.end_batch();
  CHECK(sums.take().at("loss") == doctest::Approx(10.0));  // the sums restarted from zero
  CHECK(sums.reads() == 2);
  CHECK(sums.take().empty());  // nothing since: no read
  CHECK(sums.reads() == 2);
}

TEST_CASE("the fused Adam steps as LibTorch's Adam, and keeps its step counts through a checkpoint") {
  const torch::Device cpu(torch::kCPU);
  auto stock = train_linear<torch::optim::Adam>(20, cpu);
  auto fused = train_linear<det::harness::fused_adam>(20, cpu);
  for (std::size_t i = 0; i < stock.size(); ++i) {
    if (det::harness::fused_adam_available(cpu))
      CHECK(torch::allclose(fused[i], stock[i], 1e-5, 1e-6));  // ATen's fused kernel: other rounding
    else
      CHECK(torch::equal(fused[i], stock[i]));  // LibTorch's own step, bit for bit
  }

  // Saved after 5 steps and loaded into a fresh optimizer, it continues as one that never stopped.
  torch::manual_seed(5);
  auto weight = torch::randn({3, 3}).requires_grad_(true);
  det::harness::fused_adam first(std::vector<torch::Tensor>{weight}, torch::optim::AdamOptions(0.1));
  auto step = [&](det::harness::fused_adam& optimizer) {
    optimizer.zero_grad();
    weight.pow(2).sum().backward();
    optimizer.step();
  };
  for (int i = 0; i < 5; ++i) step(first);
  char name[] = "/tmp/det-fused-adam-XXXXXX";
  const std::string dir = ::mkdtemp(name);
  torch::save(first, dir + "/optimizer.pt");
  auto saved = weight.detach().clone();
  step(first);
  auto uninterrupted = weight.detach().clone();
  {
    torch::NoGradGuard no_grad;
    weight.copy_(saved);
  }
  det::harness::fused_adam second(std::vector<torch::Tensor>{weight}, torch::optim::AdamOptions(0.1));
  torch::load(second, dir + "/optimizer.pt");
  step(second);
  CHECK(torch::equal(weight.detach(), uninterrupted));
  std::filesystem::remove_all(dir);
}

TEST_CASE("device_resident is auto, true or false, and anything else is refused with a sentence") {
  using det::harness::residency;
  CHECK(det::harness::parse_data_settings("").device_resident == residency::automatic);
  CHECK(det::harness::parse_data_settings(R"({"device_resident":"auto"})").device_resident == residency::automatic);
  CHECK(det::harness::parse_data_settings(R"({"device_resident":true})").device_resident == residency::device);
  CHECK(det::harness::parse_data_settings(R"({"device_resident":false})").device_resident == residency::host);
  CHECK_THROWS_WITH_AS(det::harness::parse_data_settings(R"({"device_resident":"yes"})"),
                       "The data setting 'device_resident' must be \"auto\", true or false, not \"yes\".",
                       std::runtime_error);
}
