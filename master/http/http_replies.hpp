#pragma once
// How the HTTP gateway answers: JSON bodies, errors as sentences with the status the error
// category maps to (one table, status_of), and the parsing of ids and pages in request paths.

#include <charconv>
#include <cstdint>
#include <optional>
#include <string>

#include "master/http/http_types.hpp"

namespace google::protobuf {
class Message;
}
namespace caf {
class actor_system;
class error;
}

namespace det {
enum class errc : uint8_t;  // messages/errc.hpp
}

namespace det::runtime {

void reply_json(http_response& res, const google::protobuf::Message& msg);
/// The error's sentence, with the status status_of() gives its case: routes name cases, not numbers.
void reply_error(http_response& res, errc code, const std::string& sentence);
/// An actor's error: the status status_of() gives it and its sentence.
void reply_error(http_response& res, caf::actor_system& sys, const caf::error& e);

/// The one table that turns an error's case into an HTTP status.
int status_of(errc code);
int status_of(const caf::error& e);

/// `text` as a whole decimal number that fits an Int, or nullopt.
template <class Int>
std::optional<Int> parse_int(const std::string& text) {
  Int value = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc{} || end != text.data() + text.size())
    return std::nullopt;
  return value;
}

/// Ids in paths are matched by \d+; one too large for int64 names nothing.
inline std::optional<int64_t> parse_id(const std::string& text) {
  return parse_int<int64_t>(text);
}

/// Log pages (a trial's or a task's): 1,000 lines unless asked for more.
constexpr int32_t default_log_page = 1000;
constexpr int32_t max_log_page = 100000;

/// A page of a list route: its start (`start_name`: offset, or the id to read after) and its
/// length (`limit`, `default_limit` when absent, never more than `max_limit`: every list answer
/// is bounded).
struct page {
  int64_t start = 0;
  int32_t limit = 0;
};
/// nullopt, with a 400 naming the parameter, when either is not a number in range.
std::optional<page> page_of(const http_request& req, http_response& res, const char* start_name,
                            int32_t default_limit, int32_t max_limit);

} // namespace det::runtime
