// The model registry's storage: models and their versions, on a PostgreSQL connection of its own.
// Who may change a model is the gateway's to decide; what a version may point at is decided here.

#include <memory>

#include <nlohmann/json.hpp>

#include "master/spawn.hpp"
#include "master/persistence/storage_answer.hpp"
#include "caf/all.hpp"
#include "storage/database.hpp"

namespace det {
namespace {

struct registry_store_state {
  static inline const char* name = "model-registry";
  std::unique_ptr<storage::database> db;
};

using self_ptr = model_registry_actor::stateful_pointer<registry_store_state>;

caf::error no_model(const std::string& name) {
  return make_error(errc::not_found, "there is no model " + name);
}

model_registry_actor::behavior_type registry_store_impl(self_ptr self, std::string conninfo) {
  self->state.db = std::make_unique<storage::database>(conninfo);
  auto& db = *self->state.db;
  return {
      [&db](create_atom, pb::PostModelRequest& req, user_id owner) {
        return answer_or_refusal<pb::Model>("store model " + req.name(), [&]() -> or_refusal<pb::Model> {
          std::vector<std::string> labels(req.labels().begin(), req.labels().end());
          if (auto model = db.insert_model(req.name(), req.description(), labels, owner.value))
            return *model;
          return make_error(errc::invalid_input, "the model name " + req.name() + " is taken");
        });
      },
      [&db](list_atom) {
        return answer_with(attempt_storage("cannot list the models", [&] {
          pb::GetModelsResponse out;
          for (auto& m : db.list_models()) *out.add_models() = std::move(m);
          return out;
        }));
      },
      [&db](get_atom, const std::string& name) {
        return answer_or_refusal<pb::GetModelResponse>("read model " + name, [&]() -> or_refusal<pb::GetModelResponse> {
          auto model = db.get_model(name);
          if (!model)
            return no_model(name);
          pb::GetModelResponse out;
          *out.mutable_model() = std::move(*model);
          for (auto& v : db.model_versions(out.model().id())) {
            if (auto c = db.get_checkpoint(v.checkpoint_uuid()))
              *v.mutable_checkpoint() = std::move(*c);
            *out.add_versions() = std::move(v);
          }
          return out;
        });
      },
      [&db](add_atom, const std::string& name, pb::PostModelVersionRequest& req, user_id owner,
            bool admin) -> caf::result<pb::ModelVersion> {
        if (!req.metadata().empty()) {
          auto parsed = nlohmann::json::parse(req.metadata(), nullptr, false);
          if (parsed.is_discarded() || !parsed.is_object())
            return make_error(errc::invalid_input, "metadata must be a JSON object, not " + req.metadata());
        }
        return answer_or_refusal<pb::ModelVersion>("register checkpoint " + req.checkpoint_uuid(),
                                       [&]() -> or_refusal<pb::ModelVersion> {
                                         auto model = db.get_model(name);
                                         if (!model)
                                           return no_model(name);
                                         auto c = db.get_checkpoint(req.checkpoint_uuid());
                                         if (!c)
                                           return make_error(errc::invalid_input,
                                                             "there is no checkpoint " + req.checkpoint_uuid());
                                         // A version keeps its checkpoint (and so its experiment) for good:
                                         // only whoever may delete them may pin them.
                                         auto experiment_owner = db.experiment_owner(c->experiment_id());
                                         if (!admin && experiment_owner && experiment_owner->id() != owner.value)
                                           return make_error(errc::forbidden,
                                                             "checkpoint " + c->uuid() + " belongs to experiment " +
                                                                 std::to_string(c->experiment_id()) + " of user " +
                                                                 experiment_owner->username() +
                                                                 ": only its owner or an admin may register it");
                                         if (c->state() != pb::CHECKPOINT_STATE_COMPLETED)
                                           return make_error(errc::invalid_input,
                                                             "checkpoint " + req.checkpoint_uuid() +
                                                                 " was deleted: only a COMPLETED checkpoint can be registered");
                                         auto v = db.insert_model_version(model->id(), c->uuid(), req.name(),
                                                                          req.metadata(), owner.value);
                                         *v.mutable_checkpoint() = std::move(*c);
                                         return v;
                                       });
      },
      [&db](remove_atom, const std::string& name) {
        return answer_or_refusal<bool>("delete model " + name, [&]() -> or_refusal<bool> {
          auto model = db.get_model(name);
          if (!model)
            return no_model(name);
          db.delete_model(model->id());
          return true;
        });
      },
  };
}

} // namespace

model_registry_actor spawn_model_registry(caf::actor_system& sys, const std::string& conninfo) {
  return sys.spawn<caf::detached>(registry_store_impl, conninfo);
}

} // namespace det
