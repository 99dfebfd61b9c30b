#pragma once

// Shared by the database_*.cpp files only; keeps pqxx out of database.hpp.

#include <chrono>
#include <map>
#include <memory>
#include <optional>
#include <pqxx/pqxx>
#include <stdexcept>
#include <string>
#include <vector>

#include "storage/binary_copy.hpp"
#include "storage/database.hpp"

namespace det::storage {

/// The metric reports appended since the last commit_metrics, and the transaction they are in. It
/// is driven through libpq so that, besides its COPYs, it costs one round trip: BEGIN goes with the
/// first COPY, and COMMIT with the UPDATE of the trials' summaries when they are due.
struct open_metric_transaction {
  /// A trial's latest reports among them.
  struct latest {
    const pb::MetricReport* training = nullptr;
    const pb::MetricReport* validation = nullptr;
    int64_t total_batches = 0;
    int64_t training_step = -1;  // the highest of each group; -1: none
    int64_t validation_step = -1;
  };

  /// `conn`: libpq_handle's, of a connection no pqxx transaction uses until this is gone.
  explicit open_metric_transaction(::pg_conn* conn);
  /// Rolls back unless committed.
  ~open_metric_transaction();
  open_metric_transaction(const open_metric_transaction&) = delete;
  open_metric_transaction& operator=(const open_metric_transaction&) = delete;

  /// Starts a COPY of metric rows into `rows`, beginning the transaction with the first one.
  void start_copy(const std::string& columns);
  /// Ends the COPY under way, then runs the prepared `last_statement` with `params` and commits,
  /// in one round trip.
  void commit(const std::string& last_statement, const std::vector<std::string>& params);
  /// Ends the COPY under way and commits, in one round trip.
  void commit();
  /// Ends the COPY under way, if any.
  void end_copy();

  ::pg_conn* conn;
  bool begun = false;  // BEGIN was sent
  bool committed = false;
  std::optional<binary_copy> rows;  // the COPY under way, if any
  std::size_t rows_in_copy = 0;
  pb::MetricBatch appended;
  std::map<int64_t, latest> trials;  // by trial id
};

/// A trial's summary of metrics committed without it (see summary_timing).
struct trial_summary {
  int64_t total_batches = 0;
  std::string training;  // the metrics of its last training report as jsonb text; empty: none
  std::string validation;
  int64_t training_step = -1;  // the highest of each group; -1: none
  int64_t validation_step = -1;

  /// Takes in what a later commit saw of the same trial.
  void merge(trial_summary&& later);
};

struct database::impl {
  pqxx::connection connection;
  ::pg_conn* libpq = nullptr;  // see metric_connection
  int libpq_backend = 0;
  std::unique_ptr<open_metric_transaction> metrics;  // while reports are appended
  std::string metrics_failure;                      // why appending failed, until commit_metrics says so
  std::map<int64_t, trial_summary> unwritten_summaries;  // by trial id
  std::chrono::steady_clock::time_point summaries_written;
  std::chrono::milliseconds summary_interval = storage::summary_interval;

  explicit impl(const std::string& conninfo) : connection{conninfo} {}

  /// The connection's libpq handle, with the summaries' UPDATE prepared; taken again (pqxx
  /// reconnects a lost connection as it begins a transaction), and the UPDATE prepared again, once
  /// the connection was lost or its session changed.
  ::pg_conn* metric_connection();
};

/// pqxx messages end in a newline, which would split our sentences.
inline std::string without_newline(std::string text) {
  while (!text.empty() && (text.back() == '\n' || text.back() == ' ')) text.pop_back();
  return text;
}

/// Runs body, turning any failure into a std::runtime_error that says what could not be done and why.
template <typename Body>
auto describing_failure(const std::string& action, Body&& body) -> decltype(body()) {
  try {
    return body();
  } catch (const std::exception& e) {
    throw std::runtime_error("The database could not " + action + ": " + without_newline(e.what()));
  }
}

/// For UPDATEs by primary key: an id that matches nothing is a caller's bug, not something to ignore.
inline void expect_one_row(const pqxx::result& result, const std::string& what) {
  if (result.affected_rows() == 0) throw std::runtime_error(what + " does not exist");
}

/// The columns of task_logs that trials' and tasks' lines share, in the order log_entry_from reads.
std::string log_columns();
/// One task_logs row selected with log_columns().
pb::LogEntry log_entry_from(const pqxx::row& row);

}  // namespace det::storage
