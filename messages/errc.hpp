#pragma once
// det's error category: every error an actor answers with says which of these cases it is, and
// carries a sentence for the user. The HTTP gateway maps the cases to statuses in one table;
// nothing else picks a status. Registered with CAF (register_message_types) so that the cases
// cross process boundaries and render by name.

#include <cstdint>
#include <string>

#include "caf/atom.hpp"
#include "caf/error.hpp"
#include "caf/make_message.hpp"

namespace det {

/// What went wrong, as a case the receiver can act on. Values are stable: they cross the network.
enum class errc : uint8_t {
  /// No agent of the pool could ever hold the request: asking again cannot help.
  unschedulable = 1,
  /// A message from a run that is over (a cut-off worker, an old allocation): it must not count.
  stale_run,
  /// A peer or request the master will not serve (an agent it cannot admit, a call out of place).
  refused,
  /// The named entity (experiment, trial, checkpoint, task) does not exist or no longer runs.
  not_found,
  /// The user's input is wrong: a config, a value, a request body.
  invalid_input,
  /// PostgreSQL did not take or give what was asked; the caller may try again.
  storage_failed,
  /// The caller did not say who it is, or its credentials are not valid.
  unauthenticated,
  /// The caller is known but lacks the right.
  forbidden,
  /// A message arrived that does not decode as its type: a peer of another build or a corrupt link.
  malformed_message,
  /// Something the request needs is gone or not ready yet (slots taken back, no agent reported).
  unavailable,
  /// The caller asked too often (failed logins, event streams): it may ask again later.
  too_many_requests,
  /// A request past a size det holds to (a body over max_upload_size).
  too_large,
  /// What the master relays to did not answer (a task's service).
  upstream_failed,
  /// det failed in a way the caller can do nothing about (an exception a route let out).
  internal,
};

/// The category CAF files these errors under.
constexpr caf::atom_value errc_category = caf::atom("det");

/// The case's name, as CAF renders it ("unschedulable").
std::string to_string(errc x);

/// An error of `code` without a sentence (CAF's rendering names the case). Being found by
/// argument-dependent lookup, it also lets `e == errc::x` compare a caf::error with a case.
caf::error make_error(errc code);

/// An error of `code` carrying `sentence`, which reaches the user as it is.
caf::error make_error(errc code, std::string sentence);

} // namespace det
