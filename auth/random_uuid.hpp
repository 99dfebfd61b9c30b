#pragma once
// Random UUIDs, the names of checkpoints and tasks: a library of its own, so that a worker's
// harness gets it without the master's credentials code.

#include <string>

namespace det::auth {

/// A new random (version 4) UUID in lowercase, from the system's random source.
std::string random_uuid();

}  // namespace det::auth
