// Checkpoint save and restore throughput: det's checkpoint of an MLP trial (model, optimizer,
// generator and data position, metadata, rename into place) against torch::save / torch::load of
// the same model and optimizer to the same disk, alternating, in one process.
//
// Usage: bench_checkpoint [DIR] [ROUNDS]   (DIR defaults to /tmp; ROUNDS to 21)

#include "gpu/checkpoint_files.hpp"
#include "gpu/mlp_model.hpp"

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <iostream>
#include <vector>

namespace fs = std::filesystem;
using namespace det::harness;
using clock_type = std::chrono::steady_clock;

namespace {

double seconds_since(clock_type::time_point start) {
  return std::chrono::duration<double>(clock_type::now() - start).count();
}

int64_t bytes_under(const fs::path& dir) {
  int64_t total = 0;
  for (const auto& e : fs::recursive_directory_iterator(dir))
    if (e.is_regular_file()) total += static_cast<int64_t>(e.file_size());
  return total;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

} // namespace

int main(int argc, char** argv) {
  fs::path root = fs::path(argc > 1 ? argv[1] : "/tmp") / "det-checkpoint-bench";
  int rounds = argc > 2 ? std::stoi(argv[2]) : 21;
  fs::remove_all(root);
  fs::create_directories(root);

  torch::manual_seed(1);
  mlp model(std::vector<int64_t>{2048, 2048}, 0.1);
  mlp_hparams hparams;
  hparams.hidden_sizes = {2048, 2048};
  auto optimizer = make_optimizer(hparams, model->parameters());
  // One step so that Adam holds its moment estimates.
  auto inputs = torch::randn({64, mlp_input_size});
  auto labels = torch::randint(0, mlp_classes, {64}, torch::kLong);
  train_step(model, *optimizer, inputs, labels);

  std::vector<double> det_save, det_load, torch_save, torch_load;
  int64_t det_bytes = 0, torch_bytes = 0;
  auto det_round = [&] {
    auto start = clock_type::now();
    checkpoint_writer writer(root.string());
    save_trial_state(writer.dir(), *model, *optimizer);
    auto saved = writer.commit("det.mlp/2", progress{100, 6400, 0.1});
    det_save.push_back(seconds_since(start));
    auto dir = root / saved.uuid;
    det_bytes = bytes_under(dir);
    start = clock_type::now();
    read_checkpoint(dir.string(), "det.mlp/2");
    load_trial_state(dir.string(), false, *model, *optimizer);
    det_load.push_back(seconds_since(start));
    fs::remove_all(dir);
  };
  auto torch_round = [&] {
    auto plain = root / "plain";
    fs::create_directories(plain);
    auto start = clock_type::now();
    torch::save(model, (plain / "model.pt").string());
    torch::save(*optimizer, (plain / "optimizer.pt").string());
    torch_save.push_back(seconds_since(start));
    torch_bytes = bytes_under(plain);
    start = clock_type::now();
    torch::load(model, (plain / "model.pt").string());
    torch::load(*optimizer, (plain / "optimizer.pt").string());
    torch_load.push_back(seconds_since(start));
    fs::remove_all(plain);
  };
  // Alternating which goes first, so that neither always follows the other's deletes.
  for (int r = 0; r < rounds; ++r) {
    if (r % 2 == 0) {
      det_round();
      torch_round();
    } else {
      torch_round();
      det_round();
    }
  }
  fs::remove_all(root);

  // Each round pairs a det run with a torch run; the median of the paired ratios is less
  // sensitive to the page cache's moods than a ratio of medians.
  std::vector<double> save_ratio, load_ratio;
  for (int r = 0; r < rounds; ++r) {
    save_ratio.push_back((det_bytes / det_save[r]) / (torch_bytes / torch_save[r]));
    load_ratio.push_back((det_bytes / det_load[r]) / (torch_bytes / torch_load[r]));
  }
  auto mb = [](int64_t bytes, double seconds) { return static_cast<double>(bytes) / 1e6 / seconds; };
  std::cout << "checkpoint of " << det_bytes / 1e6 << " MB (torch::save of model+optimizer: " << torch_bytes / 1e6
            << " MB), " << rounds << " rounds, medians\n"
            << "save: det " << mb(det_bytes, median(det_save)) << " MB/s, torch::save "
            << mb(torch_bytes, median(torch_save)) << " MB/s, paired ratio " << median(save_ratio) << "\n"
            << "restore: det " << mb(det_bytes, median(det_load)) << " MB/s, torch::load "
            << mb(torch_bytes, median(torch_load)) << " MB/s, paired ratio " << median(load_ratio) << "\n";
}
