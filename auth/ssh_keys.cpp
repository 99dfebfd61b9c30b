#include "auth/ssh_keys.hpp"

#include <sodium.h>

#include <cstdint>
#include <stdexcept>

namespace det::auth {
namespace {

// SSH's wire encoding (RFC 4251): uint32 big-endian, and strings prefixed by their length.
void put_u32(std::string& out, uint32_t v) {
  for (int shift = 24; shift >= 0; shift -= 8) out += static_cast<char>((v >> shift) & 0xff);
}
void put_string(std::string& out, const std::string& s) {
  put_u32(out, static_cast<uint32_t>(s.size()));
  out += s;
}

std::string base64(const std::string& bytes) {
  std::string out(sodium_base64_ENCODED_LEN(bytes.size(), sodium_base64_VARIANT_ORIGINAL), '\0');
  sodium_bin2base64(out.data(), out.size(), reinterpret_cast<const unsigned char*>(bytes.data()), bytes.size(),
                    sodium_base64_VARIANT_ORIGINAL);
  out.resize(out.size() - 1);  // the terminator
  return out;
}

}  // namespace

ssh_key_pair new_ssh_key_pair(const std::string& comment) {
  if (sodium_init() < 0) throw std::runtime_error("libsodium cannot start");
  unsigned char pk[crypto_sign_PUBLICKEYBYTES];
  unsigned char sk[crypto_sign_SECRETKEYBYTES];  // seed followed by the public key, as OpenSSH keeps it
  crypto_sign_keypair(pk, sk);
  const std::string type = "ssh-ed25519";
  std::string public_blob;
  put_string(public_blob, type);
  put_string(public_blob, std::string(reinterpret_cast<char*>(pk), sizeof pk));

  // openssh-key-v1 (OpenSSH's PROTOCOL.key), unencrypted: the checkints, the key, its comment,
  // padded with 1, 2, 3, ... to the cipher's block size (8 for "none").
  std::string secret;
  const uint32_t check = randombytes_random();
  put_u32(secret, check);
  put_u32(secret, check);
  put_string(secret, type);
  put_string(secret, std::string(reinterpret_cast<char*>(pk), sizeof pk));
  put_string(secret, std::string(reinterpret_cast<char*>(sk), sizeof sk));
  put_string(secret, comment);
  for (char pad = 1; secret.size() % 8 != 0; ++pad) secret += pad;
  sodium_memzero(sk, sizeof sk);

  std::string blob("openssh-key-v1", 15);  // with its terminating NUL
  put_string(blob, "none");
  put_string(blob, "none");
  put_string(blob, "");
  put_u32(blob, 1);
  put_string(blob, public_blob);
  put_string(blob, secret);
  sodium_memzero(secret.data(), secret.size());

  const auto body = base64(blob);
  ssh_key_pair pair;
  pair.private_key = "-----BEGIN OPENSSH PRIVATE KEY-----\n";
  for (std::size_t at = 0; at < body.size(); at += 70) pair.private_key += body.substr(at, 70) + "\n";
  pair.private_key += "-----END OPENSSH PRIVATE KEY-----\n";
  pair.public_key = type + " " + base64(public_blob) + (comment.empty() ? "" : " " + comment);
  return pair;
}

}  // namespace det::auth
