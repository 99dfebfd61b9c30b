// Writes the seed corpus of fuzz_caf_messages into DIR: messages as det's nodes send them (a
// worker's metrics, an agent's hello, a checkpoint, a trial's spec...), each whole (selector 0),
// after a routed message's node ids and forwarding stack (selector 1), and as the payload of its
// type alone (selector 4 × its place in fuzz_caf_messages's list + 2).
//   caf_message_seeds DIR
#include "messages/caf_types.hpp"
#include "messages/interfaces.hpp"

#include "caf/actor_system.hpp"
#include "caf/actor_system_config.hpp"
#include "caf/binary_serializer.hpp"
#include "caf/message.hpp"
#include "caf/node_id.hpp"
#include "caf/uri.hpp"

#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

namespace {

void write(const std::string& path, char selector, const std::vector<char>& bytes) {
  std::ofstream out(path, std::ios::binary);
  out.put(selector);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

template <class T>
void seed(caf::actor_system& sys, const std::string& dir, const std::string& name, int place, const T& value) {
  std::vector<char> whole, routed, alone;
  {
    caf::binary_serializer sink{sys, whole};
    auto msg = caf::make_message(value);
    (void)sink(msg);
  }
  {
    caf::binary_serializer sink{sys, routed};
    auto source_node = caf::make_node_id(*caf::make_uri("ip://agent-1:8090"));
    auto destination_node = sys.node();
    std::vector<caf::strong_actor_ptr> stages;
    auto msg = caf::make_message(value);
    (void)sink(source_node, destination_node, stages, msg);
  }
  {
    caf::binary_serializer sink{sys, alone};
    auto copy = value;
    (void)sink(copy);
  }
  write(dir + "/seed-message-" + name, 0, whole);
  write(dir + "/seed-routed-" + name, 1, routed);
  write(dir + "/seed-payload-" + name, static_cast<char>(4 * place + 2), alone);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: caf_message_seeds DIR\n");
    return 2;
  }
  const std::string dir = argv[1];
  caf::actor_system_config cfg;
  det::configure_node(cfg);
  caf::actor_system sys{cfg};
  namespace pb = det::pb;

  pb::AgentHello hello;
  hello.mutable_agent()->set_id("agent-1");
  hello.set_agent_token("token");
  seed(sys, dir, "agent-hello", 0, hello);

  pb::LogBatch logs;
  auto* line = logs.add_entries();
  line->set_trial_id(3);
  line->set_stream("stdout");
  line->set_text("training builtin:mlp");
  seed(sys, dir, "log-batch", 7, logs);

  pb::TrialSpec spec;
  spec.set_trial_id(3);
  spec.set_experiment_id(1);
  spec.set_config("name = \"x\"\nentrypoint = \"builtin:simulate\"\n");
  spec.set_hparams("{\"x\": 0.5}");
  seed(sys, dir, "trial-spec", 9, spec);

  pb::MetricBatch batch;
  batch.set_allocation_id("1.3.1");
  auto* report = batch.add_reports();
  report->set_trial_id(3);
  report->set_group("training");
  report->set_total_batches(10);
  (*report->mutable_metrics())["loss"] = 0.5;
  seed(sys, dir, "metric-batch", 10, batch);

  pb::Checkpoint checkpoint;
  checkpoint.set_uuid("0b7c2a34-8d0e-4f4e-9a0b-6c1d2e3f4a5b");
  checkpoint.set_trial_id(3);
  (*checkpoint.mutable_resources())["model.pt"] = 1024;
  seed(sys, dir, "checkpoint", 12, checkpoint);
  return 0;
}
