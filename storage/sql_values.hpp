#pragma once

#include <google/protobuf/timestamp.pb.h>

#include <optional>
#include <pqxx/pqxx>
#include <cstdint>
#include <string>
#include <vector>

#include "messages/common.pb.h"

namespace det::storage {

/// States are stored as their protobuf names, e.g. "STATE_ACTIVE"; an unknown name reads as STATE_UNSPECIFIED.
std::string state_name(pb::State);
pb::State parse_state(const std::string& name);
std::string outcome_name(pb::WorkerOutcome);
pb::WorkerOutcome parse_outcome(const std::string& name);

/// Microseconds since 1970 UTC; an unset Timestamp means the current time. Throws for a time
/// outside the years 1 to 9999, which a Timestamp may not hold.
int64_t unix_micros_or_now(const google::protobuf::Timestamp&);
/// A timestamptz literal in UTC with microseconds; an unset Timestamp means the current time.
std::string sql_time_or_now(const google::protobuf::Timestamp&);

/// The SQL expression that selects a timestamptz column as microseconds since the epoch (exactly: extract returns
/// numeric), which time_from reads back; NULL stays NULL.
std::string micros_of(const std::string& column);
/// A message's optional text field as a query parameter: its value when set, else NULL (which
/// `COALESCE($n, column)` turns into "unchanged").
inline std::optional<std::string> text_or_null(bool has, const std::string& value) {
  return has ? std::optional<std::string>{value} : std::nullopt;
}
/// A text[] literal of `items` (labels, a command's words), each quoted and escaped.
std::string text_array_literal(const std::vector<std::string>& items);
/// Reads a text[] column into `out` (labels).
void text_array_from(const pqxx::field& field, google::protobuf::RepeatedPtrField<std::string>* out);

/// Reads a micros_of column; NULL gives nullopt, so that an unset time stays unset in the message.
std::optional<google::protobuf::Timestamp> time_from(const pqxx::field& micros);

}  // namespace det::storage
