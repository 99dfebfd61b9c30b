#pragma once
// How a det process's actor system reaches the master's: CAF's BASP over plain TCP, or over TLS
// with a certificate on both ends (CAF 0.17's OpenSSL module). A master with [security.tls] takes
// only the second; its agents, their workers, the admin REPL and the tests' rogue peer each show
// a certificate signed by the master's CA and check the master's against the same CA.

#include <cstdint>
#include <optional>
#include <string>

#include "auth/tls_files.hpp"
#include "caf/expected.hpp"
#include "messages/interfaces.hpp"

namespace caf {
class actor_system_config;
}

namespace det {

/// Makes every link of the actor system TLS: this end shows `files.cert` and accepts only a peer
/// whose certificate `files.ca` vouches for. Call after configure_node(), before the system starts.
void use_tls_links(caf::actor_system_config& cfg, const auth::tls_files& files);

/// The files auth::master_ca_variable, tls_cert_variable and tls_key_variable name, checked; nullopt when none is set. Throws
/// std::runtime_error with a sentence when only some are set or a file is not usable.
std::optional<auth::tls_files> tls_files_from_environment();

/// Joins the master's actor system at host:port, over TLS if use_tls_links() configured this one.
/// A failed handshake comes back as an error whose sentence says what to check.
caf::expected<master_actor> connect_to_master(caf::actor_system& sys, const std::string& host, uint16_t port);

/// Serves `gate` on address:port (0: any free port), over TLS if use_tls_links() configured the
/// system; returns the bound port.
caf::expected<uint16_t> serve_master(const master_actor& gate, uint16_t port, const std::string& address);

} // namespace det
