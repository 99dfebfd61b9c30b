#pragma once
// Where a pool's elastic agents come from: a provider launches, lists and terminates instances,
// each of which runs one det agent whose id is the instance's id. Calls block (they run
// commands); the provisioner actor, which is detached, is their only caller.

#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "config/master_config.hpp"
#include "provisioner/scale_decider.hpp"

namespace det::provisioner {

/// What every provider of a pool shares.
struct provider_context {
  std::string pool;
  std::string master;         // HOST:PORT of the master's actor port, as agents dial it
  std::string agent_token;    // what the master admits agents by
  std::string node_binary;    // det-node's absolute path on the master's machine
  std::filesystem::path directory;  // DATA_DIR/provisioner/POOL: start-up scripts and agent logs
};

struct listed_instance {
  std::string id;
  instance_state state = instance_state::running;
};

class instance_provider {
 public:
  virtual ~instance_provider() = default;
  /// The pool's instances that exist now. `known`: the ids launched here and not yet seen gone
  /// (the process and Slurm providers find theirs by these).
  virtual std::vector<listed_instance> list(const std::vector<std::string>& known) = 0;
  /// Starts instance `id`; throws std::runtime_error with a sentence (the command's stderr) when
  /// it could not.
  virtual void launch(const std::string& id) = 0;
  /// Ends instance `id`; throws std::runtime_error with a sentence when it could not.
  virtual void terminate(const std::string& id) = 0;
};

std::unique_ptr<instance_provider> make_provider(const config::provider_config& config, provider_context context);

/// The shell script an instance runs to become an agent of `context.pool` with id `id`: the
/// pool's startup_script, then det-node --role=agent (det-node on PATH, or where the master has it
/// when that path exists there too, as on a shared file system).
std::string agent_startup_script(const config::provider_config& config, const provider_context& context,
                                 const std::string& id);

/// Writes agent_startup_script to context.directory/ID.sh, readable by its owner only (it holds
/// the agent token), and returns its path.
std::filesystem::path write_agent_startup_script(const config::provider_config& config,
                                                 const provider_context& context, const std::string& id);

}  // namespace det::provisioner
