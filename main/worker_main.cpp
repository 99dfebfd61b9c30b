// det-worker: one run of one trial, started by an agent. A binary of its own,
// linked with only what a worker needs: agents start one per trial run, and
// the dynamic linking of det-node's libraries (PostgreSQL, HTTP, TLS, CUDA)
// would cost every run tens of milliseconds of CPU.
// With --warm it starts before its run: it loads what --preload says and connects to the master,
// then reads the run an agent hands it on stdin (node/run_handover.hpp) and goes on as a worker
// started with those arguments.

#include <cstdlib>
#include <cstring>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include <sys/prctl.h>
#include <unistd.h>

#include <csignal>

#include <CLI/CLI.hpp>

#include "gpu/builtin_trials.hpp"
#include "process/unix_identity.hpp"
#include "node/node.hpp"
#include "node/run_handover.hpp"
#include "worker/worker_connection.hpp"

namespace {

/// Parses `line` (the program, then its arguments) as a command line; -1 when it parses, else
/// the exit status CLI11 gives.
int parse(CLI::App& app, std::vector<std::string> line) {
  std::vector<char*> argv;
  for (auto& w : line) argv.push_back(w.data());
  CLI11_PARSE(app, static_cast<int>(argv.size()), argv.data());
  return -1;
}

/// Shows the run's command line where ps and /proc/PID/cmdline read this process's: over its own
/// arguments, whose last (--title-room) the agent made long enough for any run's.
void show_in_command_line(int argc, char** argv, const std::vector<std::string>& words) {
  char* begin = argv[0];
  char* end = argv[argc - 1] + std::strlen(argv[argc - 1]) + 1;
  std::string text;
  for (const auto& w : words) text.append(w).push_back('\0');
  if (text.size() > static_cast<std::size_t>(end - begin)) return;  // no room: ps shows --warm
  std::memcpy(begin, text.data(), text.size());
  std::memset(begin + text.size(), 0, static_cast<std::size_t>(end - begin) - text.size());
}

}  // namespace

int main(int argc, char** argv) {
  const pid_t agent = ::getppid();
  CLI::App app{"det-worker: trains one trial for the master (agents start it)"};
  det::runtime::worker_options w;
  bool warm = false;
  app.add_option("--master", w.master, "the master's HOST:PORT (actor port)")->required();
  app.add_option("--allocation", w.allocation_id, "allocation id");
  app.add_option("--trial", w.trial_id, "trial id")->check(CLI::PositiveNumber);
  app.add_option("--rank", w.rank, "this worker's place in a run of several workers (0: the chief)")
      ->check(CLI::NonNegativeNumber);
  app.add_option("--world-size", w.world_size, "how many workers train the run together")
      ->check(CLI::PositiveNumber);
  app.add_flag("--warm", warm, "start ahead of the run: load what --preload says, then read the run from stdin");
  std::string preload_word = det::runtime::to_string(det::runtime::warm_preload::libtorch);
  app.add_option("--preload", preload_word, "with --warm: libtorch (the default) or nothing")
      ->check([](const std::string& word) {
        return det::runtime::warm_preload_from(word) ? std::string{} : "must be libtorch or nothing";
      });
  std::string title_room;
  app.add_option("--title-room", title_room, "with --warm: room for the run's command line, which ps then shows");
  bool check_torch = false;
  app.add_flag("--check-torch-trials", check_torch,
               "load libdet_torch_trials.so as a run would, say whether it fits this node's LibTorch, and exit");
  for (int i = 1; i < argc; ++i)
    if (std::string(argv[i]) == "--check-torch-trials") {  // needs no --master: answered before parsing
      auto problem = det::harness::check_torch_trials();
      std::cout << (problem.empty() ? "det-worker: the LibTorch trials load." : problem) << std::endl;
      return problem.empty() ? 0 : 1;
    }
  CLI11_PARSE(app, argc, argv);
  try {
    std::unique_ptr<det::runtime::worker_connection> link;
    if (warm) {
      if (*det::runtime::warm_preload_from(preload_word) == det::runtime::warm_preload::libtorch)
        det::harness::preload_torch_trials();
      auto [host, port] = det::runtime::split_host_port(w.master, "--master");
      link = std::make_unique<det::runtime::worker_connection>(host, port);
      link->reach_master();
      std::cout << det::runtime::warm_ready_line << std::endl;
      auto run = det::runtime::read_handover(std::cin);
      if (!run) return 0;  // the agent went away before it had a run for this worker
      // Its owner's user before anything of the run: what it loads, unpacks and writes is theirs.
      if (run->run_as) {
        if (int error = det::process::become(*run->run_as); error != 0) {
          std::cerr << "det-worker: cannot become uid " << run->run_as->uid << " gid " << run->run_as->gid << ": "
                    << std::strerror(error) << std::endl;
          return 1;
        }
        // A change of user clears the death signal its agent started it with.
        ::prctl(PR_SET_PDEATHSIG, SIGKILL);
        if (::getppid() != agent) return 1;  // the agent died meanwhile
      }
      for (const auto& [name, value] : run->env) ::setenv(name.c_str(), value.c_str(), 1);
      std::vector<std::string> line{argv[0], "--master=" + w.master};
      line.insert(line.end(), run->args.begin(), run->args.end());
      app.clear();
      if (int failed = parse(app, line); failed >= 0) return failed;
      show_in_command_line(argc, argv, line);
    }
    if (w.allocation_id.empty() || w.trial_id <= 0) {
      std::cerr << "det-worker: --allocation and --trial name the run (or --warm reads them from stdin)" << std::endl;
      return 2;
    }
    return det::runtime::run_worker(w, std::move(link));
  } catch (const std::exception& e) {
    std::cerr << "det-worker: " << e.what() << std::endl;
    return 1;
  }
}
