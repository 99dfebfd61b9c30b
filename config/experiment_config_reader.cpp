#include "config/environment_reader.hpp"
#include "config/section_readers.hpp"

#include <ctime>
#include <limits>

namespace det::config {

namespace {

using detail::diagnostics;
using detail::read_length;
using detail::table_reader;

constexpr int64_t int_max = std::numeric_limits<int>::max();
constexpr int64_t no_limit = std::numeric_limits<int64_t>::max();

void read_entrypoint(table_reader& root, experiment_config& config) {
  if (auto command = detail::read_command(root, "entrypoint", "\"builtin:mlp\""))
    config.entrypoint = std::move(*command);
  else if (!root.source_table().contains("entrypoint"))
    root.missing("entrypoint");
}

std::string joined(const std::vector<std::string>& parts) {
  std::string text;
  for (const auto& part : parts) text += (text.empty() ? "" : " ") + part;
  return text;
}

void read_resources(table_reader& root, resources_config& resources, environment_config& environment) {
  const auto* table = root.read_table("resources");
  if (!table) return;
  table_reader reader(*table, root.path_of("resources"), root.diag());
  if (auto v = reader.read_integer_in("slots_per_trial", 0, int_max)) resources.slots_per_trial = static_cast<int>(*v);
  if (auto v = reader.read_string("resource_pool")) resources.resource_pool = *v;
  if (auto v = reader.read_integer_in("priority", 1, 99)) resources.priority = static_cast<int>(*v);
  if (auto v = reader.read_number("weight")) {
    if (*v < 0)
      reader.error("weight", "must not be negative");
    else
      resources.weight = *v;
  }
  if (auto v = reader.read_integer_in("max_slots", 0, int_max)) resources.max_slots = static_cast<int>(*v);
  detail::read_resource_limits(reader, environment);
  // Determined ignores `slots` too (slots_per_trial says it).
  reader.ignore({"slots"});
  reader.refuse({"devices"}, "det gives a trial its slots' GPUs and nothing else; mount what it needs with bind_mounts");
  reader.refuse({"agent_label"}, "det has no agent labels: put the agents in a resource pool and name it in "
                                 "resource_pool");
  if (auto v = reader.read_boolean("is_single_node"); v && *v)
    reader.error("is_single_node", "det places a trial's slots on as many agents as they need; ask for no more "
                                   "slots_per_trial than one agent has, or remove it");
  if (auto v = reader.read_boolean("native_parallel"); v && *v)
    reader.error("native_parallel", "was removed from Determined; start one process per slot with "
                                    "python3 -m determined.launch.torch_distributed instead");
  reader.report_unknown_keys();
}

std::vector<std::string> read_labels(table_reader& root) {
  std::vector<std::string> labels;
  if (const auto* list = root.read_array("labels")) {
    for (const auto& item : *list)
      if (const auto* text = item.as_string())
        labels.push_back(text->get());
      else
        root.error("labels", "expected a list of strings");
  }
  return labels;
}

void read_checkpoint_storage(table_reader& root, checkpoint_storage_config& storage) {
  const auto* table = root.read_table("checkpoint_storage");
  if (!table) return;
  table_reader reader(*table, root.path_of("checkpoint_storage"), root.diag());
  if (auto type = reader.read_string("type")) {
    if (*type == "s3" || *type == "gcs" || *type == "azure") {
      reader.error("type", "det stores checkpoints on a file system; use shared_fs or directory instead of " + *type);
      return;  // the keys of a cloud store would only add noise
    }
    if (*type != "shared_fs" && *type != "directory") {
      reader.error("type", "unknown checkpoint storage type \"" + *type + "\"; expected shared_fs or directory");
      return;
    }
    storage.type = *type;
  }
  if (storage.type == "directory") {
    if (auto v = reader.read_string("container_path"))
      storage.host_path = *v;
    else if (!table->contains("container_path"))
      reader.missing("container_path");
  } else {
    if (auto v = reader.read_string("host_path")) storage.host_path = *v;
    if (auto v = reader.read_string("storage_path")) {
      // Determined's rule: storage_path lies inside host_path. An absolute one must name a
      // directory below it; taken alone it would be nested under the master's default root.
      const auto& host = storage.host_path;
      if (v->empty() || v->front() != '/')
        storage.storage_path = *v;
      else if (host.empty())
        reader.error("storage_path", "is absolute, so it needs the host_path it lies in: set host_path to the shared "
                                     "directory and storage_path to a path inside it");
      else if (v->rfind(host + (host.back() == '/' ? "" : "/"), 0) == 0)
        storage.storage_path = v->substr(host.size() + (host.back() == '/' ? 0 : 1));
      else
        reader.error("storage_path", "\"" + *v + "\" is not inside host_path \"" + host + "\"");
    }
    reader.ignore({"container_path", "checkpoint_path", "tensorboard_path", "propagation"});
  }
  if (auto v = reader.read_integer_in("save_experiment_best", 0, int_max)) storage.save_experiment_best = static_cast<int>(*v);
  if (auto v = reader.read_integer_in("save_trial_best", 0, int_max)) storage.save_trial_best = static_cast<int>(*v);
  if (auto v = reader.read_integer_in("save_trial_latest", 0, int_max)) storage.save_trial_latest = static_cast<int>(*v);
  reader.report_unknown_keys();
}

void read_reproducibility(table_reader& root, experiment_config& config) {
  if (const auto* table = root.read_table("reproducibility")) {
    table_reader reader(*table, root.path_of("reproducibility"), root.diag());
    if (auto seed = reader.read_integer_in("experiment_seed", 0, std::numeric_limits<uint32_t>::max())) {
      config.experiment_seed = static_cast<uint32_t>(*seed);
      config.experiment_seed_given = true;
    }
    reader.report_unknown_keys();
  }
  // Determined's default: the current Unix time, truncated to 32 bits.
  if (!config.experiment_seed_given) config.experiment_seed = static_cast<uint32_t>(std::time(nullptr));
}

/// Records and epochs become batches through the global batch size (and epochs through
/// records_per_epoch), so a length in those units needs them.
void check_convertible(diagnostics& diag, const toml::node* where, const std::string& path,
                       const std::optional<length>& l, const experiment_config& config) {
  if (!where || !l || l->value == 0 || l->unit == length_unit::batches) return;
  auto unit = to_string(l->unit);
  if (!config.global_batch_size())
    diag.add(where->source().begin, path,
             "a length in " + unit + " needs hyperparameters.global_batch_size, a constant positive "
             "integer, to be converted to batches");
  if (l->unit == length_unit::epochs && config.records_per_epoch <= 0)
    diag.add(where->source().begin, path,
             "a length in epochs needs records_per_epoch, the number of training records in one epoch");
}

/// Training code reads the batch size from this hyperparameter, so a constant must be usable.
void check_global_batch_size(const toml::table& root, diagnostics& diag, const experiment_config& config) {
  auto it = config.hparams.find("global_batch_size");
  if (it == config.hparams.end() || it->second.type != hyperparameter_type::constant ||
      config.global_batch_size())
    return;
  diag.add(root["hyperparameters"]["global_batch_size"].node()->source().begin,
           "hyperparameters.global_batch_size", "must be a positive integer, got " + it->second.value_json);
}

void check_length_units(const toml::table& root, diagnostics& diag, const experiment_config& config) {
  const auto& searcher = config.searcher;
  check_convertible(diag, root["searcher"]["max_length"].node(), "searcher.max_length", searcher.max_length, config);
  if (!searcher.max_length && searcher.max_time) {
    if (auto unit = length_unit_from_string(searcher.time_metric))
      check_convertible(diag, root["searcher"]["time_metric"].node(), "searcher.time_metric",
                        length{*unit, *searcher.max_time}, config);
  }
  check_convertible(diag, root["searcher"]["length_per_round"].node(), "searcher.length_per_round",
                    searcher.length_per_round, config);
  check_convertible(diag, root["min_validation_period"].node(), "min_validation_period",
                    config.min_validation_period, config);
  check_convertible(diag, root["min_checkpoint_period"].node(), "min_checkpoint_period",
                    config.min_checkpoint_period, config);
}

// Determined keys for what det does not do, each with what it does instead (config/README.md).
void refuse_unsupported(table_reader& reader) {
  reader.refuse({"log_policies"}, "det does not match trial logs against patterns; a failed trial restarts up to "
                                  "max_restarts times, whatever its log says");
  reader.refuse({"retention_policy"}, "det keeps a trial's logs until its experiment is deleted "
                                      "(det experiment delete)");
  reader.refuse({"slurm", "pbs"}, "det schedules trials on its own agents, not through an HPC workload manager; "
                                  "run det agents on the cluster's nodes instead");
  reader.refuse({"security"}, "det runs a trial as its owner's agent user (det user link-with-agent-user); "
                              "remove it");
  reader.refuse({"tensorboard_storage"}, "det writes TensorBoard files under checkpoint_storage, where "
                                         "det tensorboard reads them; remove it");
  reader.refuse({"data_layer"}, "was removed from Determined; read data in your training code");
  reader.refuse({"internal"}, "is Determined's own; remove it");
}

detail::length_decider length_decider_of(const experiment_config& config) {
  if (config.harness_entrypoint()) return detail::length_decider::harness;
  if (config.legacy_trial_class_entrypoint()) return detail::length_decider::legacy_trial_class;
  return detail::length_decider::process;
}

} // namespace

experiment_config parse_experiment_config(std::string_view toml_text, std::string_view source_path) {
  diagnostics diag(source_path);
  toml::table root = parse_document(toml_text, source_path, diag);

  table_reader reader(root, "", diag);
  experiment_config config;
  read_entrypoint(reader, config);
  if (auto v = reader.read_string("name"))
    config.name = *v;
  else
    config.name = "Experiment (" + joined(config.entrypoint) + ")";
  if (auto v = reader.read_string("description")) config.description = *v;
  config.labels = read_labels(reader);
  if (auto v = reader.read_string("workspace")) config.workspace = *v;
  if (auto v = reader.read_string("project")) config.project = *v;
  config.searcher = detail::read_searcher_config(reader, length_decider_of(config));
  config.hparams = detail::read_hyperparameters(reader, config.searcher.name == "grid");
  read_resources(reader, config.resources, config.environment);
  detail::read_environment(reader, config.environment);
  config.min_validation_period = read_length(reader, "min_validation_period", 0);
  config.min_checkpoint_period = read_length(reader, "min_checkpoint_period", 0);
  read_checkpoint_storage(reader, config.checkpoint_storage);
  if (auto v = reader.read_integer_in("max_restarts", 0, int_max)) config.max_restarts = static_cast<int>(*v);
  if (auto v = reader.read_integer_in("preemption_timeout", 1, int_max)) config.preemption_timeout_s = *v;
  if (auto v = reader.read_integer_in("records_per_epoch", 0, no_limit)) config.records_per_epoch = *v;
  if (auto v = reader.read_integer_in("scheduling_unit", 1, int_max)) config.scheduling_unit = static_cast<int>(*v);
  if (const auto* data = reader.read_table("data")) config.data_json = detail::to_json_text(*data);
  if (const auto* optimizations = reader.read_table("optimizations")) {
    table_reader section(*optimizations, reader.path_of("optimizations"), reader.diag());
    if (auto v = section.read_string("mixed_precision")) {
      if (*v == "O0" || *v == "O1" || *v == "O2" || *v == "O3")
        config.mixed_precision = *v;
      else
        section.error("mixed_precision", "expected O0 (off), O1, O2 or O3, got \"" + *v + "\"");
    }
    if (auto v = section.read_number("gradient_clip_norm")) {
      if (*v >= 0)
        config.gradient_clip_norm = *v;
      else
        section.error("gradient_clip_norm", "must be 0 (no clipping) or positive");
    }
    if (auto v = section.read_boolean("cuda_graph")) config.cuda_graph = *v;
    // Determined's PyTorch Trainer reads these from the config its process is given
    // (DET_EXPERIMENT_CONFIG); det's own harness trials do not use them.
    section.ignore({"aggregation_frequency", "average_aggregated_gradients", "average_training_metrics",
                    "gradient_compression", "grad_updates_size_file", "tensor_fusion_threshold",
                    "tensor_fusion_cycle_time", "auto_tune_tensor_fusion"});
    section.report_unknown_keys();
  }
  if (const auto* profiling = reader.read_table("profiling")) {
    table_reader section(*profiling, reader.path_of("profiling"), reader.diag());
    if (auto v = section.read_boolean("enabled")) config.profiling_enabled = *v;
    // Determined's bounds and sync switch: det profiles the whole run; a script reads them from
    // its config.
    section.ignore({"begin_on_batch", "end_after_batch", "sync_timings"});
    section.report_unknown_keys();
  }
  read_reproducibility(reader, config);
  // Determined keys that det accepts so that Determined configs load, but does not act on yet.
  if (config.environment.uses_image() && !config.entrypoint.empty() && config.harness_entrypoint())
    diag.add(root["environment"]["image"].node()->source().begin, "environment.image",
             "applies to Core API entrypoints: C++ trials (builtin:, plugin:) run in det's own environment");
  // Keys whose meaning is for the training code, which reads them from the config its process is
  // given (DET_EXPERIMENT_CONFIG, Determined's ClusterInfo.trial._config).
  if (auto v = reader.read_string("checkpoint_policy"); v && *v != "best" && *v != "all" && *v != "none")
    reader.error("checkpoint_policy", "expected best, all or none, got \"" + *v + "\"");
  reader.read_boolean("perform_initial_validation");
  reader.read_boolean("debug");
  reader.read_table("integrations");
  refuse_unsupported(reader);
  reader.report_unknown_keys();
  check_global_batch_size(root, diag, config);
  check_length_units(root, diag, config);
  diag.throw_if_any();
  return config;
}

} // namespace det::config
