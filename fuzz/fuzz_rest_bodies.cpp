// The JSON bodies of REST requests, as the gateway reads them (det::from_json): every message of
// the REST API's proto files (a route's body is one of them, as is every answer), picked by the
// first byte. A body that parses is printed back as the gateway prints its answers.
#include "messages/api.pb.h"
#include "messages/cluster.pb.h"
#include "messages/common.pb.h"
#include "messages/trial.pb.h"
#include "messages/json.hpp"
#include "messages/searcher.pb.h"

#include <google/protobuf/descriptor.h>
#include <google/protobuf/message.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace {

std::vector<const google::protobuf::Message*> request_messages() {
  // Named through a message of each file, so that the linker keeps the files' descriptors.
  std::vector<const google::protobuf::Message*> found;
  auto* factory = google::protobuf::MessageFactory::generated_factory();
  for (const auto* file : {det::pb::CreateExperimentRequest::descriptor()->file(),
                           det::pb::PostSearcherOperationsRequest::descriptor()->file(),
                           det::pb::AgentHello::descriptor()->file(), det::pb::MetricBatch::descriptor()->file(),
                           det::pb::Experiment::descriptor()->file()})
    for (int i = 0; i < file->message_type_count(); ++i) found.push_back(factory->GetPrototype(file->message_type(i)));
  return found;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const auto messages = request_messages();
  if (size == 0 || messages.empty()) return 0;
  const auto* prototype = messages[data[0] % messages.size()];
  std::unique_ptr<google::protobuf::Message> body(prototype->New());
  std::string error;
  if (det::from_json(std::string(reinterpret_cast<const char*>(data + 1), size - 1), *body, error))
    (void)det::to_json(*body);
  return 0;
}
