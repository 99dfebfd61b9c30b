#include "master/models/model_routes.hpp"

#include <optional>

#include "caf/all.hpp"
#include "master/http/route_coroutine.hpp"
#include "master/http/route_helpers.hpp"
#include "messages/errc.hpp"

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
  auto route = [this](auto coroutine) { return guards.signed_in(coroutine_route(sys, std::move(coroutine))); };
  // The model the path names, for its owner or an admin: nullopt once `out` has the refusal.
  auto owned_model = [this](std::string name, principal who, std::string verb,
                            reply_to out) -> route_coroutine_of<std::optional<pb::GetModelResponse>> {
    auto found = co_await ask<pb::GetModelResponse>(out, models, get_atom::value, name);
    if (!found) {
      out.error(found.error);
      co_return std::nullopt;
    }
    if (auto e = require_owner(who, found->model().owner_id(), found->model().owner(), "model " + name, verb)) {
      out.error(e);
      co_return std::nullopt;
    }
    co_return std::move(*found);
  };

  server.Post("/api/v1/models", route([this](http_request req, principal who, reply_to out) -> route_coroutine {
    http_response refused;
    auto body = body_of<pb::PostModelRequest>(req, refused);
    if (!body) co_return out.finish(std::move(refused));
    if (auto why = bad_model_name_reason(body->name()); !why.empty()) co_return out.error(errc::invalid_input, why);
    auto m = co_await ask<pb::Model>(out, models, create_atom::value, std::move(*body), user_id{who.user_id});
    if (!m) co_return out.error(m.error);
    pb::PostModelResponse created;
    *created.mutable_model() = std::move(*m);
    out.json(created);
  }));
  server.Get("/api/v1/models", route([this](http_request, principal, reply_to out) -> route_coroutine {
    auto all = co_await ask<pb::GetModelsResponse>(out, models, list_atom::value);
    json_or_error(out, all);
  }));
  for (const char* pattern : {R"(/api/v1/models/([^/]+))", R"(/api/v1/models/([^/]+)/versions)"})
    server.Get(pattern, route([this](http_request req, principal, reply_to out) -> route_coroutine {
      auto found = co_await ask<pb::GetModelResponse>(out, models, get_atom::value, req.matches[1].str());
      json_or_error(out, found);
    }));
  server.Post(R"(/api/v1/models/([^/]+)/versions)",
              route([this, owned_model](http_request req, principal who, reply_to out) -> route_coroutine {
                http_response refused;
                auto body = body_of<pb::PostModelVersionRequest>(req, refused);
                if (!body) co_return out.finish(std::move(refused));
                const auto name = req.matches[1].str();
                auto owned = co_await owned_model(name, who, "register a version of", out);
                if (!owned) co_return;
                auto v = co_await ask<pb::ModelVersion>(out, models, add_atom::value, name, std::move(*body),
                                                        user_id{who.user_id}, who.admin);
                if (!v) co_return out.error(v.error);
                pb::PostModelVersionResponse added;
                *added.mutable_version() = std::move(*v);
                out.json(added);
              }));
  server.Delete(R"(/api/v1/models/([^/]+))",
                route([this, owned_model](http_request req, principal who, reply_to out) -> route_coroutine {
                  const auto name = req.matches[1].str();
                  auto owned = co_await owned_model(name, who, "delete", out);
                  if (!owned) co_return;
                  auto removed = co_await ask<bool>(out, models, remove_atom::value, name);
                  if (!removed) co_return out.error(removed.error);
                  out.empty_json();
                }));
}

} // namespace det::runtime
