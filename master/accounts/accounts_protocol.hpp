#pragma once
// The accounts actor's protocol (master/accounts/accounts.cpp).

#include "caf/typed_actor.hpp"
#include "master/atoms.hpp"
#include "messages/interfaces.hpp"
#include "model/ids.hpp"

namespace det {

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

} // namespace det
