#pragma once
// Finds the address this machine is reached at by the other workers of a distributed run: the
// interface its route to the master leaves through.

#include <cstdint>
#include <string>

namespace det::runtime {

/// Where the other workers of a run reach this one: DET_PEER_ADDRESS if the agent's environment
/// sets it, else the address of the interface this machine reaches the master through (the
/// loopback when the master is on it). Not the hostname, which Debian maps to 127.0.1.1. Throws
/// std::runtime_error with a sentence if the master's host cannot be resolved or routed to.
std::string peer_address(const std::string& master_host, uint16_t master_port);

} // namespace det::runtime
