// A path in a folder of this test process's own. Test binaries of several builds (a CI clone, a worktree,
// the main tree) run on one machine at once; fixed names under /tmp made them read each other's files.
#pragma once
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <string>

namespace kforge::testing {

inline std::string scratch_path(const std::string& name) {
  std::filesystem::path dir = std::filesystem::path(::testing::TempDir()) / ("kforge-test-" + std::to_string(getpid()));
  std::filesystem::create_directories(dir);
  return (dir / name).string();
}

}  // namespace kforge::testing
