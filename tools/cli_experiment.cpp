#include "tools/cli_experiment.hpp"
#include "tools/cli_projects.hpp"

#include <fstream>
#include <iostream>
#include <set>
#include <sstream>
#include <thread>

#include <google/protobuf/empty.pb.h>

#include "config/experiment_config.hpp"
#include "config/yaml_config.hpp"
#include "messages/api.pb.h"
#include "messages/json.hpp"
#include "node/tar_archive.hpp"
#include "tools/cli_format.hpp"
#include "tools/progress_line.hpp"
#include "tools/rest_client.hpp"

namespace det::tools {

namespace {

constexpr auto poll_interval = std::chrono::milliseconds(500);
constexpr std::int32_t list_page = 1000;  // experiments a request

// The trial the progress line follows: the first one training, else the first
// one not yet ended, else the last one.
const pb::Trial* shown_trial(const pb::GetExperimentResponse& exp) {
  const pb::Trial* pending = nullptr;
  for (const auto& trial : exp.trials()) {
    if (trial.state() == pb::STATE_RUNNING)
      return &trial;
    if (!pending && !is_terminal(trial.state()))
      pending = &trial;
  }
  if (pending)
    return pending;
  return exp.trials().empty() ? nullptr : &exp.trials(exp.trials_size() - 1);
}

void append_metric(std::string& line, const google::protobuf::Map<std::string, double>& metrics,
                   const std::string& name) {
  auto it = metrics.find(name);
  if (it != metrics.end())
    line += " | " + name + " " + format_number(it->second);
}

std::string progress_text(const pb::GetExperimentResponse& exp) {
  std::string line = "Experiment " + std::to_string(exp.experiment().id()) + " " +
                     state_name(exp.experiment().state());
  if (exp.trials_size() > 1) {
    int ended = 0;
    for (const auto& trial : exp.trials())
      ended += is_terminal(trial.state()) ? 1 : 0;
    line += " | trials " + std::to_string(ended) + "/" + std::to_string(exp.trials_size()) +
            " done";
  }
  const pb::Trial* trial = shown_trial(exp);
  if (!trial)
    return line + " | waiting for the searcher's first trial";
  line += " | trial " + std::to_string(trial->id()) + " " + state_name(trial->state()) + " | " +
          format_batches(*trial) + " batches";
  append_metric(line, trial->latest_training(), "loss");
  append_metric(line, trial->latest_validation(), "validation_accuracy");
  append_metric(line, trial->latest_validation(), "validation_loss");
  return line;
}

// The trial whose latest validation of the searcher's metric is best, with
// its hyperparameters: what a search was run to find.
void print_best_trial(const pb::GetExperimentResponse& exp) {
  if (exp.trials_size() < 2)
    return;
  config::experiment_config cfg;
  try {
    cfg = config::parse_experiment_config(exp.experiment().config(), "experiment config");
  } catch (const config::config_error&) {
    return;
  }
  const auto& metric = cfg.searcher.metric;
  const pb::Trial* best = nullptr;
  for (const auto& t : exp.trials()) {
    auto it = t.latest_validation().find(metric);
    if (it == t.latest_validation().end())
      continue;
    if (!best) {
      best = &t;
      continue;
    }
    double b = best->latest_validation().at(metric);
    if (cfg.searcher.smaller_is_better ? it->second < b : it->second > b)
      best = &t;
  }
  if (best)
    std::cout << "Best trial " << best->id() << ": " << metric << " "
              << best->latest_validation().at(metric) << " with hyperparameters "
              << best->hparams() << '\n';
}

int follow_experiment(rest_client& master, std::int64_t id) {
  master.retry_unreachable_for(master_restart_window);
  auto progress = progress_line::for_stdout();
  for (;;) {
    auto exp = master.get<pb::GetExperimentResponse>(experiment_path(id));
    if (is_terminal(exp.experiment().state())) {
      progress.finish();
      std::cout << "Experiment " << id << " ended " << state_name(exp.experiment().state())
                << ".\n";
      for (const auto& trial : exp.trials()) {
        std::cout << "  Trial " << trial.id() << " " << state_name(trial.state()) << " after "
                  << format_batches(trial) << " batches";
        if (!trial.latest_validation().empty())
          std::cout << "; " << format_validation(trial.latest_validation());
        if (!trial.exit_reason().empty())
          std::cout << " (" << trial.exit_reason() << ")";
        std::cout << '\n';
      }
      print_best_trial(exp);
      return exp.experiment().state() == pb::STATE_COMPLETED ? 0 : 1;
    }
    progress.show(progress_text(exp));
    std::this_thread::sleep_for(poll_interval);
  }
}

} // namespace

int create_experiment(rest_client& master, const std::string& config_path, const std::string& model_dir,
                      const std::string& project, bool follow) {
  pb::CreateExperimentRequest request;
  auto project_given = project;
  try {
    auto checked = config::experiment_config_text(config_path);  // checked first, a YAML file by its own lines
    // Determined's workspace and project keys, unless --project names one.
    auto cfg = config::parse_experiment_config(checked, config_path);
    if (project_given.empty() && !cfg.project.empty())
      project_given = (cfg.workspace.empty() ? "Uncategorized" : cfg.workspace) + "/" + cfg.project;
    // A YAML file as it is: the master reads it by its path's suffix.
    request.set_config(config::read_experiment_config_file(config_path));
  } catch (const config::config_error& e) {
    std::cerr << e.what() << '\n';
    return 1;
  }
  request.set_config_path(config_path);
  if (!project_given.empty())
    request.set_project_id(project_id_of(master, project_given));
  if (!model_dir.empty()) {
    try {
      request.set_model_definition(runtime::pack_directory(model_dir, std::size_t{96} << 20));
    } catch (const std::exception& e) {
      std::cerr << "det: " << e.what() << '\n';
      return 1;
    }
  }
  pb::CreateExperimentResponse created;
  master.post("/api/v1/experiments", request, created);
  std::cout << "Created experiment " << created.experiment().id() << std::endl;
  return follow ? follow_experiment(master, created.experiment().id()) : 0;
}

int list_experiments(rest_client& master, const experiment_query& query, bool json) {
  std::string path = "/api/v1/experiments?sort_by=" + url_encoded(query.sort_by) + "&order_by=" + (query.descending ? "desc" : "asc");
  if (!query.user.empty()) path += "&user=" + url_encoded(query.user);
  if (!query.label.empty()) path += "&label=" + url_encoded(query.label);
  if (!query.project.empty()) path += "&project_id=" + std::to_string(project_id_of(master, query.project));
  for (const auto& s : query.states) path += "&state=" + url_encoded(s);
  if (query.all) path += "&archived=any";
  auto rows = [](const pb::GetExperimentsResponse& r) { return r.experiments_size(); };
  auto list = query.limit > 0 ? master.get<pb::GetExperimentsResponse>(path + "&offset=" + std::to_string(query.offset) +
                                                                      "&limit=" + std::to_string(query.limit))
                              : master.get_every_page<pb::GetExperimentsResponse>(path, list_page, rows);
  if (json) {
    std::cout << det::to_json(list, true) << '\n';
    return 0;
  }
  table out({"ID", "Owner", "Project", "Name", "State", "Trials", "Searcher", "Labels", "Archived", "Start Time"});
  for (const auto& exp : list.experiments()) {
    out.add_row({std::to_string(exp.id()), exp.owner(), exp.project(), exp.name(), state_name(exp.state()),
                 std::to_string(exp.num_trials()), exp.searcher(), comma_joined(exp.labels()), exp.archived() ? "yes" : "no",
                 format_time(exp.start_time())});
  }
  out.print(std::cout);
  return 0;
}

int describe_experiment(rest_client& master, std::int64_t id, describe_format format) {
  auto exp = master.get<pb::GetExperimentResponse>(experiment_path(id));
  switch (format) {
    case describe_format::json:
      std::cout << det::to_json(exp, true) << '\n';
      return 0;
    case describe_format::toml:
      std::cout << exp.experiment().config();
      return 0;
    case describe_format::yaml:
      std::cout << config::toml_to_yaml(exp.experiment().config());
      return 0;
    case describe_format::summary:
      break;
  }
  const auto& e = exp.experiment();
  table fields({"ID", "Name", "State", "Searcher", "Metric", "Trials", "Start Time", "End Time"});
  fields.add_row({std::to_string(e.id()), e.name(), state_name(e.state()), e.searcher(),
                  e.metric(), std::to_string(e.num_trials()), format_time(e.start_time()),
                  format_time(e.end_time())});
  fields.print(std::cout);
  if (!e.description().empty())
    std::cout << "\nDescription: " << e.description() << '\n';
  std::cout << "Owner: " << e.owner() << (e.archived() ? " (archived)" : "") << "; project: " << e.project() << '\n';
  if (e.labels_size() > 0) {
    std::cout << "Labels:";
    for (const auto& l : e.labels()) std::cout << ' ' << l;
    std::cout << '\n';
  }

  // One column per validation metric any trial reported, in name order.
  std::set<std::string> metric_names;
  for (const auto& trial : exp.trials())
    for (const auto& [name, value] : trial.latest_validation())
      metric_names.insert(name);
  // Rungs only for successive-halving searches; parents only for PBT copies.
  bool rungs = false, parents = false;
  for (const auto& trial : exp.trials()) {
    rungs = rungs || trial.has_rung();
    parents = parents || trial.parent_trial_id() != 0;
  }
  std::vector<std::string> headers = {"Trial ID", "State", "Batches"};
  if (rungs)
    headers.push_back("Rung");
  if (parents)
    headers.push_back("Parent");
  headers.insert(headers.end(), {"Stopped by searcher", "Hyperparameters"});
  headers.insert(headers.end(), metric_names.begin(), metric_names.end());
  table trials(headers);
  for (const auto& trial : exp.trials()) {
    std::vector<std::string> row = {std::to_string(trial.id()), state_name(trial.state()),
                                    format_batches(trial)};
    if (rungs)
      row.push_back(trial.has_rung() ? std::to_string(trial.rung()) : "");
    if (parents)
      row.push_back(trial.parent_trial_id() != 0 ? std::to_string(trial.parent_trial_id()) : "");
    row.insert(row.end(), {trial.searcher_stopped() ? "yes" : "no", format_hparams(trial.hparams())});
    for (const auto& name : metric_names) {
      auto it = trial.latest_validation().find(name);
      row.push_back(it == trial.latest_validation().end() ? "" : format_number(it->second));
    }
    trials.add_row(std::move(row));
  }
  std::cout << "\nTrials:\n";
  trials.print(std::cout);
  return 0;
}

/// POSTs an experiment action (kill, pause, activate) and says what happens now.
int experiment_action(rest_client& master, std::int64_t id, const std::string& action,
                      const std::string& what_now) {
  google::protobuf::Empty body, reply;
  master.post(experiment_path(id) + "/" + action, body, reply);
  std::cout << "Experiment " << id << " " << what_now << ".\n";
  return 0;
}

} // namespace det::tools
