#pragma once

// libpq called directly, for what pqxx 6 cannot send: a binary COPY (binary_copy.hpp), and several
// statements in one round trip (a metric transaction's BEGIN with its first COPY, its last UPDATE
// with its COMMIT).

#include <memory>
#include <string>
#include <vector>

struct pg_conn;    // libpq's PGconn
struct pg_result;  // libpq's PGresult
namespace pqxx {
class connection_base;
class dbtransaction;
}  // namespace pqxx

namespace det::storage {

/// The handle of the connection `tx` runs on.
::pg_conn* libpq_handle(const pqxx::dbtransaction& tx);
/// The handle of `connection`, which pqxx lends only to a transaction: this begins one and rolls
/// it back (two round trips), so keep the handle, and ask again after a failure (pqxx may have
/// reconnected). No pqxx transaction may be open on the connection while the handle is used.
::pg_conn* libpq_handle(pqxx::connection_base& connection);

/// A libpq result, cleared when dropped.
struct result_deleter {
  void operator()(::pg_result* result) const;
};
using result_ptr = std::unique_ptr<::pg_result, result_deleter>;

/// Why `result` failed (the connection's last error when there is no result), without libpq's
/// trailing newline.
std::string result_error(::pg_conn* conn, const ::pg_result* result);

/// Reads the results of what was sent until there are none left: the first failure's message, or
/// empty when every statement went well.
std::string first_failure(::pg_conn* conn);

/// Whether the connection is still up (libpq has seen no failure of it).
bool connected(::pg_conn* conn);

/// Runs `statements`, separated by semicolons, in one round trip; throws with the first one's
/// error, after which the server has not run the rest.
void exec_statements(::pg_conn* conn, const std::string& statements);

/// Makes `statement` the connection's prepared statement `name`.
void prepare(::pg_conn* conn, const std::string& name, const std::string& statement);

/// Runs the prepared statement `name` with `params` (their text), then `then` (a statement without
/// parameters), in one round trip (libpq's pipeline mode); throws with the first error, after which
/// the server has not run `then`.
void exec_prepared_then(::pg_conn* conn, const std::string& name, const std::vector<std::string>& params,
                        const std::string& then);

/// libpq's last error on `conn`, without its trailing newline.
std::string libpq_error(::pg_conn* conn);

}  // namespace det::storage
