#include "env/sandbox.h"

#include <fcntl.h>
#include <pwd.h>
#include <grp.h>
#include <poll.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <filesystem>

#include "env/memory_cgroup.h"
#include "env/process_tree.h"
#include "env/seccomp_filter.h"
#include "ir/error.h"

namespace kforge {

std::string SandboxResult::cause() const {
  if (timed_out) return "timed out after " + std::to_string(seconds).substr(0, 5) + " s";
  if (memory_exceeded > memory_limit)  // seen by the watchdog
    return "memory limit exceeded (" + std::to_string(memory_exceeded >> 20) + " MiB > limit " +
           std::to_string(memory_limit >> 20) + " MiB)";
  if (memory_exceeded)  // the kernel's cgroup limit: usage never passes it
    return "memory limit exceeded (reached the limit of " + std::to_string(memory_limit >> 20) + " MiB; the kernel stopped it)";
  if (signal == SIGSYS) return "killed by signal 31 (Bad system call): a system call the sandbox forbids (seccomp)";
  if (signal) return "killed by signal " + std::to_string(signal) + " (" + strsignal(signal) + ")";
  if (exit_code == 0) return "exited normally";
  return "exited with code " + std::to_string(exit_code);
}

namespace {

constexpr int kSeccompFd = 3;  // where bwrap finds the filter in the child (`--seccomp 3`)

// `sources[i]`: where read_only_at[i] is bound from (its source, or a staged copy: stage_unreachable).
std::vector<std::string> bwrap_argv(const std::vector<std::string>& argv, const SandboxOptions& o,
                                    const std::vector<std::string>& sources) {
  std::vector<std::string> a = {o.bwrap};
  if (o.minimal_root) {
    for (const std::string& p : minimal_root_paths()) a.insert(a.end(), {"--ro-bind", p, p});
    // The driver reads the GPU's PCI and NUMA facts there; nothing of the host's users lives in /sys.
    if (o.gpu) a.insert(a.end(), {"--ro-bind", "/sys", "/sys"});
  } else {
    a.insert(a.end(), {"--ro-bind", "/", "/"});
  }
  const std::string tmpfs_size = std::to_string(o.tmpfs_bytes);
  a.insert(a.end(), {"--proc", "/proc", "--size", tmpfs_size, "--tmpfs", "/tmp", "--unshare-all", "--die-with-parent", "--new-session",
                     "--cap-drop", "ALL", "--clearenv"});
  // The GPU's device nodes (one GPU's where given), and always a private, size-bound /dev/shm: the host's is
  // writable shared memory (and may hold the service's own folders); what a job must read there is bound
  // read-only below.
  if (o.gpu && o.gpu_nodes.empty()) {
    a.insert(a.end(), {"--dev-bind", "/dev", "/dev"});
  } else {
    a.insert(a.end(), {"--dev", "/dev"});
    if (o.gpu)
      for (const std::string& node : o.gpu_nodes) a.insert(a.end(), {"--dev-bind", node, node});
  }
  a.insert(a.end(), {"--size", tmpfs_size, "--tmpfs", "/dev/shm"});
  if (o.network) a.push_back("--share-net");
  if (o.seccomp) a.insert(a.end(), {"--seccomp", std::to_string(kSeccompFd)});
  for (const std::string& kv : sandbox_environment(o)) {
    size_t eq = kv.find('=');
    a.insert(a.end(), {"--setenv", kv.substr(0, eq), kv.substr(eq + 1)});
  }
  for (auto& p : o.read_only) a.insert(a.end(), {"--ro-bind", p, p});
  for (size_t i = 0; i < o.read_only_at.size(); ++i) a.insert(a.end(), {"--ro-bind", sources.at(i), o.read_only_at[i].second});
  if (!o.scratch_dir.empty()) a.insert(a.end(), {"--bind", o.scratch_dir, o.scratch_dir, "--chdir", o.scratch_dir});
  a.push_back("--");
  a.insert(a.end(), argv.begin(), argv.end());
  return a;
}

}  // namespace

void run_as(SandboxOptions& o, const std::string& user) {
  passwd* pw = getpwnam(user.c_str());
  if (!pw) throw UserError("no user '" + user + "' for the sandbox");
  o.uid = pw->pw_uid;
  o.gid = pw->pw_gid;
}

std::vector<std::string> minimal_root_paths() {
  std::vector<std::string> paths;
  for (const char* p : {"/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/etc/ld.so.cache",
                        "/etc/ld.so.conf", "/etc/ld.so.conf.d", "/etc/alternatives", "/etc/passwd", "/etc/group",
                        "/etc/nsswitch.conf", "/etc/localtime"})
    if (access(p, F_OK) == 0) paths.push_back(p);
  std::error_code ec;  // Debian's Python reads /etc/python3.X (sitecustomize)
  for (const auto& e : std::filesystem::directory_iterator("/etc", ec))
    if (e.path().filename().string().rfind("python3", 0) == 0) paths.push_back(e.path().string());
  // The loader's path, passed to the sandbox (env_passed): libraries installed outside /usr (a CUDA toolkit, or
  // dependencies unpacked into a folder of their own) must be found where it says.
  if (const char* ld = getenv("LD_LIBRARY_PATH")) {
    std::string list = ld;
    for (size_t at = 0; at <= list.size();) {
      size_t end = std::min(list.find(':', at), list.size());
      std::string dir = list.substr(at, end - at);
      if (!dir.empty() && dir[0] == '/' && std::filesystem::is_directory(dir, ec)) paths.push_back(dir);
      at = end + 1;
    }
  }
  return paths;
}

std::vector<std::string> sandbox_environment(const SandboxOptions& o) {
  std::vector<std::string> env;
  for (const std::string& name : o.env_passed)
    if (const char* v = getenv(name.c_str())) env.push_back(name + "=" + v);
  for (auto& [k, v] : o.env) env.push_back(k + "=" + v);
  return env;
}

namespace {

[[noreturn]] void fail_in_child(const char* msg, int code) {
  (void)!write(2, msg, strlen(msg));
  _exit(code);
}

// In the child, between fork and exec: only async-signal-safe calls (the service forks from many threads).
[[noreturn]] void exec_child(const std::vector<std::string>& full, const SandboxOptions& o, const int fds[3],
                             int seccomp_fd, const std::vector<sock_filter>& filter, const char* cgroup_procs,
                             char* const* envp) {
  setpgid(0, 0);
  if (cgroup_procs) {  // first, while still allowed to write there; bwrap and the command inherit it
    int fd = open(cgroup_procs, O_WRONLY | O_CLOEXEC);
    if (fd < 0 || write(fd, "0", 1) != 1) fail_in_child("sandbox: cannot join the memory cgroup\n", 126);
    close(fd);
  }
  for (int i = 0; i < 3; ++i) dup2(fds[i], i);  // dup2 clears close-on-exec on the copies
  if (seccomp_fd >= 0) {
    if (seccomp_fd == kSeccompFd) fcntl(kSeccompFd, F_SETFD, 0);
    else dup2(seccomp_fd, kSeccompFd);
  }
  auto limit = [](int res, rlim_t v) {
    rlimit r{v, v};
    setrlimit(res, &r);
  };
  limit(RLIMIT_CORE, 0);
  limit(RLIMIT_FSIZE, rlim_t(o.max_file_bytes));
  limit(RLIMIT_NPROC, rlim_t(o.max_processes));
  if (o.address_space_bytes > 0) limit(RLIMIT_AS, rlim_t(o.address_space_bytes));
  if (geteuid() == 0 && o.uid != 0) {  // root ignores RLIMIT_NPROC and may write anywhere: drop to the sandbox user
    setgroups(0, nullptr);
    if (setgid(o.gid) != 0 || setuid(o.uid) != 0) fail_in_child("sandbox: cannot drop privileges\n", 126);
  }
  // Without bubblewrap the filter goes on here, last, so that the calls above are not filtered.
  if (!o.namespaces && o.seccomp && !install_sandbox_seccomp(filter))
    fail_in_child("sandbox: the kernel refused the seccomp filter\n", 126);
  std::vector<char*> args;
  for (auto& s : full) args.push_back(const_cast<char*>(s.c_str()));
  args.push_back(nullptr);
  // bwrap clears the command's environment itself (--clearenv); it needs none of the caller's either.
  execvpe(args[0], args.data(), envp);
  fail_in_child("sandbox: cannot run the command (is bubblewrap installed? Debian: bubblewrap)\n", 127);
}

double since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// The memory watchdog's one look: kills the tree and records the cause when it holds too much. Not
// needed where a cgroup has the kernel enforce the limit.
bool over_memory_limit(const SandboxedProcess& p, const SandboxOptions& o, SandboxResult& r) {
  if (o.memory_bytes <= 0 || p.cgroup) return false;
  int64_t rss = tree_resident_bytes(p.pid);
  if (rss <= o.memory_bytes) return false;
  r.memory_exceeded = rss;
  r.memory_limit = o.memory_bytes;
  kill_tree(p.pid);
  return true;
}

}  // namespace

bool sandbox_over_limits(const SandboxedProcess& p, const SandboxOptions& o, SandboxResult& r) {
  return over_memory_limit(p, o, r);
}

namespace {

// Whether the child has exited, leaving it to be reaped.
bool has_exited(pid_t pid) {
  siginfo_t info{};
  return waitid(P_PID, id_t(pid), &info, WEXITED | WNOHANG | WNOWAIT) != 0 || info.si_pid != 0;
}

void close_fd(int& fd) {
  if (fd >= 0) close(fd);
  fd = -1;
}

}  // namespace

bool reachable_by(uid_t uid, const std::string& path) {
  if (geteuid() != 0 || uid == 0) return true;  // the sandbox runs as this user
  namespace fs = std::filesystem;
  std::error_code ec;
  fs::path p = fs::absolute(path, ec);
  fs::perms own = fs::status(p, ec).permissions();
  if (ec || (own & fs::perms::others_read) == fs::perms::none) return false;
  if (fs::is_directory(p, ec) && (own & fs::perms::others_exec) == fs::perms::none) return false;
  for (p = p.parent_path();; p = p.parent_path()) {
    if ((fs::status(p, ec).permissions() & fs::perms::others_exec) == fs::perms::none || ec) return false;
    if (p == p.root_path()) return true;
  }
}

void share_read_only(const std::string& path) {
  namespace fs = std::filesystem;
  auto share = [](const fs::path& p) {
    std::error_code ec;
    bool runs = fs::is_directory(p, ec) || (fs::status(p, ec).permissions() & fs::perms::owner_exec) != fs::perms::none;
    fs::permissions(p, runs ? fs::perms(0755) : fs::perms(0644), ec);
  };
  share(path);
  std::error_code ec;
  if (fs::is_directory(path, ec))
    for (const auto& e : fs::recursive_directory_iterator(path, ec)) share(e.path());
}

namespace {
// Sources of read_only_at the sandbox user cannot reach (bubblewrap binds as that user): hard-linked, or copied
// where the link cannot be made, into a folder of this process's own under /tmp that it can reach. The links
// are shown read-only like the rest; the folder goes with the process (end_sandboxed).
std::vector<std::string> stage_unreachable(const SandboxOptions& o, std::string& staged) {
  namespace fs = std::filesystem;
  std::vector<std::string> sources;
  for (size_t i = 0; i < o.read_only_at.size(); ++i) {
    const std::string& from = o.read_only_at[i].first;
    if (reachable_by(o.uid, from)) {
      sources.push_back(from);
      continue;
    }
    if (staged.empty()) {
      char tmpl[] = "/tmp/kforge-stage-XXXXXX";
      if (!mkdtemp(tmpl)) throw UserError(std::string("sandbox: cannot make a staging folder: ") + strerror(errno));
      staged = tmpl;
      chmod(tmpl, 0711);
    }
    fs::path to = fs::path(staged) / (std::to_string(i) + "-" + fs::path(from).filename().string());
    std::error_code ec;
    // This process may be root: it copies only what lies where it is named, never what a link points to.
    if (fs::is_symlink(fs::symlink_status(from, ec)))
      throw UserError("sandbox: " + from + " is a symbolic link: refused (shown at " + o.read_only_at[i].second + ")");
    fs::file_status st = fs::status(from, ec);
    if (ec) throw UserError("sandbox: cannot show " + from + " at " + o.read_only_at[i].second + ": " + ec.message());
    // A link shares the file's own permissions: only a file anyone may read is linked (large inputs cost
    // nothing); others are copied, and the copy made readable.
    bool linked = fs::is_regular_file(st) && (st.permissions() & fs::perms::others_read) != fs::perms::none &&
                  link(from.c_str(), to.c_str()) == 0;
    if (!linked) {
      fs::copy(from, to, fs::copy_options::recursive | fs::copy_options::copy_symlinks, ec);
      if (ec) throw UserError("sandbox: cannot stage " + from + " for the sandbox user: " + ec.message());
      share_read_only(to.string());
    }
    sources.push_back(to.string());
  }
  return sources;
}
}  // namespace

SandboxedProcess spawn_sandboxed(const std::vector<std::string>& argv, const SandboxOptions& o) {
  if (argv.empty()) throw UserError("sandbox: empty command");
  std::string staged;
  struct StageGuard {  // removes what was staged unless the process got it
    std::string& dir;
    bool kept = false;
    ~StageGuard() {
      std::error_code ignored;
      if (!kept && !dir.empty()) std::filesystem::remove_all(dir, ignored);
    }
  } stage_guard{staged};
  std::vector<std::string> sources = o.namespaces ? stage_unreachable(o, staged) : std::vector<std::string>{};
  auto full = o.namespaces ? bwrap_argv(argv, o, sources) : argv;
  const auto& filter = sandbox_seccomp_program(o.network);  // built here: the child may not allocate
  std::shared_ptr<MemoryCgroup> cgroup;
  if (!o.cgroup_parent.empty() && o.memory_bytes > 0) {
    std::string why;
    cgroup = MemoryCgroup::create(o.cgroup_parent, o.memory_bytes, o.max_processes, why);
    if (!cgroup) throw UserError("sandbox: memory cgroup: " + why);
  }
  int seccomp_fd = o.namespaces && o.seccomp ? sandbox_seccomp_fd(filter) : -1;
  // Built here: the child may not allocate. Without bubblewrap this is the command's whole environment.
  std::vector<std::string> env_strings = o.namespaces ? std::vector<std::string>{} : sandbox_environment(o);
  if (o.namespaces && getenv("PATH")) env_strings.push_back(std::string("PATH=") + getenv("PATH"));  // to find bwrap
  std::vector<char*> envp;
  for (auto& s : env_strings) envp.push_back(s.data());
  envp.push_back(nullptr);
  int in_p[2], out_p[2], err_p[2];
  if (pipe2(in_p, O_CLOEXEC) || pipe2(out_p, O_CLOEXEC) || pipe2(err_p, O_CLOEXEC))
    throw UserError(std::string("sandbox: pipe failed: ") + strerror(errno));
  pid_t pid = fork();
  if (pid < 0) throw UserError(std::string("sandbox: fork failed: ") + strerror(errno));
  if (pid == 0) {
    int fds[3] = {in_p[0], out_p[1], err_p[1]};
    exec_child(full, o, fds, seccomp_fd, filter, cgroup ? cgroup->procs_file().c_str() : nullptr, envp.data());
  }
  setpgid(pid, pid);  // also here: no race with the child's own call
  if (seccomp_fd >= 0) close(seccomp_fd);
  close(in_p[0]);
  close(out_p[1]);
  close(err_p[1]);
  stage_guard.kept = true;
  return {pid, in_p[1], out_p[0], err_p[0], cgroup, staged};
}

PumpStop pump_output(const SandboxedProcess& p, const SandboxOptions& o, double timeout_s, SandboxResult& r,
                     const std::function<bool(const std::string&)>& enough) {
  auto t0 = std::chrono::steady_clock::now();
  pollfd fds[2] = {{p.out, POLLIN, 0}, {p.err, POLLIN, 0}};
  std::string* bufs[2] = {&r.out, &r.err};
  auto last_memory_check = t0 - std::chrono::seconds(1);
  for (;;) {
    if (enough && enough(r.out)) return PumpStop::enough;
    if (fds[0].fd < 0 && fds[1].fd < 0) return PumpStop::closed;
    double left = timeout_s - since(t0);
    if (left <= 0) {
      r.timed_out = true;
      kill_tree(p.pid);
      return PumpStop::timed_out;
    }
    if (o.memory_bytes > 0 && since(last_memory_check) >= 0.02) {
      last_memory_check = std::chrono::steady_clock::now();
      if (over_memory_limit(p, o, r)) return PumpStop::memory;
    }
    double wait_s = std::min(left, o.memory_bytes > 0 ? 0.02 : 0.5);
    int n = poll(fds, 2, int(wait_s * 1000) + 1);
    if (n < 0 && errno != EINTR) return PumpStop::closed;
    for (int i = 0; i < 2; ++i) {
      if (fds[i].fd < 0 || !(fds[i].revents & (POLLIN | POLLHUP | POLLERR))) continue;
      char buf[65536];
      ssize_t got = read(fds[i].fd, buf, sizeof buf);
      if (got <= 0) {
        fds[i].fd = -1;  // the caller closes it (end_sandboxed)
        continue;
      }
      size_t room = o.max_output_bytes > bufs[i]->size() ? o.max_output_bytes - bufs[i]->size() : 0;
      r.output_truncated = r.output_truncated || size_t(got) > room;
      bufs[i]->append(buf, std::min(size_t(got), room));
    }
  }
}

void end_sandboxed(SandboxedProcess& p, const SandboxOptions& o, SandboxResult& r) {
  close_fd(p.in);
  close_fd(p.out);
  close_fd(p.err);
  if (p.pid <= 0) return;
  int status = 0;
  if (waitpid(p.pid, &status, WNOHANG) == 0) {
    kill_tree(p.pid);
    waitpid(p.pid, &status, 0);
  }
  p.pid = -1;
  if (!p.staged.empty()) {
    std::error_code ignored;
    std::filesystem::remove_all(p.staged, ignored);
    p.staged.clear();
  }
  if (p.cgroup && p.cgroup->oom_killed()) {  // the kernel enforced the limit
    r.memory_exceeded = p.cgroup->peak_bytes();
    r.memory_limit = o.memory_bytes;
  }
  p.cgroup.reset();  // kills stragglers, removes the cgroup
  if (r.timed_out || r.memory_exceeded) return;  // we killed it; its status says nothing more
  if (WIFEXITED(status)) r.exit_code = WEXITSTATUS(status);
  if (WIFSIGNALED(status)) r.signal = WTERMSIG(status);
  // bwrap reports a child killed by signal N as exit code 128 + N (a program that itself exits with
  // such a code reads the same).
  if (o.namespaces && r.exit_code > 128 && r.exit_code < 128 + 65) r.signal = r.exit_code - 128, r.exit_code = -1;
}

SandboxResult run_sandboxed(const std::vector<std::string>& argv, const SandboxOptions& o, const std::string& stdin_data) {
  auto t0 = std::chrono::steady_clock::now();
  SandboxedProcess p = spawn_sandboxed(argv, o);
  if (!stdin_data.empty()) (void)!write(p.in, stdin_data.data(), stdin_data.size());
  close_fd(p.in);
  SandboxResult r;
  if (pump_output(p, o, o.timeout_s, r) == PumpStop::closed) {
    // Output closed; the process should be exiting. Wait within what is left of the timeout, still
    // watching memory (a process may close its streams and go on allocating).
    for (int polls = 0; !has_exited(p.pid); ++polls) {
      if (since(t0) > o.timeout_s) {
        r.timed_out = true;
        kill_tree(p.pid);
        break;
      }
      if (polls % 20 == 0 && over_memory_limit(p, o, r)) break;
      usleep(1000);
    }
  }
  end_sandboxed(p, o, r);
  r.seconds = since(t0);
  return r;
}

}  // namespace kforge
