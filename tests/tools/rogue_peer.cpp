// det-rogue-peer: a CAF peer that was never admitted, for tests/integration/auth_test.py. It joins
// the master's actor port and tries what an attacker on the network could: register as an agent
// with no token and with a wrong one, say a worker's hello for a running run without its token,
// ask the admin REPL's question with a made-up token, send the front door a message that only the
// master's own actors may send (registering an actor in its directory), a malformed message (a
// config_value whose variant tag names no alternative; CAF 0.17 alone threw on it on a thread
// with nothing to catch it, which ended the master), and an exit. It prints one
// line per attempt, "NAME: refused: SENTENCE" or "NAME: ACCEPTED", and exits 0; 1 if it cannot
// join at all. Against a TLS master it shows the certificate DET_TLS_CERT_FILE names, as a worker
// does (none, or one the master's CA did not sign, must get it nowhere).
//
//   det-rogue-peer HOST PORT TRIAL_ID ALLOCATION_ID

#include <cstdint>
#include <iostream>
#include <string>

#include "caf/all.hpp"
#include "caf/io/all.hpp"
#include "messages/actor_links.hpp"
#include "messages/caf_types.hpp"
#include "messages/interfaces.hpp"

namespace {

using register_atom = caf::atom_constant<caf::atom("register")>;
constexpr auto timeout = std::chrono::seconds(5);

caf::behavior fake_agent(caf::event_based_actor*) {
  return {[](const det::pb::StartContainer&) { std::cout << "fake agent: was asked to start a container\n"; }};
}

/// Goes on the wire under the name of CAF's config_value but holds only a variant tag that no
/// config_value has (CAF writes a variant as its one-byte tag, then the alternative).
struct forged_config_value {
  uint8_t tag = 200;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, forged_config_value& x) {
  return f(x.tag);
}

} // namespace

int main(int argc, char** argv) {
  if (argc != 5) {
    std::cerr << "usage: det-rogue-peer HOST PORT TRIAL_ID ALLOCATION_ID\n";
    return 2;
  }
  caf::actor_system_config cfg;
  det::configure_node(cfg);
  cfg.add_message_type<forged_config_value>("@config_value");
  try {
    if (auto tls = det::tls_files_from_environment())
      det::use_tls_links(cfg, *tls);
  } catch (const std::exception& e) {
    std::cerr << "det-rogue-peer: " << e.what() << "\n";
    return 2;
  }
  caf::actor_system sys{cfg};
  auto front = det::connect_to_master(sys, argv[1], static_cast<uint16_t>(std::stoi(argv[2])));
  if (!front) {
    std::cout << "cannot join the master: " << det::error_sentence(sys, front.error()) << std::endl;
    return 1;
  }
  caf::scoped_actor self{sys};
  auto report = [&](const std::string& name) {
    return std::make_pair([=](auto&&...) { std::cout << name << ": ACCEPTED" << std::endl; },
                          [=, &sys](caf::error& e) {
                            std::cout << name << ": refused: " << det::error_sentence(sys, e) << std::endl;
                          });
  };
  auto agent = caf::actor_cast<det::agent_actor>(sys.spawn(fake_agent));
  for (const std::string token : {"", "0000000000000000000000000000000000000000000000000000000000000000"}) {
    det::pb::AgentHello hello;
    hello.mutable_agent()->set_id(token.empty() ? "rogue-no-token" : "rogue-wrong-token");
    hello.mutable_agent()->set_resource_pool("default");
    auto* slot = hello.mutable_agent()->add_slots();
    slot->set_id(0);
    slot->set_type(det::pb::SLOT_TYPE_CPU);
    slot->set_enabled(true);
    hello.set_agent_token(token);
    auto [ok, bad] = report(token.empty() ? "agent without a token" : "agent with a wrong token");
    self->request(*front, timeout, hello, agent).receive([ok = ok](det::pb::AgentWelcome&, det::agent_endpoint&) { ok(); }, bad);
  }
  {
    det::pb::WorkerHello hello;
    hello.set_trial_id(std::stoll(argv[3]));
    hello.set_allocation_id(argv[4]);
    hello.set_rank(0);
    auto [ok, bad] = report("forged worker hello");
    self->request(*front, timeout, hello).receive([ok = ok](det::pb::TrialSpec&, det::trial_endpoint&) { ok(); }, bad);
  }
  {
    auto [ok, bad] = report("REPL question with a made-up token");
    self->request(*front, timeout, det::actors_atom::value, std::string(64, 'f'))
        .receive([ok = ok](std::string&) { ok(); }, bad);
  }
  // Not in the published interface: an attacker sends it untyped. Only a dropped message keeps
  // the directory free of "rogue".
  self->send(caf::actor_cast<caf::actor>(*front), register_atom::value, std::string{"agent"}, std::string{"rogue"},
             caf::actor_cast<caf::actor>(agent));
  std::cout << "directory registration: sent" << std::endl;
  // The master answers a request sent after it only once it has read (and dropped) it: BASP
  // hands one connection's messages on in order.
  self->send(caf::actor_cast<caf::actor>(*front), forged_config_value{});
  {
    auto [ok, bad] = report("REPL question after a malformed message");
    self->request(*front, timeout, det::actors_atom::value, std::string(64, 'f'))
        .receive([ok = ok](std::string&) { ok(); }, bad);
  }
  // And tries to take the front door down: a gate takes no exit from a peer.
  self->send_exit(*front, caf::exit_reason::kill);
  std::cout << "exit: sent" << std::endl;
  self->send_exit(agent, caf::exit_reason::user_shutdown);
  std::cout.flush();
  std::_Exit(0);  // CAF 0.17 can wait forever tearing down a system with remote links
}
