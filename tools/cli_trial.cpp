#include "tools/cli_trial.hpp"

#include <algorithm>
#include <deque>
#include <map>
#include <iostream>
#include <set>
#include <thread>

#include "messages/api.pb.h"
#include "messages/json.hpp"
#include "tools/cli_format.hpp"
#include "tools/rest_client.hpp"

namespace det::tools {

namespace {

constexpr auto poll_interval = std::chrono::milliseconds(500);
constexpr std::int64_t log_page = 1000;
constexpr std::int32_t metric_page = 10000;

std::string trial_path(std::int64_t id) { return "/api/v1/trials/" + std::to_string(id); }

// Every metric report of `group` of trial `id`, however many pages the master serves them in.
pb::GetTrialMetricsResponse trial_metrics(rest_client& master, std::int64_t id, const std::string& group) {
  return master.get_every_page<pb::GetTrialMetricsResponse>(
      trial_path(id) + "/metrics?group=" + group, metric_page,
      [](const pb::GetTrialMetricsResponse& r) { return r.metrics_size(); });
}

void print_metrics_history(rest_client& master, std::int64_t id, const std::string& group) {
  auto reply = trial_metrics(master, id, group);
  std::cout << "\n" << (group == "training" ? "Training" : "Validation") << " metrics:\n";
  std::set<std::string> names;
  for (const auto& report : reply.metrics())
    for (const auto& [name, value] : report.metrics())
      names.insert(name);
  std::vector<std::string> headers = {"Batches", "Records", "Epochs", "Time"};
  headers.insert(headers.end(), names.begin(), names.end());
  table out(headers);
  for (const auto& report : reply.metrics()) {
    std::vector<std::string> row = {std::to_string(report.total_batches()),
                                    std::to_string(report.total_records()),
                                    format_number(report.total_epochs()),
                                    format_time(report.time())};
    for (const auto& name : names) {
      auto it = report.metrics().find(name);
      row.push_back(it == report.metrics().end() ? "" : format_number(it->second));
    }
    out.add_row(std::move(row));
  }
  out.print(std::cout);
}

void print_log(const pb::LogEntry& entry) {
  std::string text = entry.text();
  while (!text.empty() && (text.back() == '\n' || text.back() == '\r'))
    text.pop_back();
  std::string time = format_time(entry.time());
  if (!time.empty())
    std::cout << "[" << time << "] ";
  std::cout << "[" << entry.stream() << "] " << text << '\n';
}

pb::TrialLogsResponse fetch_logs(rest_client& master, std::int64_t trial, std::int64_t after_id,
                                 std::int64_t limit) {
  return master.get<pb::TrialLogsResponse>(trial_path(trial) + "/logs?after_id=" +
                                           std::to_string(after_id) +
                                           "&limit=" + std::to_string(limit));
}

// Prints every log after `after_id` (all of them when `keep_last` is unset, else
// only the last `keep_last`) and returns the id of the last one fetched.
std::int64_t drain_logs(rest_client& master, std::int64_t trial, std::int64_t after_id,
                        std::optional<std::int64_t> keep_last) {
  std::deque<pb::LogEntry> kept;
  for (;;) {
    auto page = fetch_logs(master, trial, after_id, log_page);
    for (const auto& entry : page.logs()) {
      if (keep_last) {
        kept.push_back(entry);
        if (static_cast<std::int64_t>(kept.size()) > *keep_last)
          kept.pop_front();
      } else {
        print_log(entry);
      }
      after_id = std::max(after_id, entry.id());
    }
    if (page.logs_size() < log_page)
      break;
  }
  for (const auto& entry : kept)
    print_log(entry);
  std::cout.flush();
  return after_id;
}

} // namespace

// Profiling's groups summarised: per metric, how many samples, their mean and max, and the last.
void print_profile(rest_client& master, std::int64_t id, const std::string& group, const char* title) {
  auto reply = trial_metrics(master, id, group);
  struct summary {
    int64_t count = 0;
    double sum = 0, max = 0, last = 0;
  };
  std::map<std::string, summary> by_name;
  for (const auto& report : reply.metrics())
    for (const auto& [name, value] : report.metrics()) {
      if (name == "batches" || name == "epochs") continue;
      auto& s = by_name[name];
      s.max = s.count == 0 ? value : std::max(s.max, value);
      s.sum += value;
      s.last = value;
      ++s.count;
    }
  std::cout << "\n" << title << ":\n";
  if (by_name.empty()) {
    std::cout << "(none: set [profiling] enabled = true in the experiment config)\n";
    return;
  }
  table out({"Metric", "Samples", "Mean", "Max", "Last"});
  for (const auto& [name, s] : by_name)
    out.add_row({name, std::to_string(s.count), format_number(s.sum / static_cast<double>(s.count)),
                 format_number(s.max), format_number(s.last)});
  out.print(std::cout);
}

int describe_trial(rest_client& master, std::int64_t id, bool json, bool metrics, bool profile) {
  auto reply = master.get<pb::GetTrialResponse>(trial_path(id));
  if (json) {
    std::cout << det::to_json(reply, true) << '\n';
    return 0;
  }
  const auto& t = reply.trial();
  table fields({"Trial ID", "Experiment ID", "State", "Batches", "Restarts", "Seed",
                "Start Time", "End Time"});
  fields.add_row({std::to_string(t.id()), std::to_string(t.experiment_id()),
                  state_name(t.state()), format_batches(t), std::to_string(t.restarts()),
                  std::to_string(t.seed()), format_time(t.start_time()),
                  format_time(t.end_time())});
  fields.print(std::cout);
  std::cout << "\nHyperparameters: " << format_hparams(t.hparams()) << '\n';
  std::cout << "Latest training metrics: " << format_metrics(t.latest_training()) << '\n';
  std::cout << "Latest validation: " << format_validation(t.latest_validation()) << '\n';
  if (!t.exit_reason().empty())
    std::cout << "Exit reason: " << t.exit_reason() << '\n';
  if (metrics) {
    print_metrics_history(master, id, "training");
    print_metrics_history(master, id, "validation");
  }
  if (profile) {
    print_profile(master, id, "system", "System metrics (sampled every second)");
    print_profile(master, id, "timings", "Timings (mean seconds per step, per report period)");
  }
  return 0;
}

int print_trial_logs(rest_client& master, std::int64_t id, const trial_logs_options& options) {
  if (options.head) {
    std::int64_t after_id = 0;
    for (std::int64_t left = *options.head; left > 0;) {
      auto page = fetch_logs(master, id, after_id, std::min(left, log_page));
      for (const auto& entry : page.logs())
        print_log(entry);
      if (page.logs().empty())
        break;
      left -= page.logs_size();
      after_id = page.logs(page.logs_size() - 1).id();
    }
    return 0;
  }
  if (!options.follow) {
    drain_logs(master, id, 0, options.tail);
    return 0;
  }
  master.retry_unreachable_for(master_restart_window);
  std::int64_t after_id = 0;
  std::optional<std::int64_t> keep_last = options.tail;
  for (;;) {
    // The state is read before the logs: once it is terminal, one more drain
    // gets every line the trial wrote.
    bool ended = is_terminal(master.get<pb::GetTrialResponse>(trial_path(id)).trial().state());
    after_id = drain_logs(master, id, after_id, keep_last);
    keep_last.reset();
    if (ended)
      return 0;
    std::this_thread::sleep_for(poll_interval);
  }
}

} // namespace det::tools
