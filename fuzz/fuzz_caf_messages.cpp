// What arrives over the network: CAF messages as the master, agents and workers decode them
// (caf::binary_deserializer in an actor system configured as det's nodes are, every det type
// registered). The first byte picks how the rest is read: as a whole message (CAF's type names
// and det's protobuf payloads within); as what BASP reads of a routed message outside its content
// (source and destination node ids, then the forwarding stack and the message); or as the payload
// of one registered protobuf type, to reach the protobuf decoding quickly.
#include "messages/caf_types.hpp"
#include "messages/interfaces.hpp"

#include "caf/actor_system.hpp"
#include "caf/actor_system_config.hpp"
#include "caf/binary_deserializer.hpp"
#include "caf/message.hpp"
#include "caf/node_id.hpp"

#include <google/protobuf/stubs/logging.h>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace {

caf::actor_system& system_of_a_node() {
  // Never destroyed: the process ends with it, and CAF's own statics may be gone by the time a
  // static actor system would be torn down.
  static caf::actor_system* sys = [] {
    // Decoding refuses malformed strings; protobuf's log line for each would drown the report.
    google::protobuf::SetLogHandler(nullptr);
    auto* cfg = new caf::actor_system_config;
    det::configure_node(*cfg);
    cfg->set("scheduler.max-threads", size_t{1});
    return new caf::actor_system{*cfg};
  }();
  return *sys;
}

template <class T>
void decode(caf::actor_system& sys, const char* bytes, size_t size) {
  T value;
  caf::binary_deserializer source{sys, bytes, size};
  (void)source(value);
}

using decoder = void (*)(caf::actor_system&, const char*, size_t);

const std::vector<decoder>& decoders() {
  namespace pb = det::pb;
  static const std::vector<decoder> all{
      decode<pb::AgentHello>,       decode<pb::AgentWelcome>,  decode<pb::StartContainer>,
      decode<pb::KillContainer>,    decode<pb::ContainerStarted>, decode<pb::ContainerExited>,
      decode<pb::ContainerActivity>, decode<pb::LogBatch>,     decode<pb::WorkerHello>,
      decode<pb::TrialSpec>,        decode<pb::MetricBatch>,   decode<pb::WorkerExit>,
      decode<pb::Checkpoint>,       decode<pb::Rendezvous>};
  return all;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  auto& sys = system_of_a_node();
  const auto* rest = reinterpret_cast<const char*>(data + 1);
  const auto selector = static_cast<size_t>(data[0]);
  caf::binary_deserializer source{sys, rest, size - 1};
  if (selector % 4 == 0) {
    caf::message msg;
    (void)source(msg);
  } else if (selector % 4 == 1) {
    caf::node_id source_node;
    caf::node_id destination_node;
    std::vector<caf::strong_actor_ptr> stages;
    caf::message msg;
    (void)source(source_node, destination_node, stages, msg);
  } else {
    const auto& all = decoders();
    all[(selector / 4) % all.size()](sys, rest, size - 1);
  }
  return 0;
}
