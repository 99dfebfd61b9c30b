#pragma once
// The processes of a distributed run on CPUs that share one host (several agents on a machine, or
// one agent's workers) exchange through a shared-memory segment instead of TCP over loopback, as
// NCCL's and MPI's intra-node transports do: a 2 MB average costs a few hundred microseconds of
// memory copies instead of milliseconds of socket traffic on the same cores.

#include <chrono>
#include <memory>

#include "gpu/collective.hpp"

namespace det::harness {

/// Connects process `rank` of `size` to the others through a POSIX shared-memory segment that the
/// chief creates and every other process maps. Returns nothing, in every process alike, when any
/// of them cannot map it (another machine, a container with its own /dev/shm, no room there) or
/// declines it (DET_SHM_DISABLE=1 in its environment, as NCCL_SHM_DISABLE for NCCL): the caller
/// then connects over Gloo. Throws std::runtime_error with a sentence if the others do not
/// answer within `connect_timeout`. An exchange waits at most `exchange_timeout` for the others,
/// and fails within a fraction of a second once another process has ended.
std::unique_ptr<collective> join_shared_memory(int rank, int size, rendezvous_store& store,
                                               std::chrono::milliseconds connect_timeout,
                                               std::chrono::milliseconds exchange_timeout);

}  // namespace det::harness
