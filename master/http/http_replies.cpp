#include "master/http/http_replies.hpp"

#include "caf/all.hpp"
#include "messages/api.pb.h"
#include "messages/caf_types.hpp"
#include "messages/errc.hpp"
#include "messages/json.hpp"

namespace det::runtime {

void reply_json(http_response& res, const google::protobuf::Message& msg) {
  res.set_content(to_json(msg), "application/json");
}

void reply_error(http_response& res, errc code, const std::string& sentence) {
  const int status = status_of(code);
  pb::ErrorResponse err;
  err.set_error(sentence);
  err.set_code(status);
  res.status = status;
  res.set_content(to_json(err), "application/json");
}

void reply_error(http_response& res, caf::actor_system& sys, const caf::error& e) {
  // An error from an actor: its context carries the sentence when there is one.
  auto& ctx = e.context();
  auto sentence =
      ctx.match_elements<std::string>() ? error_sentence(sys, e) : "the master could not answer: " + sys.render(e);
  pb::ErrorResponse err;
  err.set_error(sentence);
  err.set_code(status_of(e));
  res.status = err.code();
  res.set_content(to_json(err), "application/json");
}

int status_of(errc code) {
  switch (code) {
    case errc::invalid_input: return 400;
    case errc::unauthenticated: return 401;
    case errc::forbidden: return 403;
    case errc::not_found: return 404;
    case errc::stale_run: return 409;
    case errc::too_large: return 413;
    case errc::unschedulable: return 422;
    case errc::too_many_requests: return 429;
    case errc::refused: return 403;
    case errc::storage_failed: return 503;
    case errc::unavailable: return 503;
    case errc::upstream_failed: return 502;
    case errc::malformed_message: return 500;
    case errc::internal: return 500;
  }
  return 500;
}

int status_of(const caf::error& e) {
  if (e.category() == errc_category)
    return status_of(static_cast<errc>(e.code()));
  if (e == caf::sec::request_timeout)
    return 504;
  return 500;
}

std::optional<page> page_of(const http_request& req, http_response& res, const char* start_name,
                            int32_t default_limit, int32_t max_limit) {
  auto refuse = [&](const char* name, const std::string& text, int min) -> std::optional<page> {
    reply_error(res, errc::invalid_input, std::string{"query parameter "} + name + " must be a whole number of at least " +
                              std::to_string(min) + ", not \"" + text + "\"");
    return std::nullopt;
  };
  page p{0, default_limit};
  if (req.has_param(start_name)) {
    const auto text = req.get_param_value(start_name);
    auto start = parse_int<int64_t>(text);
    if (!start || *start < 0)
      return refuse(start_name, text, 0);
    p.start = *start;
  }
  if (req.has_param("limit")) {
    const auto text = req.get_param_value("limit");
    auto limit = parse_int<int32_t>(text);
    if (!limit || *limit < 1)
      return refuse("limit", text, 1);
    if (*limit > max_limit) {
      reply_error(res, errc::invalid_input, "query parameter limit may be at most " + std::to_string(max_limit) + ", not " + text +
                                ": ask for the rest with further pages");
      return std::nullopt;
    }
    p.limit = *limit;
  }
  return p;
}

} // namespace det::runtime
