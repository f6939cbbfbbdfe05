// Adversarial candidates from the reward-hack catalogue (shared/DESIGN.md), as plans for one small task
// (y = relu(x), x of 4096 floats): each must be rejected with its named reason, and the honest plan must pass.
#pragma once
#include <string>
#include <vector>

#include "codegen/plan.h"
#include "ir/graph.h"

namespace kforge::testing {

struct HackPlan {
  std::string name;
  std::string expect;  // "strict", "relaxed", or a fragment of the rejection log
  Plan plan;
};

nlohmann::json hack_task_graph();
std::vector<HackPlan> hack_plans();

}  // namespace kforge::testing
