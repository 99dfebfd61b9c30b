#include "messages/json.hpp"

#include <google/protobuf/message.h>
#include <google/protobuf/util/json_util.h>

namespace det {

std::string to_json(const google::protobuf::Message& msg, bool indented) {
  google::protobuf::util::JsonPrintOptions opts;
  opts.preserve_proto_field_names = true;
  opts.always_print_primitive_fields = true;
  opts.add_whitespace = indented;
  std::string out;
  // Printing a well-formed message cannot fail; an empty object is the safe answer if it did.
  if (!google::protobuf::util::MessageToJsonString(msg, &out, opts).ok())
    return "{}";
  while (!out.empty() && out.back() == '\n')
    out.pop_back();
  return out;
}

bool from_json(const std::string& json, google::protobuf::Message& msg, std::string& error) {
  google::protobuf::util::JsonParseOptions opts;
  opts.ignore_unknown_fields = true;
  auto status = google::protobuf::util::JsonStringToMessage(json, &msg, opts);
  if (status.ok())
    return true;
  error = "invalid " + msg.GetDescriptor()->name() + " JSON: " + std::string(status.message());
  return false;
}

} // namespace det
