// The sandbox's system-call filter (libseccomp, Debian: libseccomp-dev). Allow by default, because the CUDA
// driver needs ioctl, mmap and friends in ways no short allow-list captures; deny what a candidate never
// needs and what would let it reach past its sandbox: debugging other processes (ptrace,
// process_vm_readv/writev), mounting or changing root, new namespaces (unshare, setns), kernel modules,
// kexec, reboot, swap, BPF and perf events, the kernel keyring, io_uring (whose operations bypass this
// filter), and sockets of any family but AF_UNIX, so the network stays off even without a net namespace.
//
// Forbidden calls kill the process (SIGSYS; SandboxResult::cause() names it), except socket(), which
// fails with EPERM: libraries probe for a network and carry on without one. A sandbox that shares the
// host's network (SandboxOptions::network) gets the filter without the socket rule.
#pragma once
#include <linux/filter.h>

#include <vector>

namespace kforge {

// The filter as a classic BPF program, built once in the parent: installing it in a forked child then
// needs only prctl(), which is async-signal-safe (libseccomp's seccomp_load allocates).
const std::vector<sock_filter>& sandbox_seccomp_program(bool network);

// For `bwrap --seccomp FD`: a memfd (close-on-exec) holding the program, readable from offset 0. The
// caller hands it to the child under a fixed number and closes it once bwrap has started.
int sandbox_seccomp_fd(const std::vector<sock_filter>& program);

// In a forked child, before exec: no new privileges, then the filter. Async-signal-safe; returns false
// (errno set) when the kernel refuses.
bool install_sandbox_seccomp(const std::vector<sock_filter>& program);

}  // namespace kforge
