// det-node --role=master: PostgreSQL (embedded unless --db), migrations, the
// master's actors, the actor port for agents and workers, and the REST API.

#include <cstdlib>
#include <fstream>
#include <memory>
#include <optional>
#include <utility>
#include <vector>
#include <thread>
#include <algorithm>
#include <filesystem>
#include <malloc.h>
#include <unistd.h>

#include "master/spawn.hpp"
#include "auth/credentials.hpp"
#include "auth/private_file.hpp"
#include "auth/tls_files.hpp"
#include "messages/states.hpp"
#include "caf/all.hpp"
#include "caf/io/all.hpp"
#include "config/experiment_config.hpp"
#include "config/master_config.hpp"
#include "messages/actor_links.hpp"
#include "messages/caf_types.hpp"
#include "master/http_gateway.hpp"
#include "node/node.hpp"
#include "master/webui_routes.hpp"
#include "storage/shared_checkpoint_root.hpp"
#include "storage/database.hpp"
#include "storage/embedded_postgres.hpp"
#include "node/log.hpp"

namespace det::runtime {
namespace {

// Connections that answer REST reads, in each of the two lanes (handles.reader and
// handles.metric_reader): a long read on one leaves the other free.
constexpr size_t persistence_readers = 2;

std::string default_data_dir() {
  if (const char* xdg = std::getenv("XDG_DATA_HOME"); xdg && *xdg)
    return std::string(xdg) + "/det";
  const char* home = std::getenv("HOME");
  return std::string(home && *home ? home : "/tmp") + "/.local/share/det";
}

void write_ready_file(const std::string& path, int port, int http_port, int proxy_port) {
  if (path.empty())
    return;
  auto tmp = path + ".tmp";
  {
    std::ofstream out(tmp);
    out << "{\"port\": " << port << ", \"http_port\": " << http_port << ", \"proxy_port\": " << proxy_port
        << ", \"pid\": " << ::getpid()
        << "}\n";
  }
  std::rename(tmp.c_str(), path.c_str());
}

// searcher.source_*: the checkpoint the experiment's trials start from, as submit chose it. Its
// first trials recorded the choice (a source trial may have saved newer checkpoints since); a
// search that had created none yet chooses as submit does.
void restore_warm_start(storage::database& db, const std::vector<pb::Trial>& trials, experiment_plan& plan) {
  const auto& searcher = plan.config->searcher;
  if (!searcher.source_trial_id && searcher.source_checkpoint_uuid.empty())
    return;
  std::string uuid = searcher.source_checkpoint_uuid;
  for (const auto& t : trials)
    if (t.parent_trial_id() == 0 && !t.warm_start_checkpoint_uuid().empty())
      uuid = t.warm_start_checkpoint_uuid();
  if (uuid.empty() && searcher.source_trial_id) {
    int64_t best = -1;
    for (const auto& c : db.trial_checkpoints(*searcher.source_trial_id))
      if (c.state() == pb::CHECKPOINT_STATE_COMPLETED && c.steps_completed() >= best) {
        best = c.steps_completed();
        uuid = c.uuid();
      }
  }
  auto checkpoint = uuid.empty() ? std::nullopt : db.get_checkpoint(uuid);
  if (!checkpoint || checkpoint->state() != pb::CHECKPOINT_STATE_COMPLETED)
    throw std::runtime_error("its warm-start checkpoint " + (uuid.empty() ? std::string("(none)") : uuid) +
                             " is gone");
  plan.warm_start_uuid = uuid;
  plan.warm_start_dir = checkpoint->storage_path() + "/" + uuid;
}

// On the first start admin gets a random password, kept in DATA_DIR/admin-password (0600); no
// cluster ever has a blank or well-known one. The log names the file, never the password: logs
// are read by more people than the data directory.
void set_first_admin_password(storage::database& db, const std::string& data_dir) {
  auto admin = db.find_user("admin");
  if (!admin || !admin->password_hash.empty())
    return;
  auto password = auth::random_secret().substr(0, 24);
  auto path = data_dir + "/admin-password";
  // The file first: a crash before the hash is stored makes the next start write a new one.
  auth::write_private_file(path, password + "\n");
  if (!db.set_admin_password_if_unset(auth::hash_password(password)))
    return;
  logs::info(logs::component::master, "created user admin with the password in " + path +
                                          " (readable by this user only; change it with det user change-password)");
}

// The token agents present to register: the configured file's, or one made at the first start
// in DATA_DIR/agent-token.
std::string agent_token(const config::master_config& mc, const std::string& data_dir) {
  auto path = mc.agent_token_file.empty() ? data_dir + "/agent-token" : mc.agent_token_file;
  if (auto token = auth::read_first_line(path))
    return *token;
  if (!mc.agent_token_file.empty())
    throw std::runtime_error("security.agent_token_file: cannot read a token from " + path);
  auto token = auth::random_secret();
  auth::write_private_file(path, token + "\n");
  logs::info(logs::component::master, "agents register with the token in " + path +
                                          " (det-node --role=agent --agent-token-file " + path + ")");
  return token;
}

// Where a pool's agents dial the actor port: the process provider's are on this machine; others
// use the pool's master_url (its scheme and path dropped), else the address the master listens on
// when it is one, else this machine's hostname.
std::string agent_master_address(const config::provider_config& provider, const std::string& listen, int port) {
  if (provider.type == config::provider_type::process)
    return (listen == "0.0.0.0" || listen.empty() ? "127.0.0.1" : listen) + ":" + std::to_string(port);
  if (!provider.master_url.empty()) {
    auto url = provider.master_url;
    if (auto scheme = url.find("://"); scheme != std::string::npos) url = url.substr(scheme + 3);
    url = url.substr(0, url.find('/'));
    return url.find(':') == std::string::npos ? url + ":" + std::to_string(port) : url;
  }
  return (listen == "0.0.0.0" || listen.empty() ? hostname() : listen) + ":" + std::to_string(port);
}

// A provisioner for each pool with a provider, once the actor port its agents dial is known.
void start_provisioners(caf::actor_system& sys, const config::master_config& mc, master_handles& handles,
                        const directory_actor& directory, const std::string& db_url, const std::string& data_dir,
                        const std::string& listen, int port) {
  for (const auto& pool : mc.resource_pools) {
    if (!pool.provider) continue;
    provisioner_setup setup{db_url,
                            agent_master_address(*pool.provider, listen, port),
                            handles.agent_token,
                            node_executable(),
                            data_dir + "/provisioner/" + pool.name};
    auto provisioner = spawn_provisioner(sys, pool, handles.pools.at(pool.name), setup);
    caf::anon_send(directory, register_atom::value, std::string{"provisioner"}, pool.name,
                   caf::actor_cast<caf::actor>(provisioner));
    handles.provisioners[pool.name] = std::move(provisioner);
  }
}

// The REST API answers many requests at once with bodies of tens of kilobytes (a trial's metrics
// page is 50 KB for 204 reports), built and freed on 32 handler threads. glibc gives the free top
// of a heap back to the kernel once it passes 128 KiB, so each wave of such answers faulted its
// pages in again: under 200 clients an eighth of the master's samples were page faults taken in
// memmove (perf). Kept up to 32 MiB a heap, they are reused. One heap per core, not glibc's eight,
// bounds what is kept: after 10 s of 200 clients on GET /api/v1/trials/N/metrics the master held
// 75 MB (55 MB before; 242 MB with glibc's number of heaps). That route answered 1.9x as many
// requests a second, its p99 55 ms instead of 90 (bench/rest_load_bench.py, 3 rounds). 4 MiB a
// heap was no faster than the default.
void keep_freed_memory_for_reuse() {
  mallopt(M_ARENA_MAX, static_cast<int>(std::max(2u, std::thread::hardware_concurrency())));
  mallopt(M_TRIM_THRESHOLD, 32 << 20);
}

} // namespace

int run_master(const master_options& opts) {
  keep_freed_memory_for_reuse();
  config::master_config mc;
  if (!opts.config_path.empty())
    mc = config::load_master_config(opts.config_path);
  auto log_settings = mc.log;
  if (opts.log_level) log_settings.level = *opts.log_level;
  if (opts.log_format) log_settings.format = *opts.log_format;
  logs::configure(log_settings);
  // Before anything starts: CAF's OpenSSL module would abort on a file it cannot load.
  if (mc.tls)
    auth::check_tls_files(*mc.tls, {"security.tls.cert", "security.tls.key", "security.tls.ca"});
  int port = opts.port >= 0 ? opts.port : mc.port;
  int http_port = opts.http_port >= 0 ? opts.http_port : mc.http_port;
  auto db_url = !opts.db.empty() ? opts.db : mc.db;
  auto data_dir = !opts.data_dir.empty() ? opts.data_dir
                  : !mc.data_dir.empty() ? mc.data_dir
                                         : default_data_dir();

  std::optional<storage::embedded_postgres> pg;
  if (db_url.empty()) {
    pg.emplace(data_dir);
    pg->start();
    db_url = pg->conninfo();
    logs::info(logs::component::storage, "PostgreSQL running under " + data_dir);
  }
  auto db = std::make_shared<storage::database>(db_url);
  for (auto& m : db->migrate())
    logs::info(logs::component::storage, "applied migration " + m);
  std::filesystem::create_directories(data_dir);
  // Trials run as their owners' Unix users and write beneath it (the default checkpoint root).
  if (auto why = storage::let_everyone_through(data_dir); !why.empty()) logs::warn(logs::component::master, why);
  set_first_admin_password(*db, data_dir);
  // Unfinished experiments continue where their last searcher snapshot was (or from the start of
  // a search that had none yet, adopting the trials it had stored).
  std::vector<std::pair<pb::Experiment, experiment_plan>> restored;
  for (auto& r : db->restorable_experiments()) {
    try {
      auto plan = restore_experiment_plan(r.experiment, r.snapshot, r.trials, std::move(r.model_definition));
      restore_warm_start(*db, r.trials, plan);
      restored.emplace_back(r.experiment, std::move(plan));
    } catch (const std::exception& e) {
      logs::error(logs::component::experiment, "cannot restore experiment " + std::to_string(r.experiment.id()) +
                                                    ": " + e.what() + "; marking it ERROR");
      for (auto t : db->trials_of(r.experiment.id())) {
        if (is_terminal(t.state()))
          continue;
        t.set_state(pb::STATE_ERROR);
        t.set_exit_reason(std::string("the master could not restore its experiment: ") + e.what());
        db->update_trial(t);
      }
      db->set_experiment_state(r.experiment.id(), pb::STATE_ERROR, true);
    }
  }

  caf::actor_system_config cfg;
  configure_node(cfg);
  enable_prompt_scheduling(cfg);
  if (mc.tls)
    use_tls_links(cfg, *mc.tls);
  caf::actor_system sys{cfg};

  master_handles handles;
  handles.rows = spawn_row_writer(sys, db_url, handles.feed);
  handles.persistence = spawn_persistence(sys, db, db_url, handles.feed, handles.rows);
  handles.reader = spawn_persistence_readers(sys, db_url, handles.persistence, persistence_readers);
  handles.metric_reader = spawn_persistence_readers(sys, db_url, handles.persistence, persistence_readers);
  handles.collector = spawn_checkpoint_collector(sys, db_url, handles.persistence);
  handles.accounts = spawn_accounts(sys, db_url);
  handles.models = spawn_model_registry(sys, db_url);
  handles.projects = spawn_projects(sys, db_url);
  handles.agent_token = agent_token(mc, data_dir);
  handles.default_pool = mc.default_resource_pool;
  handles.default_aux_pool = mc.default_aux_resource_pool;
  handles.agent_reconnect_wait_s = mc.agent_reconnect_wait_s;
  handles.default_checkpoint_root = data_dir + "/checkpoints";
  handles.host_access = mc.host_access;
  handles.max_grid_trials = mc.max_grid_trials;
  handles.task_uid_base = mc.task_uid_base;
  handles.max_upload_bytes = mc.max_upload_bytes;
  for (auto& pool : mc.resource_pools)
    handles.pools[pool.name] = spawn_resource_pool(sys, pool, mc.agent_reconnect_wait_s);
  auto directory = spawn_directory(sys);
  handles.registry = spawn_agent_registry(sys, handles, directory);
  auto front = spawn_master_front(sys, handles, directory);
  handles.tasks = spawn_tasks(sys, db_url, handles, directory);
  caf::anon_send(directory, register_atom::value, std::string{"persistence"}, std::string{"main"},
                 caf::actor_cast<caf::actor>(handles.persistence));
  caf::anon_send(directory, register_atom::value, std::string{"persistence"}, std::string{"rows"},
                 caf::actor_cast<caf::actor>(handles.rows));
  for (auto& [name, pool] : handles.pools)
    caf::anon_send(directory, register_atom::value, std::string{"pool"}, name,
                   caf::actor_cast<caf::actor>(pool));
  for (auto& [exp, plan] : restored) {
    auto actor = spawn_experiment(sys, exp, std::move(plan), handles, directory);
    caf::anon_send(directory, register_atom::value, experiment_id{exp.id()}, actor);
  }

  // The network reaches the master only through gates (master/remote/network_gates.cpp).
  auto gate = spawn_front_gate(sys, handles, directory);
  auto bound = serve_master(gate, static_cast<uint16_t>(port), opts.listen);
  if (!bound)
    throw std::runtime_error("cannot serve the actor port " + opts.listen + ":" +
                             std::to_string(port) + ": " + sys.render(bound.error()));
  start_provisioners(sys, mc, handles, directory, db_url, data_dir, opts.listen, static_cast<int>(*bound));
  http_gateway gateway{sys, handles, front, static_cast<int>(*bound), mc.session_lifespan_s, mc.max_token_lifespan_s,
                       mc.tls, opts.webui_dir.empty() ? default_webui_directory() : opts.webui_dir, mc.proxy_host};
  const auto bound_ports = gateway.start(opts.listen, http_port, mc.proxy_port);
  const int bound_http = bound_ports.http;
  handles.http_port->store(bound_http);
  write_ready_file(opts.ready_file, *bound, bound_http, bound_ports.proxy);
  logs::info(logs::component::master, std::string("serving REST on ") + (mc.tls ? "https://" : "http://") + opts.listen +
                                          ":" + std::to_string(bound_http) + ", task services on port " +
                                          std::to_string(bound_ports.proxy) + " and actors on port " +
                                          std::to_string(*bound) + (mc.tls ? " over TLS" : ""));

  auto sig = wait_for_stop_signal();
  logs::info(logs::component::master, "stopping on signal " + std::to_string(sig));
  gateway.stop();
  caf::scoped_actor self{sys};
  self->send_exit(gate, caf::exit_reason::user_shutdown);
  self->send_exit(front, caf::exit_reason::user_shutdown);
  caf::anon_send_exit(handles.registry, caf::exit_reason::user_shutdown);
  caf::anon_send_exit(handles.tasks, caf::exit_reason::user_shutdown);
  // Provisioned agents outlive the master, as cloud instances do; the next master takes them back.
  for (auto& [name, provisioner] : handles.provisioners)
    caf::anon_send_exit(provisioner, caf::exit_reason::user_shutdown);
  for (auto& [name, pool] : handles.pools)
    caf::anon_send_exit(pool, caf::exit_reason::user_shutdown);
  // The directory takes every experiment, trial, allocation and agent proxy
  // with it; persistence goes last, after writing what it buffered.
  caf::anon_send_exit(directory, caf::exit_reason::user_shutdown);
  self->request(handles.persistence, std::chrono::seconds(30), flush_atom::value)
      .receive([](int64_t) {},
               [&](caf::error& e) {
                 logs::error(logs::component::storage, "the last metrics may be lost: " + sys.render(e));
               });
  self->monitor(handles.persistence);
  caf::anon_send_exit(handles.persistence, caf::exit_reason::user_shutdown);
  self->receive([](const caf::down_msg&) {},
                caf::after(std::chrono::seconds(10)) >> [] {
                  logs::error(logs::component::storage,
                              "persistence did not stop within 10 s; the metrics and logs it had not written yet "
                              "are lost");
                });
  // Everything is written; leave without tearing the actor system down, which
  // in CAF 0.17 can wait forever for an actor its network layer still
  // references, and would keep the embedded PostgreSQL running meanwhile.
  if (pg)
    pg->stop();
  logs::info(logs::component::master, "stopped");
  std::_Exit(0);
}

} // namespace det::runtime
