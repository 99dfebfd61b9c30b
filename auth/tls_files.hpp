#pragma once
// The files of one end of a TLS link, and their check before any server or link loads them:
// CAF's OpenSSL module aborts the process on a file it cannot load, and httplib only says that
// something failed, so a wrong path or a key of another certificate must be a sentence first.

#include <optional>
#include <string>

namespace det::auth {

/// A certificate chain (PEM), its private key (PEM), and the CA certificates (PEM) that the
/// other end's certificate must chain to.
struct tls_files {
  std::string cert;
  std::string key;
  std::string ca;
};

/// The environment an agent hands its workers (and a user sets for the CLI and `det repl`): the
/// CA the master's certificate chains to (Determined's name, which its clients read too), and
/// this end's certificate and key.
inline constexpr const char* master_ca_variable = "DET_MASTER_CERT_FILE";
inline constexpr const char* tls_cert_variable = "DET_TLS_CERT_FILE";
inline constexpr const char* tls_key_variable = "DET_TLS_KEY_FILE";

/// What the user calls each file (a config key or a flag), for the sentences.
struct tls_file_names {
  std::string cert;
  std::string key;
  std::string ca;
};

/// Loads the three files as OpenSSL will when a link opens. Throws std::runtime_error with a
/// sentence naming the file and the setting when one cannot be read or parsed, when the key is
/// not the certificate's, or when the CA file holds no certificate.
void check_tls_files(const tls_files& files, const tls_file_names& names);

/// `given`, checked as above, when it names all three files; nullopt when it names none. Half a
/// setting is never taken for plain text: some but not all is a std::runtime_error naming the three.
std::optional<tls_files> tls_files_if_given(const tls_files& given, const tls_file_names& names);

} // namespace det::auth
