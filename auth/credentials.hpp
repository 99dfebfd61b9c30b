#pragma once
// The secrets of a det cluster, handled in one place with libsodium: passwords hashed with
// Argon2id, random bearer tokens, their SHA-256 (all the master stores of a token), and
// comparisons that take the same time whatever the input.

#include <cstdint>
#include <string>

namespace det::auth {

/// The Argon2id cost det hashes passwords with (libsodium's "interactive" limits: about
/// 50-100 ms and 64 MiB on one core of a current machine; bench/auth_bench.py measures a login).
struct password_cost {
  unsigned long long ops;
  std::size_t memory_bytes;
};
password_cost default_password_cost();

/// The Argon2id string (algorithm, parameters, salt, hash) of `password`.
std::string hash_password(const std::string& password, password_cost cost = default_password_cost());
/// Whether `password` is the one `hash` was made from; false for a malformed hash.
bool verify_password(const std::string& password, const std::string& hash);

/// A new random secret of 256 bits, as 64 lowercase hex digits: bearer tokens, the agent token,
/// the first admin password.
std::string random_secret();
/// SHA-256 of `text`, 32 raw bytes: how tokens are stored and looked up.
std::string sha256(const std::string& text);
/// Equality that takes the same time wherever the first difference is. An empty secret matches
/// nothing, not even another empty one: a token never set admits no one.
bool same_secret(const std::string& a, const std::string& b);

/// Why a password is refused, as a sentence, or "" if it is acceptable.
std::string weak_password_reason(const std::string& password);

} // namespace det::auth
