#include "messages/caf_types.hpp"

#include <chrono>

#include "caf/actor_system.hpp"
#include "caf/actor_system_config.hpp"
#include "caf/error.hpp"
#include "caf/message.hpp"
#include "caf/io/middleman.hpp"
#include "messages/decoding_guard.hpp"
#include "messages/errc.hpp"
#include "messages/interfaces.hpp"

namespace det {

std::string error_sentence(caf::actor_system& sys, const caf::error& e) {
  auto& ctx = e.context();
  if (ctx.match_elements<std::string>())
    return ctx.get_as<std::string>(0);
  return sys.render(e);
}

void configure_node(caf::actor_system_config& cfg) {
  cfg.load<caf::io::middleman>();
  register_message_types(cfg);
  guard_decoding(cfg);
  enable_heartbeats(cfg);
  enable_quiet_scheduling(cfg);
}

void register_message_types(caf::actor_system_config& cfg) {
  // CAF 0.17's add_error_category<T> does not compile: it passes the two-argument renderer of
  // older versions. Errors render as "det: <case>" followed by their sentence.
  cfg.add_error_category(errc_category, [](uint8_t code, caf::atom_value, const caf::message& context) {
    auto text = "det: " + to_string(static_cast<errc>(code));
    if (context.match_elements<std::string>())
      text += " (" + context.get_as<std::string>(0) + ")";
    return text;
  });
  cfg.add_message_type<pb::AgentHello>("det.pb.AgentHello")
      .add_message_type<pb::AgentWelcome>("det.pb.AgentWelcome")
      .add_message_type<pb::StartContainer>("det.pb.StartContainer")
      .add_message_type<pb::KillContainer>("det.pb.KillContainer")
      .add_message_type<pb::ContainerStarted>("det.pb.ContainerStarted")
      .add_message_type<pb::ContainerExited>("det.pb.ContainerExited")
      .add_message_type<pb::ContainerActivity>("det.pb.ContainerActivity")
      .add_message_type<pb::LogBatch>("det.pb.LogBatch")
      .add_message_type<pb::WorkerHello>("det.pb.WorkerHello")
      .add_message_type<pb::TrialSpec>("det.pb.TrialSpec")
      .add_message_type<pb::MetricBatch>("det.pb.MetricBatch")
      .add_message_type<pb::WorkerExit>("det.pb.WorkerExit")
      .add_message_type<pb::Checkpoint>("det.pb.Checkpoint")
      .add_message_type<pb::Rendezvous>("det.pb.Rendezvous")
      .add_message_type<agent_actor>("det.agent_actor")
      .add_message_type<agent_endpoint>("det.agent_endpoint")
      .add_message_type<trial_endpoint>("det.trial_endpoint")
      .add_message_type<master_actor>("det.master_actor");
}

void enable_heartbeats(caf::actor_system_config& cfg) {
  using namespace std::chrono_literals;
  cfg.set("middleman.heartbeat-interval", caf::timespan{500ms});
  cfg.set("middleman.connection-timeout", caf::timespan{5s});
}

void enable_quiet_scheduling(caf::actor_system_config& cfg) {
  // CAF 0.17 defaults to 100 spinning polls, then 500 polls 50 us apart; its
  // relaxed mode waits on a condition variable that enqueues wake at once.
  cfg.set("work-stealing.aggressive-poll-attempts", size_t{4});
  cfg.set("work-stealing.moderate-poll-attempts", size_t{4});
  // The relaxed wait only times out to try stealing from busy neighbours; at
  // CAF's 10 ms every idle scheduler thread of every det process woke 100
  // times a second, a CPU cost that grows with the number of workers.
  using namespace std::chrono_literals;
  cfg.set("work-stealing.relaxed-sleep-duration", caf::timespan{100ms});
}

void enable_prompt_scheduling(caf::actor_system_config& cfg) {
  // One process waking its idle threads 100 times a second: the master alone, not every worker.
  using namespace std::chrono_literals;
  cfg.set("work-stealing.relaxed-sleep-duration", caf::timespan{10ms});
}

} // namespace det
