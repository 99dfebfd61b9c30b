#pragma once
// Protobuf <-> JSON as the REST API prints it: proto field names, every
// field present, int64 as strings (the proto3 JSON mapping).

#include <string>

namespace google::protobuf {
class Message;
}

namespace det {

/// Compact for the wire; `indented` for people (no trailing newline either way).
std::string to_json(const google::protobuf::Message& msg, bool indented = false);

/// Fills `msg` from `json`, ignoring unknown fields; on failure returns false
/// and sets `error` to a sentence.
bool from_json(const std::string& json, google::protobuf::Message& msg, std::string& error);

} // namespace det
