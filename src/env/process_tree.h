// A sandboxed command's processes as the host sees them: the root (bwrap, or the command itself) and every
// descendant, found through /proc (each process's parent in /proc/PID/stat). The sandbox uses it to bound
// resident memory, which works with CUDA where RLIMIT_AS does not (the driver reserves terabytes of address
// space it never touches), and to kill descendants that left the root's process group.
#pragma once
#include <sys/types.h>

#include <cstdint>
#include <vector>

namespace kforge {

std::vector<pid_t> process_tree(pid_t root);

// Sum of VmRSS over the tree, in bytes (processes that exit meanwhile count as 0).
int64_t tree_resident_bytes(pid_t root);

// SIGKILL to the root's process group and to every process of the tree.
void kill_tree(pid_t root);

}  // namespace kforge
