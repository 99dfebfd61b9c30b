// The only actors the network reaches. CAF 0.17 delivers a message from any peer to any actor
// whose handle ever crossed the network (and a peer can claim to be any node), so the master
// keeps that set small and makes each of its messages prove itself:
//   - the front gate, published on the actor port: agent hellos carry the agent token, worker
//     hellos their run's allocation token, the admin REPL's questions an admin's bearer token;
//   - an agent's gate, its endpoint: each message carries the session token of its welcome;
//   - a trial's gate, its workers' endpoint: each message carries the run's allocation token.
// Gates ask the actors behind them and answer themselves, so that no other actor ever talks to a
// peer (and so none becomes addressable); what a gate takes from its own actor (container
// commands, a new token) must come from that actor, which a peer cannot be.

#include <chrono>
#include <string_view>

#include "master/spawn.hpp"
#include "master/accounts/token_check.hpp"
#include "auth/credentials.hpp"
#include "caf/all.hpp"
#include "node/log.hpp"

namespace det {
namespace {

// What a gate's mailbox takes. A peer can send any actor in the registry anything, system messages
// included (an exit or down message, an error), and can even name an actor of this node as the
// sender, but only one in the registry, which is to say a gate. So: a message whose sender is an
// actor of this node that is not a gate is genuine (the gate's own actor, its replies, its exit);
// anything else must be one of the gate's network messages, whose tokens the handlers check.
template <class Base, class NetworkMessages>
class gate : public Base {
public:
  using Base::Base;

  void enqueue(caf::mailbox_element_ptr what, caf::execution_unit* host) override {
    const auto& sender = what->sender;
    const bool genuine_local = sender != nullptr && sender->node() == this->home_system().node() &&
                               !is_gate(sender->get());
    if (genuine_local || NetworkMessages::match(what->content()))
      Base::enqueue(std::move(what), host);
  }

private:
  static bool is_gate(caf::abstract_actor* actor) {
    auto* named = dynamic_cast<caf::monitorable_actor*>(actor);
    const std::string_view name = named && named->name() ? named->name() : "";
    constexpr std::string_view suffix = "-gate";
    return name.size() >= suffix.size() && name.substr(name.size() - suffix.size()) == suffix;
  }
};

// The messages a peer may send a gate: its network interface's inputs, read off the typed handle,
// so that a message added to messages/interfaces.hpp passes its gate without a second list.
template <class Signature>
struct accepts;
template <class... Inputs, class Output>
struct accepts<caf::typed_mpi<caf::detail::type_list<Inputs...>, Output>> {
  static bool match(const caf::type_erased_tuple& x) { return x.match_elements<Inputs...>(); }
};
template <class Interface>
struct network_messages;
template <class... Signatures>
struct network_messages<caf::typed_actor<Signatures...>> {
  static bool match(const caf::type_erased_tuple& x) { return (accepts<Signatures>::match(x) || ...); }
};

constexpr auto lookup_timeout = std::chrono::seconds(5);
// A worker's report waits on a commit; the worker has its own, longer, timeout.
constexpr auto relay_timeout = std::chrono::seconds(120);

caf::error bad_token(const std::string& what) {
  return make_error(errc::refused, what);
}

// --- the front gate ------------------------------------------------------------------------

struct front_gate_state {
  static inline const char* name = "front-gate";
  master_handles handles;
  directory_actor directory;
};

using front_self = caf::stateful_actor<front_gate_state, gate<master_actor::base, network_messages<master_actor>>>*;

// Answers an admin REPL's question (asked of the directory) once `token` proves it an admin's.
template <class... Question>
caf::result<std::string> as_admin(front_self self, const std::string& token, Question... question) {
  auto rp = self->make_response_promise<std::string>();
  self->request(self->state.handles.accounts, lookup_timeout, authenticate_atom::value, auth::sha256(token))
      .then(
          [=](storage::token_holder& found) mutable {
            if (auto refusal = token_refusal(found, std::chrono::system_clock::now())) {
              rp.deliver(std::move(refusal));
              return;
            }
            if (!found.user.admin()) {
              rp.deliver(make_error(errc::forbidden, "the admin REPL needs an admin, and user " +
                                                         found.user.username() + " is not one"));
              return;
            }
            self->request(self->state.directory, lookup_timeout, question...)
                .then([=](std::string& text) mutable { rp.deliver(std::move(text)); },
                      [=](caf::error& e) mutable { rp.deliver(std::move(e)); });
          },
          [=](caf::error& e) mutable {
            if (e == errc::not_found)
              rp.deliver(make_error(errc::unauthenticated, "the admin REPL needs an admin's login: det user login"));
            else
              rp.deliver(std::move(e));
          });
  return rp;
}

master_actor::behavior_type front_gate_impl(front_self self, master_handles handles, directory_actor directory) {
  self->state.handles = std::move(handles);
  self->state.directory = std::move(directory);
  return {
      [=](pb::AgentHello& hello, agent_actor remote) -> caf::result<pb::AgentWelcome, agent_endpoint> {
        if (!auth::same_secret(hello.agent_token(), self->state.handles.agent_token)) {
          const auto why = hello.agent_token().empty() ? "presented no agent token" : "presented a wrong agent token";
          logs::warn(logs::component::agent, "refused agent " + hello.agent().id() + ": it " + why);
          return bad_token(std::string{"the master refused agent "} + hello.agent().id() + ": it " + why +
                           " (give the master's with --agent-token-file or DET_AGENT_TOKEN)");
        }
        hello.clear_agent_token();
        auto rp = self->make_response_promise<pb::AgentWelcome, agent_endpoint>();
        self->request(self->state.handles.registry, lookup_timeout, std::move(hello), std::move(remote))
            .then([=](pb::AgentWelcome& welcome, agent_endpoint gate) mutable { rp.deliver(std::move(welcome), gate); },
                  [=](caf::error& e) mutable { rp.deliver(std::move(e)); });
        return rp;
      },
      [=](pb::WorkerHello& hello) -> caf::result<pb::TrialSpec, trial_endpoint> {
        auto rp = self->make_response_promise<pb::TrialSpec, trial_endpoint>();
        auto id = hello.trial_id();
        self->request(self->state.directory, lookup_timeout, get_atom::value, trial_id{id})
            .then(
                [=](trial_actor a) mutable {
                  if (!a) {
                    rp.deliver(make_error(errc::not_found, "trial " + std::to_string(id) + " is not running"));
                    return;
                  }
                  // The trial checks the run's token.
                  self->request(a, lookup_timeout, hello)
                      .then([=](pb::TrialSpec& spec, trial_endpoint gate) mutable { rp.deliver(std::move(spec), gate); },
                            [=](caf::error& e) mutable { rp.deliver(std::move(e)); });
                },
                [=](caf::error& e) mutable { rp.deliver(std::move(e)); });
        return rp;
      },
      [=](actors_atom a, const std::string& token) { return as_admin(self, token, a); },
      [=](inspect_atom a, const std::string& kind, const std::string& id, const std::string& token) {
        return as_admin(self, token, a, kind, id);
      },
  };
}

// --- an agent's gate -----------------------------------------------------------------------

struct agent_gate_state {
  static inline const char* name = "agent-gate";
  agent_proxy_actor proxy;
  agent_actor remote;
  std::string session_token;
};

using agent_gate_self = caf::stateful_actor<agent_gate_state, gate<agent_gate_actor::base, network_messages<agent_endpoint>>>*;

bool from_proxy(agent_gate_self self) {
  return self->current_sender() == caf::actor_cast<caf::strong_actor_ptr>(self->state.proxy);
}

template <class Event>
void pass_event(agent_gate_self self, Event& event, const std::string& token) {
  if (!auth::same_secret(token, self->state.session_token))
    return;  // not from the agent this gate serves (or from before it registered again)
  self->send(self->state.proxy, std::move(event));
}

agent_gate_actor::behavior_type agent_gate_impl(agent_gate_self self, agent_proxy_actor proxy) {
  self->state.proxy = std::move(proxy);
  self->monitor(self->state.proxy);  // it goes with its proxy
  self->set_down_handler([=](const caf::down_msg& dm) {
    if (dm.source == self->state.proxy.address())
      self->quit();
  });
  return {
      [=](pb::ContainerStarted& e, const std::string& token) { pass_event(self, e, token); },
      [=](pb::ContainerExited& e, const std::string& token) { pass_event(self, e, token); },
      [=](pb::ContainerActivity& e, const std::string& token) { pass_event(self, e, token); },
      [=](pb::LogBatch& e, const std::string& token) { pass_event(self, e, token); },
      [=](pb::StartContainer& start) {
        if (from_proxy(self) && self->state.remote)
          self->send(self->state.remote, std::move(start));
      },
      [=](pb::KillContainer& kill) {
        if (from_proxy(self) && self->state.remote)
          self->send(self->state.remote, std::move(kill));
      },
      [=](agent_actor remote, const std::string& session_token) {
        if (!from_proxy(self))
          return;
        self->state.remote = std::move(remote);
        self->state.session_token = session_token;
      },
  };
}

// --- a trial's gate ------------------------------------------------------------------------

struct run_gate_state {
  static inline const char* name = "run-gate";
  trial_actor trial;
  std::string token;  // the current run's; "" while none may report
};

using run_gate_self = caf::stateful_actor<run_gate_state, gate<run_gate_actor::base, network_messages<trial_endpoint>>>*;

/// Asks the trial with `msg` once `token` is the current run's, and answers with its reply.
template <class Reply, class Msg>
caf::result<Reply> relay(run_gate_self self, Msg& msg, const std::string& token) {
  if (!auth::same_secret(token, self->state.token))
    return make_error(errc::stale_run, "the allocation token is not the one of the current run of trial " +
                                           std::to_string(self->state.trial ? self->state.trial.id() : 0) +
                                           ": stop training");
  auto rp = self->make_response_promise<Reply>();
  self->request(self->state.trial, relay_timeout, std::move(msg))
      .then([=](Reply& r) mutable { rp.deliver(std::move(r)); }, [=](caf::error& e) mutable { rp.deliver(std::move(e)); });
  return rp;
}

run_gate_actor::behavior_type run_gate_impl(run_gate_self self, trial_actor trial) {
  self->state.trial = std::move(trial);
  self->monitor(self->state.trial);  // it goes with its trial
  self->set_down_handler([=](const caf::down_msg& dm) {
    if (dm.source == self->state.trial.address())
      self->quit();
  });
  return {
      [=](pb::MetricBatch& b, const std::string& token) { return relay<int64_t>(self, b, token); },
      [=](pb::Checkpoint& c, const std::string& token) { return relay<bool>(self, c, token); },
      [=](pb::WorkerExit& e, const std::string& token) -> caf::result<bool> {
        // A worker of a run that is over says goodbye as it always did: heard, and not counted.
        if (!auth::same_secret(token, self->state.token))
          return true;
        return relay<bool>(self, e, token);
      },
      [=](pb::Rendezvous& r, const std::string& token) { return relay<pb::Rendezvous>(self, r, token); },
      [=](update_atom, const std::string& token) {
        if (self->current_sender() == caf::actor_cast<caf::strong_actor_ptr>(self->state.trial))
          self->state.token = token;
      },
  };
}

} // namespace

master_actor spawn_front_gate(caf::actor_system& sys, const master_handles& handles, const directory_actor& directory) {
  return sys.spawn(front_gate_impl, handles, directory);
}

agent_gate_actor spawn_agent_gate(caf::actor_system& sys, const agent_proxy_actor& proxy) {
  return sys.spawn(agent_gate_impl, proxy);
}

run_gate_actor spawn_run_gate(caf::actor_system& sys, const trial_actor& trial) {
  return sys.spawn(run_gate_impl, trial);
}

} // namespace det
