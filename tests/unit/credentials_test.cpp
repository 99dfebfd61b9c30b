#include <doctest/doctest.h>

#include <set>

#include "auth/credentials.hpp"
#include "auth/ssh_keys.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>

using namespace det::auth;

namespace {
// The cheapest cost libsodium accepts: these tests check behaviour, not strength.
const password_cost cheap{1, 8192};
} // namespace

TEST_CASE("a password hash is Argon2id, salted, and verifies only its password") {
  auto hash = hash_password("correct horse battery", cheap);
  CHECK(hash.rfind("$argon2id$", 0) == 0);
  CHECK(hash.find("correct horse") == std::string::npos);
  CHECK(verify_password("correct horse battery", hash));
  CHECK_FALSE(verify_password("correct horse batterY", hash));
  CHECK_FALSE(verify_password("", hash));
  CHECK(hash_password("correct horse battery", cheap) != hash);  // a new salt each time
  CHECK_FALSE(verify_password("anything", ""));
  CHECK_FALSE(verify_password("anything", "$argon2id$not-a-hash"));
}

TEST_CASE("the default cost is libsodium's interactive Argon2id limits") {
  auto cost = default_password_cost();
  CHECK(cost.ops >= 2);
  CHECK(cost.memory_bytes >= std::size_t{64} << 20);
}

TEST_CASE("secrets are 256 random bits in hex; tokens are stored as SHA-256") {
  std::set<std::string> seen;
  for (int i = 0; i < 100; ++i) {
    auto s = random_secret();
    CHECK(s.size() == 64);
    CHECK(s.find_first_not_of("0123456789abcdef") == std::string::npos);
    seen.insert(s);
  }
  CHECK(seen.size() == 100);
  // SHA-256("abc"), FIPS 180-2's first example.
  const unsigned char abc[32] = {0xba, 0x78, 0x16, 0xbf, 0x8f, 0x01, 0xcf, 0xea, 0x41, 0x41, 0x40, 0xde, 0x5d, 0xae, 0x22, 0x23,
                                 0xb0, 0x03, 0x61, 0xa3, 0x96, 0x17, 0x7a, 0x9c, 0xb4, 0x10, 0xff, 0x61, 0xf2, 0x00, 0x15, 0xad};
  CHECK(sha256("abc") == std::string(reinterpret_cast<const char*>(abc), 32));
}

TEST_CASE("secrets compare equal only when they are") {
  CHECK(same_secret("abcd", "abcd"));
  CHECK_FALSE(same_secret("abcd", "abce"));
  CHECK_FALSE(same_secret("abcd", "abc"));
  CHECK_FALSE(same_secret("", "a"));
  CHECK_FALSE(same_secret("", ""));  // a token never set admits no one
  CHECK(weak_password_reason("short") == "a password needs at least 8 characters");
  CHECK(weak_password_reason("long enough") == "");
}

TEST_CASE("an ssh key pair is one that OpenSSH reads: ssh-keygen derives the same public key") {
  const auto pair = det::auth::new_ssh_key_pair("det shell test");
  CHECK(pair.public_key.rfind("ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAI", 0) == 0);
  CHECK(pair.public_key.substr(pair.public_key.size() - 15) == " det shell test");
  char dir[] = "/tmp/det-ssh-key-XXXXXX";
  REQUIRE(::mkdtemp(dir));
  const std::string key = std::string(dir) + "/key";
  {
    std::ofstream out(key);
    out << pair.private_key;
  }
  ::chmod(key.c_str(), 0600);
  const std::string derived = std::string(dir) + "/derived.pub";
  const int status = std::system(("ssh-keygen -y -f " + key + " > " + derived + " 2>/dev/null").c_str());
  REQUIRE(status == 0);
  std::ifstream in(derived);
  std::string line;
  std::getline(in, line);
  CHECK(line == pair.public_key);
  std::system(("rm -rf " + std::string(dir)).c_str());
  CHECK(det::auth::new_ssh_key_pair("").public_key != pair.public_key.substr(0, pair.public_key.size() - 15));
}
