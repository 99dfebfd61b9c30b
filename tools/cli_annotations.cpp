#include "tools/cli_annotations.hpp"

#include <chrono>
#include <iostream>
#include <iterator>
#include <thread>

#include <google/protobuf/empty.pb.h>

#include "messages/api.pb.h"
#include "messages/states.hpp"
#include "tools/cli_format.hpp"
#include "tools/rest_client.hpp"

namespace det::tools {
int add_label(rest_client& master, std::int64_t id, const std::string& label) {
  pb::LabelRequest body;
  body.set_label(label);
  google::protobuf::Empty reply;
  master.post(experiment_path(id) + "/labels", body, reply);
  std::cout << "Experiment " << id << " has the label " << label << ".\n";
  return 0;
}

int remove_label(rest_client& master, std::int64_t id, const std::string& label) {
  google::protobuf::Empty reply;
  master.del(experiment_path(id) + "/labels/" + url_encoded(label), reply);
  std::cout << "Experiment " << id << " no longer has the label " << label << ".\n";
  return 0;
}

int set_text(rest_client& master, std::int64_t id, const std::string& field, const std::string& text) {
  pb::PatchExperimentRequest body;
  if (field == "name")
    body.set_name(text);
  else
    body.set_description(text);
  google::protobuf::Empty reply;
  master.patch(experiment_path(id), body, reply);
  std::cout << "Experiment " << id << "'s " << field << " is now: " << text << "\n";
  return 0;
}

int notes(rest_client& master, std::int64_t id, const std::string& from_file) {
  if (!from_file.empty()) {
    pb::PatchExperimentRequest body;
    body.set_notes(read_file_or_stdin(from_file));
    google::protobuf::Empty reply;
    master.patch(experiment_path(id), body, reply);
  }
  std::cout << master.get<pb::GetExperimentResponse>(experiment_path(id)).experiment().notes();
  return 0;
}

int archive(rest_client& master, std::int64_t id, bool archived) {
  google::protobuf::Empty body, reply;
  master.post(experiment_path(id) + (archived ? "/archive" : "/unarchive"), body, reply);
  std::cout << "Experiment " << id << (archived ? " is archived" : " is no longer archived") << ".\n";
  return 0;
}

int wait_experiment(rest_client& master, std::int64_t id, double interval_s) {
  master.retry_unreachable_for(master_restart_window);
  for (;;) {
    auto exp = master.get<pb::GetExperimentResponse>(experiment_path(id)).experiment();
    if (is_terminal(exp.state())) {
      std::cout << "Experiment " << id << " ended: " << state_name(exp.state()) << "\n";
      return exp.state() == pb::STATE_COMPLETED ? 0 : 1;
    }
    std::this_thread::sleep_for(std::chrono::duration<double>(interval_s));
  }
}

} // namespace det::tools
