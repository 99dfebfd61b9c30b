// det: the command-line client of a det cluster, after Determined's `det` CLI.
// It talks to the master's REST API only; `det repl` opens the admin REPL.

#include <algorithm>
#include <cstdint>
#include <functional>
#include <optional>
#include <stdexcept>
#include <iostream>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "tools/admin_repl.hpp"
#include "tools/cli_cluster.hpp"
#include "tools/cli_experiment.hpp"
#include "tools/cli_preview.hpp"
#include "tools/cli_scheduling.hpp"
#include "tools/cli_trial.hpp"
#include "tools/cli_checkpoint.hpp"
#include "tools/cli_user.hpp"
#include "tools/cli_annotations.hpp"
#include "tools/cli_model.hpp"
#include "tools/cli_projects.hpp"
#include "tools/cli_shell.hpp"
#include "tools/cli_task.hpp"
#include "tools/cli_tunnel.hpp"
#include "tools/rest_client.hpp"
#include "messages/common.pb.h"

namespace {

using det::tools::rest_client;

// The values of every option. Only one leaf subcommand is parsed per run, so
// subcommands share fields; the leaf leaves its work in `run`, which main calls
// once parsing is over and every option (a trailing -m included) has its value.
struct command_line {
  std::string master = "http://127.0.0.1:8080";
  std::string config_path;
  bool follow = false;
  bool json = false;
  bool toml = false;  // det experiment describe --toml
  bool yaml = false;  // det experiment describe --yaml
  bool metrics = false;
  bool profile = false;
  std::int64_t id = 0;
  std::int64_t head = 0;
  std::int64_t tail = 0;
  det::pb::AgentUserGroup agent_user;  // det user link-with-agent-user
  std::string uuid;
  std::string output;
  std::string model_dir;
  int best_count = 0;
  bool best = false;
  bool latest = false;
  std::string agent;
  int slot = 0;
  bool drain = false;
  std::string pool;
  std::optional<int> priority;
  std::optional<double> weight;
  std::optional<int> max_slots;
  std::string username;
  bool admin = false;
  std::string lifespan;
  std::string description;
  std::string label;
  det::tools::experiment_query query;
  double interval = 1.0;
  std::vector<std::string> labels;
  std::string metadata;
  int version = 0;
  std::string project;
  std::string workspace;
  std::int64_t max_length = 0;
  det::tools::task_launch launch;
  bool detach = false;
  bool browser = false;
  std::string task_id;
  /// The words after the first `--`, which CLI11 never sees: a command to run (det cmd run -- CMD).
  std::vector<std::string> after_dashes;
  bool takes_words_after_dashes = false;  // set by the commands that run them
  std::function<int()> run;

  void on_master(CLI::App* cmd, std::function<int(rest_client&)> fn) {
    cmd->callback([this, fn = std::move(fn)] {
      run = [this, fn] {
        rest_client client(master);
        return fn(client);
      };
    });
  }
};

// CLI::PositiveNumber's message prints the range bounds as 300-digit doubles.
const CLI::Validator positive_integer(
    [](std::string& text) -> std::string {
      bool digits = !text.empty() && text.size() <= 18 &&
                    text.find_first_not_of("0123456789") == std::string::npos;
      return digits && std::stoll(text) > 0 ? "" : "'" + text + "' is not a positive integer";
    },
    "POSITIVE");

void add_json_flag(CLI::App* cmd, command_line& cl) {
  cmd->add_flag("--json", cl.json, "Print the master's JSON reply.");
}

void add_id(CLI::App* cmd, const std::string& name, command_line& cl) {
  cmd->add_option(name, cl.id)->required()->check(positive_integer);
}

CLI::App* add_list(CLI::App* parent, const std::string& what, command_line& cl) {
  auto* list = parent->add_subcommand("list", "List " + what + ".")->alias("ls");
  add_json_flag(list, cl);
  return list;
}

void add_experiment_create(CLI::App* cmd, command_line& cl) {
  cmd->add_option("config", cl.config_path, "Experiment config file (TOML).")->required();
  cmd->add_option("model_def", cl.model_dir,
                  "Directory to upload as the model definition (at most 96 MiB); trials run in a copy of it.")
      ->check(CLI::ExistingDirectory);
  cmd->add_flag("-f,--follow,--follow-first-trial", cl.follow,
                "Show live progress until the experiment ends; exit 0 only if it COMPLETED.");
  cmd->add_option("--project", cl.project, "Project to put it in: an id or WORKSPACE/PROJECT (default: Uncategorized).");
  cl.on_master(cmd, [&cl](rest_client& m) {
    return det::tools::create_experiment(m, cl.config_path, cl.model_dir, cl.project, cl.follow);
  });
}

// The scheduling settings' bounds, checked before anything is sent (`det experiment set`, `det job update`).
// Sentences rather than CLI11's own range messages (which print the largest double as a bound).
const CLI::Validator non_negative(
    [](std::string& text) -> std::string {
      try {
        size_t used = 0;
        if (std::stod(text, &used) >= 0 && used == text.size()) return "";
      } catch (const std::exception&) {
      }
      return "'" + text + "' is not a number of 0 or more";
    },
    "NUMBER >= 0");
const CLI::Validator priority_range(
    [](std::string& text) -> std::string {
      try {
        size_t used = 0;
        const int value = std::stoi(text, &used);
        if (value >= 1 && value <= 99 && used == text.size()) return "";
      } catch (const std::exception&) {
      }
      return "a priority is a whole number between 1 and 99, not '" + text + "'";
    },
    "1-99");
void add_priority(CLI::Option* o) { o->check(priority_range); }
void add_weight(CLI::Option* o) { o->check(non_negative); }
void add_max_slots(CLI::Option* o) { o->check(non_negative); }

// Sends whichever scheduling settings the command line gave.
int send_job_settings(rest_client& m, const command_line& cl) {
  det::pb::JobSettings change;
  if (cl.priority) change.set_priority(*cl.priority);
  if (cl.weight) change.set_weight(*cl.weight);
  if (cl.max_slots) change.set_max_slots(*cl.max_slots);
  return det::tools::update_job(m, cl.id, change);
}

void add_experiment(CLI::App& app, command_line& cl) {
  auto* e = app.add_subcommand("experiment", "Manage experiments.")->alias("e");
  e->require_subcommand(1);

  add_experiment_create(e->add_subcommand("create", "Create an experiment from a config file."),
                        cl);

  auto* list = add_list(e, "experiments", cl);
  list->add_option("--user", cl.query.user, "Only this user's experiments.")
      ->check(CLI::Validator(
          [](std::string& name) {
            return name.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.-") ==
                           std::string::npos
                       ? std::string{}
                       : "'" + name + "' is not a user name";
          },
          "USER"));
  list->add_option("--state", cl.query.states, "Only experiments in this state (ACTIVE, PAUSED, COMPLETED, ...); repeatable.");
  list->add_option("--label", cl.query.label, "Only experiments with this label.");
  list->add_option("--project", cl.query.project, "Only experiments in this project (an id or WORKSPACE/PROJECT).");
  list->add_flag("--all", cl.query.all, "Archived experiments too.");
  list->add_option("--sort-by", cl.query.sort_by, "id, name, state, start_time, end_time or owner.")->capture_default_str();
  list->add_flag("--desc", cl.query.descending, "Sort in descending order.");
  list->add_option("--limit", cl.query.limit, "At most this many (one page; default: every one).")->check(CLI::PositiveNumber);
  list->add_option("--offset", cl.query.offset, "Skip this many first.")->check(CLI::NonNegativeNumber);
  cl.on_master(list, [&cl](rest_client& m) { return det::tools::list_experiments(m, cl.query, cl.json); });

  auto* label = e->add_subcommand("label", "Add or remove an experiment's labels.");
  label->require_subcommand(1);
  for (bool add : {true, false}) {
    auto* cmd = label->add_subcommand(add ? "add" : "remove", add ? "Add a label." : "Remove a label.");
    add_id(cmd, "experiment_id", cl);
    cmd->add_option("label", cl.label)->required();
    cl.on_master(cmd, [&cl, add](rest_client& m) {
      return add ? det::tools::add_label(m, cl.id, cl.label) : det::tools::remove_label(m, cl.id, cl.label);
    });
  }
  auto* notes = e->add_subcommand("notes", "Print an experiment's notes (markdown), or replace them with --set FILE.");
  add_id(notes, "experiment_id", cl);
  notes->add_option("--set", cl.config_path, "File with the new notes ('-': stdin).");
  cl.on_master(notes, [&cl](rest_client& m) { return det::tools::notes(m, cl.id, cl.config_path); });
  for (bool archived : {true, false}) {
    auto* cmd = e->add_subcommand(archived ? "archive" : "unarchive",
                                  archived ? "Archive an ended experiment (hidden from lists but --all)." : "Unarchive an experiment.");
    add_id(cmd, "experiment_id", cl);
    cl.on_master(cmd, [&cl, archived](rest_client& m) { return det::tools::archive(m, cl.id, archived); });
  }
  auto* remove = e->add_subcommand("delete", "Delete an ended experiment: its trials, metrics, logs and checkpoint files.");
  add_id(remove, "experiment_id", cl);
  cl.on_master(remove, [&cl](rest_client& m) { return det::tools::delete_experiment(m, cl.id); });
  auto* fork = e->add_subcommand("fork", "Start a new experiment from an experiment's config and model definition.");
  add_id(fork, "experiment_id", cl);
  fork->add_option("--config", cl.config_path, "Use this config file instead of the experiment's.")->check(CLI::ExistingFile);
  cl.on_master(fork, [&cl](rest_client& m) { return det::tools::fork_experiment(m, cl.id, cl.config_path); });
  auto* move = e->add_subcommand("move", "Move an experiment to another project.");
  add_id(move, "experiment_id", cl);
  move->add_option("workspace", cl.workspace)->required();
  move->add_option("project", cl.project)->required();
  cl.on_master(move, [&cl](rest_client& m) { return det::tools::move_experiment(m, cl.id, cl.workspace, cl.project); });
  auto* cont = e->add_subcommand("continue", "Train a one-trial experiment's trial further, as a new experiment.");
  add_id(cont, "experiment_id", cl);
  cont->add_option("--max-length", cl.max_length, "How far, in the searcher's unit.")->required()->check(CLI::PositiveNumber);
  cl.on_master(cont, [&cl](rest_client& m) { return det::tools::continue_experiment(m, cl.id, cl.max_length); });
  auto* wait = e->add_subcommand("wait", "Wait until an experiment ends; exits 0 if it COMPLETED.");
  add_id(wait, "experiment_id", cl);
  wait->add_option("--interval", cl.interval, "Seconds between checks.")->check(CLI::PositiveNumber);
  cl.on_master(wait, [&cl](rest_client& m) { return det::tools::wait_experiment(m, cl.id, cl.interval); });

  auto* describe = e->add_subcommand("describe", "Describe an experiment and its trials.");
  add_id(describe, "experiment_id", cl);
  add_json_flag(describe, cl);
  describe->add_flag("--toml", cl.toml, "Print only its config, as det stores it (TOML).");
  describe->add_flag("--yaml", cl.yaml, "Print only its config as YAML, Determined's form.");
  cl.on_master(describe, [&cl](rest_client& m) {
    using det::tools::describe_format;
    const auto format = cl.json ? describe_format::json
                        : cl.toml ? describe_format::toml
                        : cl.yaml ? describe_format::yaml
                                  : describe_format::summary;
    return det::tools::describe_experiment(m, cl.id, format);
  });

  auto* checkpoints = e->add_subcommand("list-checkpoints", "List an experiment's checkpoints.");
  add_id(checkpoints, "experiment_id", cl);
  auto* best = checkpoints->add_option("--best", cl.best_count, "Only the best N by the searcher metric.")
                   ->check(CLI::PositiveNumber);
  add_json_flag(checkpoints, cl);
  cl.on_master(checkpoints, [&cl, best](rest_client& m) {
    return det::tools::list_experiment_checkpoints(
        m, cl.id, best->count() > 0 ? std::optional<int>(cl.best_count) : std::nullopt, cl.json);
  });

  struct verb {
    const char* name;
    const char* help;
    const char* what_now;
  };
  for (auto v : {verb{"kill", "Kill an experiment and all its trials.", "is being killed"},
                 verb{"pause", "Pause an experiment: its trials stop and give back their slots.",
                      "is being paused"},
                 verb{"activate", "Resume a paused experiment.", "is active again"}}) {
    auto* cmd = e->add_subcommand(v.name, v.help);
    add_id(cmd, "experiment_id", cl);
    cl.on_master(cmd, [&cl, v](rest_client& m) {
      return det::tools::experiment_action(m, cl.id, v.name, v.what_now);
    });
  }

  auto* set = e->add_subcommand("set", "Change an experiment's scheduling settings, name or description.");
  set->require_subcommand(1);
  auto* priority = set->add_subcommand("priority", "Set the priority (1-99, lower runs first).");
  auto* weight = set->add_subcommand("weight", "Set the fair-share weight.");
  auto* max_slots = set->add_subcommand("max-slots", "Set the most slots its trials may hold at once (0: no limit).");
  for (auto* cmd : {priority, weight, max_slots}) add_id(cmd, "experiment_id", cl);
  add_priority(priority->add_option("value", cl.priority)->required());
  add_weight(weight->add_option("value", cl.weight)->required());
  add_max_slots(max_slots->add_option("value", cl.max_slots)->required());
  for (auto* cmd : {priority, weight, max_slots})
    cl.on_master(cmd, [&cl](rest_client& m) { return send_job_settings(m, cl); });
  for (const char* field : {"description", "name"}) {
    auto* cmd = set->add_subcommand(field, std::string{"Set the experiment's "} + field + ".");
    add_id(cmd, "experiment_id", cl);
    cmd->add_option("text", cl.description)->required();
    cl.on_master(cmd, [&cl, field](rest_client& m) { return det::tools::set_text(m, cl.id, field, cl.description); });
  }
}

void add_job(CLI::App& app, command_line& cl) {
  auto* j = app.add_subcommand("job", "Inspect and reorder the job queues.")->alias("j");
  j->require_subcommand(1);
  auto* list = add_list(j, "the jobs in the resource pools' queues", cl);
  list->add_option("-p,--resource-pool", cl.pool, "Only this pool's queue.");
  cl.on_master(list, [&cl](rest_client& m) { return det::tools::list_jobs(m, cl.pool, cl.json); });

  auto* update = j->add_subcommand("update", "Change a job's priority, weight or max slots.");
  add_id(update, "job_id", cl);
  add_priority(update->add_option("--priority", cl.priority, "Priority, 1-99 (lower runs first)."));
  add_weight(update->add_option("--weight", cl.weight, "Fair-share weight."));
  add_max_slots(update->add_option("--max-slots", cl.max_slots, "Most slots at once; 0 for no limit."));
  cl.on_master(update, [&cl](rest_client& m) {
    if (!cl.priority && !cl.weight && !cl.max_slots)
      throw std::runtime_error("Nothing to change: give --priority, --weight or --max-slots.");
    return send_job_settings(m, cl);
  });

  auto* rp = app.add_subcommand("resource-pool", "Inspect resource pools.")->alias("rp");
  rp->require_subcommand(1);
  cl.on_master(add_list(rp, "resource pools", cl),
               [&cl](rest_client& m) { return det::tools::list_resource_pools(m, cl.json); });

  auto* prov = app.add_subcommand("provisioner", "Inspect the elastic agents of pools with a provider.");
  prov->require_subcommand(1);
  cl.on_master(add_list(prov, "provisioners, their instances and last decisions", cl),
               [&cl](rest_client& m) { return det::tools::list_provisioners(m, cl.json); });
}

void add_trial(CLI::App& app, command_line& cl) {
  auto* t = app.add_subcommand("trial", "Inspect trials.")->alias("t");
  t->require_subcommand(1);

  auto* describe = t->add_subcommand("describe", "Describe a trial and its latest metrics.");
  add_id(describe, "trial_id", cl);
  add_json_flag(describe, cl);
  describe->add_flag("--metrics", cl.metrics, "Also print every reported metric.");
  describe->add_flag("--profile", cl.profile, "Also summarise the trial's system metrics and timings.");
  cl.on_master(describe, [&cl](rest_client& m) {
    return det::tools::describe_trial(m, cl.id, cl.json, cl.metrics, cl.profile);
  });

  auto* download = t->add_subcommand("download", "Download a trial's best or latest checkpoint.");
  add_id(download, "trial_id", cl);
  auto* best = download->add_flag("--best", cl.best, "The checkpoint with the best searcher metric.");
  auto* latest = download->add_flag("--latest", cl.latest, "The newest checkpoint.");
  best->excludes(latest);
  download->add_option("-o,--output", cl.output, "Directory to write to (default: checkpoints/UUID).");
  download->callback([&cl] {
    if (!cl.best && !cl.latest)
      throw CLI::ValidationError("det trial download", "pass --best or --latest");
    cl.run = [&cl] {
      rest_client client(cl.master);
      return det::tools::download_trial_checkpoint(client, cl.id, cl.best, cl.output);
    };
  });

  auto* cont = t->add_subcommand("continue", "Train a trial further from its latest checkpoint, as a new experiment.");
  add_id(cont, "trial_id", cl);
  cont->add_option("--max-length", cl.max_length, "How far, in its searcher's unit.")->required()->check(CLI::PositiveNumber);
  cl.on_master(cont, [&cl](rest_client& m) { return det::tools::continue_trial(m, cl.id, cl.max_length); });

  auto* logs = t->add_subcommand("logs", "Print a trial's logs.");
  add_id(logs, "trial_id", cl);
  auto* follow =
      logs->add_flag("-f,--follow", cl.follow, "Keep printing new lines until the trial ends.");
  auto* head = logs->add_option("--head", cl.head, "Print only the first N lines.")
                   ->check(positive_integer);
  auto* tail = logs->add_option("--tail", cl.tail, "Print only the last N lines.")
                   ->check(positive_integer);
  head->excludes(tail)->excludes(follow);
  cl.on_master(logs, [&cl, head, tail](rest_client& m) {
    det::tools::trial_logs_options options;
    options.follow = cl.follow;
    if (head->count() > 0)
      options.head = cl.head;
    if (tail->count() > 0)
      options.tail = cl.tail;
    return det::tools::print_trial_logs(m, cl.id, options);
  });
}

void add_checkpoint(CLI::App& app, command_line& cl) {
  auto* c = app.add_subcommand("checkpoint", "Inspect, download and delete checkpoints.")->alias("c");
  c->require_subcommand(1);
  auto* describe = c->add_subcommand("describe", "Describe a checkpoint and its files.");
  describe->add_option("uuid", cl.uuid, "Checkpoint UUID.")->required();
  add_json_flag(describe, cl);
  cl.on_master(describe, [&cl](rest_client& m) { return det::tools::describe_checkpoint(m, cl.uuid, cl.json); });
  auto* download = c->add_subcommand("download", "Download a checkpoint's files.");
  download->add_option("uuid", cl.uuid, "Checkpoint UUID.")->required();
  download->add_option("-o,--output", cl.output, "Directory to write to (default: checkpoints/UUID).");
  cl.on_master(download, [&cl](rest_client& m) { return det::tools::download_checkpoint(m, cl.uuid, cl.output); });
  auto* remove = c->add_subcommand("delete", "Delete a checkpoint's files from the checkpoint storage.");
  remove->add_option("uuid", cl.uuid, "Checkpoint UUID.")->required();
  cl.on_master(remove, [&cl](rest_client& m) { return det::tools::delete_checkpoint(m, cl.uuid); });
}

void add_cluster(CLI::App& app, command_line& cl) {
  auto* a = app.add_subcommand("agent", "Inspect agents.")->alias("a");
  a->require_subcommand(1);
  cl.on_master(add_list(a, "agents", cl),
               [&cl](rest_client& m) { return det::tools::list_agents(m, cl.json); });
  for (bool enable : {true, false}) {
    auto* cmd = a->add_subcommand(enable ? "enable" : "disable",
                                  enable ? "Let an agent take new tasks again."
                                         : "Stop an agent taking new tasks; what runs there is preempted unless --drain.");
    cmd->add_option("agent_id", cl.agent)->required();
    if (!enable) cmd->add_flag("--drain", cl.drain, "Let what runs there finish.");
    cl.on_master(cmd, [&cl, enable](rest_client& m) { return det::tools::enable_agent(m, cl.agent, -1, enable, cl.drain); });
  }

  auto* s = app.add_subcommand("slot", "Inspect the slots of all agents.")->alias("s");
  s->require_subcommand(1);
  cl.on_master(add_list(s, "slots", cl),
               [&cl](rest_client& m) { return det::tools::list_slots(m, cl.json); });
  for (bool enable : {true, false}) {
    auto* cmd = s->add_subcommand(enable ? "enable" : "disable",
                                  enable ? "Let a slot take new tasks again."
                                         : "Stop a slot taking new tasks; what runs there is preempted unless --drain.");
    cmd->add_option("agent_id", cl.agent)->required();
    cmd->add_option("slot_id", cl.slot)->required()->check(CLI::NonNegativeNumber);
    if (!enable) cmd->add_flag("--drain", cl.drain, "Let what runs there finish.");
    cl.on_master(cmd, [&cl, enable](rest_client& m) {
      return det::tools::enable_agent(m, cl.agent, cl.slot, enable, cl.drain);
    });
  }

  auto* master = app.add_subcommand("master", "Inspect the master.");
  master->require_subcommand(1);
  auto* info = master->add_subcommand("info", "Print the master's version and cluster id.");
  add_json_flag(info, cl);
  cl.on_master(info, [&cl](rest_client& m) { return det::tools::print_master_info(m, cl.json); });
}

void add_user(CLI::App& app, command_line& cl) {
  auto* u = app.add_subcommand("user", "Log in and out, and manage users.")->alias("u");
  u->require_subcommand(1);
  auto* login = u->add_subcommand("login", "Log in (DET_USER and DET_PASS for scripts); the session is kept in ~/.config/det/auth.json.");
  login->add_option("username", cl.username, "User name (default: DET_USER, else asked).");
  cl.on_master(login, [&cl](rest_client& m) { return det::tools::login(m, cl.username); });
  cl.on_master(u->add_subcommand("logout", "Log out of this master."), [](rest_client& m) { return det::tools::logout(m); });
  auto* whoami = u->add_subcommand("whoami", "Print the logged-in user.");
  add_json_flag(whoami, cl);
  cl.on_master(whoami, [&cl](rest_client& m) { return det::tools::whoami(m, cl.json); });
  auto* list = u->add_subcommand("list", "List users.")->alias("ls");
  add_json_flag(list, cl);
  cl.on_master(list, [&cl](rest_client& m) { return det::tools::list_users(m, cl.json); });
  auto* create = u->add_subcommand("create", "Create a user (admins only); the password is asked for.");
  create->add_option("username", cl.username)->required();
  create->add_flag("--admin", cl.admin, "The user is an admin.");
  cl.on_master(create, [&cl](rest_client& m) { return det::tools::create_user(m, cl.username, cl.admin); });
  auto* password = u->add_subcommand("change-password", "Change a password (your own, or any as an admin).");
  password->add_option("username", cl.username, "Whose (default: yours).");
  cl.on_master(password, [&cl](rest_client& m) { return det::tools::change_password(m, cl.username); });
  for (bool active : {true, false}) {
    auto* cmd = u->add_subcommand(active ? "activate" : "deactivate",
                                  active ? "Let a user log in again (admins only)." : "Stop a user logging in (admins only).");
    cmd->add_option("username", cl.username)->required();
    cl.on_master(cmd, [&cl, active](rest_client& m) { return det::tools::set_user_active(m, cl.username, active); });
  }
  // Determined's flags: the Unix identity a det user's work runs as on agents.
  auto* link = u->add_subcommand("link-with-agent-user",
                                 "Run a user's work as this Unix user and group on agents (admins only).");
  link->add_option("username", cl.username)->required();
  auto& agent_user = cl.agent_user;
  link->add_option_function<std::int64_t>("--agent-uid", [&agent_user](std::int64_t v) { agent_user.set_agent_uid(v); },
                                          "Its uid on agents.")->required();
  link->add_option_function<std::int64_t>("--agent-gid", [&agent_user](std::int64_t v) { agent_user.set_agent_gid(v); },
                                          "Its gid on agents.")->required();
  link->add_option_function<std::string>("--agent-user", [&agent_user](const std::string& v) { agent_user.set_agent_user(v); },
                                         "Its user name on agents.")->required();
  link->add_option_function<std::string>("--agent-group", [&agent_user](const std::string& v) { agent_user.set_agent_group(v); },
                                         "Its group name on agents.")->required();
  cl.on_master(link, [&cl](rest_client& m) { return det::tools::link_with_agent_user(m, cl.username, cl.agent_user); });
}

void add_model(CLI::App& app, command_line& cl) {
  auto* mo = app.add_subcommand("model", "The model registry: named models and versions of checkpoints.")->alias("m");
  mo->require_subcommand(1);
  auto* create = mo->add_subcommand("create", "Create a model.");
  create->add_option("name", cl.username)->required();
  create->add_option("--description", cl.description, "What it is.");
  create->add_option("--labels", cl.labels, "Labels, comma-separated.")->delimiter(',');
  add_json_flag(create, cl);
  cl.on_master(create, [&cl](rest_client& m) { return det::tools::create_model(m, cl.username, cl.description, cl.labels, cl.json); });
  auto* list = mo->add_subcommand("list", "List models.")->alias("ls");
  add_json_flag(list, cl);
  cl.on_master(list, [&cl](rest_client& m) { return det::tools::list_models(m, cl.json); });
  for (const char* verb : {"describe", "list-versions"}) {
    auto* cmd = mo->add_subcommand(verb, "Describe a model and its versions.");
    cmd->add_option("name", cl.username)->required();
    add_json_flag(cmd, cl);
    cl.on_master(cmd, [&cl](rest_client& m) { return det::tools::describe_model(m, cl.username, cl.json); });
  }
  auto* reg = mo->add_subcommand("register-version", "Register a COMPLETED checkpoint as the model's next version.");
  reg->add_option("name", cl.username)->required();
  reg->add_option("checkpoint_uuid", cl.uuid)->required();
  reg->add_option("--name", cl.description, "The version's name.");
  reg->add_option("--metadata", cl.metadata, "A JSON object.");
  add_json_flag(reg, cl);
  cl.on_master(reg, [&cl](rest_client& m) {
    return det::tools::register_version(m, cl.username, cl.uuid, cl.description, cl.metadata, cl.json);
  });
  auto* download = mo->add_subcommand("download", "Download a version's checkpoint (default: the latest).");
  download->add_option("name", cl.username)->required();
  download->add_option("version", cl.version, "Version number.")->check(CLI::PositiveNumber);
  download->add_option("-o,--output", cl.output, "Directory to write (default: the checkpoint's uuid).");
  cl.on_master(download, [&cl](rest_client& m) { return det::tools::download_model(m, cl.username, cl.version, cl.output); });
  auto* remove = mo->add_subcommand("delete", "Delete a model and its versions.");
  remove->add_option("name", cl.username)->required();
  cl.on_master(remove, [&cl](rest_client& m) { return det::tools::delete_model(m, cl.username); });
}

void add_workspaces(CLI::App& app, command_line& cl) {
  auto* w = app.add_subcommand("workspace", "Workspaces, which hold projects.")->alias("w");
  w->require_subcommand(1);
  auto* create = w->add_subcommand("create", "Create a workspace.");
  create->add_option("name", cl.workspace)->required();
  cl.on_master(create, [&cl](rest_client& m) { return det::tools::create_workspace(m, cl.workspace); });
  auto* list = w->add_subcommand("list", "List workspaces.")->alias("ls");
  add_json_flag(list, cl);
  cl.on_master(list, [&cl](rest_client& m) { return det::tools::list_workspaces(m, cl.json); });
  auto* describe = w->add_subcommand("describe", "Describe a workspace and its projects.");
  describe->add_option("name", cl.workspace)->required();
  add_json_flag(describe, cl);
  cl.on_master(describe, [&cl](rest_client& m) { return det::tools::describe_workspace(m, cl.workspace, cl.json); });
  auto* remove = w->add_subcommand("delete", "Delete a workspace whose projects hold no experiments.");
  remove->add_option("name", cl.workspace)->required();
  cl.on_master(remove, [&cl](rest_client& m) { return det::tools::delete_workspace(m, cl.workspace); });

  auto* p = app.add_subcommand("project", "Projects, which hold experiments.")->alias("p");
  p->require_subcommand(1);
  auto* pcreate = p->add_subcommand("create", "Create a project in a workspace.");
  pcreate->add_option("workspace", cl.workspace)->required();
  pcreate->add_option("name", cl.project)->required();
  pcreate->add_option("--description", cl.description, "What it is for.");
  cl.on_master(pcreate, [&cl](rest_client& m) { return det::tools::create_project(m, cl.workspace, cl.project, cl.description); });
  auto* plist = p->add_subcommand("list", "List a workspace's projects.")->alias("ls");
  plist->add_option("workspace", cl.workspace)->required();
  add_json_flag(plist, cl);
  cl.on_master(plist, [&cl](rest_client& m) { return det::tools::describe_workspace(m, cl.workspace, cl.json); });
  auto* pdescribe = p->add_subcommand("describe", "Describe a project.");
  pdescribe->add_option("workspace", cl.workspace)->required();
  pdescribe->add_option("name", cl.project)->required();
  add_json_flag(pdescribe, cl);
  cl.on_master(pdescribe, [&cl](rest_client& m) { return det::tools::describe_project(m, cl.workspace, cl.project, cl.json); });
  auto* pdelete = p->add_subcommand("delete", "Delete a project that holds no experiments.");
  pdelete->add_option("workspace", cl.workspace)->required();
  pdelete->add_option("name", cl.project)->required();
  cl.on_master(pdelete, [&cl](rest_client& m) { return det::tools::delete_project(m, cl.workspace, cl.project); });
  auto* notes = p->add_subcommand("notes", "Print a project's notes (markdown), or replace them with --set FILE.");
  notes->add_option("workspace", cl.workspace)->required();
  notes->add_option("name", cl.project)->required();
  notes->add_option("--set", cl.config_path, "File with the new notes ('-': stdin).");
  cl.on_master(notes, [&cl](rest_client& m) { return det::tools::project_notes(m, cl.workspace, cl.project, cl.config_path); });
}

void add_token(CLI::App& app, command_line& cl) {
  auto* t = app.add_subcommand("token", "Manage long-lived access tokens for automation.");
  t->require_subcommand(1);
  auto* create = t->add_subcommand("create", "Create an access token for yourself; it is printed once. It asks for "
                                             "your password again (DET_PASS for scripts) unless you are an admin.");
  create->add_option("--lifespan", cl.lifespan,
                     "How long it is valid, e.g. 30d, 12h (default 30d; at most the master's security.max_token_lifespan).");
  create->add_option("--description", cl.description, "What it is for.");
  add_json_flag(create, cl);
  cl.on_master(create, [&cl](rest_client& m) { return det::tools::create_token(m, cl.lifespan, cl.description, cl.json); });
  auto* list = t->add_subcommand("list", "List your access tokens (an admin's: everyone's).")->alias("ls");
  add_json_flag(list, cl);
  cl.on_master(list, [&cl](rest_client& m) { return det::tools::list_tokens(m, cl.json); });
  auto* revoke = t->add_subcommand("revoke", "Revoke an access token.");
  add_id(revoke, "token_id", cl);
  cl.on_master(revoke, [&cl](rest_client& m) { return det::tools::revoke_token(m, cl.id); });
}

void add_task_launch_options(CLI::App* cmd, command_line& cl) {
  cmd->add_option("--config-file", cl.launch.config_path, "Task config (TOML): resources, environment, idle_timeout.")
      ->check(CLI::ExistingFile);
  cmd->add_option("--context", cl.launch.context_dir, "Directory to upload (at most 96 MiB); the task runs in a copy of it.")
      ->check(CLI::ExistingDirectory);
  cmd->add_option("-c,--config", cl.launch.overrides, "KEY=VALUE: sets a config key, e.g. resources.slots=2 (repeatable).")
      ->allow_extra_args(false);
}

// list, logs and kill of one kind of task.
void add_task_verbs(CLI::App* parent, det::pb::TaskKind kind, const std::string& what, command_line& cl) {
  auto* list = add_list(parent, what + "s, ended ones too", cl);
  cl.on_master(list, [&cl, kind](rest_client& m) { return det::tools::list_tasks(m, kind, cl.json); });
  auto* logs = parent->add_subcommand("logs", "Print a " + what + "'s output.");
  logs->add_option("id", cl.task_id)->required();
  logs->add_flag("-f,--follow", cl.follow, "Keep printing until it ends.");
  cl.on_master(logs, [&cl](rest_client& m) { return det::tools::print_task_logs(m, cl.task_id, cl.follow); });
  auto* kill = parent->add_subcommand("kill", "Kill a " + what + ".");
  kill->add_option("id", cl.task_id)->required();
  cl.on_master(kill, [&cl, kind](rest_client& m) { return det::tools::kill_task(m, kind, cl.task_id); });
}

// start (given, for its own options), open, list, logs and kill of a task served on the web.
void add_web_service_verbs(CLI::App* start, CLI::App* parent, det::pb::TaskKind kind, const std::string& what,
                           command_line& cl) {
  add_task_launch_options(start, cl);
  start->add_flag("-d,--detach", cl.detach, "Print the " + what + "'s id and return at once.");
  cl.on_master(start, [&cl, kind](rest_client& m) { return det::tools::start_service(m, kind, cl.launch, cl.detach); });
  auto* open = parent->add_subcommand("open", "Print the URL that opens a " + what + ", once it answers.");
  open->add_option("id", cl.task_id)->required();
  open->add_flag("--browser", cl.browser, "Open it in a browser too.");
  cl.on_master(open, [&cl, kind](rest_client& m) { return det::tools::open_service(m, kind, cl.task_id, cl.browser); });
  add_task_verbs(parent, kind, what, cl);
}

// det cmd: one-off commands on the cluster's slots (Determined's `det command`); det notebook.
void add_commands(CLI::App& app, command_line& cl) {
  const auto kind = det::pb::TASK_KIND_COMMAND;
  auto* c = app.add_subcommand("cmd", "Commands: programs run on the cluster's slots.")->alias("command");
  c->require_subcommand(1);
  auto* run = c->add_subcommand("run", "Run a command (the words after the options, or after --) and follow its output.");
  add_task_launch_options(run, cl);
  run->add_flag("-d,--detach", cl.detach, "Print the command's id and return at once.");
  // Everything from the first word on (or after --) is the command, its own options included.
  run->prefix_command()->fallthrough(false);
  run->callback([&cl, run] {
    cl.takes_words_after_dashes = true;
    cl.run = [&cl, run, kind] {
      cl.launch.entrypoint = run->remaining();
      for (auto& word : cl.after_dashes) cl.launch.entrypoint.push_back(word);
      rest_client client(cl.master);
      return det::tools::run_task(client, kind, cl.launch, cl.detach);
    };
  });
  add_task_verbs(c, kind, "command", cl);

  const auto notebook = det::pb::TASK_KIND_NOTEBOOK;
  auto* n = app.add_subcommand("notebook", "Jupyter notebooks on the cluster, reached through the master.");
  n->require_subcommand(1);
  add_web_service_verbs(n->add_subcommand("start", "Start a notebook; print its URL once it answers."), n, notebook,
                        "notebook", cl);

  const auto shell = det::pb::TASK_KIND_SHELL;
  auto* sh = app.add_subcommand("shell", "Shells on the cluster over SSH, through the master.");
  sh->require_subcommand(1);
  auto* sstart = sh->add_subcommand("start", "Start a shell and open it.");
  add_task_launch_options(sstart, cl);
  sstart->add_flag("-d,--detach", cl.detach, "Print the shell's id and return at once.");
  cl.on_master(sstart, [&cl](rest_client& m) { return det::tools::start_shell(m, cl.launch, cl.detach); });
  auto* sopen = sh->add_subcommand("open", "Open a shell: interactive, or run the words after -- in it.");
  sopen->add_option("id", cl.task_id)->required();
  sopen->callback([&cl] {
    cl.takes_words_after_dashes = true;
    cl.run = [&cl] {
      rest_client client(cl.master);
      return det::tools::open_shell(client, cl.task_id, cl.after_dashes);
    };
  });
  add_task_verbs(sh, shell, "shell", cl);
  const auto tensorboard = det::pb::TASK_KIND_TENSORBOARD;
  auto* tb = app.add_subcommand("tensorboard", "TensorBoards over experiments' trials, reached through the master.");
  tb->require_subcommand(1);
  auto* tstart = tb->add_subcommand("start", "Start a TensorBoard over the experiments' trials; print its URL once it answers.");
  tstart->add_option("experiment_ids", cl.launch.experiment_ids, "Experiments whose trials it shows.");
  tstart->add_option("-t,--trial-ids", cl.launch.trial_ids, "Trials it shows besides.");
  add_web_service_verbs(tstart, tb, tensorboard, "TensorBoard", cl);

  auto* tunnel = app.add_subcommand("tunnel", "Carry stdin and stdout to a shell's sshd through the master's proxy (ssh's ProxyCommand).");
  tunnel->add_option("id", cl.task_id)->required();
  cl.on_master(tunnel, [&cl](rest_client& m) { return det::tools::run_tunnel(m, cl.task_id); });

  auto* t = app.add_subcommand("task", "Everything that holds or waits for slots: tasks and trials.");
  t->require_subcommand(1);
  auto* all = add_list(t, "tasks, and the trials that wait for or hold slots", cl);
  cl.on_master(all, [&cl](rest_client& m) { return det::tools::list_all_tasks(m, cl.json); });
}

void add_repl(CLI::App& app, command_line& cl) {
  auto* repl = app.add_subcommand("repl", "Open the admin REPL (arguments go to the REPL).");
  // Everything after `repl`, --help included, belongs to the REPL.
  repl->prefix_command()->fallthrough(false)->set_help_flag();
  repl->callback([&cl, repl] {
    cl.run = [&cl, repl] {
      std::vector<std::string> words = repl->remaining();
      words.insert(words.begin(), {"det repl", "--master", cl.master});
      std::vector<char*> argv;
      for (auto& w : words)
        argv.push_back(w.data());
      argv.push_back(nullptr);
      return det::tools::run_repl(static_cast<int>(words.size()), argv.data());
    };
  });
}

} // namespace

int main(int argc, char** argv) {
  command_line cl;
  CLI::App app{"det: the command-line client of a det training cluster.", "det"};
  app.set_version_flag("-v,--version", DET_VERSION);
  app.add_option("-m,--master", cl.master, "URL of the det master.")
      ->envname("DET_MASTER")
      ->capture_default_str();
  app.require_subcommand(1);
  app.fallthrough(); // -m is accepted after the subcommand too

  add_experiment_create(app.add_subcommand("submit", "Same as `det experiment create`."), cl);
  auto* preview = app.add_subcommand(
      "preview-search", "Show how many trials a search would train to which length, without training.");
  preview->add_option("config", cl.config_path, "Experiment config file (TOML).")->required();
  add_json_flag(preview, cl);
  cl.on_master(preview, [&cl](rest_client& m) {
    return det::tools::preview_search(m, cl.config_path, cl.json);
  });
  add_experiment(app, cl);
  add_trial(app, cl);
  add_checkpoint(app, cl);
  add_cluster(app, cl);
  add_job(app, cl);
  add_user(app, cl);
  add_token(app, cl);
  add_model(app, cl);
  add_workspaces(app, cl);
  add_commands(app, cl);
  add_repl(app, cl);

  std::vector<std::string> words(argv + 1, argv + argc);
  if (auto dashes = std::find(words.begin(), words.end(), "--"); dashes != words.end()) {
    cl.after_dashes.assign(dashes + 1, words.end());
    words.erase(dashes, words.end());
  }
  std::reverse(words.begin(), words.end());  // CLI11 takes a vector of arguments last first
  try {
    app.parse(words);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  }
  if (!cl.after_dashes.empty() && !cl.takes_words_after_dashes) {
    std::cerr << "det: this command takes no words after --\n";
    return 2;
  }
  try {
    return cl.run();
  } catch (const std::exception& e) {
    std::cout.flush();
    std::cerr << e.what() << '\n';
    return 1;
  }
}
