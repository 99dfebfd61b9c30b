#include "messages/actor_links.hpp"

#include <cstdlib>
#include <stdexcept>

#include "caf/actor_system.hpp"
#include "caf/actor_system_config.hpp"
#include "caf/io/middleman.hpp"
#include "caf/openssl/manager.hpp"
#include "caf/openssl/publish.hpp"
#include "caf/openssl/remote_actor.hpp"
#include "caf/sec.hpp"

namespace det {
namespace {

std::string variable(const char* name) {
  const char* value = std::getenv(name);
  return value ? value : "";
}

} // namespace

void use_tls_links(caf::actor_system_config& cfg, const auth::tls_files& files) {
  cfg.load<caf::openssl::manager>();
  cfg.openssl_certificate = files.cert;
  cfg.openssl_key = files.key;
  cfg.openssl_cafile = files.ca;
}

std::optional<auth::tls_files> tls_files_from_environment() {
  return auth::tls_files_if_given(
      {variable(auth::tls_cert_variable), variable(auth::tls_key_variable), variable(auth::master_ca_variable)},
      {auth::tls_cert_variable, auth::tls_key_variable, auth::master_ca_variable});
}

caf::expected<master_actor> connect_to_master(caf::actor_system& sys, const std::string& host, uint16_t port) {
  const bool tls = sys.has_openssl_manager();
  auto master = tls ? caf::openssl::remote_actor<master_actor>(sys, host, port)
                    : sys.middleman().remote_actor<master_actor>(host, port);
  if (master || master.error() != caf::sec::disconnect_during_handshake)
    return master;
  // Neither end says more than that the other hung up: name the likely reasons.
  return caf::make_error(caf::sec::disconnect_during_handshake,
                         std::string(tls ? "the TLS handshake with the master failed: either it serves plain text, or "
                                           "its certificate does not chain to the given CA, or it does not accept this "
                                           "process's certificate (not signed by its security.tls.ca)"
                                         : "the master hung up during the handshake: if it serves TLS, give this "
                                           "process the master's CA and a certificate the master accepts"));
}

caf::expected<uint16_t> serve_master(const master_actor& gate, uint16_t port, const std::string& address) {
  auto& sys = gate.home_system();
  return sys.has_openssl_manager() ? caf::openssl::publish(gate, port, address.c_str(), true)
                                   : sys.middleman().publish(gate, port, address.c_str(), true);
}

} // namespace det
