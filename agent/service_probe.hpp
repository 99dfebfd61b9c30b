#pragma once
// How an agent starts a task's service and knows it is up: a free port to give it, a probe that
// says whether it answers yet, and the address by which the master reaches this machine.

#include <optional>
#include <string>

namespace det::runtime {

/// A TCP port no socket on this machine holds right now (the kernel's choice), for a task's
/// service to listen on. Throws std::runtime_error with a sentence if none can be had.
int free_port();

/// Whether something listens on 127.0.0.1:`port` and, when `http_path` is not empty, answers a
/// GET of it with an HTTP status line (any status: a service that refuses us is up).
bool service_answers(int port, const std::string& http_path);

/// The body of a GET of `path` from 127.0.0.1:`port` answered with 200 (HTTP/1.0, read to the
/// end, within a few seconds); nullopt otherwise.
std::optional<std::string> http_get(int port, const std::string& path);

/// This machine's address on the route to `host`:`port` (the master), as the master would reach
/// it; 127.0.0.1 when it cannot be told.
std::string local_address_towards(const std::string& host, int port);

} // namespace det::runtime
