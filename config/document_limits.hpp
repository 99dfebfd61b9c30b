#pragma once
// How large a config document det reads: its size, the size of each key and scalar, how deep it
// nests, and (YAML, whose aliases can repeat a node any number of times) how many values it
// expands to. Every config a user sends the master (experiments, previews, tasks) is checked
// against these before anything is built from it, so that no document can exhaust the master's
// stack or memory; crossing one is an error naming the file, the position and the limit.

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace det::config {

constexpr std::size_t max_document_bytes = std::size_t{1} << 20;
constexpr std::size_t max_scalar_bytes = std::size_t{64} << 10;
constexpr std::size_t max_key_bytes = 1024;
constexpr std::size_t max_nesting_depth = 32;
constexpr std::size_t max_document_values = 100'000;

/// How many trials a grid search may have: master.toml's max_grid_trials, by default, and at
/// most (its points are built in the master's memory when the experiment is created).
constexpr int64_t default_max_grid_trials = 100'000;
constexpr int64_t largest_max_grid_trials = 1'000'000;

/// The largest request body an authenticated caller may send (a model definition of 96 MiB in
/// base64, with room): master.toml's security.max_upload_size, by default, and its bounds.
constexpr int64_t default_max_upload_bytes = int64_t{160} << 20;
constexpr int64_t smallest_max_upload_bytes = int64_t{64} << 10;
constexpr int64_t largest_max_upload_bytes = int64_t{4} << 30;

/// Throws config_error "SOURCE[:LINE:COLUMN]: ..." when `text` is longer than max_document_bytes
/// or nests deeper than max_nesting_depth, before a parser recurses into it.
void check_document_shape(std::string_view text, std::string_view source_path);

}  // namespace det::config
