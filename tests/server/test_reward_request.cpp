// The candidate in a model's answer (server/reward_request.h), GPU-free.
#include <gtest/gtest.h>

#include "server/reward_request.h"

namespace kforge {
namespace {

TEST(RewardRequest, TakesTheLastBlockThatIsACandidate) {
  std::string answer =
      "First try:\n```python\nclass ModelNew:\n    pass  # v1\n```\nA sketch:\n```python\nprint('hi')\n```\n"
      "Final:\n```python\nimport torch\nclass ModelNew(torch.nn.Module):\n    pass  # v2\n```\nDone.";
  AnsweredCandidate c = candidate_in_answer(answer);
  EXPECT_EQ(c.kind, "modelnew");
  EXPECT_NE(c.source.find("# v2"), std::string::npos);
  EXPECT_EQ(c.source.find("```"), std::string::npos);
}

TEST(RewardRequest, RawCudaByItsEntryPoint) {
  AnsweredCandidate c = candidate_in_answer(
      "  ```cuda\n#include <cuda_runtime.h>\nextern \"C\" int kforge_forward(const void* const* i, const void* const* p,"
      " void* const* o, cudaStream_t s) { return 0; }\n  ```\n");
  EXPECT_EQ(c.kind, "cuda");
  EXPECT_NE(c.source.find("#include <cuda_runtime.h>"), std::string::npos);
}

TEST(RewardRequest, AnAnswerCutAtItsTokenLimitStillHasItsBlock) {
  EXPECT_EQ(candidate_in_answer("```python\nclass ModelNew(nn.Module):\n    def forward(self, x):").kind, "modelnew");
}

TEST(RewardRequest, SaysWhatTheAnswerLacks) {
  AnsweredCandidate none = candidate_in_answer("I would fuse the two kernels.");
  EXPECT_TRUE(none.kind.empty());
  EXPECT_NE(none.why.find("no fenced code block"), std::string::npos);
  AnsweredCandidate other = candidate_in_answer("```python\nprint(1)\n```");
  EXPECT_TRUE(other.kind.empty());
  EXPECT_NE(other.why.find("defines ModelNew"), std::string::npos);
}

}  // namespace
}  // namespace kforge
