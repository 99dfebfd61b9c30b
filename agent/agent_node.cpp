// det-node --role=agent: registers this machine's slots with the master and
// runs a container for each allocation the master starts here: a task's process, or a trial's
// worker (one per GPU slot for a LibTorch run on GPUs, agent/container_workers.hpp).
//
//   disconnected --(remote_actor + AgentHello answered)--> registered
//        ^                                                     |
//        +------------(master's actor goes down)---------------+
//
// Reconnecting re-sends the hello with the containers still running, so an agent rejoins a
// restarted master, and a master that kept its place (agent_reconnect_wait, told in the welcome)
// takes its running workers back. Workers still unclaimed when that wait is over are killed.

#include <atomic>
#include <chrono>
#include <cerrno>
#include <csignal>
#include <cstring>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <optional>
#include <thread>
#include <utility>
#include <pwd.h>
#include <unistd.h>

#include "messages/timestamp.hpp"

#include "node/state_text.hpp"
#include "caf/all.hpp"
#include "caf/io/all.hpp"
#include "gpu/devices.hpp"
#include "messages/actor_links.hpp"
#include "messages/caf_types.hpp"
#include "messages/interfaces.hpp"
#include "messages/version.hpp"
#include "agent/slow_work_pool.hpp"
#include "agent/unreported_exits.hpp"
#include "node/cgroup_limits.hpp"
#include "agent/child_process.hpp"
#include "agent/container_workers.hpp"
#include "node/directory_owner.hpp"
#include "agent/task_user_homes.hpp"
#include "agent/task_user_policy.hpp"
#include "agent/warm_worker_pool.hpp"
#include "agent/torch_trials_check.hpp"
#include "node/podman.hpp"
#include "agent/notebook_activity.hpp"
#include "agent/service_probe.hpp"
#include "node/tar_archive.hpp"
#include "node/node.hpp"
#include "node/log.hpp"

namespace det::runtime {
namespace {

using connect_atom = caf::atom_constant<caf::atom("connect")>;
using line_atom = caf::atom_constant<caf::atom("line")>;
using ended_atom = caf::atom_constant<caf::atom("ended")>;
using warm_atom = caf::atom_constant<caf::atom("warm")>;
using send_logs_atom = caf::atom_constant<caf::atom("sendlogs")>;
using force_atom = caf::atom_constant<caf::atom("force")>;
using give_up_atom = caf::atom_constant<caf::atom("giveup")>;
using ready_atom = caf::atom_constant<caf::atom("ready")>;
using activity_atom = caf::atom_constant<caf::atom("activity")>;
using prepared_atom = caf::atom_constant<caf::atom("prepared")>;

/// The agent as the master sees it, plus what its own threads tell it.
using agent_process_actor = agent_actor::extend<
    caf::reacts_to<connect_atom>,
    caf::reacts_to<line_atom, std::string, std::string, std::string>,
    caf::reacts_to<ended_atom, std::string, int32_t, int32_t, int32_t>,  // alloc, process, code, signal
    caf::reacts_to<send_logs_atom>,
    caf::reacts_to<force_atom, std::string>,
    caf::reacts_to<give_up_atom, int64_t>,
    caf::reacts_to<ready_atom, std::string, int32_t>,  // a task's service answers on that port
    caf::reacts_to<activity_atom, std::string>,        // a notebook's kernels are in use
    caf::reacts_to<prepared_atom, std::string, std::string>,  // a task's image and context are ready ("") or not (why)
    caf::reacts_to<warm_atom>>;                        // time to start warm workers again

constexpr auto retry_delay = std::chrono::seconds(1);

/// Set when the master refused the registration; the agent then exits with 1.
std::atomic<bool> refused{false};
constexpr auto hello_timeout = std::chrono::seconds(10);
constexpr auto log_flush_delay = std::chrono::milliseconds(50);
constexpr auto kill_grace = std::chrono::seconds(30);
constexpr int max_log_batch = 1000;
constexpr auto service_probe_interval = std::chrono::milliseconds(100);
constexpr auto notebook_activity_interval = std::chrono::seconds(2);
// Tasks' images pulled and contexts unpacked at once: more would share one link and one disk.
constexpr std::size_t slow_work_threads = 2;
// A warm worker handed a run is replaced this long after, so that starting its successor does not
// compete for the CPU with the run's own start, nor with the other runs that start with it (runs
// of one search on many slots tend to end and start together): LibTorch's load takes about 0.75 s
// of CPU, a worker that preloads nothing about 10 ms, and runs of a second or so must still find
// one waiting.
std::chrono::milliseconds warm_refill_delay(warm_preload successor) {
  return successor == warm_preload::libtorch ? std::chrono::seconds(2) : std::chrono::milliseconds(500);
}
// Room in a warm worker's command line for its run's (--allocation, --trial, --rank...), which ps
// and /proc/PID/cmdline then show as a cold worker's.
constexpr std::size_t warm_title_room = 160;

struct container {
  std::vector<std::shared_ptr<child_process>> processes;  // a trial's workers, or a task's one process
  container_exits exits{1};
  int64_t trial_id = 0;
  std::string task_id;            // a task's process rather than a trial's worker
  std::vector<int32_t> slot_ids;
  std::filesystem::path scratch;  // a task's fresh directory, removed when it ends
  std::shared_ptr<std::atomic<bool>> ended = std::make_shared<std::atomic<bool>>(false);  // stops its probe
  std::shared_ptr<cgroup_limits> limits;  // its memory and CPU limits, when its config sets them
  std::string container;  // its podman container's name, when it runs in an image (a task, or a Core API trial's process)
  int64_t memory_limit = 0;  // resources.memory_limit, for the sentence when it is exceeded
  std::string user;          // the Unix user it runs as: a shell's login

  // Only to processes still running: an ended one's process group id may be another's by now.
  void signal(int sig) const {
    for (std::size_t i = 0; i < processes.size(); ++i)
      if (!exits.has_ended(i)) processes[i]->signal(sig);
  }
};

// Whether the run's slots are GPUs: its environment's image and variables are the cuda ones.
bool cuda_slots(const pb::Agent& agent, const pb::StartContainer& start) {
  for (auto id : start.slot_ids())
    for (const auto& slot : agent.slots())
      if (slot.id() == id && slot.type() == pb::SLOT_TYPE_CUDA) return true;
  return false;
}

std::filesystem::path make_scratch_directory(const std::string& prefix) {
  auto pattern = (std::filesystem::temp_directory_path() / (prefix + "-XXXXXX")).string();
  if (!::mkdtemp(pattern.data()))
    throw std::runtime_error("cannot create a directory under " + std::filesystem::temp_directory_path().string() +
                             ": " + std::strerror(errno));
  return pattern;
}

void remove_scratch_directory(const std::filesystem::path& dir) {
  std::error_code ignored;  // what cannot be removed stays in the temporary directory
  std::filesystem::remove_all(dir, ignored);
}

// A task whose image is being pulled or whose context is being unpacked (agent/slow_work_pool).
struct preparing_task {
  pb::StartContainer start;       // without its context, which the preparation has
  std::filesystem::path scratch;  // its fresh directory
  // Killed, or given up with the master: its exit is reported, the steps of its preparation not
  // begun yet are skipped, and its directory goes once the preparation ends. (A pull under way
  // goes on until podman ends it: its image serves the next run that names it.)
  std::shared_ptr<std::atomic<bool>> cancelled = std::make_shared<std::atomic<bool>>(false);

  bool cancel() { return !cancelled->exchange(true); }  // true the first time
  bool is_cancelled() const { return *cancelled; }
};

struct agent_process_state {
  static inline const char* name = "agent";
  pb::Agent info;
  std::string master_host;
  int http_port = 0;  // the master's REST API, from its welcome
  uint16_t master_port = 0;
  std::string worker_binary;
  std::map<std::string, std::string> programs;  // tasks' service programs by the name the master uses
  std::string address;  // how the master reaches this machine: tasks' services are at address:port
  std::string user;     // whom this agent runs as: its tasks' services run as that user too
  std::optional<auth::tls_files> tls;  // the links are TLS; its workers show the same certificate
  std::string agent_token;  // the cluster's: the master admits no agent without it
  std::string session_token;  // from the latest welcome: every message to the endpoint carries it
  master_actor master;
  agent_endpoint endpoint;
  std::map<std::string, container> containers;
  pb::LogBatch pending_logs;
  bool flush_scheduled = false;
  bool announced_wait = false;
  int64_t reconnect_wait_s = 25;   // from the master's welcome
  int64_t disconnections = 0;      // names the wait a give_up tick belongs to
  agent::unreported_exits unsent_exits;  // while disconnected
  std::map<std::string, preparing_task> preparing;  // by allocation id
  agent::slow_work_pool slow_work{slow_work_threads};
  // Starts and ready services while it had no endpoint: a master may place work on an agent
  // before the agent has read the master's welcome.
  std::vector<pb::ContainerStarted> unsent_starts;
  std::unique_ptr<warm_worker_pool> warm;  // workers started ahead of their runs
  task_user_policy run_tasks_as = task_user_policy::owner;
  std::unique_ptr<task_user_homes> homes;  // of the users it runs work as

  void kill_all_containers() const {
    for (auto& [id, c] : containers) c.signal(SIGKILL);
  }

  // Runs when the agent stops (CAF destroys the state before attached
  // functors run): no worker outlives its agent.
  ~agent_process_state() {
    kill_all_containers();
    for (auto& [id, task] : preparing) {  // their jobs are dropped or end unheard
      task.cancel();
      std::error_code ignored;
      std::filesystem::remove_all(task.scratch, ignored);
    }
  }
};

using self_ptr = agent_process_actor::stateful_pointer<agent_process_state>;

void flush_logs(self_ptr self) {
  auto& st = self->state;
  st.flush_scheduled = false;
  if (st.pending_logs.entries_size() == 0 || !st.endpoint)
    return;
  self->send(st.endpoint, std::move(st.pending_logs), st.session_token);
  st.pending_logs.Clear();
}

void connect(self_ptr self) {
  auto& st = self->state;
  // remote_actor blocks; this actor is detached, so only it waits.
  auto master = connect_to_master(self->system(), st.master_host, st.master_port);
  if (!master) {
    if (!st.announced_wait)
      logs::warn(logs::component::agent, st.info.id() + ": waiting for the master at " + st.master_host + ":" +
                                             std::to_string(st.master_port) + " (" +
                                             error_sentence(self->system(), master.error()) + ")");
    st.announced_wait = true;
    self->delayed_send(self, retry_delay, connect_atom::value);
    return;
  }
  st.master = *master;
  pb::AgentHello hello;
  *hello.mutable_agent() = st.info;
  hello.set_agent_token(st.agent_token);
  const auto carried = st.unsent_exits.carry(hello);
  for (auto& [id, c] : st.containers) {
    auto* running = hello.add_running();
    running->set_allocation_id(id);
    running->set_trial_id(c.trial_id);
    running->set_task_id(c.task_id);
    for (auto slot : c.slot_ids)
      running->add_slot_ids(slot);
  }
  for (auto& [id, task] : st.preparing) {  // held for their allocations as much as running ones
    if (task.is_cancelled()) continue;
    auto* running = hello.add_running();
    running->set_allocation_id(id);
    running->set_task_id(task.start.task_id());
    for (auto slot : task.start.slot_ids())
      running->add_slot_ids(slot);
  }
  self->request(st.master, hello_timeout, hello, caf::actor_cast<agent_actor>(self))
      .then(
          [=](const pb::AgentWelcome& welcome, agent_endpoint endpoint) {
            auto& st = self->state;
            st.endpoint = endpoint;
            st.session_token = welcome.session_token();
            st.http_port = welcome.http_port();
            st.reconnect_wait_s = welcome.reconnect_wait_s() > 0 ? welcome.reconnect_wait_s() : st.reconnect_wait_s;
            ++st.disconnections;  // a pending give-up is void
            st.announced_wait = false;
            flush_logs(self);  // lines its workers wrote while it had no master
            for (auto& started : st.unsent_starts)
              if (st.containers.count(started.allocation_id())) self->send(st.endpoint, std::move(started), st.session_token);
            st.unsent_starts.clear();
            for (auto& exited : st.unsent_exits.welcomed(carried))  // those the hello did not carry
              self->send(st.endpoint, std::move(exited), st.session_token);
            self->monitor(st.master);
            logs::info(logs::component::agent, st.info.id() + ": registered with master " + welcome.master_version() +
                                                   " at " + st.master_host + ":" + std::to_string(st.master_port) +
                                                   " with " + std::to_string(st.info.slots_size()) + " slots");
          },
          [=](caf::error& err) {
            if (err == errc::refused) {
              // A refusal: this agent's settings are wrong, retrying cannot help.
              logs::error(logs::component::agent, "the master refused this agent: " + error_sentence(self->system(), err));
              refused = true;
              ::kill(::getpid(), SIGTERM);
              return;
            }
            logs::warn(logs::component::agent, "the master did not answer the registration (" +
                                                   error_sentence(self->system(), err) + "); retrying");
            self->state.master = nullptr;
            self->delayed_send(self, retry_delay, connect_atom::value);
          });
}

// The TLS files of the agent's links, which its processes' links use too. Always set: a plain
// agent started from a shell that exports them must not pass them on.
std::map<std::string, std::string> tls_env(const std::optional<auth::tls_files>& tls) {
  return {{auth::master_ca_variable, tls ? tls->ca : ""},
          {auth::tls_cert_variable, tls ? tls->cert : ""},
          {auth::tls_key_variable, tls ? tls->key : ""}};
}

// What every process the agent starts gets: its slots, its run, the master and the TLS files.
std::map<std::string, std::string> container_env(const agent_process_state& st, const pb::StartContainer& start) {
  std::string visible, slot_ids;
  for (auto id : start.slot_ids()) {
    slot_ids += (slot_ids.empty() ? "" : ",") + std::to_string(id);
    for (auto& slot : st.info.slots())
      if (slot.id() == id && slot.type() == pb::SLOT_TYPE_CUDA)
        visible += (visible.empty() ? "" : ",") + slot.uuid();
  }
  std::map<std::string, std::string> env{
      {"CUDA_VISIBLE_DEVICES", visible},
      {"DET_SLOT_IDS", slot_ids},
      {"DET_ALLOCATION_ID", start.allocation_id()},
      {"DET_ALLOCATION_TOKEN", start.allocation_token()},  // the process proves its run with it
      {"DET_AGENT_ID", st.info.id()},
      {"DET_MASTER", (st.tls ? "https://" : "http://") + st.master_host + ":" + std::to_string(st.http_port)},
  };
  if (start.task_id().empty())
    env["DET_TRIAL_ID"] = std::to_string(start.trial_id());
  else
    env["DET_TASK_ID"] = start.task_id();
  env.merge(tls_env(st.tls));
  const auto& environment = start.environment();
  for (const auto& [k, v] : cuda_slots(st.info, start) ? environment.cuda_env() : environment.cpu_env()) env[k] = v;
  for (auto& [k, v] : start.env())
    env[k] = v;
  return env;
}

// What a run that is its owner's Unix user gets besides: its name, its home on this agent, and
// that home's copies of the TLS files (the agent's own it may not read).
void add_user_env(agent_process_state& st, const pb::StartContainer& start, const process::unix_identity& who,
                  std::map<std::string, std::string>& env) {
  const auto& home = st.homes->of(who);
  env["HOME"] = home.path.string();
  env["USER"] = env["LOGNAME"] = start.task_user().user();
  for (const auto& [name, value] : tls_env(home.tls)) env[name] = value;
}

// A trial's worker: det-worker, which asks the master for its run.
process::spawn_request worker_request(const agent_process_state& st, const pb::StartContainer& start) {
  process::spawn_request request;
  request.env = container_env(st, start);
  request.argv = {st.worker_binary, "--master=" + st.master_host + ":" + std::to_string(st.master_port),
                  "--allocation=" + start.allocation_id(), "--trial=" + std::to_string(start.trial_id())};
  if (start.world_size() > 1) {
    request.argv.push_back("--rank=" + std::to_string(start.rank()));
    request.argv.push_back("--world-size=" + std::to_string(start.world_size()));
  }
  return request;
}

// A task: its own program (a service's as this agent has it installed, on `port`), in its
// work_dir or in `scratch` holding its uploaded context (unpacked by prepare_task).
process::spawn_request task_request(const agent_process_state& st, const pb::StartContainer& start,
                                    const std::filesystem::path& scratch, int port) {
  process::spawn_request request;
  request.argv = {start.argv().begin(), start.argv().end()};
  // A service's program is named as the master knows it ("sshd"): this agent's may live elsewhere.
  if (start.service() != pb::SERVICE_KIND_NONE)
    for (auto& word : request.argv)
      if (auto program = st.programs.find(word); program != st.programs.end()) word = program->second;
  for (auto& word : request.argv)
    for (auto at = word.find("{port}"); at != std::string::npos; at = word.find("{port}"))
      word.replace(at, 6, std::to_string(port));
  request.search_path = true;
  request.working_dir = start.work_dir().empty() ? scratch.string() : start.work_dir();
  return request;
}

// A task whose config names an image: its program runs in the image (the image's own, not this
// agent's `programs`), in its directory, with its variables; the service port is the host's. The
// image is here, and a container of the same name gone (prepare_task).
process::spawn_request task_in_image(const pb::StartContainer& start, const std::string& image,
                                     process::spawn_request request, std::map<std::string, std::string> env,
                                     const std::vector<std::string>& gpus, const std::string& cgroup_parent,
                                     const std::optional<process::unix_identity>& run_as) {
  const auto name = container_name(start.allocation_id(), start.rank());
  // det's Python clients, as a Core API trial's image has them, and the TLS files its variables name.
  std::vector<pb::BindMount> mounts;
  auto mount = [&](const std::string& host, const std::string& inside) {
    auto& m = mounts.emplace_back();
    m.set_host_path(host);
    m.set_container_path(inside);
    m.set_read_only(true);
  };
  mount(python_client_directory(), python_client_mount);
  for (const char* variable : {auth::master_ca_variable, auth::tls_cert_variable, auth::tls_key_variable})
    if (auto file = env.find(variable); file != env.end() && !file->second.empty()) mount(file->second, file->second);
  env["PYTHONPATH"] = python_client_mount;
  container_request inside{name, image, std::move(request.argv), std::move(env), request.working_dir, std::move(mounts),
                           gpus, &start.environment(), cgroup_parent, run_as};
  request.argv = podman_run_argv(inside);
  request.env = podman_run_environment(inside);
  return request;
}

// A task's process as it starts: its program with the variables every process gets, the service's
// port and det's Python clients, in its image when its config names one.
process::spawn_request task_process(const agent_process_state& st, const pb::StartContainer& start,
                                    const std::filesystem::path& scratch, int port, const std::string& image,
                                    const std::shared_ptr<cgroup_limits>& limits,
                                    const std::optional<process::unix_identity>& run_as) {
  auto request = task_request(st, start, scratch, port);
  request.env = container_env(st, start);
  if (port != 0) request.env["DET_TASK_PORT"] = std::to_string(port);
  // det_core and `determined` import in any command.
  const char* path = std::getenv("PYTHONPATH");
  request.env["PYTHONPATH"] = python_client_directory() + (path && *path ? ":" + std::string(path) : "");
  if (image.empty()) return request;
  std::vector<std::string> gpus;
  if (auto visible = request.env.find("CUDA_VISIBLE_DEVICES"); visible != request.env.end() && !visible->second.empty())
    gpus.push_back(visible->second);
  auto env = request.env;
  env.erase("CUDA_VISIBLE_DEVICES");  // the container sees only its own GPUs
  return task_in_image(start, image, std::move(request), std::move(env), gpus, limits ? limits->parent_path() : "", run_as);
}

// Polls a task's service until it answers (then tells the agent) or its process ends; then, for
// a notebook, looks at its kernels every few seconds and tells the agent while they are in use.
void probe_service(agent_process_actor me, std::string alloc, int port, const pb::StartContainer& start,
                   std::shared_ptr<std::atomic<bool>> ended) {
  const auto http_path = start.service() == pb::SERVICE_KIND_HTTP ? start.ready_path() : "";
  std::optional<notebook_activity> notebook;
  if (start.notebook_idle_type() != pb::NOTEBOOK_IDLE_TYPE_NONE)
    notebook.emplace(port, start.ready_path(), start.env().count("JUPYTER_TOKEN") ? start.env().at("JUPYTER_TOKEN") : "",
                     start.notebook_idle_type());
  std::thread([=]() mutable {
    while (!*ended && !service_answers(port, http_path))
      std::this_thread::sleep_for(service_probe_interval);
    if (*ended) return;
    caf::anon_send(me, ready_atom::value, alloc, int32_t{port});
    while (notebook && !*ended) {
      std::this_thread::sleep_for(notebook_activity_interval);
      if (!*ended && notebook->in_use()) caf::anon_send(me, activity_atom::value, alloc);
    }
  }).detach();
}

// Starts one process of a container: a trial's worker handed to a warm worker where one fits, or
// started cold. Its output and end go to the agent's actor as process `index` of `alloc`.
std::shared_ptr<child_process> start_process(self_ptr self, const pb::StartContainer& piece, process::spawn_request request,
                                             bool may_be_warm, int32_t index) {
  auto& st = self->state;
  auto me = caf::actor_cast<agent_process_actor>(self);
  const auto alloc = piece.allocation_id();
  // The workers of a distributed run share the trial's logs: each line says whose it is.
  std::string label = piece.world_size() > 1 ? "[worker " + std::to_string(piece.rank()) + "] " : "";
  child_process::line_handler on_line = [me, alloc, label](const std::string& stream, std::string line) {
    caf::anon_send(me, line_atom::value, alloc, stream, label + line);
  };
  child_process::exit_handler on_exit = [me, alloc, index](process::process_exit e) {
    caf::anon_send(me, ended_atom::value, alloc, index, int32_t{e.exit_code}, int32_t{e.signal});
  };
  if (may_be_warm) {
    const auto wants = piece.runtime() == pb::WORKER_RUNTIME_LIBTORCH ? warm_preload::libtorch : warm_preload::nothing;
    auto proc = st.warm->hand_over({{request.argv.begin() + 2, request.argv.end()}, request.env, request.run_as}, wants,
                                   on_line, on_exit);
    self->delayed_send(self, warm_refill_delay(wants), warm_atom::value);  // a successor, or ones that died waiting
    if (proc) return proc;
  }
  return child_process::start(std::move(request), std::move(on_line), std::move(on_exit));
}

// The master hears that a container never started, and why.
void report_never_started(self_ptr self, const std::string& alloc, bool is_task, const std::string& why) {
  auto& st = self->state;
  pb::ContainerExited exited;
  exited.set_allocation_id(alloc);
  exited.set_cause(pb::EXIT_CAUSE_NEVER_STARTED);
  exited.set_exit_code(-1);
  exited.set_message(std::string("the agent could not start ") + (is_task ? "the task: " : "the worker: ") + why);
  if (st.endpoint)
    self->send(st.endpoint, std::move(exited), st.session_token);
  else
    st.unsent_exits.add(std::move(exited));
}

const std::string& image_of(const pb::Agent& agent, const pb::StartContainer& start) {
  return cuda_slots(agent, start) ? start.environment().cuda_image() : start.environment().cpu_image();
}

// Starts a trial's workers, or a task's process in `scratch` (its context unpacked, its image here).
void launch_container(self_ptr self, const pb::StartContainer& start, const std::filesystem::path& scratch) {
  auto& st = self->state;
  auto alloc = start.allocation_id();
  auto me = caf::actor_cast<agent_process_actor>(self);
  const bool is_task = !start.task_id().empty();
  std::vector<std::shared_ptr<child_process>> started;
  try {
    const int port = start.service() == pb::SERVICE_KIND_NONE ? 0 : free_port();
    // A task's one process, or the trial's workers here, each with its own slots and rank.
    const auto pieces = is_task ? std::vector<pb::StartContainer>{start} : split_into_workers(start);
    const bool cuda = cuda_slots(st.info, start);
    const auto& image = image_of(st.info, start);
    const auto& environment = start.environment();
    // A trial's worker holds its own container to the limits; a task's process (in its image or
    // not) is held here. A container's workers share its limits.
    std::shared_ptr<cgroup_limits> limits;
    if ((is_task || image.empty()) && (environment.memory_limit_bytes() > 0 || environment.cpu_limit() > 0)) {
      std::string why;
      limits = cgroup_limits::create(container_name(alloc, start.rank()), environment.memory_limit_bytes(),
                                     environment.cpu_limit(), why);
      if (!limits)
        logs::warn(logs::component::agent, st.info.id() + ": cannot hold run " + alloc + " to its limits here (" + why +
                                               ")" + (image.empty() ? "; it runs without them" : "; podman enforces them"));
    }
    // A trial's worker can be one started ahead, handed its arguments after --master and the
    // variables a cold start gets, unless it must enter limits before it starts or its config sets
    // variables of its own: some take effect only as a process starts (LD_PRELOAD,
    // OMP_NUM_THREADS as LibTorch loads), and the run must start as they say.
    const auto& own_variables = cuda ? environment.cuda_env() : environment.cpu_env();
    const bool may_be_warm = !is_task && !limits && own_variables.empty();
    // Whose work it is: its owner's Unix user, or the agent's own when so configured.
    auto decided = run_as_for(st.run_tasks_as, start.task_user(), ::geteuid());
    if (auto* refusal = std::get_if<std::string>(&decided)) throw std::runtime_error(*refusal);
    const auto run_as = std::get<std::optional<process::unix_identity>>(decided);
    if (run_as && !scratch.empty()) give_directory_to(scratch, *run_as);
    if (run_as && limits && image.empty()) limits->admit(*run_as);
    for (const auto& piece : pieces) {
      auto request = is_task ? task_process(st, piece, scratch, port, image, limits, run_as) : worker_request(st, piece);
      if (run_as && image.empty()) {
        add_user_env(st, piece, *run_as, request.env);
        request.run_as = run_as;
        // A shell's sshd serves only a user with a name: one this machine lacks gets one in the
        // shell's own /etc/passwd.
        if (start.service() == pb::SERVICE_KIND_TCP)
          request.passwd_file = st.homes->passwd_file(*run_as, start.task_user().user());
      } else if (run_as && !is_task) {
        // A trial in an image keeps its worker as the agent's user, to run podman, which runs the
        // trial's process as its owner's (a task in an image is podman itself, told --user).
        request.env["DET_CONTAINER_USER"] = std::to_string(run_as->uid) + ":" + std::to_string(run_as->gid);
      }
      if (limits && image.empty()) request.argv = limits->entering(request.argv);
      started.push_back(start_process(self, piece, std::move(request), may_be_warm, static_cast<int32_t>(started.size())));
    }
    auto ended = std::make_shared<std::atomic<bool>>(false);
    if (port != 0)
      probe_service(me, alloc, port, start, ended);
    // Last: a container in the map is one whose end is reported when its processes end.
    st.containers[alloc] = {started, container_exits{started.size()}, start.trial_id(), start.task_id(),
                            {start.slot_ids().begin(), start.slot_ids().end()}, scratch, ended, limits,
                            image.empty() ? "" : container_name(alloc, start.rank()), environment.memory_limit_bytes(),
                            run_as ? start.task_user().user() : st.user};
    pb::ContainerStarted reported;
    reported.set_allocation_id(alloc);
    reported.set_pid(started.front()->pid());
    if (st.endpoint)
      self->send(st.endpoint, std::move(reported), st.session_token);
    else
      st.unsent_starts.push_back(std::move(reported));
  } catch (const std::exception& e) {
    for (const auto& proc : started) proc->signal(SIGKILL);  // the others' ends find no container
    if (!scratch.empty())
      remove_scratch_directory(scratch);
    report_never_started(self, alloc, is_task, e.what());
  }
}

// A task's context is unpacked into a fresh directory, its image pulled and a container of the
// same name left by an earlier start removed, on the slow-work threads; prepared_atom then
// launches it. Until then it is held in `preparing`, where a kill finds it.
void prepare_task(self_ptr self, pb::StartContainer start) {
  auto& st = self->state;
  const auto alloc = start.allocation_id();
  std::filesystem::path scratch;
  try {
    scratch = make_scratch_directory("det-task-" + start.task_id());
  } catch (const std::exception& e) {
    report_never_started(self, alloc, true, e.what());
    return;
  }
  std::string context = std::move(*start.mutable_context());
  const std::string image = image_of(st.info, start);
  const auto name = container_name(alloc, start.rank());
  auto environment = start.environment();
  auto& task = st.preparing[alloc] = {std::move(start), scratch};
  st.slow_work.post([me = caf::actor_cast<agent_process_actor>(self), alloc, context = std::move(context), scratch,
                     image, name, environment = std::move(environment), cancelled = task.cancelled] {
    std::string failure;  // empty: ready
    try {
      if (!context.empty() && !*cancelled) unpack_archive(context, scratch.string());
      if (!image.empty() && !*cancelled) {
        ensure_image(image, environment);
        remove_container(name);
      }
    } catch (const std::exception& e) {
      failure = *e.what() ? e.what() : "its preparation failed";
    } catch (...) {
      failure = "its preparation failed";
    }
    caf::anon_send(me, prepared_atom::value, alloc, failure);
  });
}

void start_container(self_ptr self, const pb::StartContainer& start) {
  if (start.task_id().empty())
    launch_container(self, start, {});  // a trial's worker pulls its image itself
  else
    prepare_task(self, start);
}

agent_process_actor::behavior_type agent_impl(self_ptr self, pb::Agent info, std::string host, uint16_t port,
                                              std::string worker_binary, std::string agent_token,
                                              std::optional<auth::tls_files> tls,
                                              std::map<std::string, std::string> programs, int warm_workers,
                                              task_user_policy run_tasks_as) {
  auto& st = self->state;
  st.run_tasks_as = run_tasks_as;
  st.homes = std::make_unique<task_user_homes>(tls);
  st.programs = std::move(programs);
  st.address = local_address_towards(host, port);
  if (const auto* pw = ::getpwuid(::getuid())) st.user = pw->pw_name;
  st.agent_token = std::move(agent_token);
  st.tls = std::move(tls);
  st.info = std::move(info);
  st.master_host = std::move(host);
  st.master_port = port;
  st.worker_binary = std::move(worker_binary);
  st.warm = std::make_unique<warm_worker_pool>(
      std::vector<std::string>{st.worker_binary, "--master=" + st.master_host + ":" + std::to_string(port), "--warm",
                               "--title-room=" + std::string(warm_title_room, '.')},
      tls_env(st.tls), static_cast<std::size_t>(warm_workers >= 0 ? warm_workers : st.info.slots_size()));
  st.warm->fill();
  self->set_down_handler([=](const caf::down_msg& dm) {
    auto& st = self->state;
    if (dm.source != st.master.address())
      return;
    logs::warn(logs::component::agent, st.info.id() + ": lost the master (" + self->system().render(dm.reason) +
                                           "); reconnecting, and keeping " + std::to_string(st.containers.size()) +
                                           " workers for " + std::to_string(st.reconnect_wait_s) + " s");
    st.master = nullptr;
    st.endpoint = nullptr;
    self->delayed_send(self, std::chrono::seconds(st.reconnect_wait_s), give_up_atom::value, ++st.disconnections);
    self->delayed_send(self, retry_delay, connect_atom::value);
  });
  self->send(self, connect_atom::value);
  return {
      [=](connect_atom) { connect(self); },
      [=](pb::StartContainer& start) { start_container(self, start); },
      [=](pb::KillContainer& kill) {
        auto& st = self->state;
        if (auto p = st.preparing.find(kill.allocation_id()); p != st.preparing.end()) {
          // Honoured at once: the pull or unpacking goes on, and its result is dropped.
          if (p->second.cancel()) {
            pb::ContainerExited exited;  // as if its process had been killed: the task says "killed on request"
            exited.set_allocation_id(kill.allocation_id());
            exited.set_cause(pb::EXIT_CAUSE_EXITED);
            exited.set_exit_code(-1);
            exited.set_signal(kill.signal() == 0 ? SIGKILL : kill.signal());
            exited.set_message("killed while its image was pulled or its context unpacked");
            if (st.endpoint)
              self->send(st.endpoint, std::move(exited), st.session_token);
            else
              st.unsent_exits.add(std::move(exited));
          }
          return;
        }
        auto it = st.containers.find(kill.allocation_id());
        if (it == st.containers.end())
          return;
        int sig = kill.signal() == 0 ? SIGKILL : kill.signal();
        it->second.signal(sig);
        if (sig != SIGKILL)
          self->delayed_send(self, kill.grace_s() > 0 ? std::chrono::seconds(kill.grace_s()) : kill_grace,
                             force_atom::value, kill.allocation_id());
      },
      [=](give_up_atom, int64_t wait) {
        auto& st = self->state;
        if (st.endpoint || wait != st.disconnections)
          return;
        // The master has given up on these workers by now.
        logs::warn(logs::component::agent, st.info.id() + ": no master for " + std::to_string(st.reconnect_wait_s) +
                                               " s; stopping " + std::to_string(st.containers.size()) + " workers");
        st.kill_all_containers();
        for (auto& [id, task] : st.preparing)
          if (task.cancel())
            report_never_started(self, id, true, "the agent had no master for " + std::to_string(st.reconnect_wait_s) + " s");
      },
      [=](force_atom, const std::string& alloc) {
        auto it = self->state.containers.find(alloc);
        if (it != self->state.containers.end())
          it->second.signal(SIGKILL);
      },
      [=](line_atom, const std::string& alloc, const std::string& stream, std::string& line) {
        auto& st = self->state;
        auto it = st.containers.find(alloc);
        auto* e = st.pending_logs.add_entries();
        e->set_trial_id(it == st.containers.end() ? 0 : it->second.trial_id);
        e->set_task_id(it == st.containers.end() ? "" : it->second.task_id);
        e->set_allocation_id(alloc);
        e->set_stream(stream);
        e->set_text(std::move(line));
        *e->mutable_time() = det::now();
        if (st.pending_logs.entries_size() >= max_log_batch) {
          flush_logs(self);
        } else if (!st.flush_scheduled) {
          st.flush_scheduled = true;
          self->delayed_send(self, log_flush_delay, send_logs_atom::value);
        }
      },
      [=](send_logs_atom) { flush_logs(self); },
      [=](activity_atom, const std::string& alloc) {
        auto& st = self->state;
        if (!st.endpoint || !st.containers.count(alloc)) return;
        pb::ContainerActivity activity;
        activity.set_allocation_id(alloc);
        self->send(st.endpoint, std::move(activity), st.session_token);
      },
      [=](ready_atom, const std::string& alloc, int32_t port) {
        auto& st = self->state;
        auto it = st.containers.find(alloc);
        if (it == st.containers.end()) return;  // ended meanwhile
        pb::ContainerStarted ready;
        ready.set_allocation_id(alloc);
        ready.set_pid(it->second.processes.front()->pid());
        ready.set_service_address(st.address + ":" + std::to_string(port));
        ready.set_service_user(it->second.user);
        if (st.endpoint)
          self->send(st.endpoint, std::move(ready), st.session_token);
        else
          st.unsent_starts.push_back(std::move(ready));
      },
      [=](ended_atom, const std::string& alloc, int32_t index, int32_t code, int32_t sig) {
        auto& st = self->state;
        auto it = st.containers.find(alloc);
        if (it == st.containers.end()) return;  // a worker of a container that could not start all of them
        auto& c = it->second;
        if (c.exits.ended(static_cast<std::size_t>(index), {code, sig}))
          c.signal(SIGKILL);  // the others cannot train without it
        if (!c.exits.all_ended()) return;
        flush_logs(self);
        const auto end = c.exits.outcome();
        *c.ended = true;
        const std::string what = c.task_id.empty() ? "trial" : "task";
        std::string why;  // a limit it ran into, said as a sentence
        if (ran_out_of_memory(c.limits.get(), end.exit_code, end.signal)) why = memory_limit_sentence(what, c.memory_limit);
        // A worker killed before it removed its container leaves it running; its cgroup goes after it.
        if (!c.container.empty())
          std::thread([name = c.container, limits = std::move(c.limits)] { remove_container(name); }).detach();
        if (!c.scratch.empty())
          remove_scratch_directory(c.scratch);
        st.containers.erase(it);
        pb::ContainerExited exited;
        exited.set_message(why);
        exited.set_allocation_id(alloc);
        exited.set_cause(pb::EXIT_CAUSE_EXITED);
        exited.set_exit_code(end.exit_code);
        exited.set_signal(end.signal);
        if (st.endpoint)
          self->send(st.endpoint, std::move(exited), st.session_token);
        else
          st.unsent_exits.add(std::move(exited));
      },
      [=](prepared_atom, const std::string& alloc, const std::string& failure) {
        auto& st = self->state;
        auto it = st.preparing.find(alloc);
        if (it == st.preparing.end()) return;
        auto task = std::move(it->second);
        st.preparing.erase(it);
        if (task.is_cancelled() || !failure.empty()) {
          remove_scratch_directory(task.scratch);
          if (!task.is_cancelled()) report_never_started(self, alloc, true, failure);
          return;
        }
        launch_container(self, task.start, task.scratch);
      },
      [=](warm_atom) { self->state.warm->fill(); },
      [=](inspect_atom) -> std::string {
        auto& st = self->state;
        state_text text{self};
        text.add("id", st.info.id())
            .add("master", st.master_host + ":" + std::to_string(st.master_port))
            .add("registered", st.endpoint ? "yes" : "no")
            .add("slots", st.info.slots_size())
            .add("containers", st.containers.size())
            .add("preparing", st.preparing.size());
        for (auto& [id, c] : st.containers) {
          std::string pids;
          for (const auto& p : c.processes) pids += (pids.empty() ? "" : ", ") + std::to_string(p->pid());
          text.add("container " + id, (c.processes.size() > 1 ? "pids " : "pid ") + pids);
        }
        return text.str();
      },
  };
}

pb::Agent describe_machine(const agent_options& opts) {
  pb::Agent a;
  a.set_id(opts.id.empty() ? hostname() : opts.id);
  a.set_hostname(hostname());
  a.set_resource_pool(opts.pool);
  a.set_version(det_version);
  int cpu_slots = 0;
  if (opts.slots == "auto") {
    auto gpus = gpu::discover_cuda_devices();
    for (auto& g : gpus) {
      auto* s = a.add_slots();
      s->set_id(g.index);
      s->set_type(pb::SLOT_TYPE_CUDA);
      s->set_device(g.name);
      s->set_memory_bytes(g.memory_bytes);
      s->set_uuid(g.uuid.empty() ? std::to_string(g.index) : g.uuid);
      s->set_enabled(true);
    }
    cpu_slots = gpus.empty() ? 1 : 0;
  } else if (opts.slots.rfind("cpu:", 0) == 0) {
    try {
      cpu_slots = std::stoi(opts.slots.substr(4));
    } catch (const std::exception&) {
      cpu_slots = -1;
    }
    if (cpu_slots < 1)
      throw std::runtime_error("--slots: \"" + opts.slots + "\" needs a positive count, e.g. cpu:2");
  } else {
    throw std::runtime_error("--slots: expected auto or cpu:N, got \"" + opts.slots + "\"");
  }
  for (int i = 0; i < cpu_slots; ++i) {
    auto* s = a.add_slots();
    s->set_id(i);
    s->set_type(pb::SLOT_TYPE_CPU);
    s->set_device("cpu");
    s->set_enabled(true);
  }
  return a;
}

// --master-ca, --tls-cert and --tls-key: all three or none, checked, and absolute, since its
// workers run in directories of their own.
std::optional<auth::tls_files> agent_tls(const agent_options& opts) {
  auto files = auth::tls_files_if_given({opts.tls_cert, opts.tls_key, opts.master_ca}, {"--tls-cert", "--tls-key", "--master-ca"});
  if (files)
    for (auto* path : {&files->cert, &files->key, &files->ca})
      *path = std::filesystem::absolute(*path);
  return files;
}

} // namespace

int run_agent(const agent_options& opts) {
  auto [host, port] = split_host_port(opts.master, "--master");
  auto info = describe_machine(opts);
  auto tls = agent_tls(opts);
  caf::actor_system_config cfg;
  configure_node(cfg);
  if (tls)
    use_tls_links(cfg, *tls);
  caf::actor_system sys{cfg};
  check_torch_trials_in_background(info.id(), worker_executable());
  const auto run_tasks_as = task_user_policy_from(opts.run_tasks_as);
  if (!run_tasks_as) throw std::runtime_error("--run-tasks-as must be owner or agent-user, not " + opts.run_tasks_as);
  if (*run_tasks_as == task_user_policy::agent_user)
    logs::warn(logs::component::agent, info.id() + ": --run-tasks-as=agent-user: every det user's work runs as this "
                                           "agent's user, where users can read each other's processes and files");
  auto agent = sys.spawn<caf::detached>(agent_impl, info, host, port, worker_executable(), opts.agent_token, tls,
                                        opts.programs, opts.warm_workers, *run_tasks_as);
  auto sig = wait_for_stop_signal();
  if (!refused)
    logs::info(logs::component::agent, info.id() + ": stopping on signal " + std::to_string(sig));
  // The agent actor kills its workers as it exits; wait for that, then leave
  // without tearing the actor system down: CAF 0.17 can wait forever for a
  // detached actor that its network layer still references (seen after the
  // master refused a registration).
  caf::scoped_actor self{sys};
  self->monitor(agent);
  caf::anon_send_exit(agent, caf::exit_reason::user_shutdown);
  self->receive([](const caf::down_msg&) {},
                caf::after(std::chrono::seconds(10)) >> [] {
                  logs::error(logs::component::agent, "the agent actor did not stop within 10 s");
                });
  std::_Exit(refused ? 1 : 0);
}

} // namespace det::runtime
