#pragma once

#include <google/protobuf/map.h>
#include <google/protobuf/repeated_ptr_field.h>

#include <string>

#include "messages/cluster.pb.h"

namespace det::storage {

/// Metric maps as JSON objects for jsonb columns. JSON has no NaN or infinities, so those are written as the strings
/// "NaN", "Infinity" and "-Infinity" (as in protobuf's JSON mapping) and read back as numbers.
std::string metrics_to_json(const google::protobuf::Map<std::string, double>&);
/// Throws std::runtime_error if text is not a JSON object of numbers.
void metrics_from_json(const std::string& text, google::protobuf::Map<std::string, double>* metrics);

/// An agent's slots as a JSON array in protobuf's JSON mapping of det.pb.Slot.
std::string slots_to_json(const google::protobuf::RepeatedPtrField<pb::Slot>&);
void slots_from_json(const std::string& text, google::protobuf::RepeatedPtrField<pb::Slot>* slots);

}  // namespace det::storage
