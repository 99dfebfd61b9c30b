#include "gpu/collective.hpp"
#include "gpu/devices.hpp"
#include "gpu/harness.hpp"
#include "gpu/mlp_model.hpp"
#include "gpu/nccl_collective.hpp"
#include "gpu/shared_memory_collective.hpp"
#include "gpu/idx_file.hpp"
#include "gpu/trial_loop.hpp"
#include "gpu/trial_settings.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <mutex>
#include <optional>
#include <thread>
#include <filesystem>
#include <set>
#include <fstream>
#include <stdexcept>
#include <vector>

#include <unistd.h>

namespace {

using det::harness::progress;

struct report {
  progress at;
  std::map<std::string, double> metrics;
};

struct recording_reporter : det::harness::reporter {
  std::vector<report> training;
  std::vector<report> validation;
  std::vector<std::string> lines;
  int stop_after_checks = -1;  // < 0: never ask to stop
  int checks = 0;

  void training_metrics(const progress& p, const std::map<std::string, double>& m) override {
    training.push_back({p, m});
  }
  void validation_metrics(const progress& p, const std::map<std::string, double>& m) override {
    validation.push_back({p, m});
  }
  void log(const std::string& line) override {
    lines.push_back(line);
    ++lines_logged;
  }
  std::atomic<int> lines_logged{0};  // read by other threads
  bool should_stop() override { return stop_after_checks >= 0 && checks++ >= stop_after_checks; }
  void checkpoint_saved(const det::harness::saved_checkpoint& c) override { checkpoints.push_back(c); }
  void profile_metrics(const std::string& group, const progress& p, const std::map<std::string, double>& m) override {
    profiles[group].push_back({p, m});
  }
  std::vector<det::harness::saved_checkpoint> checkpoints;
  std::map<std::string, std::vector<report>> profiles;
};

/// A fresh directory under /tmp, removed by the destructor.
struct scratch_dir {
  std::filesystem::path path;
  scratch_dir() {
    char name[] = "/tmp/det-harness-XXXXXX";
    path = ::mkdtemp(name);
  }
  ~scratch_dir() { std::filesystem::remove_all(path); }
};

/// Every parameter of the mlp saved in the checkpoint's model.pt.
std::vector<torch::Tensor> saved_weights(const std::filesystem::path& checkpoint, double dropout = 0.1) {
  det::harness::mlp model(std::vector<int64_t>{128}, dropout);
  torch::load(model, (checkpoint / "model.pt").string());
  std::vector<torch::Tensor> weights;
  for (const auto& p : model->parameters()) weights.push_back(p.detach().clone());
  return weights;
}

det::harness::training_plan synthetic_plan(int64_t batches) {
  det::harness::training_plan plan;
  plan.hparams_json = R"({"global_batch_size":64,"learning_rate":0.001,"hidden_sizes":[128],"dropout":0.1})";
  plan.data_json = R"({"dataset":"synthetic"})";
  plan.seed = 7;
  plan.length = batches;
  plan.report_every_batches = 50;
  return plan;
}

std::string error_of(const det::harness::training_plan& plan) {
  recording_reporter out;
  try {
    det::harness::run_trial(plan, out);
  } catch (const std::runtime_error& e) {
    return e.what();
  }
  return "";
}

void write_big_endian(std::ofstream& out, uint32_t value) {
  const char bytes[4] = {char(value >> 24), char(value >> 16), char(value >> 8), char(value)};
  out.write(bytes, 4);
}

// A tiny uncompressed Fashion-MNIST look-alike: each class lights its own band of pixels.
void write_idx_pair(const std::filesystem::path& dir, const std::string& prefix, uint32_t n) {
  std::ofstream images(dir / (prefix + "-images-idx3-ubyte"), std::ios::binary);
  write_big_endian(images, 2051);
  for (uint32_t d : {n, 28u, 28u}) write_big_endian(images, d);
  std::ofstream labels(dir / (prefix + "-labels-idx1-ubyte"), std::ios::binary);
  write_big_endian(labels, 2049);
  write_big_endian(labels, n);
  for (uint32_t i = 0; i < n; ++i) {
    std::vector<char> pixels(28 * 28, 0);
    std::fill_n(pixels.begin() + (i % 10) * 78, 78, char(255));
    images.write(pixels.data(), pixels.size());
    labels.put(char(i % 10));
  }
}

}  // namespace

TEST_CASE("device discovery answers without a driver or GPU") {
  auto devices = det::gpu::discover_cuda_devices();
  for (const auto& d : devices) {
    CHECK(d.memory_bytes > 0);
    CHECK(d.uuid.rfind("GPU-", 0) == 0);
  }
  const int nccl = det::gpu::nccl_version();
  CHECK((nccl == 0 || nccl >= 20000));  // NCCL 2.x codes its version as major*10000 + minor*100 + patch
}

TEST_CASE("the MLP learns the synthetic data and the loss falls") {
  recording_reporter out;
  auto plan = synthetic_plan(200);
  plan.min_validation_period_batches = 100;
  det::harness::run_trial(plan, out);

  REQUIRE(out.training.size() == 4);
  CHECK(out.training.front().metrics.at("loss") > out.training.back().metrics.at("loss"));
  CHECK(out.training.back().metrics.at("samples_per_second") > 0);
  CHECK(out.training.back().at.batches == 200);
  CHECK(out.training.back().at.records == 200 * 64);
  CHECK(out.training.back().at.epochs == doctest::Approx(200.0 * 64 / 4096));

  REQUIRE(out.validation.size() == 2);  // at 100 and at 200, not again at the end
  CHECK(out.validation[0].at.batches == 100);
  CHECK(out.validation[1].metrics.at("validation_accuracy") > 0.5);
  CHECK(out.validation[1].metrics.at("validation_loss") < out.training.front().metrics.at("loss"));
}

TEST_CASE("lengths in records and epochs become whole batches") {
  auto plan = synthetic_plan(0);
  plan.length_unit = det::harness::unit::epochs;
  plan.length = 2;
  plan.records_per_epoch = 640;
  recording_reporter by_epochs;
  det::harness::run_trial(plan, by_epochs);
  CHECK(by_epochs.training.back().at.batches == 20);
  CHECK(by_epochs.training.back().at.epochs == doctest::Approx(2.0));

  plan.length_unit = det::harness::unit::records;
  plan.length = 100;
  recording_reporter by_records;
  det::harness::run_trial(plan, by_records);
  CHECK(by_records.training.back().at.batches == 2);
  CHECK(by_records.validation.size() == 1);
}

TEST_CASE("the same seed repeats a trial and another seed does not") {
  auto losses = [](uint64_t seed) {
    auto plan = synthetic_plan(20);
    plan.seed = seed;
    plan.report_every_batches = 5;
    recording_reporter out;
    det::harness::run_trial(plan, out);
    std::vector<double> values;
    for (const auto& r : out.training) values.push_back(r.metrics.at("loss"));
    return values;
  };
  auto first = losses(11);
  CHECK(first.size() == 4);
  CHECK(losses(11) == first);
  CHECK(losses(12) != first);
}

TEST_CASE("should_stop ends training early without a final validation") {
  recording_reporter out;
  out.stop_after_checks = 30;
  det::harness::run_trial(synthetic_plan(1000), out);
  REQUIRE_FALSE(out.training.empty());
  CHECK(out.training.back().at.batches == 30);
  CHECK(out.validation.empty());
}

TEST_CASE("bad hyperparameters and data settings are reported as sentences") {
  auto plan = synthetic_plan(10);
  plan.hparams_json = R"({"learning_rate":"fast"})";
  CHECK(error_of(plan) == "The hyperparameter 'learning_rate' must be a number, not \"fast\".");
  plan.hparams_json = R"({"hidden_sizes":[64,"wide"]})";
  CHECK(error_of(plan) == "Every entry of the hyperparameter 'hidden_sizes' must be an integer, not \"wide\".");
  plan.hparams_json = R"({"optimizer":"lbfgs"})";
  CHECK(error_of(plan).find("'optimizer' must be \"adam\" or \"sgd\"") != std::string::npos);
  plan.hparams_json = R"({"global_batch_size":64.0,"optimizer":"sgd","momentum":0.9})";
  CHECK(error_of(plan) == "");
  plan.hparams_json = "{not json";
  CHECK(error_of(plan).find("not valid JSON") != std::string::npos);

  plan.hparams_json = "";
  plan.data_json = R"({"dataset":"fashion-mnist","data_dir":"/nonexistent/fmnist"})";
  std::string missing = error_of(plan);
  CHECK(missing.find("/nonexistent/fmnist/train-images-idx3-ubyte.gz") != std::string::npos);
  CHECK(missing.find("apt-get install dataset-fashion-mnist") != std::string::npos);
}

TEST_CASE("uncompressed IDX files in data_dir are read and checked") {
  auto dir = std::filesystem::temp_directory_path() / ("det-harness-idx-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  write_idx_pair(dir, "train", 200);
  write_idx_pair(dir, "t10k", 50);

  auto images = det::harness::read_idx_file((dir / "train-images-idx3-ubyte").string(), 2051);
  CHECK(images.dims == std::vector<int64_t>{200, 28, 28});
  CHECK(images.values[28 * 28 * 3 + 3 * 78] == 255);
  CHECK(images.values[28 * 28 * 3] == 0);
  CHECK_THROWS_WITH(det::harness::read_idx_file((dir / "train-images-idx3-ubyte").string(), 2049),
                    doctest::Contains("has IDX magic number 2051 where 2049 was expected"));

  auto plan = synthetic_plan(30);
  plan.data_json = R"({"dataset":"fashion-mnist","data_dir":")" + dir.string() + R"("})";
  recording_reporter out;
  det::harness::run_trial(plan, out);
  REQUIRE(out.validation.size() == 1);
  CHECK(out.validation[0].metrics.at("validation_accuracy") > 0.9);
  std::filesystem::remove_all(dir);
}

TEST_CASE("a short Fashion-MNIST run learns") {
  const std::string dir = "/usr/share/datasets/fashion-mnist";
  if (!std::filesystem::exists(dir + "/train-images-idx3-ubyte.gz")) {
    MESSAGE("skipped: " << dir << " is absent (apt-get install dataset-fashion-mnist)");
    return;
  }
  det::harness::training_plan plan;
  plan.hparams_json = R"({"global_batch_size":64,"learning_rate":0.001})";
  plan.data_json = R"({"dataset":"fashion-mnist","validation_limit":1000})";
  plan.seed = 3;
  plan.length = 300;
  recording_reporter out;
  det::harness::run_trial(plan, out);
  REQUIRE(out.validation.size() == 1);
  CHECK(out.training.back().at.epochs == doctest::Approx(300.0 * 64 / 60000));
  CHECK(out.validation[0].metrics.at("validation_accuracy") > 0.6);
}

TEST_CASE("a run stopped at batch 50 and resumed from its checkpoint ends exactly as an uninterrupted one") {
  scratch_dir storage;
  auto plan = synthetic_plan(120);
  plan.min_validation_period_batches = 40;
  plan.checkpoint_dir = storage.path.string();

  recording_reporter whole;
  det::harness::run_trial(plan, whole);
  REQUIRE(whole.checkpoints.size() == 1);
  CHECK(whole.checkpoints[0].at.batches == 120);
  CHECK(whole.checkpoints[0].resources.count("model.pt") == 1);
  CHECK(whole.checkpoints[0].resources.count("metadata.json") == 1);

  recording_reporter first;
  first.stop_after_checks = 50;
  det::harness::run_trial(plan, first);
  REQUIRE(first.checkpoints.size() == 1);
  CHECK(first.checkpoints[0].at.batches == 50);

  recording_reporter second;
  plan.resume_from = (storage.path / first.checkpoints[0].uuid).string();
  det::harness::run_trial(plan, second);
  REQUIRE(second.checkpoints.size() == 1);
  CHECK(second.checkpoints[0].at.batches == 120);

  REQUIRE(second.validation.size() == 2);  // at 80 and 120; 40 came before the stop
  REQUIRE(whole.validation.size() == 3);
  for (size_t i = 0; i < 2; ++i) {
    CHECK(second.validation[i].at.batches == whole.validation[i + 1].at.batches);
    CHECK(second.validation[i].metrics == whole.validation[i + 1].metrics);  // bit for bit
  }
  auto expected = saved_weights(storage.path / whole.checkpoints[0].uuid);
  auto resumed = saved_weights(storage.path / second.checkpoints[0].uuid);
  REQUIRE(expected.size() == resumed.size());
  for (size_t i = 0; i < expected.size(); ++i) CHECK(torch::equal(expected[i], resumed[i]));
}

TEST_CASE("checkpoints on a period, and a missing or corrupt checkpoint is a clear error") {
  scratch_dir storage;
  auto plan = synthetic_plan(100);
  plan.checkpoint_dir = storage.path.string();
  plan.min_checkpoint_period_batches = 30;
  recording_reporter out;
  det::harness::run_trial(plan, out);
  std::vector<int64_t> at;
  for (const auto& c : out.checkpoints) at.push_back(c.at.batches);
  CHECK(at == std::vector<int64_t>{30, 60, 90, 100});

  plan.resume_from = (storage.path / "no-such-checkpoint").string();
  CHECK(error_of(plan).find("is missing") != std::string::npos);
  auto corrupt = storage.path / out.checkpoints[0].uuid;
  std::ofstream(corrupt / "metadata.json") << "{ not json";
  plan.resume_from = corrupt.string();
  CHECK(error_of(plan).find("is corrupt") != std::string::npos);
  // A count beyond int64_t (fuzz_checkpoint_metadata's find) is refused, not converted.
  std::ofstream(corrupt / "metadata.json", std::ios::trunc)
      << R"({"uuid": "u", "format": "det.mlp/2", "batches": 1e58, "records": 1, "epochs": 0.5})";
  CHECK(error_of(plan).find("batches is not a whole number") != std::string::npos);
  plan.resume_from = (storage.path / out.checkpoints[1].uuid).string();
  std::filesystem::remove(storage.path / out.checkpoints[1].uuid / "model.pt");
  CHECK(error_of(plan).find("cannot be loaded") != std::string::npos);
}

TEST_CASE("gradient clipping is applied and mixed precision is reported as not applied on the CPU") {
  auto plan = synthetic_plan(60);
  recording_reporter free_run;
  det::harness::run_trial(plan, free_run);
  plan.gradient_clip_norm = 1e-9;  // so small that the model barely moves
  plan.mixed_precision = "O1";
  recording_reporter clipped;
  det::harness::run_trial(plan, clipped);
  auto loss = [](const recording_reporter& r) { return r.validation.back().metrics.at("validation_loss"); };
  CHECK(loss(clipped) > loss(free_run) + 0.1);
  auto said = [&](const std::string& text) {
    return std::any_of(clipped.lines.begin(), clipped.lines.end(),
                       [&](const std::string& line) { return line.find(text) != std::string::npos; });
  };
  CHECK(said("Clipping gradients to a total norm of"));
  CHECK(said("mixed_precision = O1 is not applied"));
}

TEST_CASE("builtin:cnn learns images on the same loop, checkpoints included") {
  scratch_dir storage;
  write_idx_pair(storage.path, "train", 400);  // each class lights its own band of pixels
  write_idx_pair(storage.path, "t10k", 100);
  auto plan = synthetic_plan(80);
  plan.trial_name = "cnn";
  plan.data_json = R"({"dataset":"fashion-mnist","data_dir":")" + storage.path.string() + R"("})";
  plan.hparams_json = R"({"global_batch_size":32,"learning_rate":0.003,"channels":4})";
  plan.checkpoint_dir = storage.path.string();
  recording_reporter out;
  det::harness::run_trial(plan, out);
  REQUIRE(!out.validation.empty());
  CHECK(out.validation.back().metrics.at("validation_accuracy") > 0.9);
  REQUIRE(out.checkpoints.size() == 1);
  plan.hparams_json = R"({"global_batch_size":32,"channels":0})";
  CHECK(error_of(plan) == "The hyperparameter 'channels' must be a positive integer.");
}

TEST_CASE("profiling times every phase of the built-in trials' steps") {
  scratch_dir storage;
  auto plan = synthetic_plan(60);
  plan.profiling = true;
  plan.checkpoint_dir = storage.path.string();
  recording_reporter out;
  det::harness::run_trial(plan, out);
  std::set<std::string> timed;
  for (const auto& r : out.profiles["timings"])
    for (const auto& [name, seconds] : r.metrics) {
      timed.insert(name);
      CHECK(seconds >= 0);
    }
  for (const char* phase : {"dataloader_next", "to_device", "forward", "backward", "optimizer_step", "train_batch", "evaluate",
                            "checkpoint_save"})
    CHECK_MESSAGE(timed.count(phase) == 1, phase);
}

namespace {

/// Batches that say where they came from: (epoch, index).
struct position_loader : det::data_loader {
  int64_t per_epoch;
  explicit position_loader(int64_t per_epoch) : per_epoch(per_epoch) {}
  int64_t batches_per_epoch() const override { return per_epoch; }
  det::batch get(int64_t epoch, int64_t index) override { return std::make_pair(epoch, index); }
};

/// A trial that records the batches the harness hands it; validation batch i scores i + 1.
struct loader_trial : det::trial {
  std::vector<std::pair<int64_t, int64_t>> trained;  // the loader's (epoch, index) of each batch
  std::vector<std::pair<int64_t, int64_t>> positions;  // train_batch's (epoch_idx, batch_idx)
  bool with_validation_loader = true;

  int64_t batch_size() const override { return 10; }
  std::unique_ptr<det::data_loader> build_training_data_loader() override { return std::make_unique<position_loader>(4); }
  std::unique_ptr<det::data_loader> build_validation_data_loader() override {
    if (!with_validation_loader) return nullptr;
    return std::make_unique<position_loader>(3);
  }
  det::metrics train_batch(det::batch& b, int64_t epoch_idx, int64_t batch_idx) override {
    trained.push_back(std::any_cast<std::pair<int64_t, int64_t>>(b));
    positions.emplace_back(epoch_idx, batch_idx);
    return {{"loss", 1.0}};
  }
  det::metrics evaluate_batch(det::batch& b) override {
    return {{"score", static_cast<double>(std::any_cast<std::pair<int64_t, int64_t>>(b).second + 1)}};
  }
  void save(const std::string& dir) override { std::ofstream(dir + "/state.txt") << "ok\n"; }
  void load(const std::string&, bool) override {}
};

}  // namespace

TEST_CASE("the harness draws batches from the trial's loaders by position, across epochs and resumes") {
  scratch_dir storage;
  det::harness::training_plan plan;
  plan.length = 10;
  plan.report_every_batches = 5;
  plan.checkpoint_dir = storage.path.string();
  det::harness::step_timings timings(false);

  recording_reporter first;
  first.stop_after_checks = 6;
  loader_trial stopped;
  det::harness::run_trial_loop(stopped, plan, first, "test.loader/1", timings);
  REQUIRE(first.checkpoints.size() == 1);
  CHECK(first.checkpoints[0].at.batches == 6);
  CHECK(first.checkpoints[0].at.epochs == doctest::Approx(1.5));  // 40 records per epoch: 4 batches of 10
  std::vector<std::pair<int64_t, int64_t>> expected{{0, 0}, {0, 1}, {0, 2}, {0, 3}, {1, 0}, {1, 1}};
  CHECK(stopped.trained == expected);
  CHECK(stopped.positions[4] == std::make_pair<int64_t, int64_t>(1, 4));

  recording_reporter second;
  plan.resume_from = (storage.path / first.checkpoints[0].uuid).string();
  loader_trial resumed;
  det::harness::run_trial_loop(resumed, plan, second, "test.loader/1", timings);
  expected = {{1, 2}, {1, 3}, {2, 0}, {2, 1}};
  CHECK(resumed.trained == expected);
  CHECK(resumed.positions.front() == std::make_pair<int64_t, int64_t>(1, 6));
  REQUIRE(second.validation.size() == 1);
  CHECK(second.validation[0].metrics.at("score") == doctest::Approx(2.0));  // the mean of 1, 2 and 3

  loader_trial without;
  without.with_validation_loader = false;
  recording_reporter third;
  plan.resume_from.clear();
  CHECK_THROWS_WITH_AS(det::harness::run_trial_loop(without, plan, third, "test.loader/1", timings),
                       doctest::Contains("no validation data loader and does not implement evaluate_full"),
                       std::logic_error);
}

namespace {

// The rendezvous of processes that are threads here.
using memory_store = det::harness::memory_rendezvous_store;

struct process_run {
  recording_reporter out;
  bool stopped = false;
  std::string error;
  std::atomic<bool> failed{false};  // read by the other threads
};

// How processes (threads here) exchange: Gloo over TCP on 127.0.0.1, or a shared-memory segment.
enum class transport { gloo, shared_memory };

std::unique_ptr<det::harness::collective> connect(transport how, int rank, int size, memory_store& store) {
  if (how == transport::gloo)
    return det::harness::connect_gloo(rank, size, store, "127.0.0.1", std::chrono::seconds(60), std::chrono::seconds(60));
  auto peers = det::harness::join_shared_memory(rank, size, store, std::chrono::seconds(60), std::chrono::seconds(60));
  if (!peers) throw std::runtime_error("this host gave no shared-memory segment");
  return peers;
}

// Trains `plan` as `runs.size()` processes (threads) connected `how`.
void train_together(const det::harness::training_plan& plan, std::vector<process_run>& runs,
                    transport how = transport::gloo) {
  memory_store store;
  std::vector<std::thread> threads;
  const int size = static_cast<int>(runs.size());
  for (int rank = 0; rank < size; ++rank)
    threads.emplace_back([&, rank] {
      auto& run = runs[static_cast<size_t>(rank)];
      try {
        auto peers = connect(how, rank, size, store);
        // Threads share LibTorch's global generator, which builds the models: the chief's model
        // must be built (its first log line) before the others draw, to be the one a process
        // alone would build.
        while (rank > 0 && runs[0].out.lines_logged == 0 && !runs[0].failed)
          std::this_thread::sleep_for(std::chrono::milliseconds(1));
        auto mine = plan;
        mine.peers = peers.get();
        run.stopped = det::harness::run_trial(mine, run.out);
      } catch (const std::exception& e) {
        run.error = e.what();
        run.failed = true;
      }
    });
  for (auto& t : threads) t.join();
  for (const auto& run : runs) REQUIRE(run.error == "");
}

bool logged(const recording_reporter& r, const std::string& text) {
  return std::any_of(r.lines.begin(), r.lines.end(),
                     [&](const std::string& line) { return line.find(text) != std::string::npos; });
}

}  // namespace

TEST_CASE("two processes training together on halves of each batch match one process on whole batches, over Gloo and shared memory") {
  auto plan = synthetic_plan(60);
  // SGD without dropout: the halves' mean gradient is the whole batch's, up to rounding.
  plan.hparams_json =
      R"({"global_batch_size":64,"learning_rate":0.05,"hidden_sizes":[128],"dropout":0,"optimizer":"sgd"})";
  plan.report_every_batches = 20;
  plan.min_validation_period_batches = 30;
  scratch_dir alone_storage;
  plan.checkpoint_dir = alone_storage.path.string();
  recording_reporter alone;
  det::harness::run_trial(plan, alone);

  for (auto how : {transport::gloo, transport::shared_memory}) {
    CAPTURE(static_cast<int>(how));
    scratch_dir together_storage;
    plan.checkpoint_dir = together_storage.path.string();
    std::vector<process_run> together(2);
    train_together(plan, together, how);
    const auto& chief = together[0].out;
    const auto& other = together[1].out;
    // Only the chief reports and checkpoints.
    CHECK(other.training.empty());
    CHECK(other.validation.empty());
    CHECK(other.checkpoints.empty());
    CHECK(logged(other, "Process 1 of 2: training on its share of each batch"));
    REQUIRE(chief.validation.size() == alone.validation.size());
    for (size_t i = 0; i < alone.validation.size(); ++i) {
      CHECK(chief.validation[i].at.batches == alone.validation[i].at.batches);
      CHECK(chief.validation[i].metrics.at("validation_loss") ==
            doctest::Approx(alone.validation[i].metrics.at("validation_loss")).epsilon(1e-4));
      CHECK(chief.validation[i].metrics.at("validation_accuracy") ==
            doctest::Approx(alone.validation[i].metrics.at("validation_accuracy")).epsilon(1e-3));
    }
    // The reported training loss is the processes' mean, which is the whole batch's loss.
    REQUIRE(chief.training.size() == alone.training.size());
    for (size_t i = 0; i < alone.training.size(); ++i)
      CHECK(chief.training[i].metrics.at("loss") == doctest::Approx(alone.training[i].metrics.at("loss")).epsilon(1e-4));
    REQUIRE(chief.checkpoints.size() == 1);
    REQUIRE(alone.checkpoints.size() == 1);
    auto expected = saved_weights(alone_storage.path / alone.checkpoints.back().uuid, 0);
    auto trained = saved_weights(together_storage.path / chief.checkpoints.back().uuid, 0);
    for (size_t i = 0; i < expected.size(); ++i) CHECK(torch::allclose(expected[i], trained[i], 1e-4, 1e-5));
  }
}

TEST_CASE("a stop asked of one process stops them all after the same batch, and a missing one is an error") {
  auto plan = synthetic_plan(200);
  scratch_dir storage;
  plan.checkpoint_dir = storage.path.string();
  std::vector<process_run> together(2);
  together[1].out.stop_after_checks = 25;  // only the second process is told
  train_together(plan, together);
  CHECK(together[0].stopped);
  CHECK(together[1].stopped);
  // They agree at the next check the chief paced: at most 100 batches on.
  REQUIRE(together[0].out.checkpoints.size() == 1);
  const auto stopped_at = together[0].out.checkpoints[0].at.batches;
  CHECK(stopped_at >= 25);
  CHECK(stopped_at <= 125);
  const auto sentence = "Stopped after " + std::to_string(stopped_at) + " of 200 batches";
  CHECK(logged(together[0].out, sentence));
  CHECK(logged(together[1].out, sentence));

  memory_store store;  // nobody else comes
  CHECK_THROWS_WITH_AS(det::harness::connect_gloo(0, 2, store, "127.0.0.1", std::chrono::seconds(1), std::chrono::seconds(1)),
                       doctest::Contains("did not arrive within 1 s"), std::runtime_error);
}

TEST_CASE("a trial that averages nothing across processes is stopped with a sentence in every process") {
  det::harness::training_plan plan;
  plan.length = 100;  // more than the batches in a row a trial accumulating gradients may go without
  memory_store store;
  std::vector<std::string> errors(2);
  std::vector<std::thread> threads;
  for (int rank = 0; rank < 2; ++rank)
    threads.emplace_back([&, rank] {
      try {
        auto peers = det::harness::connect_gloo(rank, 2, store, "127.0.0.1", std::chrono::seconds(60),
                                                std::chrono::seconds(60));
        auto mine = plan;
        mine.peers = peers.get();
        recording_reporter out;
        det::harness::step_timings timings(false);
        loader_trial unaware;  // trains without det::average_gradients
        det::harness::run_trial_loop(unaware, mine, out, "test.loader/1", timings);
      } catch (const std::exception& e) {
        errors[static_cast<size_t>(rank)] = e.what();
      }
    });
  for (auto& t : threads) t.join();
  for (const auto& e : errors)
    CHECK(e.find("its train_batch averaged nothing with the other processes for 33 batches in a row") != std::string::npos);
}

namespace {

// A trial_context that only averages and broadcasts, over a collective: what gradient_averager needs.
struct collective_context final : det::trial_context {
  explicit collective_context(det::harness::collective& c) : peers(c) {}
  const std::string& hparams_json() const override { return empty; }
  double hparam(const std::string&) const override { return 0; }
  std::string hparam_text(const std::string&) const override { return ""; }
  const std::string& data_json() const override { return empty; }
  uint64_t seed() const override { return 0; }
  const std::string& mixed_precision() const override { return precision; }
  double gradient_clip_norm() const override { return 0; }
  bool cuda_graph() const override { return false; }
  int rank() const override { return peers.rank(); }
  int world_size() const override { return peers.size(); }
  void log(const std::string&) override {}
  void record_timing(const std::string&, double) override {}
  void average(float* values, std::size_t count) override {
    peers.sum(values, count);
    for (std::size_t i = 0; i < count; ++i) values[i] /= static_cast<float>(peers.size());
  }
  void broadcast(float* values, std::size_t count) override { peers.broadcast(values, count); }
  det::harness::collective& peers;
  std::string empty = "{}", precision = "O0";
};

// Gradients of a two-layer model on (inputs, labels): the mean loss over `total` samples, so that
// shares and micro-batches add up to the whole batch's mean.
void accumulate_gradients(torch::nn::Sequential& model, const torch::Tensor& inputs, const torch::Tensor& labels,
                          int64_t total) {
  auto loss = torch::nn::functional::cross_entropy(
                  model->forward(inputs), labels, torch::nn::functional::CrossEntropyFuncOptions().reduction(torch::kSum)) /
              static_cast<double>(total);
  loss.backward();
}

torch::nn::Sequential small_model() {
  torch::manual_seed(3);
  return torch::nn::Sequential(torch::nn::Linear(6, 16), torch::nn::ReLU(), torch::nn::Linear(16, 4));
}

}  // namespace

TEST_CASE("overlapped bucketed averaging matches one process, with and without gradient accumulation, over Gloo and shared memory") {
  torch::manual_seed(11);
  const auto inputs = torch::randn({16, 6});
  const auto labels = torch::randint(0, 4, {16});
  auto alone = small_model();
  accumulate_gradients(alone, inputs, labels, 16);
  for (auto how : {transport::gloo, transport::shared_memory}) {
    for (int micro_batches : {1, 2}) {
      CAPTURE(static_cast<int>(how));
      memory_store store;
      std::vector<std::vector<torch::Tensor>> grads(2);
      std::vector<std::string> errors(2);
      std::vector<std::uint64_t> exchanges(2);
      // Built here: the threads would share LibTorch's global generator.
      std::vector<torch::nn::Sequential> models{small_model(), small_model()};
      std::vector<std::thread> threads;
      for (int rank = 0; rank < 2; ++rank)
        threads.emplace_back([&, rank] {
          try {
            auto peers = connect(how, rank, 2, store);
            collective_context context(*peers);
            auto& model = models[static_cast<size_t>(rank)];
            // Tiny buckets: several of them, averaged while backward runs.
            det::gradient_averager averager(context, model->parameters(), 64, 256);
            auto share = inputs.tensor_split(2)[rank];
            auto share_labels = labels.tensor_split(2)[rank];
            for (int m = 0; m < micro_batches; ++m) {
              averager.prepare(m == micro_batches - 1);  // only the last backward averages
              accumulate_gradients(model, share.tensor_split(micro_batches)[m], share_labels.tensor_split(micro_batches)[m], 8);
              averager.synchronize();
            }
            for (const auto& p : model->parameters()) grads[static_cast<size_t>(rank)].push_back(p.grad().clone());
          exchanges[static_cast<size_t>(rank)] = peers->exchanges();
          } catch (const std::exception& e) {
            errors[static_cast<size_t>(rank)] = e.what();
          }
        });
      for (auto& t : threads) t.join();
      REQUIRE(errors[0] == "");
      REQUIRE(errors[1] == "");
      // Two buckets (b2 and W2, then b1 and W1), each averaged once, by one thread or the other.
      CHECK(exchanges[0] == 2);
      CHECK(exchanges[1] == 2);
      const auto expected = alone->parameters();
      for (int rank = 0; rank < 2; ++rank)
        for (size_t i = 0; i < expected.size(); ++i)
          CHECK(torch::allclose(grads[static_cast<size_t>(rank)][i], expected[i].grad(), 1e-4, 1e-6));
    }
  }
}

TEST_CASE("the NCCL id travels through the rendezvous as hex, and a bad one is refused") {
  unsigned char id[128];
  for (int i = 0; i < 128; ++i) id[i] = static_cast<unsigned char>(i * 37 + 11);
  auto text = det::harness::to_hex(id, sizeof id);
  CHECK(text.size() == 256);
  unsigned char back[128] = {};
  det::harness::from_hex(text, back, sizeof back);
  CHECK(std::equal(std::begin(id), std::end(id), std::begin(back)));
  CHECK_THROWS_WITH_AS(det::harness::from_hex(text.substr(2), back, sizeof back),
                       "the NCCL id in the rendezvous has 127 bytes, not 128", std::runtime_error);
  CHECK_THROWS_WITH_AS(det::harness::from_hex(std::string(256, 'z'), back, sizeof back),
                       "the NCCL id in the rendezvous is not hex", std::runtime_error);
}

TEST_CASE("a distributed run on GPUs where there is no GPU (or no NCCL) fails with a sentence") {
  // Here either libdet_nccl.so loads and finds no CUDA device, or this build has no NCCL.
  det::harness::memory_rendezvous_store store;
  try {
    det::harness::connect_nccl(0, 2, 0, store, std::chrono::seconds(1), std::chrono::seconds(1));
    FAIL("connect_nccl succeeded on a machine where the tests expect no GPU");
  } catch (const std::runtime_error& e) {
    std::string what = e.what();
    bool said_why = what.find("process 0 of 2 cannot use CUDA device 0") == 0 ||
                    what.find("a distributed run on GPUs needs NCCL") == 0;
    CHECK_MESSAGE(said_why, what);
  }
}
