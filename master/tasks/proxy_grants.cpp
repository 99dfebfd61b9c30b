#include "master/tasks/proxy_grants.hpp"

#include "auth/credentials.hpp"

namespace det::runtime {
namespace {

// Past this many, expired entries are dropped before another is added; past twice as many, all
// are (users open their tasks again): memory stays bounded whoever asks.
constexpr std::size_t sweep_above = 50000;

} // namespace

void proxy_grants::sweep(secrets& entries, std::chrono::steady_clock::time_point now) {
  if (entries.size() < sweep_above) return;
  for (auto it = entries.begin(); it != entries.end();)
    it = it->second.expires <= now ? entries.erase(it) : std::next(it);
  if (entries.size() >= 2 * sweep_above) entries.clear();
}

std::string proxy_grants::add_locked(secrets& to, const std::string& task_id, const std::string& session_sha256,
                                     std::chrono::steady_clock::duration lifespan) {
  const auto now = std::chrono::steady_clock::now();
  sweep(to, now);
  auto secret = auth::random_secret();
  to[auth::sha256(secret)] = entry{task_id, session_sha256, now + lifespan};
  return secret;
}

std::string proxy_grants::issue_ticket(const std::string& task_id, const std::string& session_sha256) {
  std::lock_guard lock(mutex_);
  return add_locked(tickets_, task_id, session_sha256, ticket_lifespan);
}

std::optional<std::string> proxy_grants::redeem(const std::string& ticket, const std::string& task_id) {
  std::lock_guard lock(mutex_);
  const auto it = tickets_.find(auth::sha256(ticket));
  if (it == tickets_.end()) return std::nullopt;
  const auto found = std::move(it->second);
  tickets_.erase(it);  // used once, whatever the outcome
  if (found.task_id != task_id || found.expires <= std::chrono::steady_clock::now()) return std::nullopt;
  return add_locked(grants_, task_id, found.session_sha256, grant_lifespan);
}

std::optional<std::string> proxy_grants::session_of(const std::string& grant, const std::string& task_id) {
  std::lock_guard lock(mutex_);
  const auto it = grants_.find(auth::sha256(grant));
  if (it == grants_.end() || it->second.task_id != task_id) return std::nullopt;
  if (it->second.expires <= std::chrono::steady_clock::now()) {
    grants_.erase(it);
    return std::nullopt;
  }
  return it->second.session_sha256;
}

} // namespace det::runtime
