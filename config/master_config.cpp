#include "config/master_config.hpp"

#include "auth/task_user.hpp"

#include "config/config_file.hpp"
#include "config/section_readers.hpp"
#include "config/toml_reader.hpp"

#include <algorithm>
#include <cctype>
#include <limits>
#include <map>

namespace det::config {

namespace {

// Every key of Determined's master.yaml either takes effect or is refused: none is accepted silently.
constexpr std::string_view not_implemented = "det does not implement this Determined master setting; remove it";

using detail::diagnostics;
using detail::read_duration_s;
using detail::table_reader;

/// libpq quotes a value holding spaces or quotes with single quotes, escaping ' and \.
std::string libpq_value(const std::string& value) {
  bool plain = !value.empty() && std::none_of(value.begin(), value.end(), [](unsigned char c) {
    return std::isspace(c) || c == '\'' || c == '\\';
  });
  if (plain) return value;
  std::string quoted = "'";
  for (char c : value) {
    if (c == '\'' || c == '\\') quoted += '\\';
    quoted += c;
  }
  return quoted + "'";
}

/// Determined writes `db` as a table of fields; det keeps a libpq connection string.
std::string read_db(table_reader& root) {
  const auto* node = root.read_node("db");
  if (!node) return {};
  if (node->is_string()) return node->as_string()->get();
  const auto* table = node->as_table();
  if (!table) {
    root.error("db", "expected a libpq connection string or a table of host, port, user, password "
                     "and name, got " + detail::describe(*node));
    return {};
  }
  table_reader reader(*table, root.path_of("db"), root.diag());
  std::string connection;
  auto add = [&](std::string_view keyword, const std::optional<std::string>& value) {
    if (!value) return;
    if (!connection.empty()) connection += ' ';
    connection += std::string(keyword) + "=" + libpq_value(*value);
  };
  add("host", reader.read_string("host"));
  if (auto port = reader.read_integer_in("port", 1, 65535)) add("port", std::to_string(*port));
  add("user", reader.read_string("user"));
  add("password", reader.read_string("password"));
  add("dbname", reader.read_string("name"));
  add("sslmode", reader.read_string("ssl_mode"));
  add("sslrootcert", reader.read_string("ssl_root_cert"));
  reader.report_unknown_keys();
  return connection;
}


/// `[...scheduler]`: Determined's keys, on top of `base` (the resource manager's, for a pool).
scheduler_config read_scheduler(table_reader& parent, const scheduler_config& base) {
  scheduler_config scheduler = base;
  const auto* table = parent.read_table("scheduler");
  if (!table) return scheduler;
  table_reader reader(*table, parent.path_of("scheduler"), parent.diag());
  if (auto type = reader.read_string("type")) {
    if (*type == "priority" || *type == "fair_share" || *type == "round_robin")
      scheduler.type = *type;
    else
      reader.error("type", "expected \"priority\", \"fair_share\" or \"round_robin\", got \"" + *type + "\"");
  }
  if (auto fitting = reader.read_string("fitting_policy")) {
    if (*fitting == "best" || *fitting == "worst")
      scheduler.fitting_policy = *fitting;
    else
      reader.error("fitting_policy", "expected \"best\" or \"worst\", got \"" + *fitting + "\"");
  }
  if (const auto* priority = reader.read_table("priority")) {
    table_reader p(*priority, reader.path_of("priority"), reader.diag());
    if (auto v = p.read_boolean("preemption")) scheduler.preemption = *v;
    if (auto v = p.read_integer_in("default_priority", 1, 99)) scheduler.default_priority = static_cast<int>(*v);
    p.report_unknown_keys();
  }
  reader.refuse({"allow_heterogeneous_fits", "fair_share", "round_robin"}, not_implemented);
  reader.report_unknown_keys();
  return scheduler;
}

void read_resource_manager(table_reader& root, master_config& config, std::optional<std::string>& default_pool,
                           std::optional<std::string>& default_aux_pool) {
  const auto* table = root.read_table("resource_manager");
  if (!table) return;
  table_reader reader(*table, root.path_of("resource_manager"), root.diag());
  if (auto type = reader.read_string("type"); type && *type != "agent")
    reader.error("type", "det has only the agent resource manager, got \"" + *type + "\"");
  default_pool = reader.read_string("default_compute_resource_pool");
  default_aux_pool = reader.read_string("default_aux_resource_pool");
  if (auto seconds = read_duration_s(reader, "agent_reconnect_wait", 0,
                                     "expected seconds as a non-negative integer or a duration such as \"25s\" or \"1m\""))
    config.agent_reconnect_wait_s = *seconds;
  config.scheduler = read_scheduler(reader, config.scheduler);
  // These matter only to other resource managers, or ask for security det would not give.
  reader.refuse({"no_default_resource_pools", "require_authentication", "client_ca", "name", "metadata",
                 "cluster_name"},
                not_implemented);
  reader.report_unknown_keys();
}

/// `[security.tls]`: the master's certificate and key, and the CA its agents', workers' and
/// REPLs' certificates must chain to. All three or none: a half-written section is refused, never
/// served as plain text.
void read_tls(table_reader& security, master_config& config) {
  const auto* table = security.read_table("tls");
  if (!table) return;
  table_reader reader(*table, security.path_of("tls"), security.diag());
  auth::tls_files files;
  const struct { const char* key; std::string* field; const char* what; } keys[] = {
      {"cert", &files.cert, "the master's certificate chain (PEM)"},
      {"key", &files.key, "that certificate's private key (PEM)"},
      {"ca", &files.ca, "the CA certificates (PEM) that agents', workers' and REPLs' certificates must chain to"}};
  for (const auto& k : keys) {
    auto path = reader.read_string(k.key);
    if (path && !path->empty())
      *k.field = *path;
    else if (path || !table->contains(k.key))  // else read_string said what is wrong with it
      reader.error(k.key, std::string(path ? "must not be empty" : "is required") + ": the path of " + k.what);
  }
  reader.report_unknown_keys();
  if (!files.cert.empty() && !files.key.empty() && !files.ca.empty()) config.tls = files;
}

std::optional<std::vector<std::string>> read_strings(table_reader& reader, std::string_view key);

/// `[security] allowed_host_paths, allowed_capabilities`: the host access users' configs may have.
void read_host_access(table_reader& security, host_access_policy& policy) {
  if (auto paths = read_strings(security, "allowed_host_paths")) {
    for (const auto& path : *paths)
      if (path.empty() || path.front() != '/')
        security.error("allowed_host_paths", "expected absolute directories, got \"" + path + "\"");
    policy.allowed_host_paths = std::move(*paths);
  }
  if (auto capabilities = read_strings(security, "allowed_capabilities")) {
    for (const auto& capability : *capabilities)
      if (capability.empty())
        security.error("allowed_capabilities", "expected capability names such as \"NET_ADMIN\", got \"\"");
    policy.allowed_capabilities = std::move(*capabilities);
  }
}

/// `[security]`: where the agent token is kept, how long a login and an access token last, and TLS.
void read_security(table_reader& root, master_config& config) {
  const auto* table = root.read_table("security");
  if (!table) return;
  table_reader reader(*table, root.path_of("security"), root.diag());
  if (auto v = reader.read_string("agent_token_file")) config.agent_token_file = *v;
  if (auto seconds = read_duration_s(reader, "session_lifespan", 1,
                                     "expected seconds as a positive integer or a duration such as \"7d\" or \"12h\""))
    config.session_lifespan_s = *seconds;
  if (auto seconds = read_duration_s(reader, "max_token_lifespan", 1,
                                     "expected seconds as a positive integer or a duration such as \"30d\" or \"12h\""))
    config.max_token_lifespan_s = *seconds;
  if (auto base = reader.read_integer_in("task_uid_base", auth::smallest_task_uid_base, auth::largest_task_id))
    config.task_uid_base = *base;
  if (auto bytes = detail::read_bytes(reader, "max_upload_size")) {
    if (*bytes < smallest_max_upload_bytes || *bytes > largest_max_upload_bytes)
      reader.error("max_upload_size", "must be between " + describe_bytes(smallest_max_upload_bytes) + " and " +
                                          describe_bytes(largest_max_upload_bytes) + ", got " + describe_bytes(*bytes));
    else
      config.max_upload_bytes = *bytes;
  }
  read_host_access(reader, config.host_access);
  read_tls(reader, config);
  reader.refuse({"authz", "initial_user_password", "default_task", "ssh", "token"}, not_implemented);
  reader.report_unknown_keys();
}

/// `[log]`: Determined's `log.level`, and det's `format`.
void read_log(table_reader& root, master_config& config) {
  const auto* table = root.read_table("log");
  if (!table) return;
  table_reader reader(*table, root.path_of("log"), root.diag());
  if (auto v = reader.read_string("level")) {
    if (auto level = log_level_named(*v)) config.log.level = *level;
    else reader.error("level", "expected " + std::string(log_level_names) + ", got \"" + *v + "\"");
  }
  if (auto v = reader.read_string("format")) {
    if (auto format = log_format_named(*v)) config.log.format = *format;
    else reader.error("format", "expected " + std::string(log_format_names) + ", got \"" + *v + "\"");
  }
  reader.refuse({"color"}, "det's logs have no colors: text lines, or JSON objects with format = \"json\"");
  reader.report_unknown_keys();
}

const std::map<std::string, provider_type>& provider_types() {
  static const std::map<std::string, provider_type> types{
      {"process", provider_type::process}, {"command", provider_type::command}, {"slurm", provider_type::slurm}};
  return types;
}

std::optional<std::vector<std::string>> read_strings(table_reader& reader, std::string_view key) {
  const auto* array = reader.read_array(key);
  if (!array) return std::nullopt;
  if (!array->is_homogeneous<std::string>() && !array->empty()) {
    reader.error(key, "expected an array of strings");
    return std::nullopt;
  }
  std::vector<std::string> out;
  for (const auto& item : *array) out.push_back(item.as_string()->get());
  return out;
}

// `[resource_pools.provider]`: every key takes effect for its type or is refused by name.
std::optional<provider_config> read_provider(table_reader& pool) {
  const auto* table = pool.read_table("provider");
  if (!table) return std::nullopt;
  table_reader reader(*table, pool.path_of("provider"), pool.diag());
  provider_config p;
  auto type = reader.read_string("type");
  if (!type) {
    if (!table->contains("type")) reader.error_here("needs a type: process, command or slurm");
    return std::nullopt;
  }
  if (*type == "aws" || *type == "gcp") {
    reader.error("type", "det has no built-in " + *type + " provider: use type = \"command\" with the " +
                             (*type == "aws" ? "aws" : "gcloud") + " CLI's launch, list and terminate commands (README)");
    return std::nullopt;
  }
  auto known = provider_types().find(*type);
  if (known == provider_types().end()) {
    reader.error("type", "expected process, command or slurm, got \"" + *type + "\"");
    return std::nullopt;
  }
  p.type = known->second;
  if (auto v = reader.read_integer_in("min_instances", 0, 10000)) p.min_instances = static_cast<int>(*v);
  if (auto v = reader.read_integer_in("max_instances", 1, 10000)) p.max_instances = static_cast<int>(*v);
  if (p.min_instances > p.max_instances)
    reader.error("min_instances", "must not exceed max_instances (" + std::to_string(p.max_instances) + ")");
  const std::string period = "expected seconds as a positive integer or a duration such as \"20m\"";
  if (auto v = read_duration_s(reader, "max_idle_agent_period", 1, period)) p.max_idle_agent_period_s = *v;
  if (auto v = read_duration_s(reader, "max_agent_starting_period", 1, period)) p.max_agent_starting_period_s = *v;
  if (table->contains("instance_slots") && table->contains("slots_per_instance"))
    reader.error("slots_per_instance", "is Determined's other name for instance_slots: set one of them");
  for (auto key : {"instance_slots", "slots_per_instance"})
    if (auto v = reader.read_integer_in(key, 1, 1024)) p.instance_slots = static_cast<int>(*v);
  if (auto v = reader.read_string("master_url")) p.master_url = *v;
  if (auto v = reader.read_string("startup_script")) p.startup_script = *v;
  if (auto v = reader.read_string("slot_type")) {
    if (*v == "cuda" || *v == "gpu") p.cuda_slots = true;
    else if (*v != "cpu") reader.error("slot_type", "expected cpu or cuda, got \"" + *v + "\"");
  }
  auto only_for = [&](provider_type t, std::initializer_list<std::string_view> keys) {
    if (p.type == t) return true;
    for (auto key : keys)
      if (table->contains(key)) reader.error(key, "applies only to type = \"" + to_string(t) + "\"");
    return false;
  };
  if (p.type == provider_type::process)
    for (auto key : {"master_url", "startup_script"})
      if (table->contains(key))
        reader.error(key, "applies to the command and slurm providers: the process provider starts agents on the "
                          "master's own machine");
  if (only_for(provider_type::process, {"gpus"})) {
    if (const auto* gpus = reader.read_array("gpus")) {
      for (const auto& g : *gpus)
        if (auto index = detail::integer_value(g); index && *index >= 0) p.gpus.push_back(static_cast<int>(*index));
        else reader.error("gpus", "expected GPU indices such as [0, 1, 2, 3]");
      if (static_cast<int>(p.gpus.size()) < p.max_instances * p.instance_slots)
        reader.error("gpus", "names " + std::to_string(p.gpus.size()) + " GPUs, fewer than max_instances x instance_slots = " +
                                 std::to_string(p.max_instances * p.instance_slots));
      p.cuda_slots = true;
    }
  }
  if (only_for(provider_type::command, {"launch", "terminate", "list"})) {
    for (auto [key, field] : {std::pair{"launch", &p.launch}, {"terminate", &p.terminate}, {"list", &p.list}}) {
      if (auto v = reader.read_string(key); v && !v->empty()) *field = *v;
      else if (!table->contains(key)) reader.missing(key);
      else reader.error(key, "must be a command line");
    }
  }
  if (only_for(provider_type::slurm, {"partition", "gres", "time_limit", "sbatch_args"})) {
    if (auto v = reader.read_string("partition")) p.partition = *v;
    if (auto v = reader.read_string("gres")) p.gres = *v;
    if (auto v = reader.read_string("time_limit")) p.time_limit = *v;
    if (auto v = read_strings(reader, "sbatch_args")) p.sbatch_args = *v;
  }
  if (p.type == provider_type::process && p.cuda_slots && p.gpus.empty())
    reader.error("slot_type", "the process provider hands out GPUs it is given: list them with gpus = [0, 1, ...]");
  reader.refuse({"container_startup_script", "agent_docker_image", "agent_docker_network", "agent_docker_runtime",
                 "agent_reconnect_attempts", "agent_reconnect_backoff", "agent_config_file_contents",
                 "master_cert_name", "launch_error_timeout", "launch_error_retries"},
                "det starts agents without Docker and retries failed launches with backoff; remove it");
  reader.report_unknown_keys();
  return p;
}

void read_resource_pools(table_reader& root, master_config& config) {
  for (auto& pool : config.resource_pools) pool.scheduler = config.scheduler;
  const auto* array = root.read_array("resource_pools");
  if (!array) return;
  if (array->empty()) {
    root.error("resource_pools", "must list at least one pool");
    return;
  }
  config.resource_pools.clear();
  for (size_t i = 0; i < array->size(); ++i) {
    auto path = root.path_of("resource_pools") + "[" + std::to_string(i) + "]";
    const auto* table = (*array)[i].as_table();
    if (!table) {
      root.diag().add((*array)[i].source().begin, path,
                      "expected a table with a pool_name, got " + detail::describe((*array)[i]));
      continue;
    }
    table_reader reader(*table, path, root.diag());
    resource_pool_config pool;
    if (auto name = reader.read_string("pool_name")) {
      pool.name = *name;
    } else if (!table->contains("pool_name")) {
      reader.missing("pool_name");
    }
    if (auto v = reader.read_string("description")) pool.description = *v;
    if (auto v = reader.read_integer_in("max_aux_containers_per_agent", 0, 100000))
      pool.max_aux_containers_per_agent = static_cast<int>(*v);
    pool.scheduler = read_scheduler(reader, config.scheduler);
    reader.refuse({"agent_reconnect_wait"}, "det keeps one wait for every pool: set resource_manager.agent_reconnect_wait");
    pool.provider = read_provider(reader);
    reader.refuse({"agent_reattach_enabled", "task_container_defaults", "kubernetes_namespace",
                   "max_cpu_containers_per_agent"},
                  not_implemented);
    reader.report_unknown_keys();
    if (pool.name.empty()) continue;
    auto names = config.pool_names();
    if (std::find(names.begin(), names.end(), pool.name) != names.end())
      reader.error("pool_name", "the pool \"" + pool.name + "\" is already defined");
    else
      config.resource_pools.push_back(std::move(pool));
  }
}

} // namespace

std::string to_string(provider_type type) {
  for (const auto& [name, t] : provider_types())
    if (t == type) return name;
  return "process";
}

namespace {

// Why `pattern` cannot be proxy_host, or "": "*." then DNS labels (letters, digits, '-').
std::string bad_proxy_host_reason(const std::string& pattern) {
  const std::string example = " (e.g. \"*.proxy.example.com\": task ID is served at ID.proxy.example.com)";
  if (pattern.rfind("*.", 0) != 0) return "must start with \"*.\"" + example + ", not \"" + pattern + "\"";
  const auto suffix = pattern.substr(2);
  if (suffix.empty() || suffix.size() > 200 || suffix.front() == '.' || suffix.back() == '.' ||
      suffix.find("..") != std::string::npos ||
      suffix.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-.") != std::string::npos)
    return "must be \"*.\" and a DNS name of letters, digits, '-' and '.'" + example + ", not \"" + pattern + "\"";
  return "";
}

void read_proxy_listener(table_reader& reader, master_config& config) {
  if (auto v = reader.read_integer_in("proxy_port", 0, 65535)) config.proxy_port = static_cast<int>(*v);
  if (config.proxy_port != 0 && config.proxy_port == config.http_port)
    reader.error("proxy_port", "must differ from http_port (" + std::to_string(config.http_port) +
                                   "): task services are served on an origin apart from the web UI's");
  if (auto v = reader.read_string("proxy_host")) {
    if (auto why = bad_proxy_host_reason(*v); !why.empty())
      reader.error("proxy_host", why);
    else
      config.proxy_host = *v;
  }
}

}  // namespace

master_config parse_master_config(std::string_view toml_text, std::string_view source_path) {
  diagnostics diag(source_path);
  toml::table root = parse_document(toml_text, source_path, diag);

  table_reader reader(root, "", diag);
  master_config config;
  if (auto v = reader.read_integer_in("port", 0, 65535)) config.port = static_cast<int>(*v);
  if (auto v = reader.read_integer_in("http_port", 0, 65535)) config.http_port = static_cast<int>(*v);
  read_proxy_listener(reader, config);
  config.db = read_db(reader);
  if (auto v = reader.read_string("data_dir")) config.data_dir = *v;
  if (auto v = reader.read_integer_in("max_grid_trials", 1, largest_max_grid_trials)) config.max_grid_trials = *v;
  std::optional<std::string> default_pool, default_aux_pool;
  read_resource_manager(reader, config, default_pool, default_aux_pool);
  read_resource_pools(reader, config);
  const auto names = config.pool_names();
  auto pick_default = [&](const std::optional<std::string>& named, const char* key, std::string& out) {
    if (named) {
      if (std::find(names.begin(), names.end(), *named) == names.end())
        diag.add(root["resource_manager"][key].node()->source().begin, std::string("resource_manager.") + key,
                 "names the pool \"" + *named + "\", which resource_pools does not define");
      out = *named;
    } else if (!names.empty()) {
      out = names.front();
    }
  };
  pick_default(default_pool, "default_compute_resource_pool", config.default_resource_pool);
  pick_default(default_aux_pool, "default_aux_resource_pool", config.default_aux_resource_pool);
  read_security(reader, config);
  read_log(reader, config);
  if (config.tls)
    for (const auto& pool : config.resource_pools)
      if (pool.provider)
        reader.error("resource_pools", "pool \"" + pool.name + "\" has a provider, but det cannot yet give the agents "
                     "it starts the certificates that security.tls requires: start TLS agents by hand");
  reader.refuse({"cluster_name", "logging", "telemetry", "task_container_defaults", "checkpoint_storage",
                 "webhooks", "observability", "tensorboard_timeout", "notebook_timeout", "enable_cors",
                 "launch_error", "feature_switches", "root", "cache", "integrations", "scim",
                 "additional_resource_managers"},
                not_implemented);
  reader.report_unknown_keys();
  diag.throw_if_any();
  return config;
}

std::vector<std::string> master_config::pool_names() const {
  std::vector<std::string> names;
  for (const auto& pool : resource_pools) names.push_back(pool.name);
  return names;
}

master_config load_master_config(const std::string& path) {
  return parse_master_config(detail::read_config_file(path), path);
}

} // namespace det::config
