#include "storage/json_maps.hpp"

#include <google/protobuf/struct.pb.h>
#include <google/protobuf/util/json_util.h>
#include <nlohmann/json.hpp>

#include <cmath>
#include <cstdlib>
#include <stdexcept>

namespace det::storage {

namespace {

// JSON has no NaN or infinities: they are stored as protobuf's JSON mapping spells them.
nlohmann::json metric_value(double value) {
  if (std::isnan(value)) return "NaN";
  if (std::isinf(value)) return value > 0 ? "Infinity" : "-Infinity";
  return value;
}

void check(const google::protobuf::util::Status& status, const std::string& failure) {
  if (!status.ok()) throw std::runtime_error(failure + ": " + status.ToString() + ".");
}

}  // namespace

std::string metrics_to_json(const google::protobuf::Map<std::string, double>& metrics) {
  auto object = nlohmann::json::object();
  for (const auto& [name, value] : metrics) object[name] = metric_value(value);
  // A name that is not UTF-8 (a trial names its metrics) is stored with U+FFFD in place of its bad
  // bytes, rather than failing the whole write: PostgreSQL's jsonb takes UTF-8 only.
  return object.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

void metrics_from_json(const std::string& text, google::protobuf::Map<std::string, double>* metrics) {
  google::protobuf::Struct object;
  check(google::protobuf::util::JsonStringToMessage(text, &object), "Could not read the stored metrics " + text);
  metrics->clear();
  for (const auto& [name, value] : object.fields()) {
    if (value.has_number_value())
      (*metrics)[name] = value.number_value();
    else if (value.has_string_value())
      (*metrics)[name] = std::strtod(value.string_value().c_str(), nullptr);
    else
      throw std::runtime_error("The stored metric " + name + " in " + text + " is not a number.");
  }
}

std::string slots_to_json(const google::protobuf::RepeatedPtrField<pb::Slot>& slots) {
  google::protobuf::util::JsonPrintOptions options;
  options.preserve_proto_field_names = true;
  std::string out = "[";
  for (const auto& slot : slots) {
    std::string json;
    check(google::protobuf::util::MessageToJsonString(slot, &json, options),
          "Could not write slot " + slot.ShortDebugString() + " as JSON");
    if (out.size() > 1) out += ',';
    out += json;
  }
  return out + "]";
}

void slots_from_json(const std::string& text, google::protobuf::RepeatedPtrField<pb::Slot>* slots) {
  pb::Agent holder;
  check(google::protobuf::util::JsonStringToMessage("{\"slots\":" + text + "}", &holder),
        "Could not read the stored slots " + text);
  slots->Swap(holder.mutable_slots());
}

}  // namespace det::storage

