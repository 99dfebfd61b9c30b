#include <doctest/doctest.h>

#include <vector>

#include "caf/all.hpp"
#include "caf/binary_deserializer.hpp"
#include "caf/binary_serializer.hpp"
#include "messages/caf_types.hpp"
#include "messages/decoding_guard.hpp"
#include "messages/interfaces.hpp"
#include "messages/json.hpp"

namespace {

struct registered_system {
  caf::actor_system_config cfg;
  std::unique_ptr<caf::actor_system> sys;
  registered_system() {
    det::register_message_types(cfg);
    sys = std::make_unique<caf::actor_system>(cfg);
  }
};

// What the middleman does to a message on its way to another node.
caf::message round_trip(caf::actor_system& sys, const caf::message& in) {
  std::vector<char> buf;
  caf::binary_serializer sink{sys, buf};
  auto err = sink(const_cast<caf::message&>(in));
  REQUIRE(!err);
  caf::message out;
  caf::binary_deserializer source{sys, buf};
  err = source(out);
  REQUIRE(!err);
  return out;
}

// The bytes of a message with one config_value whose variant tag names no alternative, as a peer
// could send them: no det node ever sends a config_value.
std::vector<char> config_value_with_a_tag_out_of_range(caf::actor_system& sys) {
  std::vector<char> buf;
  caf::binary_serializer sink{sys, buf};
  REQUIRE(!sink(uint16_t{0}, std::string{"@<>+@config_value"}, uint8_t{200}));
  return buf;
}

} // namespace

TEST_CASE("a built-in CAF type that fails to decode makes an error, not an exception, on a guarded system") {
  // message::load, which BASP reaches through source(stages, msg); CAF 0.17's operator() drops
  // the error load returns and leaves the message empty, which a det actor ignores.
  registered_system bare;
  {
    caf::message msg;
    const auto bytes = config_value_with_a_tag_out_of_range(*bare.sys);
    caf::binary_deserializer source{*bare.sys, bytes};
    CHECK_THROWS_AS((void)msg.load(source), std::runtime_error);  // what CAF 0.17 alone does
  }
  caf::actor_system_config cfg;
  det::register_message_types(cfg);
  det::guard_decoding(cfg);
  caf::actor_system guarded{cfg};
  caf::message msg;
  const auto bytes = config_value_with_a_tag_out_of_range(guarded);
  caf::binary_deserializer source{guarded, bytes};
  caf::error err;
  CHECK_NOTHROW(err = msg.load(source));
  CHECK(err == caf::sec::invalid_argument);
  CHECK(msg.empty());
  // Well-formed built-in values still decode as their own types.
  auto out = round_trip(guarded, caf::make_message(caf::config_value{int64_t{42}}, std::string{"x"}, int32_t{7}));
  REQUIRE((out.match_elements<caf::config_value, std::string, int32_t>()));
  CHECK(caf::get<int64_t>(out.get_as<caf::config_value>(0)) == 42);
  CHECK(out.get_as<int32_t>(2) == 7);
}

TEST_CASE("a node id with a malformed URI makes an error, not an exception") {
  // BASP decodes node ids outside any type table: in its handshake, a routed message's header and
  // the forwarding stack. Every byte of one is spoiled in turn; CAF 0.17 alone threw at the URI
  // host's variant tag.
  registered_system rs;
  std::vector<char> bytes;
  caf::binary_serializer sink{*rs.sys, bytes};
  REQUIRE(!sink(caf::make_node_id(*caf::make_uri("ip://agent-1:8090"))));
  int refused = 0;
  for (std::size_t i = 0; i < bytes.size(); ++i) {
    auto spoiled = bytes;
    spoiled[i] = static_cast<char>(0xC8);
    caf::node_id out;
    caf::binary_deserializer source{*rs.sys, spoiled};
    caf::error err;
    CHECK_NOTHROW(err = source(out));
    if (err) ++refused;
  }
  CHECK(refused > 0);
}

TEST_CASE("a MetricBatch crosses CAF serialization intact") {
  registered_system rs;
  det::pb::MetricBatch batch;
  auto* r = batch.add_reports();
  r->set_trial_id(123456789012345);
  r->set_group("validation");
  r->set_total_batches(1500);
  (*r->mutable_metrics())["validation_accuracy"] = 0.875;
  (*r->mutable_metrics())["validation_loss"] = 0.25;
  auto out = round_trip(*rs.sys, caf::make_message(batch));
  REQUIRE(out.match_elements<det::pb::MetricBatch>());
  auto& got = out.get_as<det::pb::MetricBatch>(0);
  REQUIRE(got.reports_size() == 1);
  CHECK(got.reports(0).trial_id() == 123456789012345);
  CHECK(got.reports(0).metrics().at("validation_accuracy") == doctest::Approx(0.875));
  CHECK(got.reports(0).group() == "validation");
}

TEST_CASE("an AgentHello with slots crosses CAF serialization next to an atom") {
  registered_system rs;
  det::pb::AgentHello hello;
  hello.mutable_agent()->set_id("gpu-node-1");
  auto* slot = hello.mutable_agent()->add_slots();
  slot->set_id(3);
  slot->set_type(det::pb::SLOT_TYPE_CUDA);
  slot->set_device("NVIDIA H100");
  hello.add_running()->set_allocation_id("7.1");
  auto out = round_trip(*rs.sys, caf::make_message(det::inspect_atom::value, hello));
  REQUIRE(out.match_elements<det::inspect_atom, det::pb::AgentHello>());
  auto& got = out.get_as<det::pb::AgentHello>(1);
  CHECK(got.agent().id() == "gpu-node-1");
  CHECK(got.agent().slots(0).type() == det::pb::SLOT_TYPE_CUDA);
  CHECK(got.running(0).allocation_id() == "7.1");
}

TEST_CASE("protobuf messages print as text in CAF's logs") {
  det::pb::KillContainer kill;
  kill.set_allocation_id("4.2");
  kill.set_signal(15);
  auto text = caf::deep_to_string(kill);
  CHECK(text.rfind("det.pb.KillContainer(", 0) == 0);
  CHECK(text.find("allocation_id: \\\"4.2\\\"") != std::string::npos);
  CHECK(text.find("signal: 15") != std::string::npos);
}

TEST_CASE("the REST JSON uses proto field names, prints zero values and int64 as strings") {
  det::pb::Trial t;
  t.set_id(42);
  t.set_state(det::pb::STATE_RUNNING);
  auto json = det::to_json(t);
  CHECK(json.find("\"id\":\"42\"") != std::string::npos);
  CHECK(json.find("\"state\":\"STATE_RUNNING\"") != std::string::npos);
  CHECK(json.find("\"total_batches\":\"0\"") != std::string::npos);
  det::pb::Trial back;
  std::string error;
  REQUIRE(det::from_json(json, back, error));
  CHECK(back.id() == 42);
  CHECK_FALSE(det::from_json("{\"id\": \"x\"}", back, error));
  CHECK(error.find("Trial") != std::string::npos);
}
