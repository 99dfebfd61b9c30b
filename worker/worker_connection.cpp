// The worker's line to its trial on the master (worker_connection.hpp): the one worker file that
// speaks CAF, so that the rest of the worker compiles without its headers.

#include "worker/worker_connection.hpp"

#include <cassert>
#include <chrono>
#include <cstddef>
#include <iostream>
#include <optional>
#include <stdexcept>
#include <thread>
#include <utility>

#include "caf/all.hpp"
#include "caf/io/all.hpp"
#include "messages/actor_links.hpp"
#include "messages/caf_types.hpp"
#include "messages/interfaces.hpp"

namespace det::runtime {
namespace {

constexpr auto hello_timeout = std::chrono::seconds(30);
constexpr auto report_timeout = std::chrono::seconds(30);
// A metric report is acknowledged within milliseconds (one group commit). CAF 0.17 does not fail a
// request whose remote receiver vanished with its node, so a lost master shows as this timeout;
// the report is then sent again after reconnecting (a stored step is not stored twice).
constexpr auto metrics_ack_timeout = std::chrono::seconds(5);

/// Whether `e` means the master (or the way to it) is gone, rather than that it said no.
bool lost_master(const caf::error& e) {
  return e == caf::sec::request_receiver_down || e == caf::sec::request_timeout ||
         e == caf::sec::no_route_to_receiving_node || e == caf::sec::remote_linking_failed ||
         e == caf::sec::cannot_connect_to_node;
}

/// A det node's configuration with a single scheduler thread: training runs on the worker's own
/// thread; the actors here only carry messages.
struct worker_system_config : caf::actor_system_config {
  worker_system_config() {
    configure_node(*this);
    // The agent's TLS settings, which it hands its workers in the environment.
    if (auto tls = tls_files_from_environment())
      use_tls_links(*this, *tls);
    set("scheduler.max-threads", size_t{1});
  }
};

using pending_metrics = decltype(std::declval<caf::scoped_actor&>()->request(
    std::declval<const trial_endpoint&>(), metrics_ack_timeout, std::declval<pb::MetricBatch>(), std::declval<std::string>()));

} // namespace

struct worker_connection::state {
  state(std::string host, uint16_t port) : host(std::move(host)), port(port) {}

  worker_system_config cfg;
  caf::actor_system sys{cfg};
  caf::scoped_actor self{sys};
  std::string host;
  uint16_t port;
  pb::WorkerHello hello;
  std::optional<master_actor> reached;  // by reach_master(), monitored until the hello
  trial_endpoint trial;
  int64_t reconnect_wait_s = 25;
  std::optional<pending_metrics> pending;
  pb::MetricBatch pending_batch;  // kept until acknowledged, to send again after a reconnection
  std::string pending_group;

  /// The master reach_master() connected to, unless that connection was lost meanwhile.
  std::optional<master_actor> take_reached() {
    if (!reached) return std::nullopt;
    auto master = std::move(*reached);
    reached.reset();
    self->demonitor(master.address());
    // Nothing but its down message can have come meanwhile: no request was made yet.
    bool lost = false;
    for (bool more = true; more;)
      self->receive([&](caf::down_msg& dm) { lost = lost || dm.source == master.address(); },
                    caf::after(std::chrono::seconds(0)) >> [&] { more = false; });
    if (lost) return std::nullopt;
    return master;
  }
};

worker_connection::worker_connection(std::string host, uint16_t port)
    : state_(std::make_unique<state>(std::move(host), port)) {}

worker_connection::~worker_connection() = default;

void worker_connection::reach_master() {
  auto& s = *state_;
  if (auto master = connect_to_master(s.self->system(), s.host, s.port)) {
    s.self->monitor(*master);  // a connection lost while waiting shows as its down message
    s.reached = std::move(*master);
  }
}

bool worker_connection::connect(const pb::WorkerHello& hello, pb::TrialSpec& spec, std::string& failure,
                                bool& refused) {
  auto& s = *state_;
  refused = false;
  s.hello = hello;
  auto reached = s.take_reached();
  auto master = reached ? caf::expected<master_actor>{std::move(*reached)}
                        : connect_to_master(s.self->system(), s.host, s.port);
  if (!master) {
    failure = error_sentence(s.self->system(), master.error());
    return false;
  }
  bool ok = false;
  s.self->request(*master, hello_timeout, s.hello)
      .receive(
          [&](pb::TrialSpec& answer, trial_endpoint t) {
            spec = std::move(answer);
            s.trial = std::move(t);
            s.self->monitor(s.trial);  // a lost connection shows as its down message
            ok = true;
          },
          [&](caf::error& e) {
            failure = error_sentence(s.self->system(), e);
            refused = !lost_master(e);
          });
  return ok;
}

void worker_connection::set_reconnect_wait(int64_t seconds) {
  state_->reconnect_wait_s = seconds;
}

void worker_connection::reconnect(const std::string& while_doing) {
  auto wait_s = state_->reconnect_wait_s;
  std::cerr << "worker: lost the master while " << while_doing << "; reconnecting for up to " << wait_s << " s"
            << std::endl;
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(wait_s);
  std::string failure;
  pb::TrialSpec ignored;
  bool refused = false;
  while (std::chrono::steady_clock::now() < deadline) {
    // A restarted master may not have restored the trial yet: a refusal is worth a retry too.
    if (connect(pb::WorkerHello{state_->hello}, ignored, failure, refused)) {
      connection_lost();  // takes the old connection's down message, which would read as news below
      std::cerr << "worker: reconnected to the master" << std::endl;
      return;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
  }
  throw std::runtime_error("the master did not come back within " + std::to_string(wait_s) + " s (" + failure + ")");
}

bool worker_connection::connection_lost() {
  auto& s = *state_;
  bool lost = false;
  s.self->receive([&](caf::down_msg& dm) { lost = lost || dm.source == s.trial.address(); },
                  caf::after(std::chrono::seconds(0)) >> [] {});
  return lost;
}

template <class Msg, class OnReply>
void worker_connection::ask(const Msg& msg, const std::string& what, OnReply on_reply) {
  auto& s = *state_;
  if (connection_lost())
    reconnect(what);
  for (;;) {
    std::optional<caf::error> error;
    s.self->request(s.trial, report_timeout, msg, s.hello.allocation_token())
        .receive(on_reply, [&](caf::error& e) { error = std::move(e); });
    if (!error) return;
    if (!lost_master(*error))
      throw std::runtime_error("the master refused " + what + ": " + error_sentence(s.self->system(), *error));
    reconnect(what);
  }
}

bool worker_connection::call(const pb::Checkpoint& checkpoint, const std::string& what) {
  bool recorded = false;
  ask(checkpoint, what, [&](bool r) { recorded = r; });
  return recorded;
}

bool worker_connection::call(const pb::WorkerExit& exit, const std::string& what) {
  bool arrived = false;
  ask(exit, what, [&](bool a) { arrived = a; });
  return arrived;
}

pb::Rendezvous worker_connection::call(const pb::Rendezvous& request, const std::string& what) {
  pb::Rendezvous answer;
  ask(request, what, [&](pb::Rendezvous& a) { answer = std::move(a); });
  return answer;
}

void worker_connection::send_metrics(pb::MetricBatch batch, std::string group) {
  auto& s = *state_;
  assert(!s.pending && "await_metrics() first: at most one metric batch is in flight");
  s.pending_group = std::move(group);
  s.pending_batch = batch;
  s.pending.emplace(s.self->request(s.trial, metrics_ack_timeout, std::move(batch), s.hello.allocation_token()));
}

bool worker_connection::metrics_answered() {
  auto& s = *state_;
  // This thread's actor expects no other message than the answer and the trial's down message
  // (reconnect() takes an old connection's).
  return !s.pending || !s.self->mailbox().empty();
}

void worker_connection::await_metrics() {
  auto& s = *state_;
  if (!s.pending)
    return;
  std::optional<caf::error> error;
  s.pending->receive([](int64_t) {}, [&](caf::error& e) { error = std::move(e); });
  s.pending.reset();
  if (!error)
    return;
  if (!lost_master(*error))
    throw std::runtime_error("the master did not take the " + s.pending_group +
                             " metrics: " + error_sentence(s.self->system(), *error));
  reconnect("reporting " + s.pending_group + " metrics");
  ask(s.pending_batch, "the " + s.pending_group + " metrics", [](int64_t) {});
}

} // namespace det::runtime
