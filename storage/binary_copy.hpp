#pragma once

#include <google/protobuf/timestamp.pb.h>

#include <cstdint>
#include <string>
#include <string_view>

struct pg_conn;  // libpq's PGconn
namespace pqxx {
class dbtransaction;
}

namespace det::storage {

/// `COPY table (columns) FROM STDIN` in PostgreSQL's binary format, in the caller's transaction:
/// integers and floats go as their bytes and times as microseconds, so neither side prints or
/// parses a number (a text COPY of metric rows spent a fifth of the client's and of the server's
/// time on that). Rows are sent as they fill 64 KiB, so the server reads while the next ones are
/// made. Like pqxx::stream_to, which only speaks text.
class binary_copy {
 public:
  /// Starts the COPY; throws with the server's message if it refuses.
  binary_copy(pqxx::dbtransaction& tx, const std::string& table, const std::string& columns);
  /// Starts the COPY on a connection that no pqxx transaction uses, after `leading` statements
  /// ("BEGIN; ..."), all in one round trip.
  binary_copy(::pg_conn* conn, const std::string& table, const std::string& columns, const std::string& leading);
  /// Abandons an unfinished COPY (the server rolls the rows back), leaving the connection usable.
  ~binary_copy();
  binary_copy(const binary_copy&) = delete;
  binary_copy& operator=(const binary_copy&) = delete;

  /// Starts a row of `fields` values, which the calls below then add in the columns' order.
  void row(int16_t fields);
  void int8(int64_t value);
  void float8(double value);
  void text(std::string_view value);
  /// A jsonb value from its JSON text.
  void jsonb(std::string_view json);
  /// A timestamptz; an unset Timestamp is the current time (unix_micros_or_now).
  void timestamptz(const google::protobuf::Timestamp& time);

  /// Sends the rows made so far now, for the server to read while more are made.
  void send();
  /// Ends the COPY: throws with the server's message if it refused any row.
  void complete();

 private:
  void field_length(int32_t bytes);
  template <class Integer>
  void big_endian(Integer value);
  std::string failure(const std::string& what) const;

  ::pg_conn* conn_;
  std::string statement_;
  std::string buffered_;
  bool open_ = false;
};

}  // namespace det::storage
