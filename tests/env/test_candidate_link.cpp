// The wire between a judge and a candidate's process (env/candidate_link.h): a large payload arrives whole, and
// the reader's tick (the sandbox's limits, a /proc walk) runs about every 20 ms, not once per read. GPU-free.
#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <thread>

#include "env/candidate_link.h"

namespace kforge {
namespace {

TEST(FrameReader, ALargePayloadArrivesWholeWithTicksEvery20Ms) {
  int p[2];
  ASSERT_EQ(pipe(p), 0);
  std::string payload(64 << 20, '\0');
  for (size_t i = 0; i < payload.size(); i += 4096) payload[i] = char(i / 4096);
  std::thread writer([&] {
    write_frame(p[1], {{"judge", true}, {"set", 0}}, {{payload.data(), payload.size()}});
    close(p[1]);
  });
  FrameReader in(p[0], payload.size());
  int ticks = 0;
  auto t0 = std::chrono::steady_clock::now();
  std::optional<Frame> f = in.next(60, [&] { ++ticks; });
  double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  writer.join();
  close(p[0]);
  ASSERT_TRUE(f.has_value());
  EXPECT_EQ(f->header.value("set", -1), 0);
  EXPECT_TRUE(f->payload == payload);
  EXPECT_LE(ticks, ms / 20 + 2) << "64 MB come in ~1000 reads of 64 KB";
}

}  // namespace
}  // namespace kforge
