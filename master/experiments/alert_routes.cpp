#include "master/experiments/alert_routes.hpp"

#include <map>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "caf/all.hpp"
#include "messages/timestamp.hpp"
#include "master/http/authenticator.hpp"
#include "master/http/route_helpers.hpp"
#include "messages/errc.hpp"

namespace det::runtime {
namespace {

// Bounds on what one alert stores: a log line, not a document.
constexpr std::size_t max_title_bytes = 1024;
constexpr std::size_t max_description_bytes = 16 * 1024;

// Determined's levels (core_context.alert's `level`) and the log level each is written at.
const std::map<std::string, std::string> log_level_of_alert_level = {
    {"debug", "DEBUG"}, {"info", "INFO"}, {"warn", "WARNING"}, {"error", "ERROR"}};

struct alert {
  std::string title;
  std::string description;
  std::string log_level;
};

/// The alert of the request's JSON body; nullopt with a 400 naming the problem.
std::optional<alert> alert_of(const http_request& req, http_response& res) {
  const auto body = nlohmann::json::parse(req.body.empty() ? "{}" : req.body, nullptr, false);
  if (!body.is_object()) {
    reply_error(res, errc::invalid_input, "an alert is a JSON object with a title, a description and a level");
    return std::nullopt;
  }
  auto text = [&](const char* key, const std::string& fallback) -> std::optional<std::string> {
    if (!body.contains(key) || body[key].is_null()) return fallback;
    if (!body[key].is_string()) {
      reply_error(res, errc::invalid_input, std::string("an alert's ") + key + " must be a string");
      return std::nullopt;
    }
    return body[key].get<std::string>();
  };
  auto title = text("title", "");
  auto description = title ? text("description", "") : std::nullopt;
  auto level = description ? text("level", "info") : std::nullopt;
  if (!level) return std::nullopt;
  if (title->size() > max_title_bytes || description->size() > max_description_bytes) {
    reply_error(res, errc::invalid_input, "an alert's title has at most " + std::to_string(max_title_bytes) +
                              " bytes and its description at most " + std::to_string(max_description_bytes));
    return std::nullopt;
  }
  auto found = log_level_of_alert_level.find(*level);
  if (found == log_level_of_alert_level.end()) {
    reply_error(res, errc::invalid_input, "an alert's level is debug, info, warn or error, not \"" + *level + "\"");
    return std::nullopt;
  }
  return alert{*title, *description, found->second};
}

/// The log line of `a`, as Determined's log format writes a record: "LEVEL: message".
std::string log_text(const alert& a) {
  return a.log_level + ": " + a.title + (a.description.empty() ? "" : ": " + a.description);
}

} // namespace

void alert_routes::add_to(http_router& server) {
  server.Post(R"(/api/v1/trials/(\d+)/alerts)", [this](const http_request& req, http_response& res) {
    auto a = alert_of(req, res);
    if (!a) return;
    const auto trial = path_id(req);
    // The trial checks the token: a preemption poll is the Core API call that changes nothing.
    pb::CoreApiCall check;
    check.set_trial_id(trial);
    check.set_token(bearer_token(req.get_header_value("Authorization")));
    check.set_preemption(true);
    ask_deferred<pb::CoreApiReply>(
        sys, res, front,
        [persistence = persistence, trial, text = log_text(*a)](const pb::CoreApiReply&, http_response& made) {
          pb::LogBatch batch;
          auto* line = batch.add_entries();
          line->set_trial_id(trial);
          line->set_stream("alert");
          line->set_text(text);
          *line->mutable_time() = det::now();
          caf::anon_send(persistence, std::move(batch));
          made.set_content("{}", "application/json");
        },
        std::move(check));
  });
}

} // namespace det::runtime
