#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>

#include "provisioner/instance_provider.hpp"

namespace det::provisioner {

namespace {

// Single-quoted for sh: the only character to escape is ' itself.
std::string quoted(const std::string& text) {
  std::string out = "'";
  for (char c : text) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

}  // namespace

std::string agent_startup_script(const config::provider_config& config, const provider_context& context,
                                 const std::string& id) {
  const std::string slots = config.cuda_slots ? "auto" : "cpu:" + std::to_string(config.instance_slots);
  std::string script = "#!/bin/sh\n"
                       "# Starts det agent " + id + " of pool " + context.pool + ": written by the det master.\n"
                       "set -eu\n";
  if (!config.startup_script.empty()) script += "# The pool's startup_script:\n" + config.startup_script + "\n";
  script += "node=" + quoted(context.node_binary) + "\n"
            "[ -x \"$node\" ] || node=$(command -v det-node) || {\n"
            "  echo \"det: det-node is not installed on $(hostname); install it in the pool's startup_script\" >&2\n"
            "  exit 1\n"
            "}\n"
            // The token goes in a fresh file only this user can read (mktemp makes it 0600 and
            // cannot be led through a planted symlink), never in the environment, which the
            // agent's children would inherit, nor in argv, which every user can read.
            "token_file=$(umask 077 && mktemp \"${TMPDIR:-/tmp}/det-agent-token.XXXXXX\")\n"
            "printf '%s\\n' " + quoted(context.agent_token) + " >\"$token_file\"\n"
            "exec \"$node\" --role=agent --master=" + quoted(context.master) + " --pool=" + quoted(context.pool) +
            " --id=" + quoted(id) + " --agent-token-file=\"$token_file\" --slots=" + slots + "\n";
  return script;
}

std::filesystem::path write_agent_startup_script(const config::provider_config& config,
                                                 const provider_context& context, const std::string& id) {
  std::filesystem::create_directories(context.directory);
  auto path = context.directory / (id + ".sh");
  // Made readable by its owner only from the start: it holds the agent token.
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0700);
  if (fd < 0) throw std::runtime_error("cannot write " + path.string() + ": " + std::strerror(errno));
  const auto script = agent_startup_script(config, context, id);
  const bool written = ::write(fd, script.data(), script.size()) == static_cast<ssize_t>(script.size());
  ::close(fd);
  if (!written) throw std::runtime_error("cannot write " + path.string());
  return path;
}

}  // namespace det::provisioner
