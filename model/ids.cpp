#include "model/ids.hpp"

#include <charconv>

namespace det {

namespace {

constexpr std::string_view task_prefix = "task ";

/// `text` as a decimal number of at least `least`, all of it; nullopt otherwise (a sign, a space,
/// a trailing character, an overflow).
std::optional<int64_t> whole_number(std::string_view text, int64_t least) {
  int64_t value = 0;
  const auto* end = text.data() + text.size();
  const auto [stopped, error] = std::from_chars(text.data(), end, value);
  if (text.empty() || text.front() == '-' || error != std::errc{} || stopped != end || value < least)
    return std::nullopt;
  return value;
}

/// Whether `text` can be a task's id: the master's are UUIDs, which have neither spaces nor dots.
bool task_id_like(std::string_view text) {
  return !text.empty() && text.find_first_of(" .") == std::string_view::npos;
}

} // namespace

std::optional<job_id> job_id::parse(std::string_view text) {
  if (text.substr(0, task_prefix.size()) == task_prefix) {
    const auto task = text.substr(task_prefix.size());
    if (!task_id_like(task)) return std::nullopt;
    return of(task_id{std::string{task}});
  }
  if (auto experiment = whole_number(text, 1)) return of(experiment_id{*experiment});
  return std::nullopt;
}

std::string job_id::str() const {
  return is_task() ? std::string{task_prefix} + task_.value : std::to_string(experiment_.value);
}

std::optional<allocation_id> allocation_id::parse(std::string_view text) {
  const auto dot = text.find('.');
  if (dot == std::string_view::npos) {
    if (!task_id_like(text)) return std::nullopt;
    return of(task_id{std::string{text}});
  }
  const auto trial = whole_number(text.substr(0, dot), 1);
  const auto run = whole_number(text.substr(dot + 1), 0);
  if (!trial || !run) return std::nullopt;
  return of(trial_id{*trial}, *run);
}

std::string allocation_id::str() const {
  return is_task() ? task_.value : std::to_string(trial_.value) + "." + std::to_string(run_);
}

} // namespace det
