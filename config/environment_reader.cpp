#include "config/environment_reader.hpp"

#include <cmath>
#include <cstdio>

namespace det::config {

std::string describe_bytes(int64_t bytes) {
  static const char* units[] = {"bytes", "KiB", "MiB", "GiB", "TiB"};
  int unit = 0;
  double value = static_cast<double>(bytes);
  while (value >= 1024 && unit < 4) {
    value /= 1024;
    ++unit;
  }
  char text[32];
  std::snprintf(text, sizeof text, value == std::floor(value) ? "%.0f %s" : "%.1f %s", value, units[unit]);
  return text;
}

namespace detail {

// A byte count: an integer, or a string with Docker's 1024-based suffixes ("256m", "1.5GiB").
std::optional<int64_t> read_bytes(table_reader& reader, std::string_view key) {
  const auto* node = reader.read_node(key);
  if (!node) return std::nullopt;
  const std::string expected = "expected a byte count such as 268435456, \"256MiB\" or \"2G\"";
  if (auto n = integer_value(*node)) {
    if (*n > 0) return *n;
    reader.error(key, "must be positive");
    return std::nullopt;
  }
  const auto* text = node->as_string();
  if (!text) {
    reader.error(key, expected + ", got " + describe(*node));
    return std::nullopt;
  }
  const std::string& s = text->get();
  size_t used = 0;
  double number = 0;
  try {
    number = std::stod(s, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  std::string suffix = s.substr(used);
  for (auto& c : suffix) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  double scale = 0;
  if (suffix.empty() || suffix == "b") scale = 1;
  else if (suffix == "k" || suffix == "kb" || suffix == "kib") scale = 1024.0;
  else if (suffix == "m" || suffix == "mb" || suffix == "mib") scale = 1024.0 * 1024;
  else if (suffix == "g" || suffix == "gb" || suffix == "gib") scale = 1024.0 * 1024 * 1024;
  if (used == 0 || scale == 0 || !(number > 0)) {
    reader.error(key, expected + ", got \"" + s + "\"");
    return std::nullopt;
  }
  // 2^63 bytes and more do not fit (converting them would be undefined; found by fuzzing).
  if (!(number * scale < 9.2e18)) {
    reader.error(key, "\"" + s + "\" is more bytes than det can count (at most about 8 EiB)");
    return std::nullopt;
  }
  return static_cast<int64_t>(number * scale);
}

namespace {

// A list of "NAME=VALUE", or a table of NAME = value.
std::vector<std::pair<std::string, std::string>> read_variables(table_reader& reader, const toml::node& node,
                                                                const std::string& path) {
  std::vector<std::pair<std::string, std::string>> out;
  if (const auto* list = node.as_array()) {
    for (size_t i = 0; i < list->size(); ++i) {
      const auto* text = (*list)[i].as_string();
      auto variable = text ? variable_of(text->get()) : std::nullopt;
      if (variable)
        out.push_back(std::move(*variable));
      else
        reader.diag().add((*list)[i].source().begin, path + "[" + std::to_string(i) + "]",
                          "expected \"NAME=VALUE\" with NAME made of letters, digits and _, got " + describe((*list)[i]));
    }
  } else if (const auto* table = node.as_table()) {
    for (const auto& [name, value] : *table) {
      auto variable = variable_of(std::string(name.str()) + "=");
      if (!variable) {
        reader.diag().add(value.source().begin, path + "." + std::string(name.str()),
                          "is not a variable name: use letters, digits and _");
        continue;
      }
      if (const auto* text = value.as_string()) variable->second = text->get();
      else if (auto n = integer_value(value)) variable->second = std::to_string(*n);
      else if (auto b = value.value<bool>()) variable->second = *b ? "true" : "false";
      else {
        reader.diag().add(value.source().begin, path + "." + std::string(name.str()),
                          "expected a string, integer or boolean, got " + describe(value));
        continue;
      }
      out.push_back(std::move(*variable));
    }
  } else {
    reader.diag().add(node.source().begin, path, "expected a list of \"NAME=VALUE\" or a table, got " + describe(node));
  }
  return out;
}

// Determined's per-device form: {cpu = ..., cuda = ... (gpu: the same)}.
bool per_device(const toml::node& node) {
  const auto* table = node.as_table();
  if (!table || table->empty()) return false;
  for (const auto& [key, value] : *table)
    if (key != "cpu" && key != "cuda" && key != "gpu" && key != "rocm") return false;
  return true;
}

void read_image(table_reader& reader, environment_config& env) {
  const auto* node = reader.read_node("image");
  if (!node) return;
  if (const auto* text = node->as_string()) {
    env.cpu_image = env.cuda_image = text->get();
  } else if (per_device(*node)) {
    table_reader images(*node->as_table(), reader.path_of("image"), reader.diag());
    if (auto v = images.read_string("cpu")) env.cpu_image = *v;
    for (auto key : {"cuda", "gpu"})
      if (auto v = images.read_string(key)) env.cuda_image = *v;
    images.refuse({"rocm"}, "det has no ROCm slots");
    images.report_unknown_keys();
  } else {
    reader.error("image", "expected an image reference such as \"docker.io/library/python:3.11\" or a table "
                          "{ cpu = ..., cuda = ... }, got " + describe(*node));
  }
}

std::vector<std::string> read_strings(table_reader& reader, std::string_view key) {
  std::vector<std::string> out;
  const auto* list = reader.read_array(key);
  if (!list) return out;
  for (const auto& item : *list)
    if (const auto* text = item.as_string()) out.push_back(text->get());
    else reader.error(key, "expected a list of strings");
  return out;
}

void read_bind_mounts(table_reader& root, environment_config& env) {
  const auto* list = root.read_array("bind_mounts");
  if (!list) return;
  for (size_t i = 0; i < list->size(); ++i) {
    const auto path = root.path_of("bind_mounts") + "[" + std::to_string(i) + "]";
    const auto* table = (*list)[i].as_table();
    if (!table) {
      root.diag().add((*list)[i].source().begin, path, "expected a table with host_path and container_path");
      continue;
    }
    table_reader reader(*table, path, root.diag());
    bind_mount mount;
    for (auto [key, field] : {std::pair{"host_path", &mount.host_path}, {"container_path", &mount.container_path}}) {
      if (auto v = reader.read_string(key)) {
        if (v->empty() || v->front() != '/') reader.error(key, "must be an absolute path, not \"" + *v + "\"");
        *field = *v;
      } else if (!table->contains(key)) {
        reader.missing(key);
      }
    }
    if (auto v = reader.read_boolean("read_only")) mount.read_only = *v;
    reader.refuse({"propagation"}, "det bind-mounts with the container runtime's default propagation; remove it");
    reader.report_unknown_keys();
    env.bind_mounts.push_back(std::move(mount));
  }
}

}  // namespace

std::optional<std::pair<std::string, std::string>> variable_of(const std::string& text) {
  auto eq = text.find('=');
  if (eq == 0 || eq == std::string::npos) return std::nullopt;
  auto name = text.substr(0, eq);
  for (size_t i = 0; i < name.size(); ++i) {
    char c = name[i];
    bool ok = c == '_' || (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (i > 0 && c >= '0' && c <= '9');
    if (!ok) return std::nullopt;
  }
  return std::make_pair(name, text.substr(eq + 1));
}

void read_environment(table_reader& root, environment_config& env) {
  read_bind_mounts(root, env);
  const auto* table = root.read_table("environment");
  if (!table) return;
  table_reader reader(*table, root.path_of("environment"), root.diag());
  read_image(reader, env);
  if (const auto* node = reader.read_node("environment_variables")) {
    const auto path = reader.path_of("environment_variables");
    if (per_device(*node)) {
      for (const auto& [key, value] : *node->as_table()) {
        auto variables = read_variables(reader, value, path + "." + std::string(key.str()));
        if (key == "cpu") env.cpu_variables = std::move(variables);
        else if (key == "cuda" || key == "gpu") env.cuda_variables = std::move(variables);
      }
    } else {
      env.cpu_variables = env.cuda_variables = read_variables(reader, *node, path);
    }
  }
  if (auto v = reader.read_boolean("force_pull_image")) env.force_pull_image = *v;
  if (const auto* auth = reader.read_table("registry_auth")) {
    table_reader fields(*auth, reader.path_of("registry_auth"), reader.diag());
    registry_auth a;
    if (auto v = fields.read_string("username")) a.username = *v;
    else fields.missing("username");
    if (auto v = fields.read_string("password")) a.password = *v;
    else fields.missing("password");
    if (auto v = fields.read_string("serveraddress")) a.server = *v;
    fields.ignore({"email", "auth", "identitytoken", "registrytoken"});
    fields.report_unknown_keys();
    env.auth = std::move(a);
  }
  env.add_capabilities = read_strings(reader, "add_capabilities");
  env.drop_capabilities = read_strings(reader, "drop_capabilities");
  reader.refuse({"pod_spec"}, "det runs containers with podman, not Kubernetes; remove it");
  reader.refuse({"proxy_ports", "ports"}, "det proxies only the services of notebooks, shells and TensorBoards; remove it");
  reader.report_unknown_keys();
}

void read_resource_limits(table_reader& resources, environment_config& env) {
  if (auto v = read_bytes(resources, "shm_size")) env.shm_size_bytes = *v;
  if (auto v = read_bytes(resources, "memory_limit")) env.memory_limit_bytes = *v;
  if (auto v = resources.read_number("cpu_limit")) {
    if (*v > 0) env.cpu_limit = *v;
    else resources.error("cpu_limit", "must be a positive number of CPUs, such as 0.5 or 2");
  }
}

}  // namespace detail
}  // namespace det::config
