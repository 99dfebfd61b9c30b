#pragma once
// The det CLI's logins, one per master URL, in ~/.config/det/auth.json (mode 0600), as
// Determined's CLI keeps them. DET_USER_TOKEN, when set, speaks for the user instead.

#include <optional>
#include <string>

namespace det::tools {

struct saved_login {
  std::string username;
  std::string token;
};

/// The token to send to `master_url`: DET_USER_TOKEN, else the saved login's, else none.
std::optional<saved_login> login_for(const std::string& master_url);
void save_login(const std::string& master_url, const saved_login& login);
void forget_login(const std::string& master_url);

/// Reads a secret: from the terminal without echo (after `prompt`), or a line of stdin when it is
/// not a terminal (scripts and tests pipe it).
std::string read_secret(const std::string& prompt);

} // namespace det::tools
