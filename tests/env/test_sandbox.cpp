// The sandbox against CPU-side faults: each test runs a misbehaving command and checks that the caller
// gets the cause back, the machine is untouched, and the next sandbox still works.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "common/scratch_path.h"
#include "env/sandbox.h"
#include "ir/error.h"

namespace kforge {
namespace {

namespace fs = std::filesystem;

SandboxOptions quick(double timeout = 10) {
  SandboxOptions o;
  o.timeout_s = timeout;
  return o;
}

SandboxResult sh(const std::string& script, const SandboxOptions& o = quick()) {
  return run_sandboxed({"/bin/sh", "-c", script}, o);
}

TEST(Sandbox, RunsACommandAndReturnsItsOutput) {
  auto r = sh("echo hello; echo oops >&2; exit 3");
  EXPECT_EQ(r.exit_code, 3);
  EXPECT_EQ(r.out, "hello\n");
  EXPECT_EQ(r.err, "oops\n");
  EXPECT_EQ(r.cause(), "exited with code 3");
  EXPECT_TRUE(sh("true").ok());
}

// Threat model (docs/interfaces.md): an untrusted candidate's sandbox shows the system's programs and libraries,
// what it was given, and nothing else of the host: not the folder the service or a bundle lives in.
TEST(Sandbox, AMinimalRootShowsOnlyTheSystemAndWhatItIsGiven) {
  // Outside /tmp, which every sandbox replaces with its own, and where the sandbox user may enter (not inside a
  // private 0700 clone): /var/tmp, world-writable like /tmp but kept by the whole root.
  const fs::path base = fs::is_directory("/var/tmp") ? fs::path("/var/tmp") : fs::current_path();
  fs::path dir = base / ("kforge-minimal-root-" + std::to_string(getpid()));
  fs::create_directories(dir);
  std::string secret = (dir / "secret.bin").string(), given = (dir / "given.bin").string();
  std::ofstream(secret) << "the answers";
  std::ofstream(given) << "an input";
  fs::permissions(dir, fs::perms::all);
  for (const std::string& f : {secret, given}) fs::permissions(f, fs::perms::owner_read | fs::perms::group_read | fs::perms::others_read);
  SandboxOptions o = quick();
  EXPECT_TRUE(sh("cat " + secret, o).ok()) << "the test's premise: the whole root shows the file";
  o.minimal_root = true;
  o.read_only_at.push_back({given, "/task/in0.bin"});
  auto r = sh("cat /task/in0.bin; cat " + secret + "; ls /work /root /home " + dir.string() + " 2>&1; ls /", o);
  EXPECT_NE(r.out.find("an input"), std::string::npos) << r.out << r.err;
  EXPECT_EQ(r.out.find("the answers"), std::string::npos) << r.out;
  EXPECT_NE(r.err.find("No such file"), std::string::npos) << r.err;
  EXPECT_EQ(r.out.find("\nwork\n"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("usr"), std::string::npos) << r.out;
  fs::remove_all(dir);
}

// A file given to the sandbox is opened by the caller: a private folder above it (a 0700 clone, mkdtemp's
// folders) does not hide it from a sandbox that runs as another user, and shows nothing else of that folder.
TEST(Sandbox, GivesAFileFromAFolderTheSandboxUserMayNotEnter) {
  fs::path dir = fs::current_path() / ("kforge-private-" + std::to_string(getpid()));
  fs::create_directories(dir);
  std::ofstream(dir / "given.bin") << "an input";
  std::ofstream(dir / "other.bin") << "the answers";
  fs::permissions(dir / "given.bin", fs::perms::owner_read | fs::perms::group_read | fs::perms::others_read);
  fs::permissions(dir, fs::perms::owner_all);
  SandboxOptions o = quick();
  o.minimal_root = true;
  o.read_only_at.push_back({(dir / "given.bin").string(), "/task/in0.bin"});
  auto r = sh("cat /task/in0.bin; ls /task", o);
  EXPECT_TRUE(r.ok()) << r.cause() << r.err;
  EXPECT_NE(r.out.find("an input"), std::string::npos) << r.out << r.err;
  EXPECT_EQ(r.out.find("other.bin"), std::string::npos) << r.out;
  EXPECT_EQ(fs::status(dir / "given.bin").permissions() & fs::perms::others_read, fs::perms::others_read)
      << "the file's own permissions are left as they were";
  // As root the staging copies: never what a link points to (a root-only file would become the candidate's).
  fs::create_symlink("/etc/shadow", dir / "link.bin");
  o.read_only_at = {{(dir / "link.bin").string(), "/task/in1.bin"}};
  if (geteuid() == 0) {
    try {
      sh("true", o);
      ADD_FAILURE() << "a symbolic link was staged";
    } catch (const UserError& e) {
      EXPECT_NE(std::string(e.what()).find("is a symbolic link: refused"), std::string::npos) << e.what();
    }
  }
  o.read_only_at = {{(dir / "missing.bin").string(), "/task/in1.bin"}};
  try {
    sh("true", o);
    ADD_FAILURE() << "a missing file was given";
  } catch (const UserError& e) {
    EXPECT_NE(std::string(e.what()).find("cannot show " + (dir / "missing.bin").string()), std::string::npos) << e.what();
  }
  fs::remove_all(dir);
}

// Hack catalogue, filling memory through tmpfs: the resident-memory watchdog does not see a file in /tmp or
// /dev/shm, so their size is bounded.
TEST(Sandbox, BoundsTheSizeOfItsPrivateTmp) {
  SandboxOptions o = quick();
  o.tmpfs_bytes = 1 << 20;
  for (bool gpu : {false, true}) {
    o.gpu = gpu;
    for (std::string dir : {"/tmp", "/dev/shm"}) {
      auto r = sh("head -c 4194304 /dev/zero > " + dir + "/fill; echo status $?; ls -l " + dir + "/fill", o);
      EXPECT_NE(r.err.find("No space left on device"), std::string::npos) << dir << r.out << r.err;
      EXPECT_EQ(r.out.find("4194304"), std::string::npos) << dir << r.out;
    }
  }
}

// A job's sandbox shows the device nodes of its own GPU only (env/gpu_device.h): here two of the host's other
// character devices stand in for two GPUs' nodes.
TEST(Sandbox, ShowsOnlyTheDeviceNodesItIsGiven) {
  std::vector<std::string> others;
  for (const char* n : {"/dev/loop0", "/dev/loop1", "/dev/tty1", "/dev/tty2", "/dev/vcs", "/dev/vcs1"})
    if (fs::is_character_file(n) || fs::is_block_file(n)) others.push_back(n);
  if (others.size() < 2) GTEST_SKIP() << "fewer than two of the stand-in device nodes here";
  SandboxOptions o = quick();
  o.gpu = true;
  o.gpu_nodes = {others[0]};
  auto r = sh("ls " + others[0] + " " + others[1] + "; ls /dev", o);
  EXPECT_NE(r.out.find(others[0]), std::string::npos) << r.out << r.err;
  EXPECT_NE(r.err.find(others[1]), std::string::npos) << r.err;  // "cannot access ...: No such file"
  EXPECT_NE(r.out.find("null"), std::string::npos) << r.out;     // the minimal /dev around it
}

// The service's evaluation slots run as user ids of their own (--sandbox-uid-base): no account is needed, and the
// process limit, which counts per user, is then each slot's own.
TEST(Sandbox, RunsAsAUserIdWithoutAnAccount) {
  if (geteuid() != 0) GTEST_SKIP() << "not root: the sandbox runs as this user";
  SandboxOptions o = quick();
  o.uid = 300123;
  auto r = sh("id -u", o);
  EXPECT_TRUE(r.ok()) << r.cause() << r.err;
  EXPECT_EQ(r.out, "300123\n");
}

TEST(Sandbox, ClearsTheEnvironmentButForWhatItPasses) {
  setenv("KFORGE_TEST_SECRET", "token-123", 1);
  SandboxOptions o = quick();
  o.env.push_back({"GIVEN", "yes"});
  for (bool namespaces : {true, false}) {
    o.namespaces = namespaces;
    auto r = sh("env", o);
    EXPECT_TRUE(r.ok()) << r.cause() << r.err;
    EXPECT_EQ(r.out.find("token-123"), std::string::npos) << "namespaces " << namespaces << ":\n" << r.out;
    EXPECT_NE(r.out.find("GIVEN=yes"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("PATH="), std::string::npos) << r.out;
  }
  unsetenv("KFORGE_TEST_SECRET");
}

TEST(Sandbox, ReportsACrashBySignal) {
  auto r = sh("kill -SEGV $$");
  EXPECT_EQ(r.signal, SIGSEGV);
  EXPECT_NE(r.cause().find("killed by signal 11"), std::string::npos) << r.cause();
}

TEST(Sandbox, KillsAnInfiniteLoopAtTheTimeout) {
  auto r = sh("while :; do :; done", quick(1.0));
  EXPECT_TRUE(r.timed_out);
  EXPECT_LT(r.seconds, 5.0);
  EXPECT_NE(r.cause().find("timed out"), std::string::npos);
}

TEST(Sandbox, ContainsAForkBomb) {
  SandboxOptions o = quick(3.0);
  o.max_processes = 64;
  auto r = run_sandboxed({"/bin/bash", "-c", "bomb() { bomb | bomb & }; bomb; sleep 100"}, o);
  EXPECT_FALSE(r.ok());
  EXPECT_LT(r.seconds, 10.0);
  EXPECT_TRUE(sh("echo alive").ok()) << "the next sandbox must still start";
}

TEST(Sandbox, FileSystemIsReadOnlyOutsideScratch) {
  fs::path scratch = fs::path(testing::scratch_path("kforge-sandbox-scratch"));
  fs::create_directories(scratch);
  fs::permissions(scratch, fs::perms::all);  // the sandbox user (nobody) writes here
  // Not under /tmp: the sandbox gets a private /tmp, where writes succeed and vanish.
  fs::path outside = fs::current_path() / "kforge-sandbox-outside";
  fs::remove(outside);
  SandboxOptions o = quick();
  o.scratch_dir = scratch.string();
  auto r = sh("echo x > " + outside.string() + " && echo wrote", o);
  EXPECT_FALSE(r.ok());
  EXPECT_FALSE(fs::exists(outside));
  auto w = sh("echo inside > result.txt && cat result.txt", o);
  EXPECT_TRUE(w.ok()) << w.err;
  EXPECT_EQ(w.out, "inside\n");
  EXPECT_TRUE(fs::exists(scratch / "result.txt"));
  // Nor can it read what only root may read.
  EXPECT_FALSE(sh("cat /etc/shadow", o).ok());
}

// With the GPU's device nodes exposed, the host's shared memory stays out of reach (it may hold the
// service's folders); folders bound read-only stay read-only.
TEST(Sandbox, GpuModeKeepsTheHostsSharedMemoryPrivate) {
  fs::path shm = "/dev/shm/kforge-sandbox-test";
  fs::create_directories(shm);
  fs::permissions(shm, fs::perms::all);
  fs::remove(shm / "planted");
  SandboxOptions o = quick();
  o.gpu = true;
  o.uid = 0;  // even root inside the sandbox
  auto r = sh("echo x > " + (shm / "planted").string() + "; ls /dev/shm", o);
  EXPECT_FALSE(fs::exists(shm / "planted"));
  EXPECT_EQ(r.out.find("kforge-sandbox-test"), std::string::npos) << r.out;
  o.read_only.push_back(shm.string());
  auto ro = sh("echo x > " + (shm / "planted").string(), o);
  EXPECT_FALSE(ro.ok());
  EXPECT_FALSE(fs::exists(shm / "planted"));
  fs::remove_all(shm);
}

TEST(Sandbox, HasNoNetwork) {
  // A server on the host's loopback that the sandbox must not reach.
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
  ASSERT_EQ(listen(fd, 4), 0);
  socklen_t len = sizeof a;
  getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
  std::string port = std::to_string(ntohs(a.sin_port));
  std::string probe = "exec 3<>/dev/tcp/127.0.0.1/" + port + " && echo connected";
  auto r = run_sandboxed({"/bin/bash", "-c", probe}, quick());
  EXPECT_FALSE(r.ok());
  EXPECT_EQ(r.out.find("connected"), std::string::npos);
  SandboxOptions shared = quick();
  shared.network = true;  // the control: with the host's network the same probe connects
  EXPECT_TRUE(run_sandboxed({"/bin/bash", "-c", probe}, shared).ok());
  close(fd);
}

// Resident memory, watched from outside (RLIMIT_AS would break CUDA): a child that touches 2 GiB under a
// 256 MiB limit is killed with the reason; one that stays under it runs to the end. Both sandbox modes,
// and with /dev exposed as for GPU jobs.
TEST(Sandbox, BoundsResidentMemory) {
  for (bool namespaces : {true, false}) {
    SandboxOptions o = quick(30);
    o.namespaces = namespaces;
    o.gpu = true;
    o.memory_bytes = 256LL << 20;
    auto r = run_sandboxed({"python3", "-c", "x = b'x' * (2 << 30); print('allocated')"}, o);
    EXPECT_FALSE(r.ok());
    EXPECT_EQ(r.out.find("allocated"), std::string::npos);
    EXPECT_GT(r.memory_exceeded, 256LL << 20);
    EXPECT_NE(r.cause().find("memory limit exceeded ("), std::string::npos) << r.cause();
    EXPECT_NE(r.cause().find("MiB > limit 256 MiB)"), std::string::npos) << r.cause();
    EXPECT_LT(r.seconds, 20.0);
    auto small = run_sandboxed({"python3", "-c", "x = b'x' * (64 << 20); print('allocated')"}, o);
    EXPECT_TRUE(small.ok()) << small.cause() << small.err;
    EXPECT_EQ(small.out, "allocated\n");
  }
}

// Where a cgroup v2 hierarchy hands the memory controller to its children (a test cgroup is made under
// /sys/fs/cgroup when running as root; the host's own settings are left alone), the kernel enforces the
// limit; the cause is still named.
TEST(Sandbox, BoundsMemoryWithACgroupWhereOneIsDelegated) {
  fs::path root = "/sys/fs/cgroup", parent = root / ("kforge-test-" + std::to_string(getpid()));
  std::ifstream controllers(root / "cgroup.subtree_control");
  std::string line;
  std::getline(controllers, line);
  if (line.find("memory") == std::string::npos || geteuid() != 0)
    GTEST_SKIP() << "/sys/fs/cgroup does not hand the cgroup v2 memory controller to its children, or not root: "
                    "the watchdog tests cover this host";
  std::error_code ec;
  fs::create_directory(parent, ec);
  std::ofstream(parent / "cgroup.subtree_control") << "+memory";
  SandboxOptions o = quick(30);
  o.gpu = true;
  o.memory_bytes = 256LL << 20;
  o.cgroup_parent = parent.string();
  SandboxResult r, small;
  try {
    r = run_sandboxed({"python3", "-c", "x = b'x' * (2 << 30); print('allocated')"}, o);
    small = run_sandboxed({"python3", "-c", "x = b'x' * (64 << 20); print('allocated')"}, o);
  } catch (const UserError& e) {
    rmdir(parent.c_str());
    GTEST_SKIP() << "cgroup " << parent << " not usable here: " << e.what();
  }
  rmdir(parent.c_str());
  EXPECT_FALSE(r.ok());
  EXPECT_NE(r.cause().find("memory limit exceeded ("), std::string::npos) << r.cause() << r.err;
  EXPECT_TRUE(small.ok()) << small.cause() << small.err;
}

TEST(Sandbox, AnUnusableCgroupIsAClearError) {
  SandboxOptions o = quick();
  o.cgroup_parent = "/nonexistent-cgroup";
  try {
    sh("true", o);
    FAIL() << "ran without the memory cgroup it was given";
  } catch (const UserError& e) {
    EXPECT_NE(std::string(e.what()).find("/nonexistent-cgroup is not a cgroup v2 folder with the memory controller"), std::string::npos) << e.what();
  }
}

// Memory held by a grandchild counts too: the watchdog sums the whole process tree.
TEST(Sandbox, BoundsMemoryOfTheWholeTree) {
  SandboxOptions o = quick(30);
  o.memory_bytes = 256LL << 20;
  auto r = sh("python3 -c \"import time; x = b'x' * (150 << 20); time.sleep(20)\" & "
              "python3 -c \"import time; x = b'x' * (150 << 20); time.sleep(20)\"; wait", o);
  EXPECT_GT(r.memory_exceeded, 256LL << 20) << r.cause();
  EXPECT_LT(r.seconds, 15.0);
}

// A hard address-space bound remains for commands that never load CUDA.
TEST(Sandbox, BoundsAddressSpaceWhenAsked) {
  SandboxOptions o = quick();
  o.address_space_bytes = 256LL << 20;
  o.memory_bytes = 0;
  auto r = run_sandboxed({"python3", "-c", "x = bytearray(1 << 30); print('allocated')"}, o);
  EXPECT_FALSE(r.ok());
  EXPECT_NE(r.err.find("MemoryError"), std::string::npos) << r.err;
}

TEST(Sandbox, BoundsOutput) {
  SandboxOptions o = quick();
  o.max_output_bytes = 1000;
  auto r = sh("yes | head -c 100000", o);
  EXPECT_TRUE(r.ok());
  EXPECT_EQ(r.out.size(), 1000u);
  EXPECT_TRUE(r.output_truncated);
}

TEST(Sandbox, MissingBubblewrapIsAClearFailure) {
  SandboxOptions o = quick();
  o.bwrap = "/nonexistent/bwrap";
  auto r = sh("true", o);
  EXPECT_EQ(r.exit_code, 127);
  EXPECT_NE(r.err.find("bubblewrap"), std::string::npos);
}

}  // namespace
}  // namespace kforge
