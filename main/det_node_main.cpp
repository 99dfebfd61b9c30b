// det-node: the master or an agent. Agents start trials as det-worker processes.

#include <CLI/CLI.hpp>

#include "node/log.hpp"
#include "node/node.hpp"

int main(int argc, char** argv) {
  CLI::App app{"det-node: a det cluster node (master or agent)"};
  std::string role;
  app.add_option("--role", role, "master or agent")
      ->required()
      ->check(CLI::IsMember({"master", "agent"}));

  det::runtime::master_options m;
  app.add_option("--config", m.config_path, "master: config file (TOML)");
  app.add_option("--port", m.port, "master: actor port for agents and workers (default 8090)");
  app.add_option("--http-port", m.http_port, "master: REST API port (default 8080)");
  app.add_option("--db", m.db, "master: PostgreSQL connection string (default: embedded)");
  app.add_option("--data-dir", m.data_dir, "master: embedded PostgreSQL's directory");
  app.add_option("--listen", m.listen, "master: address to serve on (default 0.0.0.0)");
  app.add_option("--ready-file", m.ready_file, "master: write the bound ports here when serving");
  app.add_option("--webui", m.webui_dir, "master: the web UI's directory (default: ../share/det/webui beside det-node)");

  det::runtime::agent_options a;
  std::string master_addr;
  app.add_option("--master", master_addr, "agent: the master's HOST:PORT (actor port)");
  app.add_option("--pool", a.pool, "agent: resource pool to join (default: default)");
  app.add_option("--slots", a.slots, "agent: auto (GPUs, else one CPU slot) or cpu:N");
  app.add_option("--id", a.id, "agent: agent id (default: the hostname)");
  app.add_option("--warm-workers", a.warm_workers,
                 "agent: workers kept started ahead of their runs, LibTorch loaded (default: one per slot; 0: none)")
      ->check(CLI::NonNegativeNumber);
  app.add_option("--run-tasks-as", a.run_tasks_as,
                 "agent: owner (default; each det user's work as its own Unix user, which needs a root agent) or "
                 "agent-user (everyone's work as this agent's user: users can read each other's processes)")
      ->check(CLI::IsMember({"owner", "agent-user"}));
  std::string agent_token_file;
  app.add_option("--agent-token-file", agent_token_file,
                 "agent: file holding the master's agent token (DATA_DIR/agent-token; or set DET_AGENT_TOKEN)");

  app.add_option("--master-ca", a.master_ca,
                 "agent: CA certificate(s) the master's certificate chains to; joins it over TLS");
  app.add_option("--tls-cert", a.tls_cert, "agent: with --master-ca, this agent's certificate (signed by the master's "
                                           "security.tls.ca; its workers show it too)");
  app.add_option("--tls-key", a.tls_key, "agent: with --master-ca, the private key of --tls-cert");
  std::string jupyter, tensorboard, sshd;
  app.add_option("--jupyter", jupyter, "agent: notebooks' program (default: jupyter-notebook on PATH)");
  app.add_option("--tensorboard", tensorboard, "agent: TensorBoards' program (default: tensorboard on PATH)");
  app.add_option("--sshd", sshd, "agent: shells' OpenSSH server (default: /usr/sbin/sshd)");

  // Both roles: the master's [log] section says the same, and these win over it.
  std::string log_level, log_format;
  app.add_option("--log-level", log_level, "debug, info (default), warn or error: the least severe lines logged")
      ->check([](const std::string& v) {
        return det::config::log_level_named(v) ? std::string() : "expected " + std::string(det::config::log_level_names);
      });
  app.add_option("--log-format", log_format, "text (default): a line per event; json: a JSON object per line")
      ->check([](const std::string& v) {
        return det::config::log_format_named(v) ? std::string() : "expected " + std::string(det::config::log_format_names);
      });

  CLI11_PARSE(app, argc, argv);
  m.log_level = a.log_level = det::config::log_level_named(log_level);
  m.log_format = a.log_format = det::config::log_format_named(log_format);
  // As the flags say from the start, so that an error before the master reads its [log] (a bad
  // config) is written as they ask; the master applies its [log] under them once it has read it.
  det::logs::configure({m.log_level.value_or(det::config::log_level::info),
                        m.log_format.value_or(det::config::log_format::text)});
  try {
    if (role == "master") {
      det::runtime::block_stop_signals();
      return det::runtime::run_master(m);
    }
    det::runtime::block_stop_signals();
    if (!master_addr.empty())
      a.master = master_addr;
    a.programs["sshd"] = sshd.empty() ? "/usr/sbin/sshd" : sshd;
    if (!jupyter.empty()) a.programs["jupyter-notebook"] = jupyter;
    if (!tensorboard.empty()) a.programs["tensorboard"] = tensorboard;
    a.agent_token = det::runtime::read_agent_token(agent_token_file);
    return det::runtime::run_agent(a);
  } catch (const std::exception& e) {
    det::logs::error(role == "master" ? det::logs::component::master : det::logs::component::agent, e.what());
    return 1;
  }
}
