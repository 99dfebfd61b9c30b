#pragma once
// What opens one task's service on the proxy listener for a user: never the user's session itself,
// which the proxy does not take, but a secret good for that task alone.
//
//   GET MASTER/proxy/ID/ (session)  --issue_ticket-->  302 PROXY/proxy/ID/?det_proxy_token=TICKET
//   PROXY ?det_proxy_token=TICKET   --redeem-->        Set-Cookie det_proxy_ID=GRANT, 302 without it
//   PROXY with the cookie           --session_of-->    relayed while the session lasts
//
// A ticket lasts a minute and is used once (it travels in a URL); the grant it becomes lasts a day
// at most and speaks only for as long as the session (or access token) that asked for the ticket:
// the caller checks that session on each use, so a logout or revocation ends it. Held in memory: a
// master restart asks the user to open the task again. Thread-safe.

#include <chrono>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>

namespace det::runtime {

class proxy_grants {
 public:
  static constexpr auto ticket_lifespan = std::chrono::seconds(60);
  static constexpr auto grant_lifespan = std::chrono::hours(24);

  /// A ticket for task `task_id`, on behalf of the token whose SHA-256 is `session_sha256`.
  std::string issue_ticket(const std::string& task_id, const std::string& session_sha256);
  /// The grant that `ticket` becomes, once; nullopt for a ticket unknown, used, expired or another task's.
  std::optional<std::string> redeem(const std::string& ticket, const std::string& task_id);
  /// The SHA-256 of the token a grant for task `task_id` speaks for, or nullopt.
  std::optional<std::string> session_of(const std::string& grant, const std::string& task_id);

 private:
  struct entry {
    std::string task_id;
    std::string session_sha256;
    std::chrono::steady_clock::time_point expires;
  };
  using secrets = std::unordered_map<std::string, entry>;  // by the secret's SHA-256
  std::string add_locked(secrets& to, const std::string& task_id, const std::string& session_sha256,
                         std::chrono::steady_clock::duration lifespan);
  static void sweep(secrets& entries, std::chrono::steady_clock::time_point now);

  std::mutex mutex_;
  secrets tickets_;
  secrets grants_;
};

} // namespace det::runtime
