// The sandbox's system-call filter: a candidate that tries to debug another process, mount a file system
// or open a network socket is stopped, with the cause named in the result, in both sandbox modes (with
// bubblewrap, and without it as for the nvcc builds). Each call is first shown to work where the filter is off,
// so a test cannot pass because the call fails for some other reason.
#include <gtest/gtest.h>

#include "env/sandbox.h"

namespace kforge {
namespace {

SandboxResult python(const std::string& code, bool namespaces, bool seccomp = true) {
  SandboxOptions o;
  o.timeout_s = 20;
  o.namespaces = namespaces;
  o.seccomp = seccomp;
  o.uid = 0;  // root inside the (namespaced) sandbox: mount and ptrace would be allowed but for the filter
  return run_sandboxed({"python3", "-c", code}, o);
}

// PTRACE_TRACEME on itself: allowed to any process, so only the filter can stop it.
const char* kPtrace = "import ctypes; print('ptrace', ctypes.CDLL(None).ptrace(0, 0, 0, 0))";
// A tmpfs over /tmp: root may, so only the filter can stop it.
const char* kMount = "import ctypes; print('mount', ctypes.CDLL(None).mount(b'none', b'/tmp', b'tmpfs', 0, None))";
const char* kInetSocket =
    "import socket\ntry:\n  socket.socket(socket.AF_INET, socket.SOCK_STREAM); print('socket opened')\n"
    "except PermissionError as e:\n  print('socket refused', e.errno)";
const char* kUnixSocket = "import socket; socket.socket(socket.AF_UNIX, socket.SOCK_STREAM); print('unix ok')";

class Seccomp : public ::testing::TestWithParam<bool> {};

TEST_P(Seccomp, KillsPtraceAndNamesTheCause) {
  auto r = python(kPtrace, GetParam());
  EXPECT_EQ(r.signal, SIGSYS) << r.cause() << r.err;
  EXPECT_NE(r.cause().find("forbids (seccomp)"), std::string::npos) << r.cause();
  EXPECT_EQ(r.out.find("ptrace"), std::string::npos);
  auto control = python(kPtrace, GetParam(), false);
  EXPECT_NE(control.out.find("ptrace 0"), std::string::npos) << control.cause() << control.err;
}

TEST_P(Seccomp, KillsMount) {
  auto r = python(kMount, GetParam());
  EXPECT_EQ(r.signal, SIGSYS) << r.cause() << r.err;
  EXPECT_EQ(r.out.find("mount"), std::string::npos);
}

TEST_P(Seccomp, RefusesNetworkSocketsButNotUnixSockets) {
  auto r = python(kInetSocket, GetParam());
  EXPECT_EQ(r.out, "socket refused 1\n") << r.cause() << r.err;  // EPERM
  auto control = python(kInetSocket, GetParam(), false);
  EXPECT_EQ(control.out, "socket opened\n") << control.err;
  auto unix_socket = python(kUnixSocket, GetParam());
  EXPECT_TRUE(unix_socket.ok()) << unix_socket.cause() << unix_socket.err;
  EXPECT_EQ(unix_socket.out, "unix ok\n");
}

INSTANTIATE_TEST_SUITE_P(Modes, Seccomp, ::testing::Values(true, false),
                         [](const auto& info) { return info.param ? "bubblewrap" : "no_namespaces"; });

}  // namespace
}  // namespace kforge
