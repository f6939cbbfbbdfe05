// Runs an untrusted command in a sandbox: bubblewrap (Debian's `bubblewrap`) gives it fresh user, PID,
// network, IPC and UTS namespaces, a read-only view of the file system with one writable scratch folder,
// and no network; rlimits bound its memory, processes, file sizes and core dumps; a wall-clock timeout
// kills its whole process tree. Whatever the command does (crash, hang, fork bomb, fill memory, write
// files, open sockets), the caller gets a result naming the cause and carries on.
#pragma once
#include <sys/types.h>

#include <string>
#include <vector>

namespace kforge {

struct SandboxOptions {
  double timeout_s = 60;                 // wall clock, then SIGKILL to the whole tree
  int64_t memory_bytes = 4LL << 30;      // address-space limit (RLIMIT_AS); not applied when gpu is set:
                                         // the CUDA driver reserves far more address space than it uses
  int64_t max_processes = 128;           // RLIMIT_NPROC of the sandbox user: fork bombs stop here
  int64_t max_file_bytes = 1LL << 30;    // RLIMIT_FSIZE
  std::string scratch_dir;               // the one writable folder (also the working directory); "" = none
  std::vector<std::string> read_only;    // folders to show read-only even under the private /tmp
  bool network = false;                  // share the host's network namespace
  bool gpu = false;                      // expose /dev (the GPU device nodes) instead of a minimal /dev
  uid_t uid = 65534;                     // user and group to run as when started as root (nobody); with
  gid_t gid = 65534;                     // uid 0 nothing is dropped and the process limit does not hold
  std::string bwrap = "bwrap";
  bool namespaces = true;                // false: rlimits, user and timeout only (no bubblewrap)
  size_t max_output_bytes = 1 << 20;     // per stream; the rest is dropped
  std::vector<std::pair<std::string, std::string>> env;  // set inside the sandbox
};

struct SandboxResult {
  int exit_code = -1;     // when it exited
  int signal = 0;         // when a signal ended it
  bool timed_out = false;
  bool output_truncated = false;
  double seconds = 0;
  std::string out, err;
  bool ok() const { return !timed_out && signal == 0 && exit_code == 0; }
  // "exited with code 3", "killed by signal 11 (Segmentation fault)", "timed out after 2.0 s", ...
  std::string cause() const;
};

// Throws UserError when the sandbox itself cannot start (no bwrap, fork failure); never for what the
// command does.
SandboxResult run_sandboxed(const std::vector<std::string>& argv, const SandboxOptions& opts,
                            const std::string& stdin_data = "");

}  // namespace kforge
