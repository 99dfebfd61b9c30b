#include "runtime/model_routes.hpp"

#include <optional>

#include "caf/all.hpp"
#include "runtime/route_helpers.hpp"

namespace det::runtime {
namespace {
/// Why `name` cannot be a model's name, as a sentence, or "": Determined's rule on top of every name's.
std::string bad_model_name_reason(const std::string& name) {
  if (!name.empty() && name.find_first_not_of("0123456789") == std::string::npos)
    return "a model name may not be all digits (\"" + name + "\" would read as an id)";
  return bad_name_reason("model", name);
}
} // namespace

void model_routes::add_to(http_router& server) {
  auto ask = [this](http_response& res, auto done, auto... xs) { ask_actor(sys, res, models, done, xs...); };
  // The model the path names, for its owner or an admin; nullopt with the error answered.
  auto owned_model = [this](const std::string& name, const principal& who, const std::string& verb,
                            http_response& res) -> std::optional<pb::GetModelResponse> {
    std::optional<pb::GetModelResponse> found;
    caf::scoped_actor self{sys};
    self->request(models, route_timeout, get_atom::value, name)
        .receive([&](pb::GetModelResponse& m) { found = std::move(m); }, [&](caf::error& e) { reply_error(res, sys, e); });
    if (!found)
      return std::nullopt;
    if (auto e = require_owner(who, found->model().owner_id(), found->model().owner(), "model " + name, verb)) {
      reply_error(res, sys, e);
      return std::nullopt;
    }
    return found;
  };

  server.Post("/api/v1/models", signed_in([ask](const http_request& req, http_response& res, const principal& who) {
    auto body = body_of<pb::PostModelRequest>(req, res);
    if (!body)
      return;
    if (auto why = bad_model_name_reason(body->name()); !why.empty())
      return reply_error(res, 400, why);
    ask(res, [&](pb::Model& m) {
      pb::PostModelResponse out;
      *out.mutable_model() = std::move(m);
      reply_json(res, out);
    }, create_atom::value, std::move(*body), user_id{who.user_id});
  }));
  server.Get("/api/v1/models", signed_in([ask](const http_request&, http_response& res, const principal&) {
    ask(res, [&](pb::GetModelsResponse& out) { reply_json(res, out); }, list_atom::value);
  }));
  for (const char* pattern : {R"(/api/v1/models/([^/]+))", R"(/api/v1/models/([^/]+)/versions)"})
    server.Get(pattern, signed_in([ask](const http_request& req, http_response& res, const principal&) {
      ask(res, [&](pb::GetModelResponse& out) { reply_json(res, out); }, get_atom::value, req.matches[1].str());
    }));
  server.Post(R"(/api/v1/models/([^/]+)/versions)",
              signed_in([ask, owned_model](const http_request& req, http_response& res, const principal& who) {
                auto body = body_of<pb::PostModelVersionRequest>(req, res);
                if (!body)
                  return;
                const auto name = req.matches[1].str();
                if (!owned_model(name, who, "register a version of", res))
                  return;
                ask(res, [&](pb::ModelVersion& v) {
                  pb::PostModelVersionResponse out;
                  *out.mutable_version() = std::move(v);
                  reply_json(res, out);
                }, add_atom::value, name, std::move(*body), user_id{who.user_id}, who.admin);
              }));
  server.Delete(R"(/api/v1/models/([^/]+))",
                signed_in([ask, owned_model](const http_request& req, http_response& res, const principal& who) {
                  const auto name = req.matches[1].str();
                  if (!owned_model(name, who, "delete", res))
                    return;
                  ask(res, [&](bool) { res.set_content("{}", "application/json"); }, remove_atom::value, name);
                }));
}

} // namespace det::runtime
