// RL frameworks' reward requests (OpenRLHF's --remote_rm_url, verl's reward function through python/kforge/rl):
// a model's whole answer comes as text, and the candidate is the code in it. This finds that code: the last fenced
// block (```python, ```cuda, ```cpp, ...) that defines ModelNew or exports kforge_forward, as the job kind that
// runs it.
#pragma once
#include <string>

namespace kforge {

struct AnsweredCandidate {
  std::string kind;    // "modelnew" | "cuda"; empty where the answer holds none
  std::string source;
  std::string why;     // where kind is empty: what the answer lacks
};

AnsweredCandidate candidate_in_answer(const std::string& text);

}  // namespace kforge
