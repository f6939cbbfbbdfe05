// A bundle's data files, mapped rather than copied: the bytes arrive intact, and a file of the wrong size or
// a missing one is refused naming the file.
#include <gtest/gtest.h>

#include <cstring>
#include <fstream>

#include "common/scratch_path.h"
#include "env/bundle.h"
#include "ir/error.h"

namespace kforge {
namespace {

std::string error_of(const std::string& path, int64_t bytes) {
  try {
    MappedFile f(path, bytes);
  } catch (const UserError& e) {
    return e.what();
  }
  return "";
}

TEST(MappedFile, MapsTheBytesAndChecksTheSize) {
  std::string path = testing::scratch_path("kforge-mapped.bin");
  std::ofstream(path, std::ios::binary) << "0123456789abcdef";
  MappedFile f(path, 16);
  ASSERT_EQ(f.size(), 16u);
  EXPECT_EQ(std::memcmp(f.data(), "0123456789abcdef", 16), 0);
  MappedFile moved(std::move(f));
  EXPECT_EQ(f.data(), nullptr);
  EXPECT_EQ(std::memcmp(moved.data(), "0123", 4), 0);
  EXPECT_NE(error_of(path, 20).find(path + " holds 16 bytes, the graph says 20"), std::string::npos) << error_of(path, 20);
  EXPECT_NE(error_of(path + ".missing", 4).find("cannot read " + path + ".missing"), std::string::npos);
  std::ofstream(path, std::ios::binary | std::ios::trunc).flush();
  EXPECT_EQ(MappedFile(path, 0).size(), 0u);  // an empty tensor maps to nothing
}

}  // namespace
}  // namespace kforge
