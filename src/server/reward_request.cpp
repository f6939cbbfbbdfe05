#include "server/reward_request.h"

#include <vector>

namespace kforge {

namespace {
struct Block {
  std::string lang, body;
};

// Fenced blocks in order: a line starting with ``` opens one (its info string is the language), the next such line
// closes it. An unclosed last block runs to the end of the text (an answer cut at the token limit).
std::vector<Block> fenced_blocks(const std::string& text) {
  std::vector<Block> blocks;
  bool open = false;
  size_t pos = 0;
  while (pos <= text.size()) {
    size_t end = text.find('\n', pos);
    if (end == std::string::npos) end = text.size();
    std::string line = text.substr(pos, end - pos);
    size_t lead = line.find_first_not_of(" \t");
    bool fence = lead != std::string::npos && line.compare(lead, 3, "```") == 0;
    if (fence && !open) {
      std::string info = line.substr(lead + 3);
      info.erase(0, info.find_first_not_of(" \t"));
      blocks.push_back({info.substr(0, info.find_first_of(" \t\r")), ""});
      open = true;
    } else if (fence) {
      open = false;
    } else if (open) {
      blocks.back().body += line + "\n";
    }
    pos = end + 1;
  }
  return blocks;
}
}  // namespace

AnsweredCandidate candidate_in_answer(const std::string& text) {
  std::vector<Block> blocks = fenced_blocks(text);
  for (auto it = blocks.rbegin(); it != blocks.rend(); ++it) {
    if (it->body.find("class ModelNew") != std::string::npos) return {"modelnew", it->body, ""};
    if (it->body.find("kforge_forward") != std::string::npos) return {"cuda", it->body, ""};
  }
  return {"", "", blocks.empty() ? "the answer has no fenced code block (```python ... ```)"
                                 : "no code block of the answer defines ModelNew or exports kforge_forward"};
}

}  // namespace kforge
