#pragma once
// One place registers every type that crosses a process boundary with CAF.

#include <string>

namespace caf {
class actor_system;
class actor_system_config;
class error;
}

namespace det {

/// Everything a det node's actor system needs: the network layer, the
/// registered types, decoding that survives malformed messages, heartbeats and
/// quiet scheduling. Call it on every node.
void configure_node(caf::actor_system_config& cfg);

/// Adds the protobuf messages and typed actor handles of messages/interfaces.hpp
/// to `cfg`; call it before constructing the actor system on every node.
void register_message_types(caf::actor_system_config& cfg);

/// Heartbeats on every node, so that a dead or hung peer is noticed in about a
/// second (CAF 0.17 never notices a hung peer without them, and a node that
/// sends none is declared down by peers that expect them).
void enable_heartbeats(caf::actor_system_config& cfg);

/// Scheduler threads that go to sleep soon after their queue empties instead
/// of spinning: a node shares its cores with training processes, which lose
/// every cycle another process polls away.
void enable_quiet_scheduling(caf::actor_system_config& cfg);

/// For the master, after configure_node(): idle scheduler threads look for work to steal every
/// 10 ms instead of every 100 ms. A message one actor sends another waits in its scheduler
/// thread's own queue, which CAF wakes no other thread for, until that thread is free; on the
/// master, which every trial's messages cross, 1 % of a 2,000-trial search's trials lost 0.3 to
/// 0.8 s that way between their last report and their end.
void enable_prompt_scheduling(caf::actor_system_config& cfg);

/// The sentence an actor put into an error it answered with, or CAF's
/// rendering of the error when it carries none.
std::string error_sentence(caf::actor_system& sys, const caf::error& e);

} // namespace det
