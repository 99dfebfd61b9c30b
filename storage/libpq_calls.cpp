#include "storage/libpq_calls.hpp"

#include "storage/database_impl.hpp"

#include <libpq-fe.h>

#include <memory>
#include <pqxx/pqxx>
#include <stdexcept>

namespace det::storage {

namespace {

// pqxx 6 lends libpq's handle to largeobject's subclasses, which this is (it never makes an object).
struct connection_handle : pqxx::largeobject {
  static PGconn* of(const pqxx::dbtransaction& tx) { return raw_connection(tx); }
};

}  // namespace

void result_deleter::operator()(PGresult* result) const { PQclear(result); }

std::string result_error(PGconn* conn, const PGresult* result) {
  return without_newline(result ? PQresultErrorMessage(result) : PQerrorMessage(conn));
}

std::string first_failure(PGconn* conn) {
  std::string error;
  while (result_ptr result{PQgetResult(conn)}) {
    const auto status = PQresultStatus(result.get());
    if (status != PGRES_COMMAND_OK && status != PGRES_TUPLES_OK && error.empty()) error = result_error(conn, result.get());
  }
  return error;
}

PGconn* libpq_handle(const pqxx::dbtransaction& tx) { return connection_handle::of(tx); }

PGconn* libpq_handle(pqxx::connection_base& connection) {
  // A connection lost while libpq alone used it is news to pqxx: its first transaction then finds
  // it down, the second drops it, and the third connects afresh.
  constexpr int attempts = 3;
  for (int attempt = 1;; ++attempt) {
    try {
      pqxx::work tx{connection};
      auto* handle = connection_handle::of(tx);
      tx.abort();
      return handle;
    } catch (const pqxx::broken_connection&) {
      if (attempt == attempts) throw;
    }
  }
}

bool connected(PGconn* conn) { return PQstatus(conn) == CONNECTION_OK; }

std::string libpq_error(PGconn* conn) { return without_newline(PQerrorMessage(conn)); }

void exec_statements(PGconn* conn, const std::string& statements) {
  if (PQsendQuery(conn, statements.c_str()) != 1) throw std::runtime_error(libpq_error(conn));
  if (auto error = first_failure(conn); !error.empty()) throw std::runtime_error(error);
}

void prepare(PGconn* conn, const std::string& name, const std::string& statement) {
  result_ptr prepared{PQprepare(conn, name.c_str(), statement.c_str(), 0, nullptr)};
  if (PQresultStatus(prepared.get()) != PGRES_COMMAND_OK)
    throw std::runtime_error("the statement " + name + " could not be prepared: " + result_error(conn, prepared.get()));
}

void exec_prepared_then(PGconn* conn, const std::string& name, const std::vector<std::string>& params,
                        const std::string& then) {
  std::vector<const char*> values;
  for (const auto& p : params) values.push_back(p.c_str());
  if (PQenterPipelineMode(conn) != 1) throw std::runtime_error(libpq_error(conn));
  const bool sent = PQsendQueryPrepared(conn, name.c_str(), static_cast<int>(values.size()), values.data(), nullptr,
                                        nullptr, 0) == 1 &&
                    PQsendQueryParams(conn, then.c_str(), 0, nullptr, nullptr, nullptr, nullptr, 0) == 1;
  std::string error = sent ? "" : libpq_error(conn);
  // The sync ends whatever was queued, a failed send included, so that the pipeline can be left.
  if (PQpipelineSync(conn) == 1) {
    // Each statement's results end with a null, and the sync's result ends them all; two nulls in
    // a row or a broken connection mean that nothing more comes.
    for (bool after_null = false; PQstatus(conn) == CONNECTION_OK;) {
      result_ptr result{PQgetResult(conn)};
      if (!result) {
        if (after_null) break;
        after_null = true;
        continue;
      }
      after_null = false;
      const auto status = PQresultStatus(result.get());
      if (status == PGRES_PIPELINE_SYNC) break;
      if (status == PGRES_PIPELINE_ABORTED) continue;  // `then`, after the failure already kept
      if (status != PGRES_COMMAND_OK && status != PGRES_TUPLES_OK && error.empty())
        error = result_error(conn, result.get());
    }
  } else if (error.empty()) {
    error = libpq_error(conn);
  }
  // Left in pipeline mode, the connection would refuse every later statement: start it afresh.
  if (PQexitPipelineMode(conn) != 1) {
    if (error.empty()) error = libpq_error(conn);
    PQreset(conn);
  }
  if (!error.empty()) throw std::runtime_error(error);
}

}  // namespace det::storage
