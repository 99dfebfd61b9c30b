#pragma once
// What an agent hands a warm worker (det-worker --warm, started before its run: see
// agent/warm_worker_pool.hpp): text on the worker's stdin, one item a line:
//   arg <word>           an argument, as a cold start's command line has it
//   env <NAME>=<value>   a variable the run's environment adds (\\ and \n escaped)
//   user <uid> <gid>     the Unix user the run is its owner's work as: the worker becomes it
//                        before anything of the run (a worker started as root, before its owner
//                        was known, is never another user's)
//   run                  the end: the worker starts the run
// A worker whose stdin ends before `run` (its agent went away) exits quietly.

#include <istream>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "process/unix_identity.hpp"

namespace det::runtime {

/// What a warm worker loads before its run (det-worker --preload): LibTorch and det's trials
/// built on it, for the runs that train with them, or nothing beyond det-worker itself, for
/// builtin:simulate and Core API runs. Either can take any run: one that needs LibTorch loads it
/// when it starts.
enum class warm_preload { libtorch, nothing };

/// What a warm worker writes on its stdout once it has preloaded and reached the master: from then
/// on its run starts at once.
constexpr std::string_view warm_ready_line = "det-worker: ready for a run";

std::string to_string(warm_preload preload);
/// "libtorch" or "nothing"; nullopt for another word.
std::optional<warm_preload> warm_preload_from(std::string_view word);

/// What a run is: det-worker's arguments after --master and the variables it adds.
struct run_handover {
  std::vector<std::string> args;
  std::map<std::string, std::string> env;
  std::optional<process::unix_identity> run_as;  // nullopt: it stays the user it was started as
};

std::string encode_handover(const run_handover& run);
/// The run on `in`; nullopt when it ends before `run`. Throws std::runtime_error naming a line
/// that is none of the four.
std::optional<run_handover> read_handover(std::istream& in);

} // namespace det::runtime
