// Padding: op pad, x of any rank with attrs
//   pads: two counts per dim of x, in x's dim order ([left_0, right_0, left_1, right_1, ...]; not F.pad's
//         last-dim-first order), each >= 0 (the importer crops negative padding first);
//   mode: "constant" (value: the fill), "reflect" (the edge not repeated: a pad of at most n - 1), "replicate"
//         (the edge repeated) or "circular" (wrapped: a pad of at most n).
// Output dim d has n_d + left_d + right_d elements; output coordinate c reads x at source(c) in every dim, or is
// the fill where constant mode puts c outside x. One op for every padded dim, so that a 2-D or 3-D padding is one
// kernel reading x once (as concatenations a dim at a time it was a kernel and a copy of the tensor a dim), and
// channels-last plans pad in their own layout (codegen/channels_last.h permutes the counts).
#pragma once
#include <string>
#include <vector>

#include "ir/graph.h"

namespace kforge {

enum class PadMode { constant, reflect, replicate, circular };

struct PadDim {
  int64_t left = 0, right = 0, in = 1;
};

struct PadSpec {
  PadMode mode = PadMode::constant;
  double value = 0;
  std::vector<PadDim> dims;  // one per dim of x
};

// The padding of node `n` over an input of shape `x`. Throws UserError (prefixed by `where`) for attrs missing, of
// the wrong length or out of range for the mode.
PadSpec pad_spec(const Node& n, const Shape& x, const std::string& where);

// The source coordinate of output coordinate c along a dim, or -1 where constant mode fills it.
int64_t pad_source(PadMode mode, const PadDim& d, int64_t c);

// The same map as CUDA C over an integer expression `c` (evaluated once by the caller: a variable), for the
// modes that always read x; constant mode's source is clamped into x (the fill is chosen by pad_inside).
std::string pad_source_expr(PadMode mode, const PadDim& d, const std::string& c);

// CUDA C for "output coordinate c of this dim lies inside x" (constant mode), or "" where every coordinate does.
std::string pad_inside_expr(const PadDim& d, const std::string& c);

}  // namespace kforge
