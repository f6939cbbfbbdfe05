// The kernel group of one kind in a graph's analysis, for the tests of one family's kernels.
#pragma once
#include <stdexcept>
#include <string>

#include "codegen/analysis.h"

namespace kforge::testing {

// The first group of `kind` under fused rows; std::runtime_error where there is none.
inline const KernelGroup& group_of_kind(const GraphAnalysis& a, GroupKind kind) {
  for (const KernelGroup& g : a.groups(true))
    if (g.kind == kind) return g;
  throw std::runtime_error("no " + to_string(kind) + " group");
}

}  // namespace kforge::testing
