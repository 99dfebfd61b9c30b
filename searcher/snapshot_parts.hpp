#pragma once
// Pieces the search methods' snapshots share. Internal to searcher/: it brings in protobuf.

#include "messages/searcher.pb.h"

#include <cstdint>
#include <random>
#include <string>
#include <unordered_map>

namespace det::searcher {

/// The engine's whole state as operator<< writes it, in the classic locale.
std::string rng_text(const std::mt19937_64& rng);

/// The engine rng_text wrote. Throws std::runtime_error for any other text.
std::mt19937_64 rng_from_text(const std::string& text);

/// Throws std::runtime_error, naming both, unless the snapshot holds the `expected` method's state.
void require_method(const pb::SearcherSnapshot& snapshot, pb::SearcherSnapshot::MethodCase expected);

void write_progress(const std::unordered_map<int64_t, double>& progress,
                    google::protobuf::Map<int64_t, double>& into);

std::unordered_map<int64_t, double> read_progress(const google::protobuf::Map<int64_t, double>& progress);

} // namespace det::searcher
