// Strided access: how a kernel reads a stored value, possibly through views. permute, expand and flip
// change strides and offset; a reshape of a stored value keeps its memory, one of a view that only drops or adds
// dims of one keeps the other dims' strides. The element at coordinate c of
// the view lives at buffer[offset + sum(c[i] * strides[i])].
#pragma once
#include <vector>

#include "codegen/partition.h"

namespace kforge {

struct Access {
  int owner = -1;  // node that owns the memory
  Shape shape;
  std::vector<int64_t> strides;
  int64_t offset = 0;
  bool contiguous() const;  // offset 0 and row-major strides of `shape`
};

// The access of node `id`, which must be stored or a chain of views over a stored value. With
// `through_self`, a stored view is read through its source (the kernel that stores the view uses this:
// its own buffer is what it writes, not what it reads).
Access access_of(const Partition& p, int id, bool through_self = false);

// Whether `id` can be read by an Access (stored, or views over stored).
bool is_readable(const Partition& p, int id);

// Whether reshape `n` only drops or adds dims of one: a strided view of whatever its source is (the attention's
// qkv[0], a slice [1, B, H, T, D] read as [B, H, T, D]), where another reshape of a view needs the view stored.
bool squeezes_only(const Graph& g, const Node& n);

}  // namespace kforge
