#pragma once
// SSH key pairs for shells (ed25519, libsodium): the master makes two per shell, one that the
// shell's owner logs in with and one that is the shell's sshd host key, and writes them in
// OpenSSH's own formats so that ssh and sshd read them as they are.

#include <string>

namespace det::auth {

struct ssh_key_pair {
  std::string private_key;  ///< an "OPENSSH PRIVATE KEY" PEM block, unencrypted
  std::string public_key;   ///< "ssh-ed25519 AAAA... comment", as authorized_keys and known_hosts take it
};

/// A new random ed25519 key pair; `comment` ends the public key line and is stored in the private key.
ssh_key_pair new_ssh_key_pair(const std::string& comment);

}  // namespace det::auth
