#include "master/scheduling/scheduling_routes.hpp"

#include <chrono>
#include <cstdint>
#include <tuple>

#include "caf/all.hpp"
#include "master/local_interfaces.hpp"
#include "master/http/route_helpers.hpp"
#include "messages/errc.hpp"

namespace det::runtime {

route_coroutine scheduling_routes::answer_pools(pool_view view, std::string only_pool, reply_to out) {
  constexpr auto provisioner_timeout = std::chrono::seconds(2);
  pb::GetResourcePoolsResponse pools;
  pb::GetProvisionersResponse provisioners;
  pb::GetJobsResponse queues;
  for (const auto& [name, pool] : handles.pools) {
    auto state = co_await ask<std::tuple<pb::ResourcePoolInfo, pb::GetJobsResponse>>(out, pool, list_atom::value);
    if (!state) co_return out.error(state.error);
    auto& [info, jobs] = *state;
    if (view == pool_view::job_queues) {
      if (only_pool.empty() || info.name() == only_pool)
        for (auto& job : *jobs.mutable_jobs()) *queues.add_jobs() = std::move(job);
      continue;
    }
    info.set_default_compute_pool(name == handles.default_pool);
    info.set_default_aux_pool(name == handles.default_aux_pool);
    if (auto p = handles.provisioners.find(name); p != handles.provisioners.end()) {
      auto provisioner = co_await ask_within<pb::Provisioner>(out, caf::duration{provisioner_timeout}, p->second,
                                                              get_atom::value);
      if (provisioner) *info.mutable_provisioner() = std::move(*provisioner);
    }
    if (view == pool_view::provisioners && info.has_provisioner())
      *provisioners.add_provisioners() = std::move(*info.mutable_provisioner());
    else if (view == pool_view::resource_pools)
      *pools.add_resource_pools() = std::move(info);
  }
  switch (view) {
    case pool_view::resource_pools: co_return out.json(pools);
    case pool_view::provisioners: co_return out.json(provisioners);
    case pool_view::job_queues: co_return out.json(queues);
  }
}

void scheduling_routes::enable_agent(const http_request& req, http_response& res, int32_t slot) {
  const auto agent = req.matches[1].str();
  const bool enable = req.matches[req.matches.size() - 1].str() == "enable";
  auto body = body_of<pb::DisableRequest>(req, res);
  if (!body)
    return;
  const auto change = enable ? slot_switch::enable : body->drain() ? slot_switch::drain : slot_switch::disable;
  ask_deferred<bool>(
      sys, res, handles.registry,
      [agent, slot](bool found, http_response& made) {
        if (found) return made.set_content("{}", "application/json");
        reply_error(made, errc::not_found, slot < 0 ? "agent " + agent + " not found"
                                                    : "agent " + agent + " has no slot " + std::to_string(slot));
      },
      enable_atom::value, agent, slot, change);
}

void scheduling_routes::add_to(http_router& server) {
  server.Get("/api/v1/resource-pools", guards.reader([this](const http_request&, http_response& res) {
    answer_pools(pool_view::resource_pools, "", reply_to{sys, res});
  }));
  server.Get("/api/v1/provisioners", guards.reader([this](const http_request&, http_response& res) {
    answer_pools(pool_view::provisioners, "", reply_to{sys, res});
  }));
  server.Get("/api/v1/job-queues", guards.reader([this](const http_request& req, http_response& res) {
    answer_pools(pool_view::job_queues, req.get_param_value("resource_pool"), reply_to{sys, res});
  }));
  server.Get("/api/v1/agents", guards.shared_reader([this](const http_request&, http_response& res) {
    answer_json<pb::GetAgentsResponse>(sys, res, handles.registry, list_atom::value);
  }));
  server.Post(R"(/api/v1/agents/([^/]+)/(enable|disable))",
              guards.admin_only("enabling or disabling an agent",
                                [this](const http_request& req, http_response& res) { enable_agent(req, res, -1); }));
  server.Post(R"(/api/v1/agents/([^/]+)/slots/(\d+)/(enable|disable))",
              guards.admin_only("enabling or disabling a slot", [this](const http_request& req, http_response& res) {
                auto slot = parse_id(req.matches[2]);
                if (!slot || *slot > INT32_MAX) return reply_error(res, errc::not_found, "no slot " + req.matches[2].str());
                enable_agent(req, res, static_cast<int32_t>(*slot));
              }));
}

} // namespace det::runtime
