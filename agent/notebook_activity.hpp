#pragma once
// Whether a notebook's kernels are in use, as Jupyter's REST API tells the agent that runs it
// (Determined's check_idle.py, in C++): what counts is the notebook's notebook_idle_type.

#include <string>

#include "messages/cluster.pb.h"

namespace det::runtime {

class notebook_activity {
 public:
  /// Jupyter at 127.0.0.1:`port`, its API under `api_path` (".../api"), opened with `token`.
  notebook_activity(int port, std::string api_path, std::string token, pb::NotebookIdleType type);

  /// One look: kernels_or_terminals: a kernel or a terminal exists; kernel_connections: a kernel
  /// has a connection; activity: a kernel is busy, or Jupyter's last_activity moved since the last
  /// look. A Jupyter that does not answer counts as in use (a busy server answers slowly).
  bool in_use();

 private:
  int port_;
  std::string api_path_;
  std::string token_;
  pb::NotebookIdleType type_;
  std::string last_activity_;
};

} // namespace det::runtime
