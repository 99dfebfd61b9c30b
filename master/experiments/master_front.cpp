// The master's front door for its REST gateway: creates experiments, signals live ones and relays
// Core API calls. The network reaches the master through master/remote/network_gates.cpp instead.

#include "messages/timestamp.hpp"


#include "master/spawn.hpp"
#include "caf/all.hpp"
#include "config/experiment_config.hpp"
#include "searcher/searcher.hpp"

namespace det {
namespace {

constexpr auto lookup_timeout = std::chrono::seconds(5);
// An experiment that commits a custom searcher's snapshot takes its next message after the commit.
constexpr auto signal_timeout = std::chrono::seconds(25);
constexpr auto db_timeout = std::chrono::seconds(30);

struct front_state {
  static inline const char* name = "master";
  master_handles handles;
  directory_actor directory;
};

using self_ptr = master_front_actor::stateful_pointer<front_state>;

/// The user's input is wrong.
caf::error rejection(std::string sentence) {
  return make_error(errc::invalid_input, std::move(sentence));
}

caf::error not_running(int64_t trial) {
  return make_error(errc::not_found, "trial " + std::to_string(trial) + " is not running");
}

/// Sends `signal` (kill, pause, activate, changed job settings) to a live experiment; answers
/// whether there was one, once it has applied the signal and persistence has written the state it
/// set: a read after the answer sees it. (The experiment hands its state to persistence before it
/// answers, and persistence answers a flush after what it was sent before.)
template <class Signal>
caf::result<bool> signal_experiment(self_ptr self, experiment_id id, Signal signal) {
  auto rp = self->make_response_promise<bool>();
  self->request(self->state.directory, lookup_timeout, get_atom::value, id)
      .then(
          [=](experiment_actor a) mutable {
            if (!a) {
              rp.deliver(false);
              return;
            }
            self->request(a, signal_timeout, signal)
                .then(
                    [=](bool) mutable {
                      self->request(self->state.handles.persistence, db_timeout, flush_atom::value)
                          .then([=](int64_t) mutable { rp.deliver(true); },
                                [=](caf::error& e) mutable { rp.deliver(std::move(e)); });
                    },
                    [=](caf::error& e) mutable { rp.deliver(std::move(e)); });
          },
          [=](caf::error& e) mutable { rp.deliver(std::move(e)); });
  return rp;
}

/// Asks a live experiment (`ask`) and passes its answer on; errc::not_found when it is not live.
template <class Reply, class... Ask>
caf::result<Reply> ask_experiment(self_ptr self, experiment_id id, Ask... ask) {
  // A post waits for its snapshot's commit.
  constexpr auto answer_timeout = std::chrono::seconds(40);
  auto rp = self->make_response_promise<Reply>();
  self->request(self->state.directory, lookup_timeout, get_atom::value, id)
      .then(
          [=](experiment_actor a) mutable {
            if (!a) {
              rp.deliver(make_error(errc::not_found, "experiment " + std::to_string(id.value) + " is not running"));
              return;
            }
            self->request(a, answer_timeout, std::move(ask)...)
                .then([=](Reply& r) mutable { rp.deliver(std::move(r)); },
                      [=](caf::error& e) mutable {
                        if (e == caf::sec::request_receiver_down)  // it ended meanwhile
                          e = make_error(errc::not_found, "experiment " + std::to_string(id.value) + " is not running");
                        rp.deliver(std::move(e));
                      });
          },
          [=](caf::error& e) mutable { rp.deliver(std::move(e)); });
  return rp;
}

// Stores the experiment with its model definition and the trials its search begins with, in one
// transaction, and starts its actor, which carries out those first actions.
void store_experiment(self_ptr self, pb::Experiment exp, experiment_plan plan, const std::string& model_definition,
                      caf::typed_response_promise<pb::CreateExperimentResponse> rp) {
  pb::GetExperimentResponse rows;
  *rows.mutable_experiment() = exp;
  plan.first_actions = plan.search->initial_trials();
  for (const auto& a : *plan.first_actions)
    if (auto* c = std::get_if<searcher::create_action>(&a); c && c->parent_request_id == 0)
      *rows.add_trials() = new_trial_row(*c, *plan.config, plan.warm_start_uuid);
  self->request(self->state.handles.persistence, db_timeout, create_atom::value, std::move(rows), model_definition)
      .then(
          [=](pb::GetExperimentResponse& stored) mutable {
            const auto id = stored.experiment().id();
            exp.set_id(id);
            plan.first_trials.assign(stored.trials().begin(), stored.trials().end());
            auto actor = spawn_experiment(self->system(), exp, plan, self->state.handles, self->state.directory);
            self->send(self->state.directory, register_atom::value, experiment_id{id}, actor);
            pb::CreateExperimentResponse resp;
            *resp.mutable_experiment() = exp;
            rp.deliver(std::move(resp));
          },
          [=](caf::error& e) mutable { rp.deliver(std::move(e)); });
}

master_front_actor::behavior_type front_impl(self_ptr self, master_handles handles,
                                             directory_actor directory) {
  self->state.handles = std::move(handles);
  self->state.directory = std::move(directory);
  return {
      [=](pb::CoreApiCall& call) -> caf::result<pb::CoreApiReply> {
        auto rp = self->make_response_promise<pb::CoreApiReply>();
        auto id = call.trial_id();
        self->request(self->state.directory, lookup_timeout, get_atom::value, trial_id{id})
            .then(
                [=](trial_actor a) mutable {
                  if (!a) {
                    rp.deliver(not_running(id));
                    return;
                  }
                  self->request(a, lookup_timeout, std::move(call))
                      .then([=](pb::CoreApiReply& r) mutable { rp.deliver(std::move(r)); },
                            [=](caf::error& e) mutable { rp.deliver(std::move(e)); });
                },
                [=](caf::error& e) mutable { rp.deliver(std::move(e)); });
        return rp;
      },
      [=](pb::CreateExperimentRequest& req, user_id owner) -> caf::result<pb::CreateExperimentResponse> {
        experiment_plan plan;
        try {
          plan = make_experiment_plan(req.config(), req.config_path());
        } catch (const std::exception& e) {
          return rejection(e.what());
        }
        auto& cfg = *plan.config;
        pb::Experiment exp;
        exp.set_name(cfg.name);
        exp.set_description(cfg.description);
        exp.set_state(pb::STATE_ACTIVE);
        exp.set_config(req.config());
        exp.set_searcher(cfg.searcher.name);
        exp.set_metric(cfg.searcher.metric);
        exp.set_smaller_is_better(cfg.searcher.smaller_is_better);
        exp.set_owner_id(owner.value);
        exp.set_parent_id(req.parent_id());
        exp.set_project_id(req.project_id());
        for (const auto& label : cfg.labels)
          exp.add_labels(label);
        *exp.mutable_start_time() = det::now();
        auto rp = self->make_response_promise<pb::CreateExperimentResponse>();
        plan.model_definition = std::make_shared<const std::string>(req.model_definition());
        const auto& searcher = cfg.searcher;
        auto source = req.config_path() + ": searcher.";
        if (searcher.source_trial_id) {
          auto trial = *searcher.source_trial_id;
          self->request(self->state.handles.reader, db_timeout, checkpoints_atom::value, trial_id{trial})
              .then(
                  [=](pb::GetCheckpointsResponse& found) mutable {
                    const pb::Checkpoint* latest = nullptr;
                    for (const auto& c : found.checkpoints())
                      if (c.state() == pb::CHECKPOINT_STATE_COMPLETED && (!latest || c.steps_completed() >= latest->steps_completed()))
                        latest = &c;
                    if (!latest) {
                      rp.deliver(rejection(source + "source_trial_id: trial " + std::to_string(trial) +
                                           " has no checkpoint to start from"));
                      return;
                    }
                    plan.warm_start_uuid = latest->uuid();
                    plan.warm_start_dir = latest->storage_path() + "/" + latest->uuid();
                    store_experiment(self, std::move(exp), std::move(plan), req.model_definition(), rp);
                  },
                  [=](caf::error& e) mutable { rp.deliver(std::move(e)); });
          return rp;
        }
        if (!searcher.source_checkpoint_uuid.empty()) {
          auto uuid = searcher.source_checkpoint_uuid;
          self->request(self->state.handles.reader, db_timeout, get_atom::value, uuid)
              .then(
                  [=](pb::GetCheckpointResponse& found) mutable {
                    const auto& c = found.checkpoint();
                    if (c.uuid().empty() || c.state() != pb::CHECKPOINT_STATE_COMPLETED) {
                      rp.deliver(rejection(source + "source_checkpoint_uuid: there is no checkpoint " + uuid +
                                           (c.uuid().empty() ? "" : " any more: it was deleted")));
                      return;
                    }
                    plan.warm_start_uuid = c.uuid();
                    plan.warm_start_dir = c.storage_path() + "/" + c.uuid();
                    store_experiment(self, std::move(exp), std::move(plan), req.model_definition(), rp);
                  },
                  [=](caf::error& e) mutable { rp.deliver(std::move(e)); });
          return rp;
        }
        store_experiment(self, std::move(exp), std::move(plan), req.model_definition(), rp);
        return rp;
      },
      [=](kill_atom a, experiment_id id) { return signal_experiment(self, id, a); },
      [=](pause_atom a, experiment_id id) { return signal_experiment(self, id, a); },
      [=](activate_atom a, experiment_id id) { return signal_experiment(self, id, a); },
      [=](experiment_id id, pb::JobSettings& change) { return signal_experiment(self, id, std::move(change)); },
      [=](searcher_atom a, experiment_id id) {
        return ask_experiment<pb::GetSearcherEventsResponse>(self, id, a, get_atom::value);
      },
      [=](experiment_id id, pb::PostSearcherOperationsRequest& ops) {
        return ask_experiment<bool>(self, id, std::move(ops));
      },
      [=](register_atom a, const std::string& kind, const std::string& id, caf::actor h) {
        self->send(self->state.directory, a, kind, id, std::move(h));
      },
  };
}

} // namespace

master_front_actor spawn_master_front(caf::actor_system& sys, const master_handles& handles,
                                      const directory_actor& directory) {
  return sys.spawn(front_impl, handles, directory);
}

} // namespace det
