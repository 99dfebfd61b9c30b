#include "storage/binary_copy.hpp"

#include <libpq-fe.h>

#include <cstring>
#include <memory>
#include <stdexcept>

#include "storage/libpq_calls.hpp"
#include "storage/sql_values.hpp"

namespace det::storage {

namespace {

// The format's signature, flags (none) and header extension length (none).
constexpr char header[] = "PGCOPY\n\377\r\n\0\0\0\0\0\0\0\0\0";
constexpr std::size_t header_bytes = 19;
constexpr std::size_t send_bytes = 64 * 1024;
// timestamptz counts microseconds from 2000-01-01 00:00:00 UTC.
constexpr int64_t postgres_epoch_micros = 946684800LL * 1000000;

}  // namespace

binary_copy::binary_copy(pqxx::dbtransaction& tx, const std::string& table, const std::string& columns)
    : binary_copy(libpq_handle(tx), table, columns, "") {}

binary_copy::binary_copy(PGconn* conn, const std::string& table, const std::string& columns,
                         const std::string& leading)
    : conn_(conn),
      statement_("COPY " + table + " (" + columns + ") FROM STDIN (FORMAT binary)"),
      buffered_(header, header_bytes) {
  // PQexec answers with the COPY's result once the server gets there, or with the failure that
  // stopped it before (the server runs nothing after a failed statement).
  result_ptr started{PQexec(conn_, (leading + statement_).c_str())};
  if (PQresultStatus(started.get()) != PGRES_COPY_IN)
    throw std::runtime_error(statement_ + " was refused: " + result_error(conn_, started.get()));
  open_ = true;
}

binary_copy::~binary_copy() {
  if (!open_) return;
  if (PQputCopyEnd(conn_, "the client abandoned the COPY") == 1) first_failure(conn_);
}

template <class Integer>
void binary_copy::big_endian(Integer value) {
  auto bits = static_cast<std::make_unsigned_t<Integer>>(value);
  char out[sizeof bits];
  for (std::size_t i = 0; i < sizeof bits; ++i) out[i] = static_cast<char>(bits >> (8 * (sizeof bits - 1 - i)));
  buffered_.append(out, sizeof out);
}

void binary_copy::field_length(int32_t bytes) { big_endian(bytes); }

void binary_copy::row(int16_t fields) {
  if (buffered_.size() >= send_bytes) send();
  big_endian(fields);
}

void binary_copy::int8(int64_t value) {
  field_length(8);
  big_endian(value);
}

void binary_copy::float8(double value) {
  int64_t bits;
  std::memcpy(&bits, &value, sizeof bits);
  int8(bits);
}

void binary_copy::text(std::string_view value) {
  field_length(static_cast<int32_t>(value.size()));
  buffered_.append(value);
}

void binary_copy::jsonb(std::string_view json) {
  field_length(static_cast<int32_t>(json.size() + 1));
  buffered_.push_back('\1');  // jsonb's binary version 1: the JSON text follows
  buffered_.append(json);
}

void binary_copy::timestamptz(const google::protobuf::Timestamp& time) {
  int8(unix_micros_or_now(time) - postgres_epoch_micros);
}

std::string binary_copy::failure(const std::string& what) const {
  return statement_ + " " + what + ": " + libpq_error(conn_);
}

void binary_copy::send() {
  // PQputCopyData only queues what fits libpq's buffer; PQflush sends the rest (blocking: the
  // connection is in blocking mode).
  if (PQputCopyData(conn_, buffered_.data(), static_cast<int>(buffered_.size())) != 1 || PQflush(conn_) != 0)
    throw std::runtime_error(failure("could not send its rows"));
  buffered_.clear();
}

void binary_copy::complete() {
  big_endian(int16_t{-1});  // the format's trailer
  send();
  open_ = false;
  if (PQputCopyEnd(conn_, nullptr) != 1) throw std::runtime_error(failure("could not be ended"));
  if (auto error = first_failure(conn_); !error.empty()) throw std::runtime_error(statement_ + " failed: " + error);
}

}  // namespace det::storage
