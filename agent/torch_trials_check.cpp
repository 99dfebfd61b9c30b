#include "agent/torch_trials_check.hpp"

#include "agent/child_process.hpp"
#include "node/log.hpp"

#include <future>
#include <memory>
#include <mutex>
#include <thread>

namespace det::runtime {

void check_torch_trials_in_background(const std::string& agent_id, const std::string& worker_binary) {
  std::thread([agent_id, worker_binary] {
    auto said = std::make_shared<std::string>();
    auto said_mutex = std::make_shared<std::mutex>();
    auto ended = std::make_shared<std::promise<process::process_exit>>();
    auto exit = ended->get_future();
    process::spawn_request request;
    request.argv = {worker_binary, "--check-torch-trials"};
    try {
      // This thread lives until the check ends: the child is killed when its starting thread ends.
      child_process::start(
          request,
          [said, said_mutex](const std::string&, std::string line) {
            std::lock_guard<std::mutex> lock(*said_mutex);
            *said += (said->empty() ? "" : "\n") + line;
          },
          [ended](process::process_exit e) { ended->set_value(e); });
    } catch (const std::exception& e) {
      logs::error(logs::component::agent, agent_id + ": cannot check the LibTorch trials: " + e.what());
      return;
    }
    const auto result = exit.get();
    if (result.signal == 0 && result.exit_code == 0) return;
    std::lock_guard<std::mutex> lock(*said_mutex);
    logs::error(logs::component::agent,
                agent_id + ": this node's workers cannot train LibTorch trials (builtin:mlp, cnn, gpt, plugins): " + *said);
  }).detach();
}

}  // namespace det::runtime
