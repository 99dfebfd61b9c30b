#include "master/experiments/checkpoint_routes.hpp"

#include <cerrno>
#include <memory>

#include "auth/untrusted_names.hpp"
#include "caf/all.hpp"
#include "master/local_interfaces.hpp"
#include "master/http/route_helpers.hpp"
#include "messages/errc.hpp"
#include "node/open_beneath.hpp"

namespace det::runtime {
namespace {

/// One file of a checkpoint, as the reader's answer `found` about `uuid` has it; `name` may be in
/// a subdirectory (code/model_def.py).
void send_checkpoint_file(const pb::GetCheckpointResponse& found, const std::string& uuid, const std::string& name,
                          http_response& res) {
  const auto& c = found.checkpoint();
  if (c.uuid().empty() || c.state() != pb::CHECKPOINT_STATE_COMPLETED || !c.resources().count(name) ||
      !auth::is_plain_relative_path(name))
    return reply_error(res, errc::not_found, "checkpoint " + uuid + " has no file " + name);
  // Streamed from disk (checkpoints can be larger than the master's spare memory), opened
  // beneath the storage root: the trial wrote the directory, and a link in it must not lead
  // the master to send its own files.
  auto file = open_beneath(c.storage_path(), c.uuid() + "/" + name);
  if (!file)
    return reply_error(res, errno == ENOENT ? errc::not_found : errc::forbidden,
                       "cannot send " + name + " of checkpoint " + uuid + ": it is " +
                           (errno == ENOENT ? "gone from " + c.storage_path()
                                            : "not a regular file beneath the checkpoint storage (a link, or a directory)"));
  res.content_type = "application/octet-stream";
  res.file = std::make_shared<unique_fd>(std::move(file));
}

} // namespace

route_coroutine checkpoint_routes::remove(std::string uuid, principal who, reply_to out) {
  auto found = co_await ask<pb::GetCheckpointResponse>(out, handles.reader, get_atom::value, uuid);
  if (!found) co_return out.error(found.error);
  if (found->checkpoint().uuid().empty()) co_return out.error(errc::not_found, "checkpoint " + uuid + " not found");
  auto owner = co_await guards.owner_of_experiment(out, found->checkpoint().experiment_id());
  if (auto refusal = route_guards::owner_refusal(owner, who, "checkpoint " + uuid, "delete")) co_return out.error(refusal);
  auto deleted = co_await ask<bool>(out, handles.collector, remove_atom::value, uuid);
  if (!deleted) co_return out.error(deleted.error);
  if (!*deleted) co_return out.error(errc::not_found, "checkpoint " + uuid + " not found");
  out.empty_json();
}

void checkpoint_routes::add_to(http_router& server) {
  server.Get(R"(/api/v1/experiments/(\d+)/checkpoints)", guards.reader([this](const http_request& req, http_response& res) {
    answer_json<pb::GetCheckpointsResponse>(sys, res, handles.reader, checkpoints_atom::value,
                                            experiment_id{path_id(req)});
  }));
  server.Get(R"(/api/v1/trials/(\d+)/checkpoints)", guards.reader([this](const http_request& req, http_response& res) {
    answer_json<pb::GetCheckpointsResponse>(sys, res, handles.reader, checkpoints_atom::value,
                                            trial_id{path_id(req)});
  }));
  server.Get(R"(/api/v1/checkpoints/([0-9a-fA-F-]+))", guards.reader([this](const http_request& req, http_response& res) {
    answer_json_found<pb::GetCheckpointResponse>(
        sys, res, [](auto& r) { return !r.checkpoint().uuid().empty(); }, "checkpoint " + req.matches[1].str() + " not found",
        handles.reader, get_atom::value, req.matches[1].str());
  }));
  server.Delete(R"(/api/v1/checkpoints/([0-9a-fA-F-]+))",
                guards.signed_in([this](const http_request& req, http_response& res, const principal& who) {
                  remove(req.matches[1].str(), who, reply_to{sys, res});
                }));
  server.Get(R"(/api/v1/checkpoints/([0-9a-fA-F-]+)/files/(.+))",
             guards.reader([this](const http_request& req, http_response& res) {
               auto uuid = req.matches[1].str();
               auto name = req.matches[2].str();
               ask_deferred<pb::GetCheckpointResponse>(
                   sys, res, handles.reader,
                   [uuid, name](const pb::GetCheckpointResponse& found, http_response& made) {
                     send_checkpoint_file(found, uuid, name, made);
                   },
                   get_atom::value, uuid);
             }));
}

} // namespace det::runtime
