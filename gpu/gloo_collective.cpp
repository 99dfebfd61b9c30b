#include "gpu/collective.hpp"

#include <gloo/allreduce.h>
#include <gloo/broadcast.h>
#include <gloo/math.h>
#include <gloo/rendezvous/context.h>
#include <gloo/rendezvous/store.h>
#include <gloo/transport/tcp/device.h>

#include <stdexcept>
#include <thread>

namespace det::harness {

namespace {

// Gloo's view of det's store: its get and wait block until the key is there, so they poll.
class gloo_store final : public gloo::rendezvous::Store {
 public:
  gloo_store(rendezvous_store& store, std::chrono::milliseconds timeout) : store_(store), timeout_(timeout) {}

  void set(const std::string& key, const std::vector<char>& data) override {
    store_.set(key, std::string(data.begin(), data.end()));
  }
  std::vector<char> get(const std::string& key) override {
    auto value = store_.await(key, timeout_);
    return {value.begin(), value.end()};
  }
  void wait(const std::vector<std::string>& keys) override { wait(keys, timeout_); }
  void wait(const std::vector<std::string>& keys, const std::chrono::milliseconds& timeout) override {
    for (const auto& key : keys) store_.await(key, timeout);
  }

 private:
  rendezvous_store& store_;
  std::chrono::milliseconds timeout_;
};

class gloo_collective final : public collective {
 public:
  explicit gloo_collective(std::shared_ptr<gloo::Context> context) : context_(std::move(context)) {}
  int rank() const override { return context_->rank; }
  int size() const override { return context_->size; }
  std::uint64_t exchanges() const override { return exchanges_; }
  void sum(float* values, std::size_t count) override { reduce(values, count); }
  void sum(double* values, std::size_t count) override { reduce(values, count); }
  // The division is vectorized (gpu/CMakeLists.txt): a gradient bucket has up to millions of values,
  // and a division at a time cost 3 % of a data-parallel worker's CPU.
  void average(float* values, std::size_t count) override {
    reduce(values, count);
    const float processes = static_cast<float>(size());
    for (std::size_t i = 0; i < count; ++i) values[i] /= processes;
  }
  void broadcast(float* values, std::size_t count) override {
    if (count == 0) return;
    gloo::BroadcastOptions options(context_);
    options.setOutput(values, count);
    options.setRoot(0);
    options.setTag(++tag_);
    ++exchanges_;
    run([&] { gloo::broadcast(options); });
  }

 private:
  template <class T>
  void reduce(T* values, std::size_t count) {
    if (count == 0) return;
    gloo::AllreduceOptions options(context_);
    options.setOutput(values, count);
    options.setReduceFunction(static_cast<void (*)(void*, const void*, const void*, size_t)>(&gloo::sum<T>));
    options.setTag(++tag_);
    ++exchanges_;
    run([&] { gloo::allreduce(options); });
  }

  template <class Operation>
  static void run(Operation operation) {
    try {
      operation();
    } catch (const std::exception& e) {
      throw std::runtime_error(std::string("an exchange with the trial's other processes failed: ") + e.what());
    }
  }

  std::shared_ptr<gloo::Context> context_;
  uint32_t tag_ = 0;
  std::uint64_t exchanges_ = 0;
};

}  // namespace

std::unique_ptr<collective> connect_gloo(int rank, int size, rendezvous_store& store, const std::string& hostname,
                                         std::chrono::milliseconds connect_timeout,
                                         std::chrono::milliseconds exchange_timeout) {
  gloo::transport::tcp::attr attr;
  attr.hostname = hostname;
  try {
    auto device = gloo::transport::tcp::CreateDevice(attr);
    auto context = std::make_shared<gloo::rendezvous::Context>(rank, size);
    context->setTimeout(connect_timeout);
    gloo_store gloo_view(store, connect_timeout);
    context->connectFullMesh(gloo_view, device);
    context->setTimeout(exchange_timeout);
    return std::make_unique<gloo_collective>(std::move(context));
  } catch (const std::exception& e) {  // Gloo's enforcement errors are not runtime_errors
    throw std::runtime_error("process " + std::to_string(rank) + " of " + std::to_string(size) +
                             " could not connect to the others over " + hostname + ": " + e.what());
  }
}

}  // namespace det::harness
