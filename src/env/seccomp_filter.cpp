#include "env/seccomp_filter.h"

#include <errno.h>
#include <linux/seccomp.h>
#include <seccomp.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstring>
#include <memory>

#include "ir/error.h"

namespace kforge {

namespace {

// Killed on sight: no candidate (kernel, ModelNew, nvcc, Python, the CUDA driver) makes these calls.
constexpr const char* kForbidden[] = {
    "ptrace", "process_vm_readv", "process_vm_writev",                       // other processes' memory
    "mount", "umount2", "pivot_root", "chroot",                              // the file system view
    "fsopen", "fsconfig", "fsmount", "fspick", "move_mount", "open_tree",    // the newer mount API
    "unshare", "setns",                                                      // new namespaces
    "init_module", "finit_module", "delete_module", "kexec_load", "kexec_file_load", "reboot",
    "swapon", "swapoff", "bpf", "perf_event_open", "keyctl", "add_key", "request_key",
    "io_uring_setup", "io_uring_enter", "io_uring_register",                 // runs socket/open ops unfiltered
    "userfaultfd",                                                           // a classic kernel-race helper
};

std::vector<sock_filter> build_program(bool network) {
  // A filter that does not match the caller's architecture kills (libseccomp's default bad-arch action), so
  // 32-bit and x32 system calls cannot slip past a deny list written for x86-64.
  std::unique_ptr<void, void (*)(scmp_filter_ctx)> ctx(seccomp_init(SCMP_ACT_ALLOW), seccomp_release);
  if (!ctx) throw InternalError("seccomp_init failed");
  auto check = [](int rc, const std::string& what) {
    if (rc < 0) throw InternalError("seccomp: " + what + ": " + strerror(-rc));
  };
  for (const char* name : kForbidden) {
    int nr = seccomp_syscall_resolve_name(name);
    if (nr == __NR_SCMP_ERROR) continue;  // not a system call on this architecture
    check(seccomp_rule_add(ctx.get(), SCMP_ACT_KILL_PROCESS, nr, 0), std::string("rule for ") + name);
  }
  if (!network)
    check(seccomp_rule_add(ctx.get(), SCMP_ACT_ERRNO(EPERM), SCMP_SYS(socket), 1, SCMP_A0(SCMP_CMP_NE, AF_UNIX)),
          "rule for socket");
  // libseccomp 2.5 exports only to a file descriptor: write into a memfd, read the program back.
  int fd = memfd_create("kforge-seccomp", MFD_CLOEXEC);
  if (fd < 0) throw InternalError(std::string("memfd_create: ") + strerror(errno));
  check(seccomp_export_bpf(ctx.get(), fd), "export");
  off_t bytes = lseek(fd, 0, SEEK_END);
  std::vector<sock_filter> prog(size_t(bytes) / sizeof(sock_filter));
  ssize_t got = pread(fd, prog.data(), size_t(bytes), 0);
  close(fd);
  if (got != bytes || prog.empty()) throw InternalError("seccomp: could not read the exported filter back");
  return prog;
}

}  // namespace

const std::vector<sock_filter>& sandbox_seccomp_program(bool network) {
  static const std::vector<sock_filter> offline = build_program(false), online = build_program(true);
  return network ? online : offline;
}

int sandbox_seccomp_fd(const std::vector<sock_filter>& prog) {
  int fd = memfd_create("kforge-seccomp", MFD_CLOEXEC);
  if (fd < 0) throw UserError(std::string("sandbox: memfd_create failed: ") + strerror(errno));
  size_t bytes = prog.size() * sizeof(sock_filter);
  if (pwrite(fd, prog.data(), bytes, 0) != ssize_t(bytes)) {
    close(fd);
    throw UserError(std::string("sandbox: cannot write the seccomp filter: ") + strerror(errno));
  }
  return fd;
}

bool install_sandbox_seccomp(const std::vector<sock_filter>& program) {
  sock_fprog fprog{static_cast<unsigned short>(program.size()), const_cast<sock_filter*>(program.data())};
  return prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) == 0 && prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &fprog) == 0;
}

}  // namespace kforge
