#include "env/sandbox.h"

#include <fcntl.h>
#include <grp.h>
#include <poll.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstring>

#include "ir/error.h"

namespace kforge {

std::string SandboxResult::cause() const {
  if (timed_out) return "timed out after " + std::to_string(seconds).substr(0, 5) + " s";
  if (signal) return "killed by signal " + std::to_string(signal) + " (" + strsignal(signal) + ")";
  if (exit_code == 0) return "exited normally";
  return "exited with code " + std::to_string(exit_code);
}

namespace {

std::vector<std::string> bwrap_argv(const std::vector<std::string>& argv, const SandboxOptions& o) {
  std::vector<std::string> a = {o.bwrap, "--ro-bind", "/", "/", "--proc", "/proc", "--tmpfs", "/tmp",
                                "--unshare-all", "--die-with-parent", "--new-session", "--cap-drop", "ALL"};
  if (o.gpu) a.insert(a.end(), {"--dev-bind", "/dev", "/dev"});
  else a.insert(a.end(), {"--dev", "/dev"});
  if (o.network) a.push_back("--share-net");
  for (auto& [k, v] : o.env) a.insert(a.end(), {"--setenv", k, v});
  for (auto& p : o.read_only) a.insert(a.end(), {"--ro-bind", p, p});
  if (!o.scratch_dir.empty()) a.insert(a.end(), {"--bind", o.scratch_dir, o.scratch_dir, "--chdir", o.scratch_dir});
  a.push_back("--");
  a.insert(a.end(), argv.begin(), argv.end());
  return a;
}

// In the child, between fork and exec: only async-signal-safe calls.
[[noreturn]] void exec_child(const std::vector<std::string>& full, const SandboxOptions& o, int in_fd, int out_fd, int err_fd) {
  setpgid(0, 0);
  dup2(in_fd, 0);
  dup2(out_fd, 1);
  dup2(err_fd, 2);
  auto limit = [](int res, rlim_t v) {
    rlimit r{v, v};
    setrlimit(res, &r);
  };
  limit(RLIMIT_CORE, 0);
  limit(RLIMIT_FSIZE, rlim_t(o.max_file_bytes));
  limit(RLIMIT_NPROC, rlim_t(o.max_processes));
  if (!o.gpu) limit(RLIMIT_AS, rlim_t(o.memory_bytes));
  if (geteuid() == 0 && o.uid != 0) {  // root ignores RLIMIT_NPROC and may write anywhere: drop to the sandbox user
    setgroups(0, nullptr);
    if (setgid(o.gid) != 0 || setuid(o.uid) != 0) {
      const char msg[] = "sandbox: cannot drop privileges\n";
      (void)!write(2, msg, sizeof msg - 1);
      _exit(126);
    }
  }
  std::vector<char*> args;
  for (auto& s : full) args.push_back(const_cast<char*>(s.c_str()));
  args.push_back(nullptr);
  execvp(args[0], args.data());
  const char msg[] = "sandbox: cannot run the command (is bubblewrap installed? Debian: bubblewrap)\n";
  (void)!write(2, msg, sizeof msg - 1);
  _exit(127);
}

}  // namespace

SandboxResult run_sandboxed(const std::vector<std::string>& argv, const SandboxOptions& o, const std::string& stdin_data) {
  if (argv.empty()) throw UserError("sandbox: empty command");
  auto full = o.namespaces ? bwrap_argv(argv, o) : argv;
  int in_p[2], out_p[2], err_p[2];
  if (pipe(in_p) || pipe(out_p) || pipe(err_p)) throw UserError(std::string("sandbox: pipe failed: ") + strerror(errno));
  auto t0 = std::chrono::steady_clock::now();
  pid_t pid = fork();
  if (pid < 0) throw UserError(std::string("sandbox: fork failed: ") + strerror(errno));
  if (pid == 0) {
    close(in_p[1]);
    close(out_p[0]);
    close(err_p[0]);
    exec_child(full, o, in_p[0], out_p[1], err_p[1]);
  }
  setpgid(pid, pid);  // also here: no race with the child's own call
  close(in_p[0]);
  close(out_p[1]);
  close(err_p[1]);
  if (!stdin_data.empty()) (void)!write(in_p[1], stdin_data.data(), stdin_data.size());
  close(in_p[1]);

  SandboxResult r;
  pollfd fds[2] = {{out_p[0], POLLIN, 0}, {err_p[0], POLLIN, 0}};
  std::string* bufs[2] = {&r.out, &r.err};
  int open_fds = 2;
  auto elapsed = [&] { return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(); };
  while (open_fds > 0) {
    double left = o.timeout_s - elapsed();
    if (left <= 0) {
      r.timed_out = true;
      break;
    }
    int n = poll(fds, 2, int(std::min(left, 0.5) * 1000) + 1);
    if (n < 0 && errno != EINTR) break;
    for (int i = 0; i < 2; ++i) {
      if (fds[i].fd < 0 || !(fds[i].revents & (POLLIN | POLLHUP | POLLERR))) continue;
      char buf[65536];
      ssize_t got = read(fds[i].fd, buf, sizeof buf);
      if (got <= 0) {
        close(fds[i].fd);
        fds[i].fd = -1;
        --open_fds;
        continue;
      }
      size_t room = o.max_output_bytes > bufs[i]->size() ? o.max_output_bytes - bufs[i]->size() : 0;
      r.output_truncated = r.output_truncated || size_t(got) > room;
      bufs[i]->append(buf, std::min(size_t(got), room));
    }
  }
  if (r.timed_out) kill(-pid, SIGKILL);  // bwrap's group; its PID namespace dies with it
  for (auto& f : fds)
    if (f.fd >= 0) close(f.fd);
  int status = 0;
  if (!r.timed_out) {
    // Output closed; the process should be exiting. Wait within what is left of the timeout.
    while (waitpid(pid, &status, WNOHANG) == 0) {
      if (elapsed() > o.timeout_s) {
        r.timed_out = true;
        kill(-pid, SIGKILL);
        break;
      }
      usleep(1000);
    }
  }
  if (r.timed_out) waitpid(pid, &status, 0);
  r.seconds = elapsed();
  if (!r.timed_out) {
    if (WIFEXITED(status)) r.exit_code = WEXITSTATUS(status);
    if (WIFSIGNALED(status)) r.signal = WTERMSIG(status);
    // bwrap reports a child killed by signal N as exit code 128 + N (a program that itself exits with
    // such a code reads the same).
    if (o.namespaces && r.exit_code > 128 && r.exit_code < 128 + 65) r.signal = r.exit_code - 128, r.exit_code = -1;
  }
  return r;
}

}  // namespace kforge
