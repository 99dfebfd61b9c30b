#include "searcher/snapshot_parts.hpp"

#include <locale>
#include <sstream>
#include <stdexcept>

namespace det::searcher {

std::string rng_text(const std::mt19937_64& rng) {
  std::ostringstream out;
  out.imbue(std::locale::classic());
  out << rng;
  return out.str();
}

std::mt19937_64 rng_from_text(const std::string& text) {
  std::istringstream in(text);
  in.imbue(std::locale::classic());
  std::mt19937_64 rng;
  in >> rng;
  char trailing;
  if (in.fail() || in >> trailing)
    throw std::runtime_error("the searcher snapshot holds no valid random number generator state");
  return rng;
}

namespace {

// The oneof's field names are the searcher names of the config.
std::string method_name(pb::SearcherSnapshot::MethodCase method) {
  const auto* field = pb::SearcherSnapshot::descriptor()->FindFieldByNumber(method);
  return field ? field->name() : "unknown";
}

} // namespace

void require_method(const pb::SearcherSnapshot& snapshot, pb::SearcherSnapshot::MethodCase expected) {
  auto held = snapshot.method_case();
  if (held == expected) return;
  if (held == pb::SearcherSnapshot::METHOD_NOT_SET)
    throw std::runtime_error("cannot restore the " + method_name(expected) +
                             " search from a snapshot that holds no search");
  auto name = method_name(held);
  auto article = name.find_first_of("aeiou") == 0 ? "an " : "a ";
  throw std::runtime_error("cannot restore the " + method_name(expected) + " search from a snapshot of " +
                           article + name + " search");
}

void write_progress(const std::unordered_map<int64_t, double>& progress,
                    google::protobuf::Map<int64_t, double>& into) {
  for (const auto& [id, share] : progress) into[id] = share;
}

std::unordered_map<int64_t, double> read_progress(const google::protobuf::Map<int64_t, double>& progress) {
  std::unordered_map<int64_t, double> read;
  for (const auto& [id, share] : progress) read.emplace(id, share);
  return read;
}

} // namespace det::searcher
