#include "config/length.hpp"

namespace det::config {

std::string to_string(length_unit unit) {
  switch (unit) {
    case length_unit::batches: return "batches";
    case length_unit::records: return "records";
    case length_unit::epochs: return "epochs";
  }
  return "batches";
}

std::optional<length_unit> length_unit_from_string(std::string_view name) {
  for (auto unit : {length_unit::batches, length_unit::records, length_unit::epochs})
    if (name == to_string(unit)) return unit;
  return std::nullopt;
}

bool operator==(const length& a, const length& b) {
  return a.unit == b.unit && a.value == b.value;
}

bool operator!=(const length& a, const length& b) {
  return !(a == b);
}

} // namespace det::config
