#pragma once
// Becoming another Unix user: what a root agent does in each child it starts for a det user's
// work (process/process_spawn.hpp's run_as), and what a warm worker started before its run does
// once it is handed one (node/run_handover.hpp).

#include <sys/types.h>

namespace det::process {

/// A uid and the one group a process runs with: no supplementary groups, so that none of root's
/// (or the agent's) groups goes with it.
struct unix_identity {
  uid_t uid = 0;
  gid_t gid = 0;
};

/// Makes the calling process `who`, for good: its supplementary groups cleared, then its gid,
/// then its uid (real, effective and saved alike). Returns 0 or the errno of the call that
/// failed. In a process with threads glibc applies each change to every thread.
int become(const unix_identity& who) noexcept;

/// become() for a vfork child, by bare system calls that change the calling thread alone (all
/// the child has): glibc's wrappers would reach for the threads of the parent, whose memory the
/// child shares, and may wait on a lock one of them holds.
int become_in_vfork_child(const unix_identity& who) noexcept;

}  // namespace det::process
