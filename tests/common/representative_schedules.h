// The schedules the codegen and GPU tests try per graph: the default, no row fusion, and each group's
// schedule space with one point per (strategy, vec, cache_row) -- and per items count when `vary_items` --
// and for matrix products per precision, with the heuristic's first, second and last algorithm (algos 2-6
// share a key with algo 1).
#pragma once
#include <vector>

#include "codegen/schedule.h"
#include "ir/graph.h"

namespace kforge::testing {

std::vector<Schedule> representative_schedules(const Graph& g, bool vary_items);

}  // namespace kforge::testing
