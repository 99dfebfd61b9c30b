// `det repl`: the admin REPL. It joins the master's actor system over CAF
// (not REST) and asks live actors for the state they hold in memory.

#include "tools/admin_repl.hpp"

#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <sstream>
#include <string>
#include <unistd.h>
#include <vector>

#include <readline/history.h>
#include <readline/readline.h>

#include "caf/all.hpp"
#include "caf/io/all.hpp"
#include "messages/actor_links.hpp"
#include "messages/caf_types.hpp"
#include "messages/interfaces.hpp"
#include "tools/auth_store.hpp"
#include "tools/cli_user.hpp"
#include "tools/rest_client.hpp"

namespace det::tools {
namespace {

constexpr auto answer_timeout = std::chrono::seconds(10);

const char* help_text =
    "commands:\n"
    "  actors                 live actors on the master: kind, id, mailbox length\n"
    "  inspect KIND ID        the state an actor holds right now, answered by the actor\n"
    "                         (kinds: experiment, searcher, trial, allocation, agent, pool,\n"
    "                         persistence: main or rows; a searcher by its experiment's id)\n"
    "  help                   this text\n"
    "  quit                   leave (also Ctrl-D)\n";

const std::vector<std::string> words = {"actors",     "inspect",    "help",  "quit",
                                        "experiment", "trial",      "agent", "allocation",
                                        "pool",       "persistence", "searcher"};

char* complete_word(const char* text, int state) {
  static std::size_t next;
  if (state == 0)
    next = 0;
  std::string prefix{text};
  while (next < words.size()) {
    const auto& w = words[next++];
    if (w.rfind(prefix, 0) == 0)
      return strdup(w.c_str());
  }
  return nullptr;
}

char** complete(const char* text, int, int) {
  rl_attempted_completion_over = 1;
  return rl_completion_matches(text, complete_word);
}

std::string host_of(const std::string& url) {
  auto start = url.find("://");
  start = start == std::string::npos ? 0 : start + 3;
  auto end = url.find_first_of(":/", start);
  return url.substr(start, end == std::string::npos ? std::string::npos : end - start);
}

/// Runs one command line; returns false when the user wants to leave.
bool run_command(caf::scoped_actor& self, const master_actor& master, const std::string& token, const std::string& line) {
  std::istringstream in{line};
  std::vector<std::string> args;
  for (std::string w; in >> w;)
    args.push_back(w);
  if (args.empty())
    return true;
  auto& sys = self->system();
  auto print_error = [&](caf::error& e) {
    std::cout << "error: " << error_sentence(sys, e) << std::endl;
  };
  if (args[0] == "quit" || args[0] == "exit")
    return false;
  if (args[0] == "help") {
    std::cout << help_text;
  } else if (args[0] == "actors" && args.size() == 1) {
    self->request(master, answer_timeout, actors_atom::value, token)
        .receive([](const std::string& text) { std::cout << text; }, print_error);
  } else if (args[0] == "inspect" && args.size() == 3) {
    self->request(master, answer_timeout, inspect_atom::value, args[1], args[2], token)
        .receive([](const std::string& text) { std::cout << text; }, print_error);
  } else {
    std::cout << "unknown command: " << line << "\n" << help_text;
  }
  std::cout.flush();
  return true;
}

} // namespace

int run_repl(int argc, char** argv) {
  std::string url = std::getenv("DET_MASTER") ? std::getenv("DET_MASTER") : "http://127.0.0.1:8080";
  std::vector<std::string> commands;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if ((a == "--master" || a == "-m") && i + 1 < argc)
      url = argv[++i];
    else if ((a == "-c" || a == "--command") && i + 1 < argc)
      commands.push_back(argv[++i]);
    else if ((a == "--tls-cert" || a == "--tls-key") && i + 1 < argc)
      // The flags name the same files as the variables, which the link reads.
      ::setenv(a == "--tls-cert" ? auth::tls_cert_variable : auth::tls_key_variable, argv[++i], 1);
    else if (a == "-h" || a == "--help") {
      std::cout << "usage: det [-m URL] repl [-c COMMAND]... [--tls-cert FILE --tls-key FILE]\n\n"
                << "A master that serves TLS (an https:// URL) takes the REPL's actor link only with a certificate\n"
                << "signed by its security.tls.ca: --tls-cert and --tls-key (or " << auth::tls_cert_variable << " and "
                << auth::tls_key_variable << "),\nand " << auth::master_ca_variable << " naming the CA that signed the master's.\n\n"
                << help_text;
      return 0;
    } else {
      std::cerr << "det repl: unexpected argument \"" << a << "\"; see det repl --help\n";
      return 2;
    }
  }
  rest_client rest{url};
  auto info = rest.get<pb::MasterInfo>("/api/v1/master");
  // Nothing is answered before an admin's credentials are: the saved login's, else asked for.
  std::string token;
  if (auto saved = login_for(rest.master_url())) {
    token = saved->token;
  } else {
    std::string name;
    std::cerr << "Admin user name: " << std::flush;
    std::getline(std::cin, name);
    token = log_in(rest, name, read_secret("Password: ")).token();
    rest.use_token(token);
  }
  auto me = rest.get<pb::GetMeResponse>("/api/v1/me");
  if (!me.user().admin()) {
    std::cerr << "det repl: the admin REPL needs an admin, and user " << me.user().username() << " is not one\n";
    return 1;
  }
  auto host = host_of(url);

  caf::actor_system_config cfg;
  configure_node(cfg);
  if (url.rfind("https://", 0) == 0) {
    auto given = [](const char* name) { const char* value = std::getenv(name); return value && *value; };
    if (!given(auth::tls_cert_variable) || !given(auth::tls_key_variable)) {
      std::cerr << "det repl: the master serves TLS, and its actor port takes only certificates signed by its "
                   "security.tls.ca: give --tls-cert and --tls-key\n";
      return 1;
    }
    use_tls_links(cfg, *tls_files_from_environment());  // never empty once a certificate is given
  }
  caf::actor_system sys{cfg};
  auto master = connect_to_master(sys, host, info.actor_port());
  if (!master) {
    std::cerr << "det repl: cannot join the master's actor system at " << host << ":"
              << info.actor_port() << ": " << error_sentence(sys, master.error()) << std::endl;
    return 1;
  }
  caf::scoped_actor self{sys};
  if (!commands.empty()) {
    for (auto& c : commands)
      if (!run_command(self, *master, token, c))
        break;
    return 0;
  }
  if (!::isatty(STDIN_FILENO)) {
    for (std::string line; std::getline(std::cin, line);)
      if (!run_command(self, *master, token, line))
        break;
    return 0;
  }
  std::cout << "det admin REPL, connected to " << host << ":" << info.actor_port()
            << " (master " << info.version() << "); type help" << std::endl;
  rl_attempted_completion_function = complete;
  std::string history = std::string(std::getenv("HOME") ? std::getenv("HOME") : ".") +
                        "/.det_repl_history";
  read_history(history.c_str());
  while (char* raw = readline("det> ")) {
    std::string line{raw};
    std::free(raw);
    if (!line.empty())
      add_history(line.c_str());
    if (!run_command(self, *master, token, line))
      break;
  }
  write_history(history.c_str());
  return 0;
}

} // namespace det::tools
