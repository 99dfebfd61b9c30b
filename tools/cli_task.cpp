#include "tools/cli_task.hpp"

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <iostream>
#include <thread>

#include "master/tasks/task_lifecycle.hpp"
#include "config/config_error.hpp"
#include "config/config_overrides.hpp"
#include "config/task_config.hpp"
#include "messages/json.hpp"
#include "node/tar_archive.hpp"
#include "tools/cli_format.hpp"
#include "tools/rest_client.hpp"

namespace det::tools {
namespace {

// Following polls soon after a change and backs off while nothing happens: a command's first
// line shows within tens of milliseconds without a steady stream of requests.
constexpr auto first_poll = std::chrono::milliseconds(10);
constexpr auto poll_interval = std::chrono::milliseconds(200);
constexpr std::int64_t log_page = 1000;

// The CLI's word for the kind: det cmd|shell|notebook|tensorboard.
const char* cli_name(pb::TaskKind kind) {
  switch (kind) {
    case pb::TASK_KIND_SHELL: return "shell";
    case pb::TASK_KIND_NOTEBOOK: return "notebook";
    case pb::TASK_KIND_TENSORBOARD: return "tensorboard";
    default: return "cmd";
  }
}

const pb::Task& task_of(const pb::TaskReply& reply) {
  return reply.has_shell() ? reply.shell()
         : reply.has_notebook() ? reply.notebook()
         : reply.has_tensorboard() ? reply.tensorboard()
                                   : reply.command();
}

std::string state_text(pb::TaskState state) {
  auto name = pb::TaskState_Name(state);
  return name.rfind("TASK_STATE_", 0) == 0 ? name.substr(11) : name;
}

// The config as sent: the file as it is, or with the command line's changes applied.
pb::CreateTaskRequest request_of(pb::TaskKind kind, const task_launch& launch) {
  pb::CreateTaskRequest request;
  std::string text = launch.config_path.empty() ? "" : read_file(launch.config_path);
  std::string path = launch.config_path.empty() ? "the command line's config" : launch.config_path;
  auto overrides = launch.overrides;
  if (!launch.entrypoint.empty()) {
    std::string words;
    for (const auto& w : launch.entrypoint) words += (words.empty() ? "" : ", ") + config::toml_string_literal(w);
    overrides.push_back("entrypoint=[" + words + "]");
  }
  if (!overrides.empty()) {
    text = config::with_overrides(text, path, overrides);
    if (!launch.config_path.empty()) path += " with the command line's changes";
  }
  config::parse_task_config(text, path, from_pb(kind));  // the same check the master makes, before any upload
  request.set_config(text);
  request.set_config_path(path);
  for (auto id : launch.experiment_ids) request.add_experiment_ids(id);
  for (auto id : launch.trial_ids) request.add_trial_ids(id);
  if (!launch.context_dir.empty())
    request.set_context(runtime::pack_directory(launch.context_dir, std::size_t{96} << 20));
  return request;
}

pb::TaskLogsResponse fetch_logs(rest_client& master, const std::string& id, std::int64_t after_id) {
  return master.get<pb::TaskLogsResponse>("/api/v1/tasks/" + id + "/logs?after_id=" + std::to_string(after_id) +
                                          "&limit=" + std::to_string(log_page));
}

// A task's own lines as it wrote them; the master's about it marked as such.
std::int64_t drain_logs(rest_client& master, const std::string& id, std::int64_t after_id) {
  for (;;) {
    auto page = fetch_logs(master, id, after_id);
    for (const auto& entry : page.logs()) {
      (entry.stream() == "stderr" ? std::cerr : std::cout)
          << (entry.stream() == "master" ? "[master] " : "") << entry.text() << '\n';
      after_id = std::max(after_id, entry.id());
    }
    if (page.logs_size() < log_page) break;
  }
  std::cout.flush();
  std::cerr.flush();
  return after_id;
}

// Follows the logs until the task ends; returns it as it ended.
pb::Task follow(rest_client& master, const std::string& id) {
  master.retry_unreachable_for(master_restart_window);
  std::int64_t after_id = 0;
  auto wait = first_poll;
  for (;;) {
    // The state first: once it has ended, one more drain gets every line.
    auto task = task_of(master.get<pb::TaskReply>("/api/v1/tasks/" + id));
    const auto before = after_id;
    after_id = drain_logs(master, id, after_id);
    if (task.state() == pb::TASK_STATE_TERMINATED) return task;
    wait = after_id != before ? first_poll : std::min(wait * 2, std::chrono::duration_cast<decltype(wait)>(poll_interval));
    std::this_thread::sleep_for(wait);
  }
}

std::string kind_path(pb::TaskKind kind, const std::string& id) {
  return std::string("/api/v1/") + route_plural(kind) + "/" + id;
}

// "SCHEME://HOST:PORT" where the master serves task `id`'s service (GET /api/v1/master's proxy_url).
std::string proxy_origin_of(rest_client& master, const std::string& id) {
  auto url = master.get<pb::MasterInfo>("/api/v1/master").proxy_url();
  // With proxy_host each task has a host of its own, which the URL names as "{task_id}".
  const std::string task_id_mark = "{task_id}";
  if (const auto at = url.find(task_id_mark); at != std::string::npos) url.replace(at, task_id_mark.size(), id);
  return url;
}

}  // namespace

std::string create_task(rest_client& master, pb::TaskKind kind, const task_launch& launch) {
  pb::TaskReply created;
  master.post(std::string("/api/v1/") + route_plural(kind), request_of(kind, launch), created);
  const auto id = task_of(created).id();
  std::cerr << "Launched " << config::to_string(from_pb(kind)) << " " << id << std::endl;
  return id;
}

pb::Task wait_ready(rest_client& master, pb::TaskKind kind, const std::string& id) {
  master.retry_unreachable_for(master_restart_window);
  for (;;) {
    auto task = task_of(master.get<pb::TaskReply>(kind_path(kind, id)));
    if (task.ready()) return task;
    if (task.state() == pb::TASK_STATE_TERMINATED)
      throw std::runtime_error(config::to_string(from_pb(kind)) + " " + id + " ended before it was ready: " +
                               task.exit_reason() + " (det " + cli_name(kind) + " logs " + id + ")");
    std::this_thread::sleep_for(poll_interval);
  }
}

int start_service(rest_client& master, pb::TaskKind kind, const task_launch& launch, bool detach) {
  const auto id = create_task(master, kind, launch);
  if (detach) {
    std::cout << id << std::endl;
    return 0;
  }
  return open_service(master, kind, id, false);
}

int open_service(rest_client& master, pb::TaskKind kind, const std::string& id, bool browser) {
  const auto task = wait_ready(master, kind, id);
  // A notebook's own link (its token) opens it on the proxy's origin directly; any other goes
  // through the master, which sends a logged-in browser on with a ticket for the task.
  const auto url = task.proxy_path().find("?token=") != std::string::npos ? proxy_origin_of(master, id) + task.proxy_path()
                                                                           : master.master_url() + task.proxy_path();
  std::cout << url << std::endl;
  if (browser && std::system(("xdg-open '" + url + "' >/dev/null 2>&1").c_str()) != 0)
    std::cerr << "det: could not open a browser; open the URL above" << std::endl;
  return 0;
}

int run_task(rest_client& master, pb::TaskKind kind, const task_launch& launch, bool detach) {
  const auto id = create_task(master, kind, launch);
  if (detach) {
    std::cout << id << std::endl;
    return 0;
  }
  auto ended = follow(master, id);
  if (ended.has_exit_code() && ended.exit_code() == 0) return 0;
  std::cerr << config::to_string(from_pb(kind)) << " " << id << " " << ended.exit_reason() << std::endl;
  return ended.has_exit_code() && ended.exit_code() > 0 && ended.exit_code() < 256 ? ended.exit_code() : 1;
}

int list_tasks(rest_client& master, pb::TaskKind kind, bool json) {
  auto all = master.get<pb::TasksReply>(std::string("/api/v1/") + route_plural(kind));
  if (json) {
    std::cout << det::to_json(all, true) << '\n';
    return 0;
  }
  const auto& tasks = kind == pb::TASK_KIND_SHELL         ? all.shells()
                      : kind == pb::TASK_KIND_NOTEBOOK    ? all.notebooks()
                      : kind == pb::TASK_KIND_TENSORBOARD ? all.tensorboards()
                                                          : all.commands();
  table out({"ID", "Owner", "Description", "State", "Slots", "Pool", "Agent", "Exit", "Started"});
  for (const auto& t : tasks)
    out.add_row({t.id(), t.owner(), t.description(), state_text(t.state()), std::to_string(t.slots()), t.resource_pool(),
                 t.agent_id(), t.has_exit_code() ? std::to_string(t.exit_code()) : "", format_time(t.start_time())});
  out.print(std::cout);
  return 0;
}

int print_task_logs(rest_client& master, const std::string& id, bool follow_logs) {
  if (follow_logs)
    follow(master, id);
  else
    drain_logs(master, id, 0);
  return 0;
}

int kill_task(rest_client& master, pb::TaskKind kind, const std::string& id) {
  pb::TaskReply ignored;
  master.post(std::string("/api/v1/") + route_plural(kind) + "/" + id + "/kill", pb::TaskReply{}, ignored);
  std::cout << "Killed " << config::to_string(from_pb(kind)) << " " << id << "\n";
  return 0;
}

int list_all_tasks(rest_client& master, bool json) {
  auto all = master.get<pb::GetTaskSummariesResponse>("/api/v1/tasks");
  if (json) {
    std::cout << det::to_json(all, true) << '\n';
    return 0;
  }
  table out({"ID", "Type", "State", "Description", "Owner", "Slots", "Pool", "Started"});
  for (const auto& t : all.tasks())
    out.add_row({t.id(), t.type(), t.state(), t.description(), t.owner(), std::to_string(t.slots()), t.resource_pool(),
                 format_time(t.start_time())});
  out.print(std::cout);
  return 0;
}

} // namespace det::tools
