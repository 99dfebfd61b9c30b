#include "auth/tls_files.hpp"

#include <memory>
#include <stdexcept>

#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <openssl/x509_vfy.h>

namespace det::auth {
namespace {

// OpenSSL's queue of reasons for the last failure, oldest first, emptied.
std::string openssl_reasons() {
  std::string text;
  while (auto code = ERR_get_error()) {
    char buf[256];
    ERR_error_string_n(code, buf, sizeof buf);
    text += (text.empty() ? "" : "; ") + std::string(buf);
  }
  return text.empty() ? "no reason given" : text;
}

[[noreturn]] void refuse(const std::string& name, const std::string& path, const std::string& what) {
  throw std::runtime_error(name + ": " + path + " " + what + " (" + openssl_reasons() + ")");
}

// The key in a PEM file, or null. A key under a passphrase is null too: OpenSSL's default would ask
// for it on the terminal, and neither CAF nor httplib is given one.
std::unique_ptr<EVP_PKEY, decltype(&EVP_PKEY_free)> read_private_key(const std::string& path) {
  std::unique_ptr<BIO, decltype(&BIO_free)> file(BIO_new_file(path.c_str(), "r"), BIO_free);
  auto no_passphrase = [](char*, int, int, void*) { return 0; };
  return {file ? PEM_read_bio_PrivateKey(file.get(), nullptr, no_passphrase, nullptr) : nullptr, EVP_PKEY_free};
}

} // namespace

void check_tls_files(const tls_files& files, const tls_file_names& names) {
  ERR_clear_error();
  std::unique_ptr<SSL_CTX, decltype(&SSL_CTX_free)> ctx(SSL_CTX_new(TLS_method()), SSL_CTX_free);
  if (!ctx)
    throw std::runtime_error("OpenSSL cannot make a TLS context: " + openssl_reasons());
  if (SSL_CTX_use_certificate_chain_file(ctx.get(), files.cert.c_str()) != 1)
    refuse(names.cert, files.cert, "is not a readable PEM certificate");
  auto key = read_private_key(files.key);
  if (!key)
    refuse(names.key, files.key, "is not a readable PEM private key without a passphrase");
  if (SSL_CTX_use_PrivateKey(ctx.get(), key.get()) != 1)
    refuse(names.key, files.key, "is not the private key of the certificate in " + files.cert);
  if (SSL_CTX_load_verify_locations(ctx.get(), files.ca.c_str(), nullptr) != 1)
    refuse(names.ca, files.ca, "is not a readable PEM file of CA certificates");
}

std::optional<tls_files> tls_files_if_given(const tls_files& given, const tls_file_names& names) {
  const int named = !given.cert.empty() + !given.key.empty() + !given.ca.empty();
  if (named == 0)
    return std::nullopt;
  if (named < 3)
    throw std::runtime_error("joining a master over TLS needs all of " + names.ca + ", " + names.cert + " and " +
                             names.key + ", and only some are given");
  check_tls_files(given, names);
  return given;
}

} // namespace det::auth
