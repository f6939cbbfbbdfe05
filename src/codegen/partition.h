// Partition: decides which values live in device memory and groups the rest into kernels.
//
// Elementwise values are never stored: each kernel recomputes the elementwise expressions it needs from
// stored values (tinygrad's rule; recomputing arithmetic is cheaper than a round trip through memory on
// a memory-bound chip). Stored values are graph inputs, params and outputs, reductions, scans and pools,
// and any value a reshape must see contiguous. Reshapes of stored values are free aliases.
//
// Row fusion: a reduction and the elementwise outputs of the same iteration shape that use it (softmax's
// max, sum and division; LayerNorm's two statistics and its output) become one kernel that walks each row
// once per dependent statistic and once more for the outputs. It is a schedule choice (Schedule::fuse_rows).
// Sibling statistics (same rows, neither reading the other: a cosine similarity's dot product and two norms)
// always share a kernel and a walk, fused or not: reading the rows once is never worse.
//
// Matrix products are library calls (cuBLASLt), each its own group: the product is stored, and so are its
// operands, except that a permute swapping the last two dims of a stored value is read in place (the
// library's transpose flag). Epilogues the library applies were folded into the node before (gemm_epilogue.h).
// Convolutions likewise (cuDNN): the conv, its input and its weight are stored, each conv its own group.
// A recurrence (ir/recurrence.h) too: one persistent kernel reading its stored operands (emit_recurrence.cpp).
// An attention (ir/attention.h) is one kernel (emit_attention.cpp) that computes its scores' product and every
// elementwise value between it and the softmax itself: none of them is stored; its result is, and elementwise
// values of the result's shape computed from it are written by the same kernel (as a pool's).
#pragma once
#include <optional>
#include <string>
#include <vector>

#include "ir/attention.h"
#include "ir/conv.h"
#include "ir/graph.h"
#include "ir/matmul.h"
#include "ir/recurrence.h"

namespace kforge {

enum class GroupKind { pointwise, row, scan, pool, matmul, conv, recurrence, attention };
constexpr int kGroupKindCount = 8;
std::string to_string(GroupKind k);  // "pointwise", "row", ...

// What code generation needs to know of the GPU (runtime/target.h tells it from the driver): its compute capability
// (major * 10 + minor) and its SMs. The default is the Hopper the generator's rules were measured on, where no GPU
// tells it (CI, `kforge lower` on a laptop).
struct TargetFacts {
  int sm = 90;
  int sms = 132;
};

struct KernelGroup {
  GroupKind kind;
  std::string key;              // stable name for schedules: the name of the group's first root
  Shape shape;                  // iteration shape S (row: the reduce input shape)
  std::vector<int64_t> axes;    // row: reduced dims of S; scan: {dim}
  std::vector<int> stats;       // row: reduce nodes in evaluation order
  std::vector<int> stat_pass;   // row: per statistic, the walk over the row that computes it (0, 1, ...):
                                // statistics that do not read each other share a walk
  // row: per statistic, the max it is computed together with in one walk (online softmax), or -1. A sum of
  // exp(x - m) over the row of m = max(x) keeps a running max of its own and rescales its running sum when
  // the max grows (Milakov & Gimelshein), so softmax, log-softmax and cross-entropy walk once for both.
  std::vector<int> online_max;
  std::vector<int> elem_outputs;// stored values computed at every point of S
  std::vector<int> row_outputs; // row: stored values of the reduced shape (reduces and their epilogues)
  int anchor = -1;              // scan / pool / matmul / conv / recurrence / attention: the node of that op
  // conv: the geometry where the group is a 2-D depthwise forward convolution (groups = channels = outputs),
  // which kforge's own direct kernel can run (schedule strategy tile, emit_conv_direct.cpp); else empty.
  std::optional<ConvDims> depthwise;
  // recurrence: the loop's geometry (ir/recurrence.h).
  std::optional<RecurrenceDims> recurrence;
  // attention: its geometry (ir/attention.h).
  std::optional<AttentionDims> attention;
  // conv: whether a bias or an activation was folded into the node (codegen/conv_epilogue.h).
  bool conv_epilogue = false;
  // conv: a channels-last convolution (ir/conv.h, codegen/channels_last.h): its step reads and writes the
  // channels-last tensors as they are, so its layout is nhwc.
  bool channels_last = false;
  // matmul, conv: the dtype of the half-precision tensors the library reads as stored (ir/half_operands.h).
  std::optional<DType> half_operands;
  // The target (GraphAnalysis): Hopper's bulk copies and clusters need sm 90; grids are sized in its SMs.
  TargetFacts target;
};

struct Partition {
  const Graph* graph = nullptr;
  std::vector<bool> stored;     // per node: owns or aliases device memory
  std::vector<int> storage;     // per node: the node whose buffer holds it (itself, or a reshape's source)
  std::vector<KernelGroup> groups;  // in a valid launch order
};

Partition partition(const Graph& primitive_graph, bool fuse_rows);
// Whether the partition stores `n` for what it is, whatever reads it: the task's inputs and params, reductions,
// scans, pools, products, convolutions, recurrences and attentions.
bool stored_by_nature(const Node& n);
// A permute marked "materialize" (codegen/channels_last.h: a whole tensor changing layout): stored, by a kernel of its
// own that transposes through shared memory (emit_pointwise.cpp), where a strided read by each reader would not be
// coalesced.
bool materialized_permute(const Node& n);
// A permutation that moves a block of dims past the next, [A][B][C] -> [A][C][B] (channels last and back, a tiled
// transpose): B's dims are k..j-1, C's j..; nullopt for any other (or the identity).
struct BlockTranspose {
  size_t k, j;
};
std::optional<BlockTranspose> block_transpose(const std::vector<int64_t>& dims);
// The constant that node `id` is, seen through views (an expanded scalar: every element the same value); -1 where it
// is none. Such a view is its constant wherever it is read: nothing is stored for it.
int const_through_views(const Graph& g, int id);

// Walks a row kernel makes over each row to compute its statistics (one per stat_pass value), and in all
// (one more for the elementwise outputs).
int stat_walks(const KernelGroup& g);
int row_walks(const KernelGroup& g);
// The statistics computed in walk `pass`, in evaluation order.
std::vector<int> stats_in_pass(const KernelGroup& g, int pass);
// Whether a statistic of the group is computed online with its max (KernelGroup::online_max).
bool has_online_stat(const KernelGroup& g);
// `g` with each online statistic computed in a walk of its own after its max's (and every later walk one
// later): where the row is cached on chip that extra walk reads the cache, not HBM, and is cheaper than the
// online statistic's second exp and rescale per element (24_softmax_last_dim with the row in shared memory:
// 1.49 ms in three walks, 1.98 with the online sum).
KernelGroup without_online_stats(const KernelGroup& g);

}  // namespace kforge
