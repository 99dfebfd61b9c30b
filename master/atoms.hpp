#pragma once
// The atoms that name the master's actors' messages (shared by every protocol here), and the
// inspect() overloads of the plain types those messages carry (config::length, storage's rows).

#include "caf/atom.hpp"
#include "messages/interfaces.hpp"
#include "caf/meta/type_name.hpp"
#include "config/length.hpp"
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

} // namespace det
