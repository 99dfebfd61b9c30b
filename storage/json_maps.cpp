#include "storage/json_maps.hpp"

#include <google/protobuf/struct.pb.h>
#include <google/protobuf/util/json_util.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <stdexcept>

namespace det::storage {

namespace {

// A metric's name as a JSON string. Names are almost always printable ASCII, written as they are;
// any other is left to nlohmann, which escapes it and writes U+FFFD in place of bytes that are not
// UTF-8 (a trial names its metrics, and PostgreSQL's jsonb takes UTF-8 only: one bad name must not
// fail the whole write).
void append_name(std::string& out, const std::string& name) {
  const bool plain = std::all_of(name.begin(), name.end(), [](char c) { return c >= 0x20 && c < 0x7f && c != '"' && c != '\\'; });
  if (!plain) {
    // jsonb refuses \u0000 too: a NUL byte becomes U+FFFD like a byte that is not UTF-8.
    std::string cleaned;
    for (char c : name) {
      if (c == '\0')
        cleaned += "\xef\xbf\xbd";
      else
        cleaned += c;
    }
    out += nlohmann::json(cleaned).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
    return;
  }
  out += '"';
  out += name;
  out += '"';
}

// JSON has no NaN or infinities: they are stored as protobuf's JSON mapping spells them.
void append_value(std::string& out, double value) {
  if (std::isnan(value)) {
    out += "\"NaN\"";
  } else if (std::isinf(value)) {
    out += value > 0 ? "\"Infinity\"" : "\"-Infinity\"";
  } else {
    char digits[32];  // the shortest text that reads back as the same double
    const auto end = std::to_chars(digits, digits + sizeof digits, value).ptr;
    out.append(digits, end);
  }
}

void check(const google::protobuf::util::Status& status, const std::string& failure) {
  if (!status.ok()) throw std::runtime_error(failure + ": " + status.ToString() + ".");
}

}  // namespace

std::string metrics_to_json(const google::protobuf::Map<std::string, double>& metrics) {
  // Written directly: this runs for every metric row stored, and a nlohmann object cost several
  // allocations per row.
  std::string out = "{";
  for (const auto& [name, value] : metrics) {
    if (out.size() > 1) out += ',';
    append_name(out, name);
    out += ':';
    append_value(out, value);
  }
  out += '}';
  return out;
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

