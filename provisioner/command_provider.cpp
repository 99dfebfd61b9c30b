// The command provider: the user's own launch, list and terminate command lines, the hook for any
// cloud's CLI. Each runs through /bin/sh with {instance_id} (also the agent's id), {pool},
// {master} (HOST:PORT agents dial), {agent_token} and {startup_script} (the path of the script
// that makes a machine that agent, for user data or startup-script metadata) filled in.

#include <sstream>
#include <stdexcept>

#include "process/captured_run.hpp"
#include "provisioner/providers.hpp"

namespace det::provisioner {

namespace {

// `text` with each {name} of `values` replaced by its value.
std::string filled_in(std::string text, const std::map<std::string, std::string>& values) {
  for (const auto& [name, value] : values) {
    const std::string mark = "{" + name + "}";
    for (auto at = text.find(mark); at != std::string::npos; at = text.find(mark, at + value.size()))
      text.replace(at, mark.size(), value);
  }
  return text;
}

class command_provider final : public instance_provider {
 public:
  command_provider(config::provider_config config, provider_context context)
      : config_(std::move(config)), context_(std::move(context)) {}

  std::vector<listed_instance> list(const std::vector<std::string>&) override {
    auto result = run("list", config_.list, "");
    std::vector<listed_instance> out;
    std::istringstream lines(result);
    std::string line;
    while (std::getline(lines, line)) {
      std::istringstream words(line);
      std::string id, state;
      if (!(words >> id)) continue;
      words >> state;
      out.push_back({id, state.empty() ? instance_state::running : instance_state_from(state)});
    }
    return out;
  }

  void launch(const std::string& id) override {
    write_agent_startup_script(config_, context_, id);
    run("launch", config_.launch, id);
  }

  void terminate(const std::string& id) override { run("terminate", config_.terminate, id); }

 private:
  std::string run(const std::string& which, const std::string& line, const std::string& id) {
    const auto filled = filled_in(line, {{"instance_id", id},
                                         {"pool", context_.pool},
                                         {"master", context_.master},
                                         {"agent_token", context_.agent_token},
                                         {"startup_script", (context_.directory / (id + ".sh")).string()}});
    return process::run_shell(filled).output_of("the provider's " + which + " command");
  }

  config::provider_config config_;
  provider_context context_;
};

}  // namespace

std::unique_ptr<instance_provider> make_command_provider(const config::provider_config& config,
                                                         provider_context context) {
  return std::make_unique<command_provider>(config, std::move(context));
}

}  // namespace det::provisioner
