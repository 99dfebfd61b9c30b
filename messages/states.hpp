#pragma once

#include "messages/common.pb.h"

namespace det {

/// COMPLETED, CANCELED and ERROR: an experiment or trial in one of these has ended for good.
inline bool is_terminal(pb::State s) {
  return s == pb::STATE_COMPLETED || s == pb::STATE_CANCELED || s == pb::STATE_ERROR;
}

/// STOPPING_*: a stop is under way; the state that follows is the one the name says.
inline bool is_stopping(pb::State s) {
  return s == pb::STATE_STOPPING_CANCELED || s == pb::STATE_STOPPING_KILLED || s == pb::STATE_STOPPING_COMPLETED ||
         s == pb::STATE_STOPPING_ERROR;
}

} // namespace det
