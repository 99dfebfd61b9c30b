#include "tools/cli_checkpoint.hpp"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iostream>

#include "auth/untrusted_names.hpp"
#include "config/experiment_config.hpp"
#include "messages/api.pb.h"
#include "messages/json.hpp"
#include "tools/cli_format.hpp"
#include "tools/rest_client.hpp"

namespace det::tools {

namespace {

std::string checkpoint_path(const std::string& uuid) { return "/api/v1/checkpoints/" + uuid; }

std::string format_bytes(int64_t bytes) {
  const char* units[] = {"B", "KiB", "MiB", "GiB"};
  double value = static_cast<double>(bytes);
  int unit = 0;
  while (value >= 1024 && unit < 3) {
    value /= 1024;
    ++unit;
  }
  return format_number(value) + " " + units[unit];
}

int64_t total_size(const pb::Checkpoint& c) {
  int64_t total = 0;
  for (const auto& [name, size] : c.resources()) total += size;
  return total;
}

/// The experiment's searcher metric and its direction, from its config.
struct searcher_metric {
  std::string name;
  bool smaller_is_better = true;
};

searcher_metric metric_of_experiment(rest_client& master, std::int64_t experiment_id) {
  auto e = master.get<pb::GetExperimentResponse>(experiment_path(experiment_id));
  auto cfg = config::parse_experiment_config(e.experiment().config(),
                                             "experiment " + std::to_string(experiment_id));
  return searcher_metric{cfg.searcher.metric, cfg.searcher.smaller_is_better};
}

/// Completed checkpoints, best first by `metric`; those without it last, newest first among them.
std::vector<pb::Checkpoint> ranked(const pb::GetCheckpointsResponse& all, const searcher_metric& metric) {
  std::vector<pb::Checkpoint> out;
  for (const auto& c : all.checkpoints())
    if (c.state() == pb::CHECKPOINT_STATE_COMPLETED) out.push_back(c);
  auto value = [&](const pb::Checkpoint& c) -> std::optional<double> {
    auto it = c.validation_metrics().find(metric.name);
    if (it == c.validation_metrics().end()) return std::nullopt;
    return metric.smaller_is_better ? it->second : -it->second;
  };
  std::stable_sort(out.begin(), out.end(), [&](const pb::Checkpoint& a, const pb::Checkpoint& b) {
    auto va = value(a), vb = value(b);
    if (va.has_value() != vb.has_value()) return va.has_value();
    if (va && *va != *vb) return *va < *vb;
    return a.steps_completed() > b.steps_completed();
  });
  return out;
}

void print_checkpoints(const std::vector<pb::Checkpoint>& checkpoints, const std::string& metric) {
  table out({"UUID", "Trial ID", "Batches", "State", metric.empty() ? "Metric" : metric, "Size", "Reported"});
  for (const auto& c : checkpoints) {
    auto it = c.validation_metrics().find(metric);
    out.add_row({c.uuid(), std::to_string(c.trial_id()), std::to_string(c.steps_completed()), state_name(c.state()),
                 it == c.validation_metrics().end() ? "" : format_number(it->second), format_bytes(total_size(c)),
                 format_time(c.report_time())});
  }
  out.print(std::cout);
}

} // namespace

int describe_checkpoint(rest_client& master, const std::string& uuid, bool json) {
  auto reply = master.get<pb::GetCheckpointResponse>(checkpoint_path(uuid));
  const auto& c = reply.checkpoint();
  if (json) {
    std::cout << to_json(reply, true) << '\n';
    return 0;
  }
  table fields({"UUID", "Experiment ID", "Trial ID", "Batches", "Records", "Epochs", "State", "Reported"});
  fields.add_row({c.uuid(), std::to_string(c.experiment_id()), std::to_string(c.trial_id()),
                  std::to_string(c.steps_completed()), std::to_string(c.total_records()),
                  format_number(c.total_epochs()), state_name(c.state()), format_time(c.report_time())});
  fields.print(std::cout);
  std::cout << "\nStored in " << c.storage_path() << "/" << c.uuid() << "\n";
  if (!c.validation_metrics().empty())
    std::cout << "Validation metrics: " << format_metrics(c.validation_metrics()) << "\n";
  table files({"File", "Size"});
  for (const auto& [name, size] : c.resources()) files.add_row({name, format_bytes(size)});
  std::cout << "\nFiles:\n";
  files.print(std::cout);
  return 0;
}

int download_checkpoint(rest_client& master, const std::string& uuid, std::string output) {
  auto reply = master.get<pb::GetCheckpointResponse>(checkpoint_path(uuid));
  const auto& c = reply.checkpoint();
  if (c.state() != pb::CHECKPOINT_STATE_COMPLETED) {
    std::cerr << "det: checkpoint " << uuid << " was deleted; there is nothing to download.\n";
    return 1;
  }
  // The names come from whoever wrote the checkpoint: one that climbs out of the output directory
  // (or a master that passes one on) must not write a file elsewhere on this machine.
  for (const auto& [name, size] : c.resources())
    if (!auth::is_plain_relative_path(name)) {
      std::cerr << "det: checkpoint " << uuid << " names a file \"" << name
                << "\" that is not a plain relative path; nothing was downloaded.\n";
      return 1;
    }
  if (output.empty()) output = "checkpoints/" + uuid;
  std::filesystem::create_directories(output);
  for (const auto& [name, size] : c.resources()) {
    // Encoded: a file's name may hold spaces or '%'; one in a subdirectory gets its directory.
    auto bytes = master.get_bytes(checkpoint_path(uuid) + "/files/" + url_encoded(name));
    const auto path = std::filesystem::path(output) / name;
    std::filesystem::create_directories(path.parent_path());
    std::ofstream(path, std::ios::binary) << bytes;
  }
  std::cout << "Downloaded checkpoint " << uuid << " (" << c.resources_size() << " files, "
            << format_bytes(total_size(c)) << ") to " << output << "\n";
  return 0;
}

int delete_checkpoint(rest_client& master, const std::string& uuid) {
  pb::ErrorResponse ignored;
  master.del(checkpoint_path(uuid), ignored);
  std::cout << "Deleted checkpoint " << uuid << ".\n";
  return 0;
}

int list_experiment_checkpoints(rest_client& master, std::int64_t experiment_id, std::optional<int> best,
                                bool json) {
  auto all = master.get<pb::GetCheckpointsResponse>(experiment_path(experiment_id) +
                                                    "/checkpoints");
  auto metric = metric_of_experiment(master, experiment_id);
  std::vector<pb::Checkpoint> shown;
  if (best) {
    shown = ranked(all, metric);
    shown.resize(std::min<size_t>(shown.size(), static_cast<size_t>(*best)));
  } else {
    for (const auto& c : all.checkpoints())
      if (c.state() == pb::CHECKPOINT_STATE_COMPLETED) shown.push_back(c);
  }
  if (json) {
    pb::GetCheckpointsResponse out;
    for (auto& c : shown) *out.add_checkpoints() = std::move(c);
    std::cout << to_json(out, true) << '\n';
    return 0;
  }
  print_checkpoints(shown, metric.name);
  return 0;
}

int download_trial_checkpoint(rest_client& master, std::int64_t trial_id, bool best, std::string output) {
  auto trial = master.get<pb::GetTrialResponse>("/api/v1/trials/" + std::to_string(trial_id));
  auto all = master.get<pb::GetCheckpointsResponse>("/api/v1/trials/" + std::to_string(trial_id) + "/checkpoints");
  std::vector<pb::Checkpoint> candidates;
  if (best) {
    candidates = ranked(all, metric_of_experiment(master, trial.trial().experiment_id()));
  } else {
    for (const auto& c : all.checkpoints())
      if (c.state() == pb::CHECKPOINT_STATE_COMPLETED) candidates.push_back(c);
    std::stable_sort(candidates.begin(), candidates.end(), [](const auto& a, const auto& b) {
      return a.steps_completed() > b.steps_completed();
    });
  }
  if (candidates.empty()) {
    std::cerr << "det: trial " << trial_id << " has no checkpoint to download.\n";
    return 1;
  }
  return download_checkpoint(master, candidates.front().uuid(), std::move(output));
}

} // namespace det::tools
