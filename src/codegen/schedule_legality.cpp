// Which schedules a kernel group may take (check_schedule): limits of the hardware and of each strategy's
// emitter, named where a schedule breaks one; and the row-cache geometry they rest on.
#include "codegen/schedule.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include "ir/error.h"
#include "ir/types.h"

namespace kforge {

int64_t register_row_slots(const KernelGroup& g, const KernelSchedule& ks) {
  return (row_length(g) + row_walkers(ks) - 1) / row_walkers(ks);
}

int64_t row_cache_bytes(const KernelGroup& g, const KernelSchedule& ks, int buffers) {
  int64_t rows_per_block = ks.strategy == Strategy::warp ? ks.block / 32 : ks.strategy == Strategy::tile ? 32 : 1;
  return row_length(g) * 4 * rows_per_block * buffers;
}

int64_t bulk_row_floats(const KernelGroup& g) { return (row_length(g) + 3 + 3) / 4 * 4; }

int64_t bulk_cache_limit(const KernelSchedule& ks) { return row_cache_limit(ks) - kBlockStaticSmem; }

int64_t row_cache_limit(const KernelSchedule& ks) {
  // The tile strategy's static shared memory: a KfMoments (16 bytes) and a KfArg (16) per warp and lane.
  return kMaxRowCache - (ks.strategy == Strategy::tile ? int64_t(ks.block / 32) * 32 * 32 : 0);
}

bool keeps_innermost(const KernelGroup& g) {
  // Whatever order a graph lists its reduced dims in (the importer sorts them; a hand-written JSON need not).
  return !g.axes.empty() && std::find(g.axes.begin(), g.axes.end(), int64_t(g.shape.size()) - 1) == g.axes.end();
}

bool reduces_innermost(const KernelGroup& g) {
  for (size_t i = 0; i < g.axes.size(); ++i)
    if (g.axes[i] != int64_t(g.shape.size() - g.axes.size() + i)) return false;
  return true;
}

int64_t rows_of(const KernelGroup& g) {
  if (g.kind == GroupKind::pointwise || g.kind == GroupKind::pool) return numel(g.shape);
  int64_t r = row_length(g);
  return r == 0 ? 0 : numel(g.shape) / r;
}

int64_t row_length(const KernelGroup& g) {
  int64_t r = 1;
  if (g.kind == GroupKind::row || g.kind == GroupKind::scan)
    for (auto a : g.axes) r *= g.shape[a];
  return r;
}

namespace {

[[noreturn]] void illegal(const KernelGroup& g, const std::string& field, const std::string& why) {
  throw UserError("schedule of kernel '" + g.key + "': " + field + " " + why);
}

// The batch-split recurrence kernel (schedule.h, RecurrenceTile; emit_recurrence_cluster.cpp).
void check_recurrence_cluster(const KernelGroup& g, const KernelSchedule& ks) {
  const RecurrenceDims& d = *g.recurrence;
  if (ks.vec != 1 || ks.cache_row != RowCache::none) illegal(g, "vec/cache_row", "of the batch-split recurrence are 1, none");
  if (ks.chunks != 1 && ks.chunks != 2 && ks.chunks != 4 && ks.chunks != 8 && ks.chunks != 16)
    illegal(g, "chunks", "(blocks of a cluster sharing the hidden units) must be 1, 2, 4, 8 or 16 (16: Hopper's non-portable size)");
  if (ks.chunks > 1 && g.target.sm < 90)
    illegal(g, "chunks", "clusters need sm_90 (Hopper) or later; the target is sm_" + std::to_string(g.target.sm));
  if (ks.chunks > d.hidden) illegal(g, "chunks", "leaves a block of the cluster without hidden units");
  if (ks.chunks > g.target.sms) illegal(g, "chunks", "exceeds the " + std::to_string(g.target.sms) + " SMs a cluster's blocks run on at once");
  if (ks.items < 1 || ks.items > 64) illegal(g, "items", "(batch rows a cluster) must be in [1, 64]");
  if (ks.items > 1 && ks.items / 2 >= d.batch)
    illegal(g, "items", "leaves most of a cluster's " + std::to_string(ks.items) + " batch rows beyond the batch of " + std::to_string(d.batch));
  const RecurrenceTile t = recurrence_tile(g, ks);
  if (t.smem_bytes() > kMaxRowCache)
    illegal(g, "chunks", "leaves " + std::to_string(t.smem_bytes()) + " bytes of weights and state a block (at most " +
                             std::to_string(kMaxRowCache) + "): a larger cluster shares the weights among more blocks");
}
}  // namespace

void check_schedule(const KernelGroup& g, const KernelSchedule& ks) {
  if (ks.block < 32 || ks.block > 1024 || ks.block % 32) illegal(g, "block", "must be a multiple of 32 in [32, 1024]");
  if (ks.vec != 1 && ks.vec != 2 && ks.vec != 4) illegal(g, "vec", "must be 1, 2 or 4");
  if (ks.items < 1 || ks.items > 64) illegal(g, "items", "must be in [1, 64]");
  if (ks.layout != Layout::nchw && g.kind != GroupKind::conv)
    illegal(g, "layout", "nhwc is a convolution's choice only");
  if (ks.library_epilogue && (g.kind != GroupKind::conv || ks.strategy != Strategy::library))
    illegal(g, "epilogue", "library is a cuDNN convolution's choice only");
  if (ks.strategy == Strategy::library && !is_library_kind(g.kind))
    illegal(g, "strategy", "library is for matrix products and convolutions only");
  if (ks.strategy == Strategy::mma && g.kind != GroupKind::matmul && g.kind != GroupKind::attention)
    illegal(g, "strategy", "mma is for matrix products and attention only");
  if (!is_library_kind(g.kind) && g.kind != GroupKind::attention && (ks.precision != Precision::fp32 || ks.algo != 0))
    illegal(g, "precision/algo", "are for matrix products, convolutions and attention only");
  switch (g.kind) {
    case GroupKind::matmul:
      if (g.half_operands) {  // ir/half_operands.h: the library reads the task's half-precision tensors as stored
        const Precision own = direct_precision(*g.half_operands);
        if (ks.strategy != Strategy::library || ks.precision != own || ks.chunks != 1)
          illegal(g, "strategy/precision/chunks", "of a product of " + to_string(*g.half_operands) +
                                                      " tensors are fixed: library, " + to_string(own) + ", 1 piece");
      }
      if (ks.strategy == Strategy::mma) {
        if (ks.precision != Precision::tf32 && ks.precision != Precision::tf32x3)
          illegal(g, "precision", "of mma must be tf32 or tf32x3 (tensor cores)");
        if (ks.algo != 0 || ks.block != kMmaThreads)
          illegal(g, "algo/block", "of mma are fixed: 0 and " + std::to_string(kMmaThreads) + " threads");
        if (ks.items != 1 && ks.items != 2)
          illegal(g, "items", "of mma is the blocks per SM its registers are capped for: 1 or 2");
        if (ks.vec != 1 && ks.vec != 4) illegal(g, "vec", "of mma is the floats a staging copy moves: 1 or 4");
        if (ks.chunks != 1) illegal(g, "chunks", "of mma must be 1 (its split sums each slab in a fresh register already)");
        break;
      }
      if (ks.strategy != Strategy::library)
        illegal(g, "strategy", "must be library (cuBLASLt) or mma (kforge's tensor-core kernel) for a matrix product");
      if (ks.precision == Precision::tf32x3) illegal(g, "precision", "tf32x3 is kforge's own kernel's (strategy mma)");
      if (ks.precision == Precision::bf16 && !g.half_operands)
        illegal(g, "precision", "bf16 is for convolutions and products of bf16 tensors only");
      if (ks.algo < 0 || ks.algo >= kMatmulAlgos)
        illegal(g, "algo", "must be in [0, " + std::to_string(kMatmulAlgos) + ") (an index into cuBLASLt's heuristic)");
      if (ks.chunks < 1 || ks.chunks > 64 || (ks.chunks & (ks.chunks - 1)) != 0)
        illegal(g, "chunks", "of a cuBLASLt product is the pieces its reduction is cut into: a power of two up to 64");
      if (ks.chunks != 1 && ks.precision != Precision::fp16x3)
        illegal(g, "chunks", "pieces of the reduction are for fp16x3 (the tensor cores' truncating sums), not " + to_string(ks.precision));
      if (ks.vec != 1 || ks.items != 1) illegal(g, "vec/items", "are not choices of a cuBLASLt product");
      break;
    case GroupKind::conv:
      if (ks.strategy == Strategy::tile) {
        if (!g.depthwise) illegal(g, "strategy", "tile (kforge's direct kernel) is for 2-D depthwise convolutions only");
        if (ks.precision != Precision::fp32 || ks.algo != 0 || ks.layout != Layout::nchw || ks.vec != 1 || ks.chunks != 1 ||
            ks.cache_row != RowCache::none)
          illegal(g, "precision/algo/layout/vec/chunks/cache_row", "of the direct kernel are fixed: fp32, 0, nchw, 1, 1, none");
        if (ks.items != 1 && ks.items != 2 && ks.items != 4 && ks.items != 8) illegal(g, "items", "must be 1, 2, 4 or 8 rows per thread");
        if (numel(g.depthwise->kernel) > kMaxDirectConvTaps)
          illegal(g, "strategy", "tile keeps the kernel's " + std::to_string(numel(g.depthwise->kernel)) + " taps in registers (at most " +
                                     std::to_string(kMaxDirectConvTaps) + ")");
        if (int64_t b = direct_conv_tile(*g.depthwise, ks).smem_bytes; b > kMaxStaticSmem)
          illegal(g, "block/items", "the input window takes " + std::to_string(b) + " bytes of shared memory (at most " +
                                        std::to_string(kMaxStaticSmem) + ")");
        break;
      }
      if (ks.strategy != Strategy::library)
        illegal(g, "strategy", "must be library (cuDNN) or, for a 2-D depthwise convolution, tile (kforge's direct kernel)");
      if (g.half_operands && (ks.precision != direct_precision(*g.half_operands) || ks.layout != Layout::nhwc))
        illegal(g, "precision/layout", "of a convolution of " + to_string(*g.half_operands) + " tensors are fixed: " +
                                           to_string(direct_precision(*g.half_operands)) + ", nhwc (their transposes read them as stored)");
      if (g.channels_last && ks.layout != Layout::nhwc)
        illegal(g, "layout", "of a channels-last convolution is nhwc (its tensors are channels-last in the graph)");
      if (ks.precision == Precision::tf32x3) illegal(g, "precision", "tf32x3 is for matrix products only (kforge's mma kernel)");
      if ((is_half(ks.precision) || ks.precision == Precision::fp16x3) && ks.layout != Layout::nhwc)
        illegal(g, "precision", to_string(ks.precision) + " needs layout nhwc (the transposes into channels last make the 16-bit copies)");
      if (ks.vec != 1 || ks.items != 1) illegal(g, "vec/items", "are not choices of a convolution");
      if (ks.library_epilogue && !g.conv_epilogue && ks.precision != Precision::fp16x3)
        illegal(g, "epilogue", "library leaves cuDNN nothing to do here (no bias or activation folded into the convolution, no fp16x3 scales)");
      if (ks.algo < 0 || ks.algo >= kConvEngines)
        illegal(g, "algo", "must be in [0, " + std::to_string(kConvEngines) + ") (an index into cuDNN's engine heuristic)");
      break;
    case GroupKind::pointwise:
      if (ks.strategy != Strategy::flat) illegal(g, "strategy", "must be flat for a pointwise kernel");
      if (numel(g.shape) % ks.vec) illegal(g, "vec", "must divide the element count " + std::to_string(numel(g.shape)));
      break;
    case GroupKind::pool:
      if (ks.strategy != Strategy::flat || ks.vec != 1) illegal(g, "strategy", "must be flat with vec 1 for pooling");
      break;
    case GroupKind::recurrence: {
      if (ks.strategy == Strategy::tile) {
        check_recurrence_cluster(g, ks);
        break;
      }
      if (ks.strategy != Strategy::block || ks.chunks != 1 || ks.cache_row != RowCache::none)
        illegal(g, "strategy/chunks/cache_row", "of a recurrence are block, 1, none (or tile: the batch-split kernel)");
      if (ks.vec != 1 && ks.vec != 4) illegal(g, "vec", "of a recurrence is 1 (weights in shared memory) or 4 (in registers)");
      if (ks.items & (ks.items - 1)) illegal(g, "items", "(hidden units a block) must be a power of two");
      const RecurrenceTile t = recurrence_tile(g, ks);
      if (ks.vec == 4) {
        const RecurrenceDims& d = *g.recurrence;
        if (d.hidden % 4 || t.chunk != d.hidden)
          illegal(g, "vec", "4 reads the whole staged state in float4s: the hidden size must be a multiple of 4 and the state fit at once");
        if (d.gates * ks.items > ks.block) illegal(g, "vec", "4 needs a thread for each of the block's weight rows");
        if (4 * t.held > kMaxRegisterWeights)
          illegal(g, "vec", "4 would hold " + std::to_string(4 * t.held) + " weights a thread in registers (at most " +
                                std::to_string(kMaxRegisterWeights) + ")");
      }
      if (ks.items > 1 && ks.items / 2 >= g.recurrence->hidden)
        illegal(g, "items", "leaves most of a block's " + std::to_string(ks.items) + " units beyond the " +
                                std::to_string(g.recurrence->hidden) + " hidden units");
      // Every block waits for values every other block publishes: all must be resident at once, one an SM.
      if (t.blocks > g.target.sms)
        illegal(g, "items", std::to_string(ks.items) + " units a block need " + std::to_string(t.blocks) +
                                " blocks, more than the " + std::to_string(g.target.sms) + " SMs hold at once");
      if (t.smem_bytes() > kMaxRowCache)
        illegal(g, "items", "needs " + std::to_string(t.smem_bytes()) + " bytes of shared memory a block (at most " +
                                std::to_string(kMaxRowCache) + ")");
      break;
    }
    case GroupKind::attention: {
      if (ks.vec != 1 || ks.chunks != 1 || ks.cache_row != RowCache::none || ks.algo != 0)
        illegal(g, "vec/chunks/cache_row/algo", "of an attention are fixed: 1, 1, none, 0");
      const AttentionTile t = attention_tile(g, ks);
      if (ks.strategy == Strategy::block) {
        if (ks.block != kAttentionThreads || ks.precision != Precision::fp32)
          illegal(g, "block/precision", "of an attention on the CUDA cores are " + std::to_string(kAttentionThreads) + ", fp32");
        if (ks.items != 2 && ks.items != 4 && ks.items != 8) illegal(g, "items", "(query rows a thread) must be 2, 4 or 8");
        // The scores (items x 4) and the output (items x 4 * value_quads) stay in registers.
        if (ks.items * 4 * t.value_quads > kMaxRegisterRow)
          illegal(g, "items", std::to_string(ks.items) + " rows of " + std::to_string(4 * t.value_quads) +
                                  " output columns would hold more than " + std::to_string(kMaxRegisterRow) + " floats a thread");
      } else if (ks.strategy == Strategy::mma) {
        if (is_half(ks.precision) && (!g.half_operands || direct_precision(*g.half_operands) != ks.precision))
          illegal(g, "precision", to_string(ks.precision) + " reads a half-precision task's q, k and v as stored: this "
                                  "attention's are not all " + to_string(ks.precision));
        if (ks.precision != Precision::tf32 && ks.precision != Precision::tf32x3 && !is_half(ks.precision))
          illegal(g, "precision", "of an attention on tensor cores is tf32, tf32x3, or the task's fp16 or bf16");
        if (ks.block != 128 && ks.block != 256) illegal(g, "block", "of an attention on tensor cores is 4 or 8 warps");
        // items: 16-row tiles a warp (the 16-bit kernel's second shares every K and V fragment it loads).
        if (ks.items != 1 && !(ks.items == 2 && is_half(ks.precision)))
          illegal(g, "items", "of an attention on tensor cores is 1, or 2 in fp16 and bf16");
        if (g.target.sm < 80) illegal(g, "strategy", "mma needs sm_80's TF32 tensor cores");
        // A thread's output: Dv / 8 tiles of four floats a 16-row tile; two tiles may take twice the registers.
        const int64_t output_floats = t.value_head / 2 * ks.items, most = kMaxRegisterRow * ks.items;
        if (output_floats > most)
          illegal(g, "strategy", "mma would hold " + std::to_string(output_floats) + " output floats a thread (at most " +
                                     std::to_string(most) + ")");
      } else {
        illegal(g, "strategy", "of an attention is block (CUDA cores) or mma (tensor cores)");
      }
      if (t.smem_bytes() > kMaxRowCache)
        illegal(g, "block/items", "need " + std::to_string(t.smem_bytes()) + " bytes of shared memory a block (at most " +
                                      std::to_string(kMaxRowCache) + ")");
      break;
    }
    case GroupKind::scan:
      if (ks.strategy != Strategy::thread && ks.strategy != Strategy::block)
        illegal(g, "strategy", "must be thread or block for a scan");
      if (ks.strategy == Strategy::thread && row_length(g) > kMaxSerial)
        illegal(g, "strategy", "thread would scan " + std::to_string(row_length(g)) + " elements serially");
      if (ks.vec != 1) illegal(g, "vec", "must be 1 for a scan");
      break;
    case GroupKind::row:
      if (ks.strategy == Strategy::flat) illegal(g, "strategy", "cannot be flat for a reduction");
      // A thread (or warp) walking a very long row alone never wins and can take seconds per run.
      if (ks.strategy == Strategy::thread && row_length(g) > kMaxSerial)
        illegal(g, "strategy", "thread would walk " + std::to_string(row_length(g)) + " elements serially");
      if (ks.strategy == Strategy::warp && row_length(g) > 32 * kMaxSerial)
        illegal(g, "strategy", "warp would walk " + std::to_string(row_length(g) / 32) + " elements per lane");
      if (ks.vec != 1 && (ks.strategy == Strategy::block || ks.strategy == Strategy::split)) {
        // A block's walks `vec` neighbouring elements a step (emit_row.cpp, VecWalk): rows contiguous, whole vectors
        // (a split's chunks too: emit_row_split.cpp rounds them to whole vectors).
        if (ks.vec != 2 && ks.vec != 4) illegal(g, "vec", "must be 1, 2 or 4");
        if (!reduces_innermost(g) || row_length(g) % ks.vec)
          illegal(g, "vec", "needs the reduced dims innermost and rows a multiple of " + std::to_string(ks.vec) + " long (aligned vectors)");
        if (ks.cache_row != RowCache::none && ks.cache_row != RowCache::bulk)
          illegal(g, "vec", "reads rows from memory or a bulk row cache only");
      } else if (ks.vec != 1) {
        // A thread of vec neighbouring rows (emit_row.cpp, emit_thread_vec): rows side by side in memory, one walk.
        if (ks.strategy != Strategy::thread) illegal(g, "vec", "must be 1 for a reduction but under the thread or block strategy");
        if (!keeps_innermost(g) || g.shape.back() % ks.vec)
          illegal(g, "vec", "needs the innermost dim kept and a multiple of " + std::to_string(ks.vec) + " (rows side by side in memory)");
        if (row_walks(g) != 1 || has_online_stat(g))
          illegal(g, "vec", "needs one walk over the rows (no elementwise outputs, no online statistic)");
      }
      if (ks.items != 1 && ks.items != 2 && ks.items != 4 && ks.items != 8)
        illegal(g, "items", "must be 1, 2, 4 or 8 for a reduction (the unroll of its row walks)");
      if (ks.cache_row != RowCache::none) {
        const bool suffix = reduces_innermost(g);
        // A tile caches its 32 rows by (position, lane), wherever the reduced dims lie.
        if (!suffix && ks.strategy != Strategy::tile) illegal(g, "cache_row", "needs the reduced dims to be the innermost ones");
        // A bulk copy gains without reuse too: the copy engine keeps the next row streaming in.
        if (row_walks(g) < 2 && ks.cache_row != RowCache::bulk) illegal(g, "cache_row", "has nothing to reuse: one walk over the row");
        if (ks.strategy != Strategy::warp && ks.strategy != Strategy::block && ks.strategy != Strategy::tile)
          illegal(g, "cache_row", "needs the warp, block or tile strategy (rows that one block walks whole)");
        if (ks.cache_row == RowCache::shared && row_cache_bytes(g, ks, 1) > row_cache_limit(ks))
          illegal(g, "cache_row", "needs " + std::to_string(row_cache_bytes(g, ks, 1)) + " bytes of shared memory per row buffer");
        if (ks.cache_row == RowCache::registers && ks.strategy != Strategy::block && ks.strategy != Strategy::tile)
          illegal(g, "cache_row", "registers needs the block or tile strategy (a warp's lanes would hold row/32 elements each)");
        if (ks.cache_row == RowCache::bulk) {
          if (g.target.sm < 90) illegal(g, "cache_row", "bulk copies need sm_90 (Hopper) or later; the target is sm_" + std::to_string(g.target.sm));
          if (ks.strategy != Strategy::block || !suffix)
            illegal(g, "cache_row", "bulk needs the block strategy and the reduced dims innermost (each row one contiguous run)");
          if (row_length(g) < kMinBulkRow)
            illegal(g, "cache_row", "bulk needs rows of at least " + std::to_string(kMinBulkRow) + " elements");
          // Sized for f32 rows (what the group's rows are is the emitter's to find): 16-bit rows, whose slots take
          // half, are left out where only they would fit (rows of ~29K-57K elements).
          if (2 * bulk_row_floats(g) * 4 > bulk_cache_limit(ks))
            illegal(g, "cache_row", "bulk needs two row buffers of " + std::to_string(bulk_row_floats(g) * 4) + " bytes of shared memory");
        }
        if (ks.cache_row == RowCache::registers && register_row_slots(g, ks) > kMaxRegisterRow)
          illegal(g, "cache_row", "registers would take " + std::to_string(register_row_slots(g, ks)) + " per thread (at most " +
                                      std::to_string(kMaxRegisterRow) + ")");
      }
      if ((ks.strategy == Strategy::block || ks.strategy == Strategy::tile) && ks.chunks != 1) {
        // Rows (a tile's 32) split across a thread-block cluster (emit_row.cpp): each block holds its share, in
        // registers or read again from memory; the blocks' statistics meet in distributed shared memory.
        if (ks.chunks != 2 && ks.chunks != 4 && ks.chunks != 8)
          illegal(g, "chunks", "of the block and tile strategies is the blocks of a cluster sharing each row: 1, 2, 4 or 8");
        if (g.target.sm < 90)
          illegal(g, "chunks", "thread-block clusters need sm_90 (Hopper) or later; the target is sm_" + std::to_string(g.target.sm));
        if (ks.cache_row == RowCache::shared || ks.cache_row == RowCache::bulk)
          illegal(g, "chunks", "a row split across a cluster is cached in registers or not at all");
        if (row_length(g) < row_walkers(ks)) illegal(g, "chunks", "would leave threads of the cluster without an element of the row");
      }
      if (ks.strategy != Strategy::split && ks.strategy != Strategy::block && ks.strategy != Strategy::tile && ks.chunks != 1)
        illegal(g, "chunks", "must be 1 but for the split, block and tile strategies");
      if (ks.strategy == Strategy::tile && !keeps_innermost(g))
        illegal(g, "strategy", "tile needs the innermost dim kept (rows side by side in memory)");
      if (ks.strategy == Strategy::split) {
        if (row_walks(g) != 1 || !g.elem_outputs.empty())
          illegal(g, "strategy", "split needs one walk over the row (statistics that do not read each other) and no elementwise outputs");
        if (has_online_stat(g)) illegal(g, "strategy", "split does not combine an online softmax statistic's chunks");
        if (ks.chunks < 2 || ks.chunks > 1024) illegal(g, "chunks", "must be in [2, 1024] for split");
      }
      break;
  }
}

bool is_legal(const KernelGroup& g, const KernelSchedule& ks) {
  try {
    check_schedule(g, ks);
    return true;
  } catch (const UserError&) {
    return false;
  }
}

}  // namespace kforge
