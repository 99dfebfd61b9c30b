#pragma once
// The model registry's protocol (master/models/model_registry.cpp).

#include "caf/typed_actor.hpp"
#include "master/atoms.hpp"
#include "messages/interfaces.hpp"
#include "model/ids.hpp"

namespace det {

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

} // namespace det
