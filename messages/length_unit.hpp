#pragma once
// The length unit as the wire carries it (pb::LengthUnit) and as config and searchers use it.

#include "config/length.hpp"
#include "messages/trial.pb.h"

namespace det {

inline pb::LengthUnit to_proto(config::length_unit unit) {
  switch (unit) {
    case config::length_unit::batches: return pb::LENGTH_UNIT_BATCHES;
    case config::length_unit::records: return pb::LENGTH_UNIT_RECORDS;
    case config::length_unit::epochs: return pb::LENGTH_UNIT_EPOCHS;
  }
  return pb::LENGTH_UNIT_BATCHES;
}

/// LENGTH_UNIT_UNSPECIFIED (a peer that sets none) reads as batches, the searchers' default.
inline config::length_unit from_proto(pb::LengthUnit unit) {
  switch (unit) {
    case pb::LENGTH_UNIT_RECORDS: return config::length_unit::records;
    case pb::LENGTH_UNIT_EPOCHS: return config::length_unit::epochs;
    default: return config::length_unit::batches;
  }
}

} // namespace det
