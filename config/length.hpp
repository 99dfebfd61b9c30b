#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace det::config {

/// The unit of a training length, as in Determined's `{batches: N}`, `{records: N}`, `{epochs: N}`.
enum class length_unit { batches, records, epochs };

/// An amount of training, written in TOML as `{ batches = 1500 }`.
struct length {
  length_unit unit = length_unit::batches;
  int64_t value = 0;
};

/// "batches", "records" or "epochs": the TOML key of the unit.
std::string to_string(length_unit unit);

/// The unit named "batches", "records" or "epochs"; nullopt for any other name.
std::optional<length_unit> length_unit_from_string(std::string_view name);

bool operator==(const length& a, const length& b);
bool operator!=(const length& a, const length& b);

} // namespace det::config
