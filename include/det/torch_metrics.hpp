#pragma once
// Training metrics kept on the device for det::trial::take_training_metrics: a LibTorch trial adds
// each batch's loss (a 0-dim tensor) without reading it, and the sums are read once per reporting
// period, in one copy, instead of making the host wait for the GPU at every batch.
//
//   det::metric_sums sums;                                          // a member of the trial
//   det::metrics train_batch(...) { ...; sums.add("loss", loss); sums.end_batch(); return {}; }
//   det::metrics take_training_metrics() override { return sums.take(); }
//
// The sums are updated in place, so a step captured as a CUDA graph (which replays its add()s
// without calling them) keeps adding to the same sums; end_batch(), on the host, counts batches.

#include "det/trial.hpp"

#include <torch/torch.h>

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace det {

class metric_sums {
 public:
  /// sum[name] += value, on value's device (no host synchronisation). `value` is a scalar tensor.
  void add(const std::string& name, const torch::Tensor& value) {
    torch::NoGradGuard no_grad;
    for (auto& [n, sum] : sums_)
      if (n == name) {
        sum.add_(value.detach().reshape({}));
        return;
      }
    // The first add allocates (before any capture: a captured step must not allocate its sums).
    sums_.emplace_back(name, value.detach().reshape({}).to(torch::kFloat64).clone());
  }
  /// One more batch in the period (the mean's denominator).
  void end_batch() { ++batches_; }
  /// Each metric's mean over the batches since the last take, read in one device-to-host copy;
  /// the sums restart from zero (in place). Empty when no batch was counted.
  metrics take() {
    metrics means;
    if (batches_ == 0 || sums_.empty()) return means;
    torch::NoGradGuard no_grad;
    std::vector<torch::Tensor> values;
    values.reserve(sums_.size());
    for (auto& [name, sum] : sums_) values.push_back(sum.to(torch::kFloat64));
    auto host = torch::stack(values).to(torch::kCPU);
    ++reads_;
    const double* read = host.data_ptr<double>();
    for (std::size_t i = 0; i < sums_.size(); ++i) {
      means[sums_[i].first] = read[i] / static_cast<double>(batches_);
      sums_[i].second.zero_();
    }
    batches_ = 0;
    return means;
  }
  /// How many times take() has read the device: once per reporting period.
  int64_t reads() const { return reads_; }

 private:
  std::vector<std::pair<std::string, torch::Tensor>> sums_;
  int64_t batches_ = 0;
  int64_t reads_ = 0;
};

}  // namespace det
