// A cgroup v2 of its own for one sandboxed command, with memory.max set: the kernel then enforces the
// resident-memory limit exactly (no polling gap) and counts page cache and kernel memory too. Needs a
// delegated cgroup v2 folder (SandboxOptions::cgroup_parent) whose cgroup.subtree_control enables the memory
// controller, such as systemd gives with Delegate=yes; without one the sandbox's watchdog
// (env/process_tree.h) bounds memory instead.
#pragma once
#include <cstdint>
#include <memory>
#include <string>

namespace kforge {

class MemoryCgroup {
 public:
  // Creates PARENT/kforge-<pid>-<n> with memory.max = limit and memory.oom.group = 1 (an OOM kill takes
  // the whole command), and pids.max = max_processes where the parent enables the pids controller. Returns
  // null, with `why`, when the parent cannot hold it.
  static std::unique_ptr<MemoryCgroup> create(const std::string& parent, int64_t limit_bytes, int64_t max_processes,
                                              std::string& why);
  ~MemoryCgroup();  // kills what is left in it and removes it

  // The file a forked child writes "0" into to join (before exec, while it may still write there).
  const std::string& procs_file() const { return procs_; }
  bool oom_killed() const;    // memory.events: the kernel killed something for exceeding memory.max
  int64_t peak_bytes() const;  // memory.peak where the kernel has it, else memory.max
  void kill_all() const;

 private:
  std::string dir_, procs_;
  int64_t limit_ = 0;
};

}  // namespace kforge
