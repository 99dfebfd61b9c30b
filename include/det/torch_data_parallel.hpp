#pragma once
// Data parallelism for a LibTorch trial (see det::trial_context::rank): the same initial weights
// in every process, each process's share of a batch, and the gradients of every process averaged
// between the backward pass and the optimizer step: while the backward pass runs, in buckets, by
// a gradient_averager (as PyTorch's DistributedDataParallel does),
//   det::broadcast_parameters(context, model->parameters());   // once the model is built
//   det::gradient_averager averager(context, model->parameters());
//   auto inputs = det::share_of_batch(context, batch_inputs);  // in train_batch
//   averager.prepare();  loss.backward();  averager.synchronize();
//   optimizer.step();
// or after it, in one collective call: loss.backward(); det::average_gradients(context, ...).

#include "det/trial.hpp"

#include <torch/torch.h>
#include <torch/csrc/autograd/function.h>
#include <torch/csrc/autograd/function_hook.h>

#include <condition_variable>
#include <cstdint>
#include <exception>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

namespace det {

namespace detail {
// The tensors as one contiguous float32 buffer on the first one's device (host memory, or the
// process's GPU, where NCCL averages it in place): one collective call for a model.
inline torch::Tensor flat_copy(const std::vector<torch::Tensor>& tensors) {
  std::vector<torch::Tensor> flat;
  for (const auto& t : tensors) flat.push_back(t.detach().reshape({-1}).to(tensors.front().device(), torch::kFloat));
  return torch::cat(flat).contiguous();
}
inline void copy_back(const torch::Tensor& buffer, std::vector<torch::Tensor>& tensors) {
  torch::NoGradGuard no_grad;
  int64_t offset = 0;
  for (auto& t : tensors) {
    const int64_t n = t.numel();
    t.copy_(buffer.narrow(0, offset, n).view_as(t));
    offset += n;
  }
}
}  // namespace detail

/// Gives every process the chief's values of `parameters` (its initial weights), as PyTorch's
/// DistributedDataParallel does when it is built; nothing to do alone.
inline void broadcast_parameters(trial_context& context, std::vector<torch::Tensor> parameters) {
  if (context.world_size() < 2 || parameters.empty()) return;
  auto buffer = detail::flat_copy(parameters);
  context.broadcast(buffer.data_ptr<float>(), static_cast<std::size_t>(buffer.numel()));
  detail::copy_back(buffer, parameters);
}

/// Averages the gradients of `parameters` over the trial's processes; nothing to do alone.
/// Parameters without a gradient are left out (every process must have the same ones).
inline void average_gradients(trial_context& context, const std::vector<torch::Tensor>& parameters) {
  if (context.world_size() < 2) return;
  std::vector<torch::Tensor> grads;
  for (const auto& p : parameters)
    if (p.grad().defined()) grads.push_back(p.grad());
  if (grads.empty()) return;
  auto buffer = detail::flat_copy(grads);
  context.average(buffer.data_ptr<float>(), static_cast<std::size_t>(buffer.numel()));
  detail::copy_back(buffer, grads);
}

/// Averages a model's gradients over the trial's processes while its backward pass still runs.
/// The parameters are grouped in buckets in reverse order (the order their gradients are ready
/// in): the first about 1 MB so that averaging starts early, the others about 25 MB, PyTorch
/// DDP's sizes. A hook on each parameter's gradient accumulator copies its gradient into its
/// bucket once it is accumulated. A full bucket is averaged while autograd goes on, by a thread
/// of the averager's own, in bucket order (the same order in every process). synchronize(),
/// before the optimizer step, averages the last bucket itself (backward is over: nothing is
/// left to overlap it with), waits for the others and writes the averages into the gradients.
/// Buckets live on the parameters' device: on a GPU, NCCL averages them there, and gradients
/// never travel through host memory. Alone (world_size() 1) it does nothing.
///
/// Gradient accumulation over k batches: prepare(false) before the first k - 1 backward passes
/// and prepare() before the k-th, whose synchronize() averages the accumulated gradients.
class gradient_averager {
 public:
  gradient_averager(trial_context& context, const std::vector<torch::Tensor>& parameters,
                    std::size_t first_bucket_bytes = std::size_t{1} << 20,
                    std::size_t bucket_bytes = std::size_t{25} << 20)
      : state_(std::make_shared<state>(context)) {
    if (context.world_size() < 2) return;
    auto& st = *state_;
    // Reverse order: the last layers' gradients are ready first.
    std::size_t limit = first_bucket_bytes;
    for (auto p = parameters.rbegin(); p != parameters.rend(); ++p) {
      if (!p->requires_grad()) continue;
      if (st.buckets.empty() || st.buckets.back().bytes >= limit) {
        if (!st.buckets.empty()) limit = bucket_bytes;
        st.buckets.emplace_back();
      }
      auto& bucket = st.buckets.back();
      if (bucket.parameters == 0) bucket.device = p->device();
      if (p->device() != bucket.device)
        throw std::invalid_argument("det::gradient_averager: the parameters are on " + bucket.device.str() + " and " +
                                    p->device().str() + "; average a model spread over devices with "
                                    "det::average_gradients");
      st.slots.push_back({*p, st.buckets.size() - 1, bucket.numel});
      bucket.numel += p->numel();
      bucket.bytes += static_cast<std::size_t>(p->numel()) * sizeof(float);
      ++bucket.parameters;
    }
    for (auto& bucket : st.buckets)
      bucket.buffer = torch::zeros({bucket.numel}, torch::TensorOptions().dtype(torch::kFloat).device(bucket.device));
    for (std::size_t i = 0; i < st.slots.size(); ++i) {
      auto accumulator = torch::autograd::impl::grad_accumulator(st.slots[i].parameter);
      auto key = accumulator->add_post_hook(std::make_unique<ready_hook>(state_, i));
      hooks_.push_back({accumulator, key});
    }
    st.worker = std::thread([s = state_] { s->average_buckets(); });
  }

  gradient_averager(const gradient_averager&) = delete;
  gradient_averager& operator=(const gradient_averager&) = delete;

  ~gradient_averager() {
    for (auto& [accumulator, key] : hooks_) accumulator->del_post_hook(key);
    if (state_->worker.joinable()) {
      {
        std::lock_guard<std::mutex> lock(state_->mutex);
        state_->closing = true;
      }
      state_->bucket_full.notify_all();
      state_->worker.join();
    }
  }

  /// Before a backward pass: whether its gradients are to be averaged (false while accumulating).
  void prepare(bool averaging = true) {
    std::lock_guard<std::mutex> lock(state_->mutex);
    state_->averaging = averaging && !state_->buckets.empty();
  }

  /// After the backward pass: waits for every bucket and writes the averages into the gradients.
  /// A parameter whose gradient this pass did not reach is averaged with what its gradient holds
  /// (zeros if it has none), so that every process makes the same calls.
  void synchronize() {
    auto& st = *state_;
    std::unique_lock<std::mutex> lock(st.mutex);
    if (!st.averaging) return;
    for (std::size_t i = 0; i < st.slots.size(); ++i)
      if (!st.slots[i].copied) st.copy_in(i);
    // This thread averages what is ready itself rather than wake the averager's thread and sleep
    // until it is done: two thread wake-ups per batch, each up to a few hundred microseconds on a
    // virtual machine. The averager's thread keeps the buckets that fill while backward runs.
    while (st.averaged < st.buckets.size() && !st.failure) {
      if (st.next_ready())
        st.average_next(lock);
      else
        st.bucket_done.wait(lock);
    }
    if (st.failure) {
      auto failure = std::exchange(st.failure, nullptr);
      st.reset();
      std::rethrow_exception(failure);
    }
    torch::NoGradGuard no_grad;
    for (auto& slot : st.slots) {
      auto grad = slot.parameter.grad();
      if (!grad.defined()) continue;
      grad.copy_(st.buckets[slot.bucket].buffer.narrow(0, slot.offset, grad.numel()).view_as(grad));
    }
    st.reset();
  }

 private:
  struct bucket_state {
    torch::Device device = torch::kCPU;  // its parameters'
    torch::Tensor buffer;  // float32, on `device`: what the collective averages
    int64_t numel = 0;
    std::size_t bytes = 0;
    std::size_t parameters = 0;
    std::size_t copied = 0;  // this pass
  };
  struct slot_state {
    torch::Tensor parameter;
    std::size_t bucket = 0;
    int64_t offset = 0;
    bool copied = false;
  };
  struct state {
    explicit state(trial_context& c) : context(c) {}
    trial_context& context;
    std::vector<bucket_state> buckets;
    std::vector<slot_state> slots;
    std::mutex mutex;
    std::condition_variable bucket_full;  // what the averager's thread waits for
    std::condition_variable bucket_done;  // what synchronize() waits for
    bool averaging = true;
    bool closing = false;
    std::size_t averaged = 0;  // buckets done this pass, in order
    bool busy = false;         // a thread is averaging bucket `averaged`
    std::exception_ptr failure;
    std::thread worker;

    // With `mutex` held.
    void copy_in(std::size_t index) {
      auto& slot = slots[index];
      auto& bucket = buckets[slot.bucket];
      auto region = bucket.buffer.narrow(0, slot.offset, slot.parameter.numel());
      auto grad = slot.parameter.grad();
      if (grad.defined())
        region.copy_(grad.detach().reshape({-1}));
      else
        region.zero_();
      slot.copied = true;
      ++bucket.copied;
    }
    // Whether bucket `averaged` is full and nobody averages it. With `mutex` held.
    bool next_ready() const {
      return !failure && !busy && averaged < buckets.size() &&
             buckets[averaged].copied == buckets[averaged].parameters;
    }
    // Averages bucket `averaged`, `lock` released meanwhile: one bucket at a time, in order, whichever
    // thread does it, so that every process makes the same calls in the same order.
    void average_next(std::unique_lock<std::mutex>& lock) {
      auto& bucket = buckets[averaged];
      busy = true;
      lock.unlock();
      std::exception_ptr failed;
      try {
        context.average(bucket.buffer.data_ptr<float>(), static_cast<std::size_t>(bucket.numel));
      } catch (...) {
        failed = std::current_exception();
      }
      lock.lock();
      busy = false;
      if (failed)
        failure = failed;
      else
        ++averaged;
      // synchronize() may wait for it; the averager's thread never waits for synchronize(), which
      // goes on to the next bucket itself.
      bucket_done.notify_all();
    }
    void reset() {
      for (auto& b : buckets) b.copied = 0;
      for (auto& s : slots) s.copied = false;
      averaged = 0;
    }
    // The averager's thread: each bucket, in order, once all its gradients are in.
    void average_buckets() {
      std::unique_lock<std::mutex> lock(mutex);
      for (;;) {
        bucket_full.wait(lock, [&] { return closing || next_ready(); });
        if (closing) return;
        average_next(lock);
      }
    }
  };

  // Runs when autograd has accumulated a parameter's gradient.
  struct ready_hook final : torch::autograd::FunctionPostHook {
    ready_hook(std::shared_ptr<state> s, std::size_t i) : st(std::move(s)), index(i) {}
    torch::autograd::variable_list operator()(const torch::autograd::variable_list& outputs,
                                              const torch::autograd::variable_list&) override {
      std::lock_guard<std::mutex> lock(st->mutex);
      if (st->averaging && !st->slots[index].copied) {
        st->copy_in(index);
        // The averager's thread is woken for a full bucket that backward may still overlap, not for
        // the last one: synchronize() averages that.
        const auto filled = st->slots[index].bucket;
        if (filled + 1 < st->buckets.size() && st->buckets[filled].copied == st->buckets[filled].parameters)
          st->bucket_full.notify_all();
      }
      return outputs;
    }
    std::shared_ptr<state> st;
    std::size_t index;
  };

  std::shared_ptr<state> state_;
  std::vector<std::pair<std::shared_ptr<torch::autograd::Node>, std::uintptr_t>> hooks_;
};

/// Process rank()'s share of a batch's first dimension: one of world_size() nearly equal parts.
inline torch::Tensor share_of_batch(const trial_context& context, const torch::Tensor& batch) {
  if (context.world_size() < 2) return batch;
  return batch.tensor_split(context.world_size())[context.rank()];
}

}  // namespace det
