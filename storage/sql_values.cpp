#include "storage/sql_values.hpp"

#include <tuple>
#include <utility>

#include <chrono>
#include <cstdio>
#include <ctime>
#include <stdexcept>
#include <string>

namespace det::storage {

std::string state_name(pb::State state) { return pb::State_Name(state); }

pb::State parse_state(const std::string& name) {
  pb::State state = pb::STATE_UNSPECIFIED;
  return pb::State_Parse(name, &state) ? state : pb::STATE_UNSPECIFIED;
}

std::string outcome_name(pb::WorkerOutcome outcome) { return pb::WorkerOutcome_Name(outcome); }

pb::WorkerOutcome parse_outcome(const std::string& name) {
  pb::WorkerOutcome outcome = pb::WORKER_OUTCOME_UNSPECIFIED;
  return pb::WorkerOutcome_Parse(name, &outcome) ? outcome : pb::WORKER_OUTCOME_UNSPECIFIED;
}

namespace {

/// The time's seconds and microseconds; now for an unset time.
std::pair<int64_t, int64_t> seconds_and_micros(const google::protobuf::Timestamp& time) {
  const auto micros = unix_micros_or_now(time);
  // Floor division: a time before 1970 keeps its microseconds in [0, 1e6).
  const int64_t seconds = micros / 1000000 - (micros % 1000000 < 0 ? 1 : 0);
  return {seconds, micros - seconds * 1000000};
}

std::string date_and_time(int64_t seconds) {
  const std::time_t t = seconds;
  std::tm utc{};
  ::gmtime_r(&t, &utc);
  char text[64];
  return {text, std::strftime(text, sizeof text, "%Y-%m-%d %H:%M:%S", &utc)};
}

std::string with_micros(const std::string& date, int64_t micros) {
  char fraction[16];
  std::snprintf(fraction, sizeof fraction, ".%06lld+00", static_cast<long long>(micros));
  return date + fraction;
}

}  // namespace

int64_t unix_micros_or_now(const google::protobuf::Timestamp& time) {
  if (time.seconds() == 0 && time.nanos() == 0)
    return std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::system_clock::now().time_since_epoch())
        .count();
  // 0001-01-01 and 9999-12-31 23:59:59, Timestamp's own bounds.
  constexpr int64_t earliest = -62135596800, latest = 253402300799;
  if (time.seconds() < earliest || time.seconds() > latest || time.nanos() < 0 || time.nanos() > 999999999)
    throw std::invalid_argument("the time " + std::to_string(time.seconds()) + " s " + std::to_string(time.nanos()) +
                                " ns is not a time between the years 1 and 9999");
  return time.seconds() * 1000000 + time.nanos() / 1000;
}

std::string sql_time_or_now(const google::protobuf::Timestamp& time) {
  const auto [seconds, micros] = seconds_and_micros(time);
  return with_micros(date_and_time(seconds), micros);
}

std::string micros_of(const std::string& column) {
  return "(extract(epoch from " + column + ") * 1000000)::bigint";
}

std::optional<google::protobuf::Timestamp> time_from(const pqxx::field& micros) {
  if (micros.is_null()) return std::nullopt;
  const auto value = micros.as<int64_t>();
  // Floor division, so times before 1970 keep nanos in [0, 1e9) as Timestamp requires.
  int64_t seconds = value / 1000000;
  int64_t rest = value % 1000000;
  if (rest < 0) {
    rest += 1000000;
    --seconds;
  }
  google::protobuf::Timestamp time;
  time.set_seconds(seconds);
  time.set_nanos(static_cast<int32_t>(rest * 1000));
  return time;
}

std::string text_array_literal(const std::vector<std::string>& items) {
  std::string out = "{";
  for (const auto& item : items) {
    if (out.size() > 1) out += ",";
    out += '"';
    for (char ch : item) {
      if (ch == '"' || ch == '\\') out += '\\';
      out += ch;
    }
    out += '"';
  }
  return out + "}";
}

void text_array_from(const pqxx::field& field, google::protobuf::RepeatedPtrField<std::string>* out) {
  auto parser = field.as_array();
  for (auto [kind, text] = parser.get_next(); kind != pqxx::array_parser::juncture::done; std::tie(kind, text) = parser.get_next())
    if (kind == pqxx::array_parser::juncture::string_value) *out->Add() = text;
}

}  // namespace det::storage
