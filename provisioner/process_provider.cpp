// The process provider: each instance is a det-node --role=agent process on the master's machine,
// for one large machine and for tests. An agent outlives a master that is killed (it reconnects to
// the next one), so instances are found again by their command line in /proc, not remembered pids
// (provisioner/agent_processes).

#include <fcntl.h>
#include <unistd.h>

#include <csignal>
#include <cstring>
#include <map>
#include <set>
#include <stdexcept>
#include <thread>

#include "auth/private_file.hpp"
#include "process/process_exit.hpp"
#include "process/process_spawn.hpp"
#include "provisioner/agent_processes.hpp"
#include "provisioner/providers.hpp"

namespace det::provisioner {

namespace {

class process_provider final : public instance_provider {
 public:
  process_provider(config::provider_config config, provider_context context)
      : config_(std::move(config)), context_(std::move(context)) {}

  std::vector<listed_instance> list(const std::vector<std::string>& known) override {
    std::vector<listed_instance> out;
    gpus_in_use_.clear();
    for (const auto& [id, agent] : running_agents(known)) {
      out.push_back({id, instance_state::running});
      gpus_in_use_[id] = agent.gpus;
    }
    return out;
  }

  void launch(const std::string& id) override {
    std::filesystem::create_directories(context_.directory);
    // The token in a file only this user can read: an environment is inherited by whatever the
    // agent starts, and argv is readable by every user of the machine.
    const auto token_file = context_.directory / (id + ".token");
    auth::write_private_file(token_file.string(), context_.agent_token + "\n");
    process::spawn_request request;
    request.argv = {context_.node_binary, "--role=agent", "--master=" + context_.master, "--pool=" + context_.pool,
                    "--id=" + id, "--agent-token-file=" + token_file.string(),
                    "--slots=" + (config_.gpus.empty() ? "cpu:" + std::to_string(config_.instance_slots) : "auto")};
    if (!config_.gpus.empty()) {
      auto gpus = free_gpus();
      request.env["CUDA_VISIBLE_DEVICES"] = gpus;
      gpus_in_use_[id] = gpus;
    }
    const auto log = context_.directory / (id + ".log");
    int fd = ::open(log.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
    if (fd < 0) throw std::runtime_error("cannot open " + log.string() + ": " + std::strerror(errno));
    request.stdout_fd = request.stderr_fd = fd;
    // Not a process group of its own: Ctrl-C on a master run from a terminal stops its agents too.
    request.close_other_fds = true;  // it outlives the master, which must not leave it its sockets
    pid_t pid = -1;
    try {
      pid = process::spawn(request);
    } catch (...) {
      ::close(fd);
      throw;
    }
    ::close(fd);
    // Reaped when it ends, so that it leaves no zombie behind in the master.
    std::thread([pid] {
      try {
        process::wait_for_exit(pid);
      } catch (const std::exception&) {
      }
    }).detach();
  }

  void terminate(const std::string& id) override {
    for (const auto& [found, agent] : running_agents({id}))
      if (::kill(agent.pid, SIGTERM) != 0 && errno != ESRCH)
        throw std::runtime_error("cannot stop agent " + id + " (pid " + std::to_string(agent.pid) +
                                 "): " + std::strerror(errno));
  }

 private:
  // This pool's agents among `ids`.
  std::map<std::string, agent_process> running_agents(const std::vector<std::string>& ids) const {
    std::set<std::string> wanted(ids.begin(), ids.end());
    if (wanted.empty()) return {};
    return pool_agents(agent_processes(), context_.pool, wanted);
  }

  // The first group of instance_slots GPUs no running instance has.
  std::string free_gpus() const {
    std::set<std::string> used;
    for (const auto& [id, gpus] : gpus_in_use_) used.insert(gpus);
    for (size_t first = 0; first + config_.instance_slots <= config_.gpus.size(); first += config_.instance_slots) {
      std::string group;
      for (int i = 0; i < config_.instance_slots; ++i)
        group += (i ? "," : "") + std::to_string(config_.gpus[first + i]);
      if (!used.count(group)) return group;
    }
    throw std::runtime_error("every GPU the pool's provider names is in use by one of its agents");
  }

  config::provider_config config_;
  provider_context context_;
  std::map<std::string, std::string> gpus_in_use_;  // by instance id
};

}  // namespace

std::unique_ptr<instance_provider> make_process_provider(const config::provider_config& config,
                                                         provider_context context) {
  return std::make_unique<process_provider>(config, std::move(context));
}

}  // namespace det::provisioner
