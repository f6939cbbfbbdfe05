// A stand-in for measured times, for learners tested without a GPU: a known function of the features plus
// noise. Bytes at bandwidth times the passes not served from shared memory, a launch cost per kernel, and a
// penalty for block sizes away from 256 and for many items per thread. The rules speak of features, not of
// particular graphs, so what a learner gets from them carries over to graphs it never saw.
#pragma once
#include <random>

#include "search/features.h"

namespace kforge::testing {

double synthetic_log_ms(const TaskFeatures& t, const PlanFeatures& p, std::mt19937_64& rng);

}  // namespace kforge::testing
