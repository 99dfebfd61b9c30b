// builtin:gpt: its settings, model, data and trial, the last through det's harness loop.

#include "gpu/gpt_model.hpp"
#include "gpu/gpt_settings.hpp"
#include "gpu/harness.hpp"
#include "gpu/token_data.hpp"
#include "gpu/trial_loop.hpp"

#include <doctest/doctest.h>

#include <fstream>

#include <ATen/CPUGeneratorImpl.h>

#include <chrono>
#include <cmath>
#include <filesystem>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include <unistd.h>

// The factory DET_TRIAL(gpt) exports from libdet_torch_trials.so, which this test links.
extern "C" det::trial* det_make_trial_gpt(det::trial_context& context);

namespace {

using det::harness::gpt_hparams;
using det::harness::parse_gpt_hparams;
using det::harness::parse_token_data_settings;

const std::string fortunes_dir = "/usr/share/games/fortunes";

struct recording_reporter : det::harness::reporter {
  std::vector<std::pair<det::harness::progress, std::map<std::string, double>>> training, validation;
  std::vector<std::string> lines;
  std::vector<det::harness::saved_checkpoint> checkpoints;
  void training_metrics(const det::harness::progress& p, const std::map<std::string, double>& m) override {
    training.emplace_back(p, m);
  }
  void validation_metrics(const det::harness::progress& p, const std::map<std::string, double>& m) override {
    validation.emplace_back(p, m);
  }
  void log(const std::string& line) override { lines.push_back(line); }
  bool should_stop() override { return false; }
  void checkpoint_saved(const det::harness::saved_checkpoint& c) override { checkpoints.push_back(c); }
};

/// A fresh directory under /tmp, removed by the destructor.
struct scratch_dir {
  std::filesystem::path path;
  scratch_dir() {
    char name[] = "/tmp/det-gpt-XXXXXX";
    path = ::mkdtemp(name);
  }
  ~scratch_dir() { std::filesystem::remove_all(path); }
};

std::string hparams_error(const std::string& json) {
  try {
    parse_gpt_hparams(json);
  } catch (const std::runtime_error& e) {
    return e.what();
  }
  return "";
}

std::string data_error(const std::string& json) {
  try {
    parse_token_data_settings(json);
  } catch (const std::runtime_error& e) {
    return e.what();
  }
  return "";
}

std::string run_error(const det::harness::training_plan& plan) {
  recording_reporter out;
  try {
    det::harness::run_trial(plan, out);
  } catch (const std::runtime_error& e) {
    return e.what();
  }
  return "";
}

gpt_hparams tiny(double dropout = 0) {
  gpt_hparams h;
  h.n_layer = 2;
  h.n_head = 2;
  h.n_embd = 32;
  h.block_size = 16;
  h.dropout = dropout;
  return h;
}

/// A plan for builtin:gpt on synthetic tokens (no corpus needed).
det::harness::training_plan synthetic_plan(int64_t batches) {
  det::harness::training_plan plan;
  plan.trial_name = "gpt";
  plan.hparams_json = R"({"n_layer":1,"n_head":2,"n_embd":32,"block_size":16,"vocab_size":64,"global_batch_size":8})";
  plan.data_json = R"({"dataset":"synthetic_tokens","synthetic_tokens":20000,"validation_batches":2})";
  plan.seed = 5;
  plan.length = batches;
  plan.report_every_batches = 1;
  return plan;
}

}  // namespace

TEST_CASE("builtin:gpt's settings default to a tiny model and name a bad key in a sentence") {
  auto h = parse_gpt_hparams("");
  CHECK(h.n_layer == 2);
  CHECK(h.vocab_size == 256);
  CHECK(h.weight_decay == doctest::Approx(0.1));
  CHECK(h.min_learning_rate == doctest::Approx(h.learning_rate / 10));
  CHECK(parse_gpt_hparams(R"({"learning_rate":0.01,"min_lr_ratio":0.5})").min_learning_rate == doctest::Approx(0.005));
  CHECK(parse_gpt_hparams(R"({"min_learning_rate":0.0002})").min_learning_rate == doctest::Approx(0.0002));
  CHECK(parse_gpt_hparams(R"({"n_embd":96.0,"n_head":3})").n_embd == 96);  // searchers send integers as doubles

  CHECK(hparams_error(R"({"learning_rate":"fast"})") == "The hyperparameter 'learning_rate' must be a number, not \"fast\".");
  CHECK(hparams_error(R"({"n_layer":1.5})") == "The hyperparameter 'n_layer' must be an integer, not 1.5.");
  CHECK(hparams_error(R"({"block_size":0})") == "The hyperparameter 'block_size' must be a positive integer, not 0.");
  CHECK(hparams_error(R"({"n_embd":100,"n_head":3})") ==
        "The hyperparameter 'n_embd' (100) must be a multiple of 'n_head' (3): each head gets an equal share of the "
        "embedding.");
  CHECK(hparams_error(R"({"warmup_batches":100,"lr_decay_batches":100})") ==
        "The hyperparameter 'lr_decay_batches' (100) must exceed 'warmup_batches' (100): the cosine decay runs between "
        "them.");
  CHECK(hparams_error(R"({"min_learning_rate":0.0001,"min_lr_ratio":0.1})") ==
        "The hyperparameters 'min_learning_rate' and 'min_lr_ratio' say the same thing: give only one.");
  CHECK(hparams_error(R"({"min_learning_rate":1})") ==
        "The hyperparameter 'min_learning_rate' must lie between 0 and 'learning_rate'.");
  CHECK(hparams_error(R"({"dropout":1})") == "The hyperparameter 'dropout' must lie in [0, 1).");
  CHECK(hparams_error("[1]") == "The hyperparameters must be a JSON object, not [1].");

  auto d = parse_token_data_settings("");
  CHECK(d.dataset == det::harness::token_dataset::fortunes);
  CHECK(d.data_dir == fortunes_dir);
  CHECK(parse_token_data_settings(R"({"dataset":"synthetic_tokens"})").dataset ==
        det::harness::token_dataset::synthetic_tokens);
  CHECK(data_error(R"({"dataset":"shakespeare"})") ==
        "The data setting 'dataset' must be \"fortunes\" or \"synthetic_tokens\" for builtin:gpt, not \"shakespeare\".");
  CHECK(data_error(R"({"validation_batches":0})") == "The data setting 'validation_batches' must be positive, not 0.");
  CHECK(data_error(R"({"data_dir":7})") == "The data setting 'data_dir' must be a string, not 7.");
}

TEST_CASE("the learning rate warms up linearly, then follows a cosine down to the minimum") {
  auto h = parse_gpt_hparams(R"({"learning_rate":0.001,"min_learning_rate":0.0001,"warmup_batches":10,
                                 "lr_decay_batches":110})");
  CHECK(det::harness::gpt_learning_rate(h, 0) == doctest::Approx(0.001 / 11));
  CHECK(det::harness::gpt_learning_rate(h, 9) == doctest::Approx(0.001 * 10 / 11));
  CHECK(det::harness::gpt_learning_rate(h, 10) == doctest::Approx(0.001));
  CHECK(det::harness::gpt_learning_rate(h, 60) == doctest::Approx(0.00055));  // half-way: the mean
  CHECK(det::harness::gpt_learning_rate(h, 110) == doctest::Approx(0.0001));
  CHECK(det::harness::gpt_learning_rate(h, 100000) == doctest::Approx(0.0001));
  for (int64_t i = 10; i < 110; ++i)
    CHECK(det::harness::gpt_learning_rate(h, i + 1) <= det::harness::gpt_learning_rate(h, i));
}

TEST_CASE("mfu's peak comes from the GPU's name, the most specific entry first") {
  CHECK(det::harness::peak_bf16_flops("NVIDIA H100 80GB HBM3") == doctest::Approx(989e12));
  CHECK(det::harness::peak_bf16_flops("NVIDIA H100 PCIe") == doctest::Approx(756e12));
  CHECK(det::harness::peak_bf16_flops("NVIDIA H200") == doctest::Approx(989e12));
  CHECK(det::harness::peak_bf16_flops("NVIDIA A100-SXM4-80GB") == doctest::Approx(312e12));
  CHECK(det::harness::peak_bf16_flops("NVIDIA L4") == doctest::Approx(121e12));
  CHECK(det::harness::peak_bf16_flops("NVIDIA L40S") == doctest::Approx(362e12));
  CHECK(det::harness::peak_bf16_flops("Tesla T4") == 0);
  // GPT-2 small's FLOPs per token, as nanoGPT counts them (124.5M parameters less 0.79M positions).
  auto small = parse_gpt_hparams(R"({"n_layer":12,"n_head":12,"n_embd":768,"block_size":1024,"vocab_size":50304})");
  CHECK(det::harness::gpt_parameters_without_positions(small) == 123'689'472);
  CHECK(det::harness::gpt_flops_per_token(small, 123'689'472) == doctest::Approx(6 * 123'689'472.0 + 12 * 12 * 768 * 1024.0));
}

TEST_CASE("the model maps tokens to a vocabulary's logits, with the lm_head tied to the token embedding") {
  auto h = tiny();
  torch::manual_seed(1);
  det::harness::gpt_model model(h);
  auto tokens = torch::randint(h.vocab_size, {3, h.block_size}, torch::kLong);
  auto logits = model->forward(tokens);
  CHECK(logits.sizes() == torch::IntArrayRef{3, h.block_size, h.vocab_size});
  CHECK(model->forward(tokens.slice(1, 0, 5)).sizes() == torch::IntArrayRef{3, 5, h.vocab_size});
  CHECK_THROWS_WITH(model->forward(torch::zeros({1, h.block_size + 1}, torch::kLong)),
                    "A sequence of 17 tokens exceeds the model's block_size of 16.");

  CHECK(model->parameters_without_positions() == det::harness::gpt_parameters_without_positions(h));
  for (const auto& item : model->named_parameters()) CHECK(item.key().find("lm_head") == std::string::npos);
  auto [decayed, not_decayed] = model->decay_groups();
  CHECK(decayed.size() == 2 + 4 * static_cast<std::size_t>(h.n_layer));      // wte, wpe; four matrices a block
  CHECK(not_decayed.size() == 2 + 8 * static_cast<std::size_t>(h.n_layer));  // ln_f; four biases, two norms' two
  // The residual projections start smaller (std 0.02 / sqrt(2 n_layer) = 0.01) than the rest (0.02).
  auto std_of = [&](const std::string& name) { return model->named_parameters()[name].std().item<double>(); };
  CHECK(std_of("h.0.attn.c_proj.weight") == doctest::Approx(0.01).epsilon(0.1));
  CHECK(std_of("h.1.mlp.c_proj.weight") == doctest::Approx(0.01).epsilon(0.1));
  CHECK(std_of("h.0.mlp.c_fc.weight") == doctest::Approx(0.02).epsilon(0.1));
  CHECK(std_of("wte.weight") == doctest::Approx(0.02).epsilon(0.1));
}

TEST_CASE("attention is causal: a later token changes no earlier position's logits") {
  auto h = tiny(/*dropout=*/0.1);
  torch::manual_seed(2);
  det::harness::gpt_model model(h);
  model->eval();
  torch::NoGradGuard no_grad;
  auto tokens = torch::randint(h.vocab_size, {2, h.block_size}, torch::kLong);
  auto changed = tokens.clone();
  const int64_t at = 9;
  changed.select(1, at).add_(1).remainder_(h.vocab_size);
  auto before = model->forward(tokens), after = model->forward(changed);
  CHECK(torch::equal(before.slice(1, 0, at), after.slice(1, 0, at)));
  for (int64_t t = at; t < h.block_size; ++t)
    CHECK_FALSE(torch::allclose(before.select(1, t), after.select(1, t)));
}

TEST_CASE("the loss at initialisation is about ln(vocab_size)") {
  for (int64_t vocab : {256, 1000}) {
    auto h = tiny();
    h.vocab_size = vocab;
    torch::manual_seed(3);
    det::harness::gpt_model model(h);
    auto tokens = torch::randint(vocab, {8, h.block_size + 1}, torch::kLong);
    torch::NoGradGuard no_grad;
    double loss = model->loss(tokens.slice(1, 0, h.block_size), tokens.slice(1, 1)).item<double>();
    CHECK(loss == doctest::Approx(std::log(static_cast<double>(vocab))).epsilon(0.02));
  }
}

TEST_CASE("training windows come by position, from the tokens' device, their targets the next tokens") {
  auto tokens = torch::arange(1000, torch::kLong);
  det::harness::token_windows windows(tokens, /*block_size=*/8, /*batch_size=*/4, /*seed=*/7);
  CHECK(windows.batches_per_epoch() == 1000 / 32);
  auto [x, y] = windows.get(0, 3);
  CHECK(x.sizes() == torch::IntArrayRef{4, 8});
  CHECK(torch::equal(y, x + 1));                                        // consecutive tokens
  CHECK(torch::equal(x.select(1, 1), x.select(1, 0) + 1));
  CHECK(x.max().item<int64_t>() <= 998);                                // the last target is token 999 at most
  det::harness::token_windows again(tokens, 8, 4, 7);
  again.get(1, 0);                                                       // another epoch first: no state that matters
  CHECK(torch::equal(again.get(0, 3).first, x));
  CHECK_FALSE(torch::equal(windows.get(1, 3).first, x));                 // each epoch has its own positions
  det::harness::token_windows share(tokens, 8, 4, 7, {1, 2});            // the second of two processes
  CHECK(torch::equal(share.get(0, 3).first, x.slice(0, 2, 4)));

  det::harness::fixed_windows validation(tokens, 8, 4, /*batches=*/3);
  CHECK(validation.batches() == 3);
  CHECK(validation.get(0).first[0][0].item<int64_t>() == 0);
  CHECK(validation.get(2).second[3][7].item<int64_t>() == 999);  // evenly spread to the very end
  CHECK_THROWS_WITH(det::harness::fixed_windows(torch::arange(8, torch::kLong), 8, 4, 1),
                    doctest::Contains("The validation split holds 8 tokens, too few for one window of block_size + 1 = 9"));
}

TEST_CASE("a missing corpus and a vocabulary too small for bytes are sentences") {
  auto plan = synthetic_plan(2);
  plan.data_json = R"({"dataset":"fortunes","data_dir":"/nonexistent/fortunes"})";
  plan.hparams_json = "{}";
  std::string missing = run_error(plan);
  CHECK(missing.find("/nonexistent/fortunes") != std::string::npos);
  CHECK(missing.find("apt-get install fortunes") != std::string::npos);

  recording_reporter out;
  plan.hparams_json = R"({"vocab_size":100})";
  CHECK_THROWS_WITH_AS(det::harness::run_trial(plan, out),
                       "The fortunes corpus is byte-level (256 tokens): the hyperparameter 'vocab_size' must be at "
                       "least 256, not 100.",
                       det::invalid_hyperparameters);
  plan.hparams_json = R"({"n_head":3})";
  CHECK_THROWS_AS(det::harness::run_trial(plan, out), det::invalid_hyperparameters);
}

TEST_CASE("a user's corpus and synthetic corpus are bounded: a directory of more text, or more tokens, is a sentence") {
  char name[] = "/tmp/det-corpus-XXXXXX";
  const std::string dir = ::mkdtemp(name);
  {
    std::ofstream big(dir + "/log", std::ios::binary);
    big << std::string(3000, 'x');
  }
  CHECK(det::harness::read_fortunes(dir, 4096).size() == 3000);
  CHECK_THROWS_WITH_AS(det::harness::read_fortunes(dir, 2048),
                       ("The corpus directory " + dir + " holds more than 0 MiB of text, more than builtin:gpt reads: "
                        "point 'data_dir' at the corpus alone.").c_str(),
                       std::runtime_error);
  std::filesystem::remove_all(dir);
  CHECK_THROWS_WITH_AS(det::harness::parse_token_data_settings(R"({"dataset":"synthetic_tokens","synthetic_tokens":2000000000000})"),
                       "The data setting 'synthetic_tokens' must lie in 1..1073741824, not 2000000000000.",
                       std::runtime_error);
}

TEST_CASE("builtin:gpt trains synthetic tokens through the harness and reports the metrics it keeps itself") {
  recording_reporter out;
  auto plan = synthetic_plan(6);
  plan.report_every_batches = 3;
  det::harness::run_trial(plan, out);
  REQUIRE(out.training.size() == 2);
  const auto& metrics = out.training.back().second;
  CHECK(metrics.at("loss") > 0);
  CHECK(metrics.at("tokens_per_second") > 0);
  CHECK(metrics.at("samples_per_second") > 0);
  CHECK(metrics.at("learning_rate") == doctest::Approx(1e-3 * 6 / 21));  // batch 5 of 20 warm-up batches
  CHECK(metrics.count("mfu") == 0);                                      // a CPU has no peak to divide by
  REQUIRE(out.validation.size() == 1);
  CHECK(out.validation[0].second.at("validation_loss") == doctest::Approx(std::log(64.0)).epsilon(0.05));
}

TEST_CASE("a checkpoint restores the model, the optimizer and the generator: the next losses repeat") {
  scratch_dir dir;
  auto plan = synthetic_plan(0);
  plan.hparams_json = R"({"n_layer":1,"n_head":2,"n_embd":32,"block_size":16,"vocab_size":64,"global_batch_size":8,
                          "dropout":0.1,"warmup_batches":2})";
  recording_reporter out;
  det::harness::step_timings timings(false);
  auto context = det::harness::make_trial_context(plan, out, timings);
  std::unique_ptr<det::trial> first(det_make_trial_gpt(*context));
  auto data = first->build_training_data_loader();
  auto loss_of = [&](det::trial& t, int64_t index) {
    auto b = data->get(0, index);
    t.train_batch(b, 0, index);
    return t.take_training_metrics().at("loss");
  };
  for (int64_t i = 0; i < 4; ++i) loss_of(*first, i);
  first->save(dir.path.string());
  for (const char* file : {"model.pt", "optimizer.pt", "trainer.pt"}) CHECK(std::filesystem::exists(dir.path / file));
  const std::vector<double> expected{loss_of(*first, 4), loss_of(*first, 5)};

  auto other_context = det::harness::make_trial_context(plan, out, timings);
  std::unique_ptr<det::trial> second(det_make_trial_gpt(*other_context));
  second->load(dir.path.string(), /*weights_only=*/false);
  CHECK(loss_of(*second, 4) == expected[0]);  // the weights and the dropout generator
  CHECK(loss_of(*second, 5) == expected[1]);  // and the optimizer's moments, after a step
}

TEST_CASE("on the fortunes corpus a tiny GPT learns past the unigram model within a minute of CPU") {
  if (!std::filesystem::exists(fortunes_dir + "/fortunes")) {
    MESSAGE("skipped: " << fortunes_dir << " is absent (apt-get install fortunes fortunes-min)");
    return;
  }
  // The unigram model's cross-entropy on the validation split, with the training split's byte
  // frequencies (add-one smoothed: a byte it never saw is not infinitely surprising).
  auto corpus = det::harness::load_token_corpus(parse_token_data_settings(""), 256);
  auto counts = torch::bincount(corpus->train, {}, 256).to(torch::kDouble) + 1;
  const double unigram = -(counts / counts.sum()).log().index_select(0, corpus->validation).mean().item<double>();
  MESSAGE("unigram cross-entropy of the validation split: " << unigram << " nats per byte");

  scratch_dir storage;
  det::harness::training_plan plan;
  plan.trial_name = "gpt";
  plan.hparams_json = R"({"learning_rate":0.003,"warmup_batches":20,"lr_decay_batches":300})";
  plan.seed = 1;
  plan.length = 300;
  plan.report_every_batches = 50;
  plan.checkpoint_dir = storage.path.string();
  recording_reporter out;
  auto start = std::chrono::steady_clock::now();
  det::harness::run_trial(plan, out);
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();

  REQUIRE(out.validation.size() == 1);
  const double validation_loss = out.validation[0].second.at("validation_loss");
  MESSAGE("validation loss after 300 batches: " << validation_loss << " nats per byte, in " << seconds << " s; "
                                                << out.training.back().second.at("tokens_per_second") << " tokens/s");
  CHECK(validation_loss < unigram);
  CHECK(out.training.back().second.at("loss") < out.training.front().second.at("loss"));
  REQUIRE(out.checkpoints.size() == 1);
  CHECK(out.checkpoints[0].resources.count("model.pt") == 1);
}
