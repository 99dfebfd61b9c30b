// The baseline for the harness's overhead: the same model, data, batches and optimisation step as
// builtin:mlp, in a bare LibTorch loop with no reporting and no progress bookkeeping.
//   bench_mlp_bare --batches N [--dataset synthetic|fashion-mnist] [--batch-size 64] [--threads T]
//                  [--warmup K]   (the first K batches are trained but not timed)
//                  [--hparams JSON]  (builtin:mlp's hyperparameters, e.g. {"hidden_sizes":[512,256]})

#include "gpu/mlp_model.hpp"
#include "gpu/trial_settings.hpp"

#include <nlohmann/json.hpp>

#include <chrono>
#include <cstdio>
#include <iostream>
#include <stdexcept>
#include <string>

namespace {

struct options {
  int64_t batches = 1000;
  std::string dataset = "synthetic";
  int64_t batch_size = 64;
  int threads = 0;
  int64_t warmup = 0;
  std::string hparams = "{}";
};

int64_t to_integer(const std::string& flag, const std::string& value) {
  size_t used = 0;
  int64_t number = 0;
  try {
    number = std::stoll(value, &used);
  } catch (const std::exception&) {
    used = 0;  // reported below, with the option's name
  }
  if (used != value.size() || number <= 0)
    throw std::runtime_error("The option " + flag + " needs a positive integer, not '" + value + "'.");
  return number;
}

options parse(int argc, char** argv) {
  options o;
  for (int i = 1; i < argc; ++i) {
    std::string flag = argv[i];
    if (i + 1 >= argc) throw std::runtime_error("The option " + flag + " needs a value.");
    std::string value = argv[++i];
    if (flag == "--batches") {
      o.batches = to_integer(flag, value);
    } else if (flag == "--dataset") {
      o.dataset = value;
    } else if (flag == "--batch-size") {
      o.batch_size = to_integer(flag, value);
    } else if (flag == "--warmup") {
      o.warmup = to_integer(flag, value);
    } else if (flag == "--hparams") {
      o.hparams = value;
    } else if (flag == "--threads") {
      o.threads = static_cast<int>(to_integer(flag, value));
    } else {
      throw std::runtime_error("Unknown option " + flag +
                               "; use --batches N --dataset synthetic|fashion-mnist --batch-size B --threads T --warmup K --hparams JSON.");
    }
  }
  return o;
}

}  // namespace

int main(int argc, char** argv) {
  using namespace det::harness;
  try {
    options opts = parse(argc, argv);
    // The harness's defaults for everything but the batch size, so both run the same network.
    auto chosen = nlohmann::json::parse(opts.hparams);
    chosen["global_batch_size"] = opts.batch_size;
    mlp_hparams hparams = parse_mlp_hparams(chosen.dump());
    data_settings data_spec = parse_data_settings(nlohmann::json{{"dataset", opts.dataset}}.dump());
    if (opts.threads > 0) at::set_num_threads(opts.threads);

    auto data = load_trial_data(data_spec);
    torch::manual_seed(0);
    mlp model(hparams.hidden_sizes, hparams.dropout);
    auto optimizer = make_optimizer(hparams, model->parameters());
    shuffled_batches batches(data->train, hparams.global_batch_size, 0);
    const int64_t per_epoch = batches.batches_per_epoch();

    auto start = std::chrono::steady_clock::now();
    for (int64_t i = 0; i < opts.batches; ++i) {
      if (i == opts.warmup)
        start = std::chrono::steady_clock::now();
      auto [inputs, labels] = batches.get(i / per_epoch, i % per_epoch);
      train_step(model, *optimizer, inputs, labels);
    }
    std::chrono::duration<double> took = std::chrono::steady_clock::now() - start;
    auto timed = opts.batches - std::min(opts.warmup, opts.batches);
    std::printf("samples_per_second=%.1f\n", timed * hparams.global_batch_size / took.count());
    return 0;
  } catch (const std::exception& e) {
    std::cerr << e.what() << "\n";
    return 1;
  }
}
