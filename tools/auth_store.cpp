#include "tools/auth_store.hpp"

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <stdexcept>

#include <termios.h>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include "auth/private_file.hpp"

namespace det::tools {
namespace {

std::string store_path() {
  const char* xdg = std::getenv("XDG_CONFIG_HOME");
  const char* home = std::getenv("HOME");
  std::string base = xdg && *xdg ? xdg : std::string(home && *home ? home : ".") + "/.config";
  return base + "/det/auth.json";
}

nlohmann::json read_store() {
  std::ifstream in(store_path());
  if (!in)
    return nlohmann::json::object();
  try {
    auto store = nlohmann::json::parse(in);
    return store.is_object() ? store : nlohmann::json::object();
  } catch (const nlohmann::json::exception&) {
    return nlohmann::json::object();  // a damaged file: the next login rewrites it
  }
}

void write_store(const nlohmann::json& store) {
  const auto path = store_path();
  std::filesystem::create_directories(std::filesystem::path(path).parent_path());
  auth::write_private_file(path, store.dump(2) + "\n");
}

} // namespace

std::optional<saved_login> login_for(const std::string& master_url) {
  if (const char* token = std::getenv("DET_USER_TOKEN"); token && *token)
    return saved_login{"", token};
  auto store = read_store();
  auto masters = store.find("masters");
  if (masters == store.end() || !masters->is_object() || !masters->contains(master_url))
    return std::nullopt;
  const auto& entry = (*masters)[master_url];
  return saved_login{entry.value("username", ""), entry.value("token", "")};
}

void save_login(const std::string& master_url, const saved_login& login) {
  auto store = read_store();
  store["masters"][master_url] = {{"username", login.username}, {"token", login.token}};
  write_store(store);
}

void forget_login(const std::string& master_url) {
  auto store = read_store();
  if (store.contains("masters") && store["masters"].is_object())
    store["masters"].erase(master_url);
  write_store(store);
}

std::string read_secret(const std::string& prompt) {
  std::string secret;
  if (!::isatty(STDIN_FILENO)) {
    std::getline(std::cin, secret);
    return secret;
  }
  std::cerr << prompt << std::flush;
  termios old{};
  ::tcgetattr(STDIN_FILENO, &old);
  termios quiet = old;
  quiet.c_lflag &= ~static_cast<tcflag_t>(ECHO);
  ::tcsetattr(STDIN_FILENO, TCSANOW, &quiet);
  std::getline(std::cin, secret);
  ::tcsetattr(STDIN_FILENO, TCSANOW, &old);
  std::cerr << '\n';
  return secret;
}

} // namespace det::tools
