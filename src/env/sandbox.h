// Runs an untrusted command in a sandbox: bubblewrap (Debian's `bubblewrap`) gives it fresh user, PID,
// network, IPC and UTS namespaces, a read-only view of the file system with one writable scratch folder,
// and no network; a seccomp filter (env/seccomp_filter.h) forbids the system calls that reach past the
// sandbox; a watchdog bounds the resident memory of its whole process tree; rlimits bound its processes,
// file sizes and core dumps; a wall-clock timeout kills its whole process tree. Whatever the command does
// (crash, hang, fork bomb, fill memory, write files, open sockets, ptrace), the caller gets a result naming
// the cause and carries on.
#pragma once
#include <sys/types.h>

#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace kforge {

class MemoryCgroup;

struct SandboxOptions {
  double timeout_s = 60;                 // wall clock, then SIGKILL to the whole tree
  // Resident memory (VmRSS summed over the process tree, polled every 20 ms; SIGKILL beyond it). Unlike
  // RLIMIT_AS this works with CUDA, whose driver reserves far more address space than it uses. 0 = none.
  int64_t memory_bytes = 4LL << 30;
  // A delegated cgroup v2 folder: the memory limit is then the kernel's (env/memory_cgroup.h), exact and
  // counting every page. "" = the watchdog. A folder that cannot hold it is an error, not a silent fallback.
  std::string cgroup_parent;
  int64_t address_space_bytes = 0;       // RLIMIT_AS, a hard bound for commands that never load CUDA; 0 = none
  // RLIMIT_NPROC of the sandbox user (shared by every sandbox of that user), and pids.max of the command's own
  // cgroup where there is one (this command alone): fork bombs stop here.
  int64_t max_processes = 128;
  // Size of the private /tmp and /dev/shm (tmpfs: memory the resident-memory watchdog does not see).
  int64_t tmpfs_bytes = 1LL << 30;
  int64_t max_file_bytes = 1LL << 30;    // RLIMIT_FSIZE
  std::string scratch_dir;               // the one writable folder (also the working directory); "" = none
  std::vector<std::string> read_only;    // folders to show read-only even under the private /tmp
  // Files or folders shown read-only at another path inside (source, destination): a candidate's inputs
  // without the folder that holds them.
  std::vector<std::pair<std::string, std::string>> read_only_at;
  // What the file system shows. false: the host's whole root, read-only (trusted code: workers, imports).
  // true: only the system's programs and libraries (minimal_root_paths()), the folders above and the scratch
  // folder: what an untrusted candidate (its build included) may see. No home, no service folder, no bundle.
  bool minimal_root = false;
  bool network = false;                  // share the host's network namespace (and allow sockets)
  bool gpu = false;                      // expose /dev (the GPU device nodes) instead of a minimal /dev
  // With gpu: a minimal /dev and only these device nodes (env/gpu_device.h: one GPU's); empty = the host's /dev.
  std::vector<std::string> gpu_nodes;
  bool seccomp = true;                   // the system-call filter of env/seccomp_filter.h
  uid_t uid = 65534;                     // user and group to run as when started as root (nobody); with
  gid_t gid = 65534;                     // uid 0 nothing is dropped and the process limit does not hold
  std::string bwrap = "bwrap";
  bool namespaces = true;                // false: seccomp, rlimits, memory, user and timeout only (no bubblewrap)
  size_t max_output_bytes = 1 << 20;     // per stream; the rest is dropped
  // The environment inside is cleared: only these variables, and those of env_passed that are set outside.
  std::vector<std::pair<std::string, std::string>> env;
  std::vector<std::string> env_passed = {"PATH", "LD_LIBRARY_PATH", "LANG", "CUDA_VISIBLE_DEVICES"};
};

// The system folders a minimal root shows, those of them that exist (/usr, /lib*, /bin, /sbin, and the files
// of /etc that the loader, Python and user lookups read).
std::vector<std::string> minimal_root_paths();

// `o` run as `user`'s uid and gid (when started as root); UserError naming the user where there is none.
void run_as(SandboxOptions& o, const std::string& user);

struct SandboxResult {
  int exit_code = -1;     // when it exited
  int signal = 0;         // when a signal ended it
  bool timed_out = false;
  bool output_truncated = false;
  int64_t memory_exceeded = 0;  // resident bytes seen when the memory limit killed it (0: it did not)
  int64_t memory_limit = 0;
  double seconds = 0;
  std::string out, err;
  bool ok() const { return !timed_out && !memory_exceeded && signal == 0 && exit_code == 0; }
  // "exited with code 3", "killed by signal 11 (Segmentation fault)", "timed out after 2.0 s",
  // "memory limit exceeded (2048 MiB > limit 256 MiB)", "killed by signal 31 (Bad system call): ...seccomp..."
  std::string cause() const;
};

// The environment a sandboxed command starts with, as NAME=VALUE strings (o.env_passed from this process's
// environment, then o.env).
std::vector<std::string> sandbox_environment(const SandboxOptions& o);

// Throws UserError when the sandbox itself cannot start (no bwrap, fork failure); never for what the
// command does.
SandboxResult run_sandboxed(const std::vector<std::string>& argv, const SandboxOptions& opts,
                            const std::string& stdin_data = "");

// A sandboxed command that keeps running (a persistent worker): its process and the parent's ends of
// its standard streams (close-on-exec, so no other child inherits them).
struct SandboxedProcess {
  pid_t pid = -1;
  int in = -1, out = -1, err = -1;
  std::shared_ptr<MemoryCgroup> cgroup;  // when the kernel enforces the memory limit
  std::string staged;                    // copies of what the sandbox user could not reach; removed at the end
};
// Whether the sandbox, run as `uid` (from root; as this process's user otherwise), can read `path`: every folder
// above it searchable by others, the file readable by them.
bool reachable_by(uid_t uid, const std::string& path);
// `path`, and everything in it when a folder, read by all, written by its owner only; folders, and files their
// owner may run, searched or run by all: a copy made for another user to read (staged files, a staged runtime).
void share_read_only(const std::string& path);
SandboxedProcess spawn_sandboxed(const std::vector<std::string>& argv, const SandboxOptions& opts);

// Reads the process's stdout and stderr into r.out and r.err (bounded by max_output_bytes) until
// `enough(r.out)` holds, both streams close, `timeout_s` passes (sets r.timed_out) or the process tree
// exceeds the memory limit (sets r.memory_exceeded). Kills the tree in the last two cases.
enum class PumpStop { enough, closed, timed_out, memory };
PumpStop pump_output(const SandboxedProcess& p, const SandboxOptions& o, double timeout_s, SandboxResult& r,
                     const std::function<bool(const std::string&)>& enough = {});

// The memory watchdog's one look, for callers that read the process's pipes themselves: where no cgroup has
// the kernel enforce the limit and the tree holds more, kills it, records the cause in r and returns true.
bool sandbox_over_limits(const SandboxedProcess& p, const SandboxOptions& o, SandboxResult& r);

// Kills the process tree, closes the pipes and reaps the process; fills r's exit code or signal.
void end_sandboxed(SandboxedProcess& p, const SandboxOptions& o, SandboxResult& r);

}  // namespace kforge
