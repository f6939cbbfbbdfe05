// Crossovers between measured plans, along the one cut of a schedule whose halves are nearly independent: the
// products' and convolutions' kernels (library call or kforge's own: precision, layout, engine) and everything
// else (whether rows are fused, the row and pointwise kernels, the CUDA graph). The hand-written openings try
// each call form with the default rest and a few rests with the default call; the fastest of each seldom come
// from the same opening (a convolution chain's fp16 convolution from one, its BatchNorm statistics split
// across the GPU from another), and single edits of the best plan rarely change both. So after the openings
// the search measures the best call forms with the best other rests.
#pragma once
#include <vector>

#include "codegen/analysis.h"
#include "codegen/schedule.h"

namespace kforge {

struct MeasuredSchedule {
  Schedule schedule;
  double ms = 0;  // its time (the native median); only correct plans are offered
};

// The most crossovers one call makes with its default `rests`: two donors (the best plan, the fastest relaxed one)
// with two rests each.
constexpr int kCrossoverRests = 2, kCrossoverRoom = 2 * kCrossoverRests;

// Each donor's products and convolutions with each of the `rests` fastest rests of `measured` other than the
// donor's own (a rest ranked by the fastest plan that has it). Only legal schedules; the caller drops those it
// has measured.
std::vector<Schedule> crossovers(const GraphAnalysis& analysis, const std::vector<Schedule>& donors,
                                 const std::vector<MeasuredSchedule>& measured, int rests = kCrossoverRests);

}  // namespace kforge
