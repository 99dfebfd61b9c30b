#pragma once
// Typed interfaces of the master's actors, which live in one process. Handles
// point downward (experiment -> trial -> allocation -> pool/agent); what
// travels upward goes to a listener interface the parent's interface extends
// (trial_listener, allocation_listener, container_listener), so the
// interfaces have no cycles and no handle is cast unchecked.

#include "auth/task_user.hpp"
#include <cstdint>
#include <atomic>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "master/persistence/change_feed.hpp"
#include "master/experiments/searcher_messages.hpp"
#include "master/scheduling/worker_layout.hpp"
#include "caf/actor.hpp"
#include "caf/actor_addr.hpp"
#include "caf/meta/type_name.hpp"
#include "config/document_limits.hpp"
#include "config/host_access_policy.hpp"
#include "config/length.hpp"
#include "messages/interfaces.hpp"
#include "model/ids.hpp"
#include "storage/stored_rows.hpp"

namespace det {

namespace config {
template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, length& x) {
  return f(caf::meta::type_name("length"), x.unit, x.value);
}
} // namespace config

namespace storage {
template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, stored_user& x) {
  return f(caf::meta::type_name("stored_user"), x.user, x.password_hash);
}
template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, token_holder& x) {
  return f(caf::meta::type_name("token_holder"), x.token, x.user);
}
} // namespace storage

using activate_atom = caf::atom_constant<caf::atom("activate")>;
using authenticate_atom = caf::atom_constant<caf::atom("authn")>;
using add_atom = caf::atom_constant<caf::atom("add")>;
using archive_atom = caf::atom_constant<caf::atom("archive")>;
using checkpoints_atom = caf::atom_constant<caf::atom("ckpts")>;
using checkpointed_atom = caf::atom_constant<caf::atom("ckpted")>;
using gc_atom = caf::atom_constant<caf::atom("gc")>;
using allocate_atom = caf::atom_constant<caf::atom("allocate")>;
using create_atom = caf::atom_constant<caf::atom("create")>;
using enable_atom = caf::atom_constant<caf::atom("enable")>;
using expire_atom = caf::atom_constant<caf::atom("expire")>;
using exited_atom = caf::atom_constant<caf::atom("exited")>;
using flush_atom = caf::atom_constant<caf::atom("flush")>;
using get_atom = caf::atom_constant<caf::atom("get")>;
using kill_atom = caf::atom_constant<caf::atom("kill")>;
using launch_atom = caf::atom_constant<caf::atom("launch")>;
using list_atom = caf::atom_constant<caf::atom("list")>;
using logs_atom = caf::atom_constant<caf::atom("logs")>;
using metrics_atom = caf::atom_constant<caf::atom("metrics")>;
using model_atom = caf::atom_constant<caf::atom("model")>;
using owner_atom = caf::atom_constant<caf::atom("owner")>;
using password_atom = caf::atom_constant<caf::atom("password")>;
using pause_atom = caf::atom_constant<caf::atom("pause")>;
using preempt_atom = caf::atom_constant<caf::atom("preempt")>;
using proxy_atom = caf::atom_constant<caf::atom("proxy")>;
using reclaim_atom = caf::atom_constant<caf::atom("reclaim")>;
using register_atom = caf::atom_constant<caf::atom("register")>;
using release_atom = caf::atom_constant<caf::atom("release")>;
using remove_atom = caf::atom_constant<caf::atom("remove")>;
using rung_atom = caf::atom_constant<caf::atom("rung")>;
using searcher_atom = caf::atom_constant<caf::atom("searcher")>;
using schedule_atom = caf::atom_constant<caf::atom("schedule")>;
using census_atom = caf::atom_constant<caf::atom("census")>;
using series_atom = caf::atom_constant<caf::atom("series")>;
using snapshot_atom = caf::atom_constant<caf::atom("snapshot")>;
using progress_atom = caf::atom_constant<caf::atom("progress")>;
using start_atom = caf::atom_constant<caf::atom("start")>;
using stop_atom = caf::atom_constant<caf::atom("stop")>;
using tick_atom = caf::atom_constant<caf::atom("tick")>;
using train_to_atom = caf::atom_constant<caf::atom("train_to")>;
using update_atom = caf::atom_constant<caf::atom("update")>;
using validated_atom = caf::atom_constant<caf::atom("validated")>;
using welcome_atom = caf::atom_constant<caf::atom("welcome")>;

/// What det agent|slot enable|disable [--drain] asks of an agent or one of its slots.
enum class slot_switch : uint8_t {
  enable,   ///< takes new work
  drain,    ///< takes no new work; what runs there finishes
  disable,  ///< takes no new work; what runs there is preempted
};

inline std::string to_string(slot_switch x) {
  return x == slot_switch::enable ? "enable" : x == slot_switch::drain ? "drain" : "disable";
}

/// Users and bearer tokens, on a PostgreSQL connection of its own: a login or a token lookup
/// never waits behind metric commits. It stores what it is given; hashing passwords (which takes
/// tens of milliseconds) and deciding who may do what are the gateway's.
using accounts_actor = caf::typed_actor<
    caf::replies_to<get_atom, std::string>::with<storage::stored_user>,  // by name; errc::not_found
    caf::replies_to<get_atom, user_id>::with<storage::stored_user>,      // errc::not_found
    caf::replies_to<list_atom>::with<pb::GetUsersResponse>,
    // name, Argon2id hash, admin; errc::invalid_input when the name is taken
    caf::replies_to<create_atom, std::string, std::string, bool>::with<pb::User>,
    caf::replies_to<password_atom, user_id, std::string>::with<bool>,  // new hash; revokes the user's sessions
    caf::replies_to<enable_atom, user_id, bool>::with<bool>,           // active or not
    caf::replies_to<update_atom, user_id, pb::AgentUserGroup>::with<bool>,  // its link, checked by the gateway
    // a token of the user: its SHA-256, kind, description, lifespan in seconds
    caf::replies_to<create_atom, user_id, std::string, pb::TokenKind, std::string, int64_t>::with<pb::AccessToken>,
    caf::replies_to<authenticate_atom, std::string>::with<storage::token_holder>,  // by SHA-256; errc::not_found
    caf::replies_to<get_atom, token_id>::with<pb::AccessToken>,                    // errc::not_found
    caf::replies_to<list_atom, user_id>::with<pb::GetAccessTokensResponse>,        // 0: everyone's
    caf::replies_to<remove_atom, token_id>::with<bool>,                            // revokes it
    caf::reacts_to<remove_atom, user_id, std::string>,  // revokes the user's tokens so described
    caf::replies_to<owner_atom, experiment_id>::with<pb::User>>;                   // errc::not_found

/// The model registry's storage, on a PostgreSQL connection of its own. Who may change a model is
/// the gateway's to decide.
using model_registry_actor = caf::typed_actor<
    caf::replies_to<create_atom, pb::PostModelRequest, user_id>::with<pb::Model>,  // invalid_input when taken
    caf::replies_to<list_atom>::with<pb::GetModelsResponse>,
    caf::replies_to<get_atom, std::string>::with<pb::GetModelResponse>,  // with its versions; not_found
    // a new version of the named model by the user (an admin: true): invalid_input unless the
    // checkpoint is COMPLETED, forbidden unless the user owns its experiment or is an admin
    caf::replies_to<add_atom, std::string, pb::PostModelVersionRequest, user_id, bool>::with<pb::ModelVersion>,
    caf::replies_to<remove_atom, std::string>::with<bool>>;  // the model and its versions; not_found

/// Workspaces and projects, on a PostgreSQL connection of its own. Deleting is refused (invalid_input)
/// for anything that holds experiments and for the Uncategorized workspace and project.
using projects_actor = caf::typed_actor<
    caf::replies_to<create_atom, pb::PostWorkspaceRequest, user_id>::with<pb::Workspace>,
    caf::replies_to<list_atom>::with<pb::GetWorkspacesResponse>,
    caf::replies_to<get_atom, workspace_id>::with<pb::GetWorkspaceResponse>,  // with its projects
    caf::replies_to<remove_atom, workspace_id>::with<bool>,
    caf::replies_to<create_atom, workspace_id, pb::PostProjectRequest, user_id>::with<pb::Project>,
    caf::replies_to<get_atom, project_id>::with<pb::Project>,
    caf::replies_to<update_atom, project_id, pb::PatchProjectRequest>::with<pb::Project>,
    caf::replies_to<remove_atom, project_id>::with<bool>,
    caf::replies_to<update_atom, experiment_id, project_id>::with<bool>>;  // moves it

/// The rows a slot or a worker waits for, each committed before it is answered, on a connection of
/// their own so that they never wait behind the persistence writer's batched work.
using row_writer_actor = caf::typed_actor<
    caf::replies_to<create_atom, pb::Trial>::with<int64_t>,  // the new id, or errc::storage_failed
    caf::replies_to<pb::Checkpoint>::with<bool>,              // false: not recorded
    caf::replies_to<flush_atom>::with<bool>,                  // answered after everything asked before
    caf::replies_to<inspect_atom>::with<std::string>>;

/// The writer: with the row writer, the only actors that write to PostgreSQL but for checkpoint
/// deletion. Metric and log rows are buffered and written with COPY; a metric batch is answered
/// once committed.
using persistence_actor = caf::typed_actor<
    // An experiment with its first trials and its model archive, in one transaction: answered with
    // their ids set, or errc::storage_failed.
    caf::replies_to<create_atom, pb::GetExperimentResponse, std::string>::with<pb::GetExperimentResponse>,
    // What people write about an experiment: name, description, notes; labels; archived (false: it has not ended).
    caf::replies_to<update_atom, experiment_id, pb::PatchExperimentRequest>::with<bool>,
    caf::replies_to<add_atom, experiment_id, std::string>::with<bool>,
    caf::replies_to<remove_atom, experiment_id, std::string>::with<bool>,
    caf::replies_to<archive_atom, experiment_id, bool>::with<bool>,
    caf::reacts_to<update_atom, pb::Experiment>,
    caf::reacts_to<update_atom, pb::Trial>,
    caf::reacts_to<update_atom, pb::Agent>,
    caf::reacts_to<snapshot_atom, experiment_id, std::string>,  // serialized searcher snapshot
    // the same, written at once (after what is buffered): answers once it is committed
    caf::replies_to<snapshot_atom, experiment_id, std::string, flush_atom>::with<bool>,
    caf::reacts_to<update_atom, experiment_id, pb::JobSettings>,  // scheduling settings changed
    caf::replies_to<pb::MetricBatch>::with<int64_t>,
    caf::reacts_to<pb::LogBatch>,
    caf::replies_to<flush_atom>::with<int64_t>,  // writes what it buffered; answers the reports written
    caf::reacts_to<tick_atom>,
    caf::replies_to<inspect_atom>::with<std::string>>;

/// Readers of the REST API's pages, each on its own connection (a pool of them stands behind one
/// handle). Metrics, logs and checkpoints are read after the writer has written what it buffered.
/// Failures answer errc::storage_failed; a missing row answers an empty response.
using persistence_reader_actor = caf::typed_actor<
    caf::replies_to<list_atom, int64_t, int32_t, pb::ExperimentFilter>::with<pb::GetExperimentsResponse>,  // offset, limit
    caf::replies_to<get_atom, experiment_id>::with<pb::GetExperimentResponse>,
    caf::replies_to<get_atom, trial_id>::with<pb::GetTrialResponse>,
    // group ("" for all), offset, limit
    caf::replies_to<metrics_atom, trial_id, std::string, int64_t, int32_t>::with<pb::GetTrialMetricsResponse>,
    // the latest report of each metric group, at most this many groups
    caf::replies_to<metrics_atom, trial_id, int32_t>::with<pb::GetTrialMetricsResponse>,
    // group, metric name, first and last batches, at most this many points (database::metric_series)
    caf::replies_to<series_atom, trial_id, std::string, std::string, int64_t, int64_t, int32_t>::with<pb::MetricSeries>,
    // every trial's whole series: group, metric name, at most this many points each
    caf::replies_to<series_atom, experiment_id, std::string, std::string, int32_t>::with<pb::ExperimentMetricSeries>,
    caf::replies_to<census_atom>::with<pb::StoredCensus>,  // for Prometheus
    caf::replies_to<logs_atom, trial_id, int64_t, int32_t>::with<pb::TrialLogsResponse>,  // after id, limit
    caf::replies_to<logs_atom, std::string, int64_t, int32_t>::with<pb::TaskLogsResponse>,  // a task's
    caf::replies_to<checkpoints_atom, experiment_id>::with<pb::GetCheckpointsResponse>,
    caf::replies_to<checkpoints_atom, trial_id>::with<pb::GetCheckpointsResponse>,
    caf::replies_to<get_atom, std::string>::with<pb::GetCheckpointResponse>,  // by uuid
    caf::replies_to<model_atom, experiment_id>::with<std::string>>;  // its model definition (tar); "" for none

/// Deletes checkpoint files on its own connection: an ended experiment's garbage, or one on request.
using checkpoint_collector_actor = caf::typed_actor<
    caf::replies_to<remove_atom, std::string>::with<bool>,  // by uuid; false: no such checkpoint; invalid_input if registered
    // An ended experiment with its files and rows; invalid_input while it runs or a model version or
    // another experiment's trial points at one of its checkpoints.
    caf::replies_to<remove_atom, experiment_id>::with<bool>,
    caf::reacts_to<gc_atom, experiment_id, std::string>>;   // the experiment's config TOML

/// Hears how the containers it launched on an agent are doing: an allocation.
using container_listener = caf::typed_actor<
    caf::reacts_to<pb::ContainerStarted>,
    caf::reacts_to<pb::ContainerExited>,
    caf::reacts_to<pb::ContainerActivity>>;

/// What an agent process reports, once its gate checked the session token.
using agent_events = caf::typed_actor<
    caf::reacts_to<pb::ContainerStarted>,
    caf::reacts_to<pb::ContainerExited>,
    caf::reacts_to<pb::ContainerActivity>,
    caf::reacts_to<pb::LogBatch>>;

/// The master-side agent: relays container commands to its agent process (through its gate)
/// and container events back to the allocations.
using agent_proxy_actor = agent_events::extend<
    // The agent registered again while this proxy waited for it: it takes its containers back.
    caf::replies_to<pb::AgentHello, agent_actor>::with<pb::AgentWelcome, agent_endpoint>,
    // A new proxy's first welcome: a fresh session token and its gate.
    caf::replies_to<welcome_atom>::with<pb::AgentWelcome, agent_endpoint>,
    caf::reacts_to<expire_atom, int64_t>,  // the reconnect window of that disconnection closed
    caf::reacts_to<launch_atom, pb::StartContainer, container_listener>,
    // An allocation takes back a container the agent kept running across a master restart.
    caf::reacts_to<register_atom, std::string, std::vector<int32_t>, container_listener>,
    caf::reacts_to<pb::KillContainer>,
    caf::replies_to<get_atom>::with<pb::Agent>,
    caf::replies_to<enable_atom, int32_t, slot_switch>::with<bool>,  // slot (-1: all)
    caf::replies_to<inspect_atom>::with<std::string>>;

/// One agent's share of an allocation: its slots there and the agent's master-side proxy. An
/// allocation spans several agents when its trial needs more slots than one has.
struct allocation_part {
  std::string agent_id;
  std::vector<int32_t> slot_ids;
  agent_proxy_actor agent;
  slot_kind kind = slot_kind::cpu;  // the agent's slots' (which decides how many workers it starts)
};
template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, allocation_part& x) {
  return f(caf::meta::type_name("allocation_part"), x.agent_id, x.slot_ids, x.agent, x.kind);
}
using allocation_parts = std::vector<allocation_part>;

/// The settings a pool schedules a job (an experiment) by; priority 0 means the pool's default.
struct job_settings {
  int32_t priority = 0;
  double weight = 1;
  int32_t max_slots = 0;
};
template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, job_settings& x) {
  return f(caf::meta::type_name("job_settings"), x.priority, x.weight, x.max_slots);
}

/// What an allocation asks its pool for.
struct allocation_ask {
  std::string id;          ///< the allocation: "<trial>.<run>", or a task's id
  std::string job;         ///< what the pool schedules it under, as job_id::str() writes it
  int32_t slots = 0;
  bool one_agent = false;  ///< its slots must all be on one agent (a task: one process)
  bool preemptible = true; ///< a task is never preempted (Determined's rule)
};
template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, allocation_ask& x) {
  return f(caf::meta::type_name("allocation_ask"), x.id, x.job, x.slots, x.one_agent, x.preemptible);
}

/// What a pool tells its provisioner after a scheduling pass that changed it: the instances its
/// pending work asks for, and its connected agents by id (true: idle, running nothing).
struct scaling_info {
  int32_t desired_new = 0;
  std::map<std::string, bool> agents;
  bool operator==(const scaling_info& o) const { return desired_new == o.desired_new && agents == o.agents; }
};
template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, scaling_info& x) {
  return f(caf::meta::type_name("scaling_info"), x.desired_new, x.agents);
}

/// A pool's provisioner: launches and terminates the pool's elastic agents through its provider.
using provisioner_actor = caf::typed_actor<
    caf::reacts_to<scaling_info>,
    caf::reacts_to<tick_atom>,  // time for a pass
    caf::replies_to<get_atom>::with<pb::Provisioner>,
    caf::replies_to<inspect_atom>::with<std::string>>;

/// A resource pool: answers an allocate request once its scheduler
/// places it, with one part per agent, or with errc::unschedulable when none of its agents could ever
/// hold it; the requester hears preempt_atom when the scheduler wants its slots back.
using resource_pool_actor = caf::typed_actor<
    caf::replies_to<allocate_atom, allocation_ask>::with<allocation_parts>,
    caf::reacts_to<release_atom, std::string>,
    // A restored trial's run: answered once an agent reports that allocation still running (it
    // is adopted where it runs), or with an error after agent_reconnect_wait.
    caf::replies_to<reclaim_atom, allocation_ask>::with<allocation_parts>,
    caf::reacts_to<expire_atom, std::string>,  // that wait for an allocation id is over
    caf::reacts_to<update_atom, std::string, job_settings>,  // a job's settings
    caf::reacts_to<remove_atom, std::string>,                // a job has ended
    // An agent's enabled slots and their kind, and the containers it still runs from before a
    // master restart.
    caf::reacts_to<add_atom, std::string, std::vector<int32_t>, slot_kind, agent_proxy_actor, std::vector<pb::RunningContainer>>,
    caf::reacts_to<remove_atom, std::string, caf::actor_addr>,  // agent id, its proxy
    // Enables or disables an agent (slot -1) or one of its slots; without drain, what runs there
    // is preempted. Answers whether the pool has that agent and slot.
    caf::replies_to<enable_atom, std::string, int32_t, slot_switch>::with<bool>,
    caf::replies_to<list_atom>::with<pb::ResourcePoolInfo, pb::GetJobsResponse>,
    caf::reacts_to<schedule_atom>,  // runs the scheduling pass a change asked for
    caf::reacts_to<provisioner_actor>,  // the pool's provisioner, told its scaling_info from now on
    caf::replies_to<inspect_atom>::with<std::string>>;

/// Knows every agent that registered; spawns their master-side proxies.
using agent_registry_actor = caf::typed_actor<
    caf::replies_to<pb::AgentHello, agent_actor>::with<pb::AgentWelcome, agent_endpoint>,
    // det agent|slot enable|disable: agent id, slot (-1: the agent), enabled, drain; answers
    // whether the agent (and slot) exists.
    caf::replies_to<enable_atom, std::string, int32_t, slot_switch>::with<bool>,
    caf::replies_to<list_atom>::with<pb::GetAgentsResponse>>;

/// One allocation of slots for one run of a trial, or for a task: its containers, one per agent
/// it spans.
using allocation_actor = container_listener::extend<
    caf::reacts_to<preempt_atom>,  // the pool wants the slots back
    caf::reacts_to<kill_atom, int32_t, int64_t>,  // signal, then SIGKILL after this many seconds
    caf::reacts_to<kill_atom, int32_t>,
    caf::replies_to<inspect_atom>::with<std::string>>;

/// What an allocation tells its trial or task: its containers started, the run ended (one
/// ContainerExited for all of them), or the pool wants the slots back.
using allocation_listener = caf::typed_actor<
    caf::reacts_to<launch_atom, std::vector<std::string>>,  // placed: its containers start on these agents
    caf::reacts_to<pb::ContainerStarted>,
    caf::reacts_to<pb::ContainerActivity>,  // a task's service is in use
    caf::reacts_to<pb::ContainerExited>,
    caf::reacts_to<preempt_atom>>;

/// A command, shell, notebook or TensorBoard: its allocation's events, and its owner's kill.
using task_actor = allocation_listener::extend<
    caf::reacts_to<kill_atom>,
    caf::replies_to<proxy_atom>::with<pb::Task>,  // the task as a request to its service sees it
    caf::reacts_to<tick_atom>,                     // time to check its idle timeout
    caf::replies_to<inspect_atom>::with<std::string>>;

/// Every task: stores them on a PostgreSQL connection of its own, starts them, and takes back
/// those a master restart interrupted. Who may see or kill one is the gateway's to decide.
using tasks_actor = caf::typed_actor<
    // kind, owner_id, description, config, slots, resource_pool and entrypoint set; its context (a tar archive)
    caf::replies_to<create_atom, pb::Task, std::string>::with<pb::Task>,
    caf::replies_to<list_atom, pb::TaskKind>::with<std::vector<pb::Task>>,  // UNSPECIFIED: every kind
    caf::replies_to<get_atom, std::string>::with<pb::Task>,                 // errc::not_found
    caf::replies_to<kill_atom, std::string>::with<bool>,                    // false: it had ended
    // A request to a running task's service: the task as it is now (errc::not_found unless it runs).
    caf::replies_to<proxy_atom, std::string>::with<pb::Task>,
    // The gateway let a request through to the task `allocation_id` names: its idle clock restarts.
    caf::reacts_to<pb::ContainerActivity>,
    caf::replies_to<list_atom>::with<pb::GetTaskSummariesResponse>,         // tasks and running trials
    caf::reacts_to<update_atom, pb::Task>>;                                 // a task's new state, from its actor

/// What a trial tells the experiment that owns it.
using trial_listener = caf::typed_actor<
    caf::reacts_to<validated_atom, int64_t, double, int64_t>,  // request id, searcher metric, length
    caf::reacts_to<exited_atom, int64_t, pb::State, pb::WorkerOutcome>,  // request id, end, what its worker said
    caf::reacts_to<checkpointed_atom, int64_t, std::string, int64_t>,  // request id, latest checkpoint, its length
    caf::reacts_to<progress_atom, int64_t, double>>;  // request id, the share its process says it trained

/// What a worker reports, once its gate checked the run's token.
using worker_reports = caf::typed_actor<
    caf::replies_to<pb::MetricBatch>::with<int64_t>,
    caf::replies_to<pb::Checkpoint>::with<bool>,
    caf::replies_to<pb::WorkerExit>::with<bool>,
    caf::replies_to<pb::Rendezvous>::with<pb::Rendezvous>>;

/// A trial's gate: its workers' endpoint. It passes on what carries the current run's token,
/// which only its trial sets ("" while no run may report).
using run_gate_actor = trial_endpoint::extend<caf::reacts_to<update_atom, std::string>>;

/// An agent's gate: its agent's endpoint, and the only actor that sends to the agent process.
/// Container commands and a reconnected agent's handle with its new session token are taken
/// from its proxy only.
using agent_gate_actor = agent_endpoint::extend<
    caf::reacts_to<pb::StartContainer>,
    caf::reacts_to<pb::KillContainer>,
    caf::reacts_to<agent_actor, std::string>>;

/// A trial: what its worker reports, plus its allocation's events.
using trial_actor = worker_reports::extend<
    caf::replies_to<pb::WorkerHello>::with<pb::TrialSpec, trial_endpoint>,
    caf::reacts_to<launch_atom, std::vector<std::string>>,
    caf::reacts_to<pb::ContainerStarted>,
    caf::reacts_to<pb::ContainerActivity>,
    caf::reacts_to<pb::ContainerExited>,
    caf::reacts_to<train_to_atom, config::length>,  // searcher: train to this length
    caf::reacts_to<rung_atom, int32_t>,             // searcher: the rung it trains for
    caf::reacts_to<stop_atom, bool>,                    // searcher: close it; cut short or not
    caf::replies_to<pb::CoreApiCall>::with<pb::CoreApiReply>,
    caf::reacts_to<kill_atom>,
    caf::reacts_to<pause_atom>,
    caf::reacts_to<activate_atom>,
    caf::reacts_to<preempt_atom>,  // checkpoint, give the slots back, queue again
    caf::replies_to<inspect_atom>::with<std::string>>;

/// An experiment's search (searcher::searcher), as an actor of its own linked to its experiment:
/// the experiment tells it what happened, in order, and carries out what it answers.
using searcher_actor = caf::typed_actor<
    caf::replies_to<search_request>::with<search_step>,
    // custom: what its process posted; errc::invalid_input with a sentence for a bad operation
    caf::replies_to<pb::PostSearcherOperationsRequest>::with<search_step>,
    caf::replies_to<inspect_atom>::with<std::string>>;  // the REPL's inspect searcher N

/// An experiment: asks its searcher, spawns its trials.
using experiment_actor = trial_listener::extend<
    caf::reacts_to<start_atom>,  // begins (or restores) the search, once spawned
    // Answered once applied, its state update handed to persistence before the answer: a read
    // that follows the answer sees the new state.
    caf::replies_to<kill_atom>::with<bool>,
    caf::replies_to<pause_atom>::with<bool>,
    caf::replies_to<activate_atom>::with<bool>,
    caf::replies_to<pb::JobSettings>::with<bool>,  // det experiment set, det job update
    // custom searcher: the events its process has not acknowledged, answered at once (the gateway
    // asks again while there are none), and the operations it posts
    caf::replies_to<searcher_atom, get_atom>::with<pb::GetSearcherEventsResponse>,
    caf::replies_to<pb::PostSearcherOperationsRequest>::with<bool>,
    caf::replies_to<searcher_atom, inspect_atom>::with<std::string>,  // the REPL's inspect searcher N
    caf::replies_to<inspect_atom>::with<std::string>>;

/// The master's front door for its own REST gateway: experiment creation, signals to live
/// experiments and Core API calls. Never published: the network reaches the master only
/// through the gates of master/remote/network_gates.cpp.
using master_front_actor = caf::typed_actor<
    caf::replies_to<pb::CreateExperimentRequest, user_id>::with<pb::CreateExperimentResponse>,  // its owner
    caf::replies_to<kill_atom, experiment_id>::with<bool>,
    caf::replies_to<pause_atom, experiment_id>::with<bool>,
    caf::replies_to<activate_atom, experiment_id>::with<bool>,
    caf::replies_to<experiment_id, pb::JobSettings>::with<bool>,
    // a live experiment's custom searcher (errc::not_found when the experiment is not live)
    caf::replies_to<searcher_atom, experiment_id>::with<pb::GetSearcherEventsResponse>,
    caf::replies_to<experiment_id, pb::PostSearcherOperationsRequest>::with<bool>,
    caf::replies_to<pb::CoreApiCall>::with<pb::CoreApiReply>,  // relayed to the trial
    caf::reacts_to<register_atom, std::string, std::string, caf::actor>>;

/// Handles the master's actors are spawned with.
struct master_handles {
  persistence_actor persistence;
  row_writer_actor rows;
  persistence_reader_actor reader;
  /// Reads of metric rows (a trial's metrics, series) on connections of their own: a slow one
  /// (a long history, a locked table) never holds up the reads of experiments and trials.
  persistence_reader_actor metric_reader;
  checkpoint_collector_actor collector;
  accounts_actor accounts;
  model_registry_actor models;
  projects_actor projects;
  std::map<std::string, resource_pool_actor> pools;  // by pool name
  std::string default_pool;
  std::string default_aux_pool;
  agent_registry_actor registry;
  tasks_actor tasks;
  /// The provisioners of pools with a provider, by pool name (for the REST API: spawned once the
  /// actor port is bound, after the other actors got their handles).
  std::map<std::string, provisioner_actor> provisioners;
  /// What an agent must present to register (security.agent_token_file).
  std::string agent_token;
  /// How long a disconnected agent's work is kept for it to reconnect.
  int64_t agent_reconnect_wait_s = 25;
  /// Where checkpoints go when an experiment's checkpoint_storage names no host_path.
  std::string default_checkpoint_root;
  /// What users' configs may take from an agent's host (master.toml's [security]); checked at submission.
  config::host_access_policy host_access;
  /// The most trials a grid search may have (master.toml's max_grid_trials); checked at submission.
  int64_t max_grid_trials = config::default_max_grid_trials;
  /// Where unlinked users' uids on agents begin (master.toml's security.task_uid_base).
  int64_t task_uid_base = auth::default_task_uid_base;
  /// The largest request body an authenticated caller may send (security.max_upload_size).
  int64_t max_upload_bytes = config::default_max_upload_bytes;
  /// What the persistence writer committed, for the gateway's event streams.
  std::shared_ptr<change_feed> feed = std::make_shared<change_feed>();
  /// The REST API's port, known once the gateway has bound it (agents tell trial processes).
  std::shared_ptr<std::atomic<int>> http_port = std::make_shared<std::atomic<int>>(0);

  /// The pool named `name`, the default pool for "" (the aux pool for 0-slot work), or an
  /// invalid handle.
  resource_pool_actor pool(const std::string& name, int32_t slots = 1) const {
    return pools_at(pool_name(name, slots));
  }
  std::string pool_name(const std::string& name, int32_t slots = 1) const {
    return !name.empty() ? name : slots == 0 && !default_aux_pool.empty() ? default_aux_pool : default_pool;
  }
  resource_pool_actor pools_at(const std::string& name) const {
    auto it = pools.find(name);
    return it == pools.end() ? resource_pool_actor{} : it->second;
  }
};

} // namespace det
