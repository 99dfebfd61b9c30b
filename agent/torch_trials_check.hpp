#pragma once
// An agent's word, at its start, on whether its workers can train LibTorch trials: the torch
// trials are built per node against the node's LibTorch (scripts/build-torch-trials.sh), so a
// node may have none, or one built for another LibTorch, which would otherwise show only when a
// trial fails.

#include <string>

namespace det::runtime {

/// Runs `worker_binary --check-torch-trials` (which loads libdet_torch_trials.so as a run would)
/// on a thread of its own, so that the agent's start does not wait for LibTorch, and says on
/// stderr, as "agent ID: ...", what is wrong when it does not load or fits another LibTorch.
void check_torch_trials_in_background(const std::string& agent_id, const std::string& worker_binary);

}  // namespace det::runtime
