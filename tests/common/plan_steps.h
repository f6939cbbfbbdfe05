// Helpers of the library-step tests (tests/codegen/test_matmul_lowering.cpp, test_conv_lowering.cpp): a plan's
// steps of one kind, and the check that a plan whose JSON was edited is refused with a message naming the cause.
#pragma once
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "codegen/plan.h"
#include "ir/error.h"

namespace kforge::testing {

inline std::vector<const PlanKernel*> steps(const Plan& p, StepKind kind) {
  std::vector<const PlanKernel*> out;
  for (auto& k : p.kernels)
    if (k.kind == kind) out.push_back(&k);
  return out;
}

// Plan::from_json must refuse `plan` after `edit` of its kernel `step`, with `why` in the message.
template <class Edit>
void expect_step_refused(const nlohmann::json& plan, size_t step, const std::string& why, Edit edit) {
  nlohmann::json j = plan;
  edit(j["kernels"][step]);
  try {
    Plan::from_json(j);
    ADD_FAILURE() << "accepted: " << why;
  } catch (const UserError& e) {
    EXPECT_NE(std::string(e.what()).find(why), std::string::npos) << e.what();
  }
}

}  // namespace kforge::testing
