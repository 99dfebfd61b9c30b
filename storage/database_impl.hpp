#pragma once

// Shared by the database_*.cpp files only; keeps pqxx out of database.hpp.

#include <pqxx/pqxx>
#include <stdexcept>
#include <string>

#include "storage/database.hpp"

namespace det::storage {

struct database::impl {
  pqxx::connection connection;

  explicit impl(const std::string& conninfo) : connection{conninfo} {}
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
