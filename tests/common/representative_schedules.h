// The schedules the codegen and GPU tests try per graph: the default, no row fusion, and each group's
// schedule space with one point per (strategy, vec, cache_row) -- and per items count when `vary_items`.
#pragma once
#include <vector>

#include "codegen/schedule.h"
#include "ir/graph.h"

namespace kforge::testing {

std::vector<Schedule> representative_schedules(const Graph& g, bool vary_items);

}  // namespace kforge::testing
