// A command, shell, notebook or TensorBoard: one process on an agent, scheduled like a trial's
// run, never preempted nor restarted. It keeps its lifecycle's facts (master/tasks/task_lifecycle.hpp),
// feeds each event to step() and carries out what step() answers: signals to its allocation,
// its stored state, a line in its log.

#include <chrono>
#include <csignal>
#include <utility>

#include "node/run_environment.hpp"
#include "master/spawn.hpp"
#include "node/state_text.hpp"
#include "master/tasks/task_lifecycle.hpp"
#include "auth/credentials.hpp"
#include "caf/all.hpp"
#include "messages/timestamp.hpp"
#include "model/ids.hpp"

namespace det {
namespace {

// How long a stopped task's process has between SIGTERM and SIGKILL.
constexpr int64_t stop_grace_s = 10;
// How long the token a task's process acts for its owner with lasts, at most: it is revoked when
// the task ends.
constexpr int64_t user_token_lifespan_s = 30 * 24 * 3600;
constexpr auto accounts_timeout = std::chrono::seconds(30);
// How often a task with an idle timeout checks it (Determined's tick).
constexpr auto idle_tick = std::chrono::seconds(1);

struct task_actor_state {
  static inline const char* name = "task";
  task_setup setup;
  config::task_config config;
  task_facts facts;
  allocation_actor allocation;
  // The last request to its service (or when it became ready): its idle clock.
  std::chrono::steady_clock::time_point last_used = std::chrono::steady_clock::now();
};

using self_ptr = task_actor::stateful_pointer<task_actor_state>;

pb::Task& task(self_ptr self) { return self->state.setup.task; }

// What the pool schedules the task under.
std::string job_of(const pb::Task& t) { return job_id::of(task_id{t.id()}).str(); }

void log_line(self_ptr self, const std::string& text) {
  pb::LogBatch batch;
  auto* e = batch.add_entries();
  e->set_task_id(task(self).id());
  e->set_allocation_id(task(self).id());
  e->set_stream("master");
  e->set_text(text);
  *e->mutable_time() = det::now();
  self->send(self->state.setup.handles.persistence, std::move(batch));
}

void store(self_ptr self) { self->send(self->state.setup.registry, update_atom::value, task(self)); }

// What describes the token a task's process acts for its owner with (DET_USER_TOKEN).
std::string user_token_description(const pb::Task& t) { return "the token of task " + t.id(); }

// A shell's entrypoint ($1 is the sshd the agent has): its keys and config in a directory only it
// reads, the task's variables passed to every login (PermitUserEnvironment), then sshd on the
// agent's port, in the foreground, logging to stderr.
constexpr const char* shell_script = R"sh(set -eu
dir=$PWD/.det-shell
mkdir -p -m 700 "$dir"
umask 077
printf '%s\n' "$DET_SHELL_HOST_KEY" > "$dir/host_key"
options=$(env | grep -E '^(DET_[A-Z_]*|CUDA_VISIBLE_DEVICES|PATH)=' | grep -vE '^DET_(SHELL_|ALLOCATION_TOKEN)' \
  | sed 's/["\\]/\\&/g; s/.*/environment="&"/' | tr '\n' ',')
printf '%senvironment="DET_SHELL_DIR=%s" %s\n' "$options" "$PWD" "$DET_SHELL_AUTHORIZED_KEY" > "$dir/authorized_keys"
cat > "$dir/sshd_config" <<EOF
HostKey $dir/host_key
AuthorizedKeysFile $dir/authorized_keys
PubkeyAuthentication yes
PasswordAuthentication no
KbdInteractiveAuthentication no
PermitRootLogin prohibit-password
PermitUserEnvironment yes
UsePAM no
StrictModes no
PidFile none
AllowTcpForwarding yes
Subsystem sftp /usr/lib/openssh/sftp-server
EOF
if [ "$(id -u)" = 0 ]; then mkdir -p -m 755 /run/sshd; fi
exec "$1" -D -e -f "$dir/sshd_config" -p "$DET_TASK_PORT"
)sh";

pb::NotebookIdleType idle_type_of(config::notebook_idle_type type) {
  switch (type) {
    case config::notebook_idle_type::kernel_connections: return pb::NOTEBOOK_IDLE_TYPE_KERNEL_CONNECTIONS;
    case config::notebook_idle_type::activity: return pb::NOTEBOOK_IDLE_TYPE_ACTIVITY;
    case config::notebook_idle_type::kernels_or_terminals: break;
  }
  return pb::NOTEBOOK_IDLE_TYPE_KERNELS_OR_TERMINALS;
}

// What the agent runs: the entrypoint with the config's variables, in its context or work_dir;
// a service's on the port the agent picks ("{port}"), ready once its ready_path answers.
pb::StartContainer container_of(self_ptr self) {
  const auto& st = self->state;
  const auto& t = task(self);
  pb::StartContainer start;
  start.set_task_id(t.id());
  start.mutable_task_user()->set_owner_id(t.owner_id());
  start.set_allocation_token(st.setup.secrets.allocation_token);
  for (const auto& word : t.entrypoint()) start.add_argv(word);
  const auto base_url = "/proxy/" + t.id() + "/";
  switch (t.kind()) {
    case pb::TASK_KIND_NOTEBOOK:
      // Debian's Jupyter Notebook 6.4 under the proxy's path, on every interface (the master
      // reaches it from its own machine); the token, in the environment, keeps others out.
      for (const char* word : {"jupyter-notebook", "--no-browser", "--ip=0.0.0.0", "--port={port}", "--port-retries=0",
                               "--NotebookApp.allow_root=True", "--NotebookApp.allow_origin=*",
                               "--NotebookApp.trust_xheaders=True", "--notebook-dir=."})
        start.add_argv(word);
      start.add_argv("--NotebookApp.base_url=" + base_url);
      start.set_service(pb::SERVICE_KIND_HTTP);
      start.set_ready_path(base_url + "api");
      start.set_notebook_idle_type(idle_type_of(st.config.idle_type));
      (*start.mutable_env())["JUPYTER_TOKEN"] = st.setup.secrets.service_token;
      (*start.mutable_env())["DET_NOTEBOOK_TOKEN"] = st.setup.secrets.service_token;
      break;
    case pb::TASK_KIND_TENSORBOARD:
      // The gateway put "tensorboard --logdir_spec SPEC" in its entrypoint.
      for (const char* word : {"--port={port}", "--bind_all"}) start.add_argv(word);
      start.add_argv("--path_prefix=" + base_url.substr(0, base_url.size() - 1));
      for (const auto& word : st.config.tensorboard_args) start.add_argv(word);
      start.set_service(pb::SERVICE_KIND_HTTP);
      start.set_ready_path(base_url);
      break;
    case pb::TASK_KIND_SHELL:
      for (const char* word : {"/bin/sh", "-c", shell_script, "det-shell", "sshd"}) start.add_argv(word);
      start.set_service(pb::SERVICE_KIND_TCP);
      (*start.mutable_env())["DET_SHELL_HOST_KEY"] = st.setup.secrets.host_private_key;
      (*start.mutable_env())["DET_SHELL_AUTHORIZED_KEY"] = t.public_key();
      break;
    default:
      break;
  }
  *start.mutable_environment() = run_environment_of(st.config.environment);
  start.set_context(st.setup.context);
  start.set_work_dir(st.config.work_dir);
  return start;
}

void apply(self_ptr self, const task_event& event) {
  auto& st = self->state;
  auto out = step(st.facts, event);
  const bool moved = out.next.state != st.facts.state;
  st.facts = out.next;
  if (out.signal == process_signal::terminate)
    self->send(st.allocation, kill_atom::value, int32_t{SIGTERM}, stop_grace_s);
  if (!out.reason.empty()) log_line(self, out.reason);
  if (!moved) return;
  task(self).set_state(to_pb(st.facts.state));
  if (st.facts.state != task_state::terminated) return store(self);
  if (out.exit_code >= 0) task(self).set_exit_code(out.exit_code);
  task(self).set_exit_reason(out.reason);
  *task(self).mutable_end_time() = det::now();
  store(self);
  // Killed while queued: the allocation still waits for slots and gives its request back.
  if (out.release_slots && event.kind != task_event_kind::process_ended)
    self->send(st.allocation, kill_atom::value, int32_t{SIGKILL});
  self->send(st.setup.handles.pool(task(self).resource_pool(), task(self).slots()), remove_atom::value,
             job_of(task(self)));
  self->send(st.setup.handles.accounts, remove_atom::value, user_id{task(self).owner_id()},
             user_token_description(task(self)));
  self->quit();
}

// `reclaim`: its process outlived a master restart and is taken back where it runs.
void start_allocation(self_ptr self, const allocation_ask& ask, const pb::StartContainer& start,
                      const resource_pool_actor& pool, bool reclaim = false) {
  const auto& handles = self->state.setup.handles;
  self->state.allocation = spawn_allocation(self->system(), ask, start, allocation_listener{self}, pool, reclaim,
                                            handles.accounts, handles.task_uid_base);
}

task_actor::behavior_type task_impl(self_ptr self, task_setup setup) {
  auto& st = self->state;
  st.setup = std::move(setup);
  const auto& t = task(self);
  // The gateway checked the config when the task was created; it reads the same now.
  st.config = config::parse_task_config(t.config(), "the config of task " + t.id(), from_pb(t.kind()));
  st.facts.state = from_pb(t.state());
  // A TensorBoard stops after 5 minutes without use unless its config says otherwise (Determined's default).
  st.facts.idle_timeout_s = st.config.idle_timeout_s.value_or(t.kind() == pb::TASK_KIND_TENSORBOARD ? 300 : 0);
  auto pool = st.setup.handles.pool(t.resource_pool(), t.slots());
  if (st.config.priority)
    self->send(pool, update_atom::value, job_of(t), job_settings{*st.config.priority, 1, 0});
  // A restored task that had been placed runs (or ran) on its agent: take it back there.
  const bool reclaim = st.setup.restored && st.facts.state != task_state::queued;
  if (reclaim)
    log_line(self, "the master restarted: waiting up to " + std::to_string(st.setup.handles.agent_reconnect_wait_s) +
                       " s for its agent to report it");
  const allocation_ask ask{t.id(), job_of(t), t.slots(), true, false};  // one process: one agent
  if (reclaim) {
    start_allocation(self, ask, container_of(self), pool, true);
    if (st.facts.state == task_state::terminating)  // it was being stopped: go on
      self->send(st.allocation, kill_atom::value, int32_t{SIGTERM}, stop_grace_s);
  } else {
    // Its process acts for its owner (the det CLI, a custom searcher) with a token of its own, as in
    // Determined: stored before the process can use it, revoked when the task ends. It is a task's
    // token, which cannot create tokens or users: another user who reads the process's environment
    // cannot turn it into a lasting one.
    const auto token = auth::random_secret();
    self->request(st.setup.handles.accounts, accounts_timeout, create_atom::value, user_id{t.owner_id()},
                  auth::sha256(token), pb::TOKEN_KIND_TASK, user_token_description(t), user_token_lifespan_s)
        .then(
            [=](pb::AccessToken&) {
              auto start = container_of(self);
              (*start.mutable_env())["DET_USER_TOKEN"] = token;
              (*start.mutable_env())["DET_USER"] = task(self).owner();
              start_allocation(self, ask, start, pool);
            },
            [=](caf::error& e) {
              log_line(self, "its owner's token could not be stored (" + self->system().render(e) +
                                 "); it runs without DET_USER_TOKEN");
              start_allocation(self, ask, container_of(self), pool);
            });
  }
  st.facts.ready = t.ready();  // a restored task that was ready still is: the agent kept it
  if (st.facts.idle_timeout_s > 0) self->send(self, tick_atom::value);
  if (t.kind() == pb::TASK_KIND_TENSORBOARD && !st.setup.restored)
    log_line(self, "TensorBoard reads the event files of its trials (" + t.entrypoint(t.entrypoint_size() - 1) +
                       "): the harness's trials write them as they report, and the master writes those of Core API trials");
  return {
      [=](launch_atom, const std::vector<std::string>& agents) {
        if (!agents.empty()) task(self).set_agent_id(agents.front());
        apply(self, {task_event_kind::slots_assigned, {}});
      },
      [=](pb::ContainerStarted& started) {
        task(self).set_agent_id(started.agent_id());
        if (started.service_address().empty()) return apply(self, {task_event_kind::process_started, {}});
        task(self).set_service_address(started.service_address());
        task(self).set_service_user(started.service_user());
        task(self).set_ready(true);
        self->state.last_used = std::chrono::steady_clock::now();
        log_line(self, "ready at /proxy/" + task(self).id() + "/");
        apply(self, {task_event_kind::became_ready, {}});
        store(self);
      },
      [=](proxy_atom) { return task(self); },
      [=](const pb::ContainerActivity&) { self->state.last_used = std::chrono::steady_clock::now(); },
      [=](tick_atom) {
        auto& st = self->state;
        if (st.facts.state == task_state::terminated) return;
        self->delayed_send(self, idle_tick, tick_atom::value);
        const auto idle = std::chrono::steady_clock::now() - st.last_used;
        if (st.facts.ready && idle >= std::chrono::seconds(st.facts.idle_timeout_s))
          apply(self, {task_event_kind::idle_timeout, {}});
      },
      [=](pb::ContainerExited& exited) { apply(self, {task_event_kind::process_ended, std::move(exited)}); },
      // Tasks are not preemptible: the pool never asks for their slots back.
      [=](preempt_atom) {},
      [=](kill_atom) { apply(self, {task_event_kind::kill_requested, {}}); },
      [=](inspect_atom) -> std::string {
        const auto& st = self->state;
        return state_text{self}
            .add("id", task(self).id())
            .add("kind", config::to_string(from_pb(task(self).kind())))
            .add("state", to_string(st.facts.state))
            .add("stop", to_string(st.facts.stop))
            .add("agent", task(self).agent_id().empty() ? "(none yet)" : task(self).agent_id())
            .add("slots", task(self).slots())
            .str();
      },
  };
}

} // namespace

task_actor spawn_task(caf::actor_system& sys, task_setup setup) { return sys.spawn(task_impl, std::move(setup)); }

} // namespace det
