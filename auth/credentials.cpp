#include "auth/credentials.hpp"

#include <sodium.h>

#include <stdexcept>

namespace det::auth {

namespace {

// sodium_init is idempotent and thread-safe; every entry point calls it first.
void ensure_sodium() {
  if (sodium_init() < 0)
    throw std::runtime_error("libsodium could not initialize (no entropy source?)");
}

constexpr std::size_t min_password_length = 8;

} // namespace

password_cost default_password_cost() {
  return {crypto_pwhash_OPSLIMIT_INTERACTIVE, crypto_pwhash_MEMLIMIT_INTERACTIVE};
}

std::string hash_password(const std::string& password, password_cost cost) {
  ensure_sodium();
  char out[crypto_pwhash_STRBYTES];
  if (crypto_pwhash_str(out, password.data(), password.size(), cost.ops, cost.memory_bytes) != 0)
    throw std::runtime_error("hashing a password ran out of memory");
  return out;
}

bool verify_password(const std::string& password, const std::string& hash) {
  ensure_sodium();
  if (hash.empty() || hash.size() >= crypto_pwhash_STRBYTES)
    return false;
  return crypto_pwhash_str_verify(hash.c_str(), password.data(), password.size()) == 0;
}

std::string random_secret() {
  ensure_sodium();
  unsigned char raw[32];
  randombytes_buf(raw, sizeof raw);
  char hex[2 * sizeof raw + 1];
  sodium_bin2hex(hex, sizeof hex, raw, sizeof raw);
  return hex;
}

std::string sha256(const std::string& text) {
  ensure_sodium();
  unsigned char digest[crypto_hash_sha256_BYTES];
  crypto_hash_sha256(digest, reinterpret_cast<const unsigned char*>(text.data()), text.size());
  return std::string(reinterpret_cast<const char*>(digest), sizeof digest);
}

bool same_secret(const std::string& a, const std::string& b) {
  ensure_sodium();
  // The lengths of det's secrets are public (64 hex digits); only their contents are compared in constant time.
  return !a.empty() && a.size() == b.size() && sodium_memcmp(a.data(), b.data(), a.size()) == 0;
}

std::string weak_password_reason(const std::string& password) {
  if (password.size() < min_password_length)
    return "a password needs at least " + std::to_string(min_password_length) + " characters";
  return "";
}

} // namespace det::auth
