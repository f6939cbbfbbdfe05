// A kernel group's default schedule and the space the search walks, and the launch geometry a schedule gives.
#include "codegen/schedule.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <tuple>
#include "ir/error.h"
#include "ir/types.h"

namespace kforge {

KernelSchedule default_schedule(const KernelGroup& g) {
  KernelSchedule ks;
  int64_t n = numel(g.shape);
  switch (g.kind) {
    case GroupKind::pointwise:
      // One 16-byte vector a thread, 128-thread blocks, a block per chunk (emit_pointwise.cpp): the fastest
      // of tools/microbench/elementwise_bw.cu's shapes on the H200, 1% faster than the copy engine. (Earlier
      // measurements, with the grid clamped then, had preferred 1024 x 8-byte x 4.)
      ks.block = 128;
      ks.vec = n % 4 == 0 ? 4 : n % 2 == 0 ? 2 : 1;
      ks.items = 1;
      break;
    case GroupKind::pool:
      // 128 threads of four outputs each: the fastest or within 3% of it on all six pooling problems measured
      // (39-44: 1D/2D/3D, max and average), where 256 x 1 ran 3-16% slower (42_avg_pool1d 0.966 ms against
      // 0.864).
      ks.block = 128;
      ks.items = 4;
      break;
    case GroupKind::matmul:
    case GroupKind::conv:
      ks.strategy = Strategy::library;  // fp32, the heuristic's first algorithm
      if (g.channels_last) ks.layout = Layout::nhwc;
      if (g.half_operands) {  // half-precision tensors read as stored (ir/half_operands.h)
        ks.precision = direct_precision(*g.half_operands);
        if (g.kind == GroupKind::conv) ks.layout = Layout::nhwc;
      }
      break;
    case GroupKind::recurrence:
      // The fewest units a block (the most blocks, each with the least work a step) that every SM can hold one of.
      // 512 threads: 1.14-1.21x 256's on the first layers of three networks (GRU 128 and 512, Elman RNN 256; H100).
      ks.strategy = Strategy::block;
      ks.block = 512;
      ks.items = 1;
      while (ks.items < 64 && !is_legal(g, ks)) ks.items *= 2;
      // Where no block of units fits (too few SMs for the grid to be resident at once), the batch-split kernel.
      if (!is_legal(g, ks))
        if (auto split = batch_split_recurrence(g)) ks = *split;
      break;
    case GroupKind::attention: {
      // Tensor cores: a half-precision task's 16-bit values as stored (as PyTorch's flash attention), else the split
      // tf32x3 at fp32's accuracy, which ran 1.15-1.2x the CUDA-core kernel on the four SDPA problems timed (H100;
      // plain TF32 missed even 1e-2 on inputs at 4x scale). 8 warps a block (twice 4's speed there) where that still
      // gives every SM a block.
      ks.strategy = Strategy::mma;
      ks.precision = g.half_operands ? direct_precision(*g.half_operands) : Precision::tf32x3;
      ks.block = 256;
      if (attention_tile(g, ks).blocks < g.target.sms || !is_legal(g, ks)) ks.block = 128;
      if (!is_legal(g, ks)) ks = attention_on_cuda_cores(g);
      break;
    }
    case GroupKind::scan: {
      // Lines along a strided axis go one thread each: neighbouring threads read neighbouring addresses. A line
      // along the contiguous axis is read coalesced only by a block walking it together; one thread per such
      // line strides by the line's length (a held-out task of 18672 lines of 301: a thread per line 0.164 ms, a
      // 512-thread block per line 0.064 ms). Only lines of a few elements share their sectors between
      // neighbouring threads. Lines up to 1024 get a 128-thread block and enough items to cover them (not yet
      // measured: only 512 x 2 was measured on those 301-long lines).
      const int64_t length = row_length(g);
      // A line too long for one thread (kMaxSerial) gets a block whatever its axis.
      const bool contiguous = (!keeps_innermost(g) && length >= 64) || length > kMaxSerial;
      ks.strategy = contiguous ? Strategy::block : Strategy::thread;
      ks.block = contiguous && length > 1024 ? 512 : 128;
      ks.items = !contiguous ? 1 : length > 1024 ? 4 : int(std::bit_ceil(uint64_t((length + 127) / 128)));
      break;
    }
    case GroupKind::row: {
      int64_t R = row_length(g), K = rows_of(g);
      // Innermost dim kept: a lane per row reads coalesced across the warp, warps split the rows.
      if (keeps_innermost(g)) ks.strategy = Strategy::tile, ks.block = 256;
      // A warp per row up to 2048 elements (argmax over rows of 2039: a warp of 128-thread blocks 0.95 ms against 2.25
      // for a 256-thread block per row).
      else if (R <= 2048 && K >= 1024) ks.strategy = Strategy::warp, ks.block = R > 1024 ? 128 : 256;
      // Split: ~8 blocks of 1024 threads an SM, at most 512 chunks a row, no unroll (the best plan of all four
      // scalar losses on a 132-SM Hopper; mse 0.77 ms against 0.94 for 1024 chunks of 512 threads unrolled), where
      // the rows are fewer than two an SM.
      else if (K < 2 * g.target.sms && R >= 65536 && row_walks(g) == 1 && g.elem_outputs.empty() && !has_online_stat(g))
        ks.strategy = Strategy::split, ks.block = 1024,
        ks.chunks = int(std::min<int64_t>(512, 8 * int64_t(g.target.sms) / std::max<int64_t>(K, 1) + 1));
      else ks.strategy = Strategy::block, ks.block = R >= 8192 ? 1024 : 256;
      if (ks.strategy == Strategy::split && ks.chunks < 2) ks.chunks = 2;
      ks.items = ks.strategy == Strategy::split ? 1 : 4;  // elsewhere unrolled row walks: four loads in flight
      const int uncached_items = ks.items;
      // Several passes over a row that fits in shared memory: read it from HBM once.
      bool passes = row_walks(g) > 1;
      // Its walks then read shared memory, not HBM: no unroll (24_softmax_last_dim, rows of 24571 cached by 1024-thread
      // blocks: 1.49 ms without, 1.66 with four iterations unrolled).
      if (passes && (ks.strategy == Strategy::warp || ks.strategy == Strategy::block) &&
          row_cache_bytes(g, ks, 1) <= kMaxRowCache)
        ks.cache_row = RowCache::shared, ks.items = 1;
      if (ks.cache_row != RowCache::none && !is_legal(g, ks)) ks.cache_row = RowCache::none, ks.items = uncached_items;
      break;
    }
  }
  return ks;
}

std::vector<KernelSchedule> schedule_space(const KernelGroup& g) {
  std::vector<KernelSchedule> out;
  auto keep = [&](KernelSchedule ks) {
    if (is_legal(g, ks)) out.push_back(ks);
  };
  switch (g.kind) {
    case GroupKind::pointwise:
    case GroupKind::pool:
      for (int b : {128, 256, 512, 1024})
        for (int v : {1, 2, 4})
          for (int it : {1, 2, 4, 8}) keep({Strategy::flat, b, v, it, 1});
      break;
    case GroupKind::matmul:
      for (auto p : {Precision::fp32, Precision::tf32, Precision::fp16x3, Precision::fp16, Precision::bf16})  // bf16: bf16 tensors only
        for (int a = 0; a < kMatmulAlgos; ++a)
          for (int pieces : {1, 2, 4, 8, 16, 32, 64}) keep({Strategy::library, 256, 1, 1, pieces, RowCache::none, p, a});
      for (auto p : {Precision::tf32x3, Precision::tf32})
        for (int blocks_per_sm : {1, 2})
          for (int vec : {4, 1}) keep({Strategy::mma, kMmaThreads, vec, blocks_per_sm, 1, RowCache::none, p, 0});
      break;
    case GroupKind::conv:
      for (auto p : {Precision::fp32, Precision::tf32, Precision::fp16x3, Precision::fp16, Precision::bf16})
        for (int a = 0; a < kConvEngines; ++a)
          for (auto layout : {Layout::nchw, Layout::nhwc})
            for (bool library_epilogue : {false, true})
              keep({Strategy::library, 256, 1, 1, 1, RowCache::none, p, a, layout, library_epilogue});
      if (g.depthwise)
        for (int b : {128, 256})
          for (int it : {2, 4, 8}) keep({Strategy::tile, b, 1, it, 1});
      break;
    case GroupKind::recurrence:
      for (int b : {128, 256, 512})
        for (int units = 1; units <= 64; units *= 2)
          for (int vec : {1, 4}) keep({Strategy::block, b, vec, units, 1});
      for (int cluster : {1, 2, 4, 8, 16})
        for (int rows : {1, 2, 4, 8}) keep({Strategy::tile, 256, 1, rows, cluster});
      break;
    case GroupKind::attention:
      for (int rows : {2, 4, 8}) keep({Strategy::block, kAttentionThreads, 1, rows, 1});
      for (auto p : {Precision::tf32, Precision::tf32x3, Precision::fp16, Precision::bf16})  // 16-bit: the task's own dtype
        for (int warps : {4, 8})
          for (int tiles : {1, 2}) keep({Strategy::mma, 32 * warps, 1, tiles, 1, RowCache::none, p});  // tiles: 16-row tiles a warp
      break;
    case GroupKind::scan:
      for (int b : {64, 128, 256, 512}) keep({Strategy::thread, b, 1, 1, 1});
      for (int b : {128, 256, 512, 1024})
        for (int it : {1, 2, 4, 8}) keep({Strategy::block, b, 1, it, 1});
      break;
    case GroupKind::row:
      for (int it : {1, 4}) {
        for (int b : {64, 128, 256})
          for (int v : {1, 2, 4}) keep({Strategy::thread, b, v, it, 1});
        for (RowCache cache : {RowCache::none, RowCache::shared, RowCache::registers})
          for (int b : {64, 128, 256, 512, 1024}) keep({Strategy::tile, b, 1, it, 1, cache});
        for (int c : {2, 4, 8})
          for (int b : {128, 256, 512}) {
            keep({Strategy::tile, b, 1, it, c, RowCache::registers});
            keep({Strategy::tile, b, 1, it, c});
          }
        for (RowCache cache : {RowCache::none, RowCache::shared, RowCache::registers, RowCache::bulk}) {
          for (int b : {128, 256, 512}) keep({Strategy::warp, b, 1, it, 1, cache});
          for (int b : {128, 256, 512, 1024})
            for (int v : {1, 2, 4}) keep({Strategy::block, b, v, it, 1, cache});
        }
        // Rows split across clusters: in registers, or walked as vectors from memory.
        for (int c : {2, 4, 8})
          for (int b : {128, 256, 512}) {
            keep({Strategy::block, b, 1, it, c, RowCache::registers});
            keep({Strategy::block, b, 4, it, c});
          }
        for (int b : {256, 512, 1024})
          for (int c : {8, 32, 128, 512})
            for (int v : {1, 4}) keep({Strategy::split, b, v, it, c});
      }
      break;
  }
  return out;
}

DirectConvTile direct_conv_tile(const ConvDims& d, const KernelSchedule& ks) {
  DirectConvTile t;
  t.rows = int64_t(ks.block / 32) * ks.items;
  t.in_rows = (t.rows - 1) * d.stride[0] + (d.kernel[0] - 1) * d.dilation[0] + 1;
  t.in_cols = (t.cols - 1) * d.stride[1] + (d.kernel[1] - 1) * d.dilation[1] + 1;
  t.smem_bytes = 4 * (t.in_rows * t.in_cols + numel(d.kernel));
  return t;
}

namespace {

// A thread's tile of the block's `rows` x `batch` dot products: up to 4 x 4, dividing both; and the threads a tile
// (as many as keep the block's threads busy, up to a warp).
void tile_dot_products(RecurrenceTile& t, int64_t rows, int64_t batch, int block) {
  for (int64_t e : {4, 2}) {
    if (t.tile_rows == 1 && rows % e == 0) t.tile_rows = e;
    if (t.tile_batch == 1 && batch % e == 0) t.tile_batch = e;
  }
  t.tiles = rows / t.tile_rows * (batch / t.tile_batch);
  while (t.splits < 32 && t.tiles * t.splits * 2 <= block) t.splits *= 2;
}

RecurrenceTile recurrence_cluster_tile(const RecurrenceDims& d, const KernelSchedule& ks) {
  RecurrenceTile t;
  t.cluster = ks.chunks;
  t.units = (d.hidden + t.cluster - 1) / t.cluster;
  t.batch_rows = ks.items;
  t.batch_groups = (d.batch + t.batch_rows - 1) / t.batch_rows;
  t.blocks = d.directions * t.batch_groups * t.cluster;
  t.pairs = d.gates * t.units * t.batch_rows;
  t.chunk = d.hidden;  // the whole state in shared memory, two steps' of it
  tile_dot_products(t, d.gates * t.units, t.batch_rows, ks.block);
  t.stage_stride = (d.hidden + 31) / 32 * 32 + t.splits;
  t.weights_on_chip = true;
  // The units' weight rows (padded by one float, as above), two steps' state of the slice, gates, cell state,
  // two steps' input shares, the units' recurrent biases.
  t.smem_floats = d.gates * t.units * (d.hidden + 1) + 2 * t.batch_rows * t.stage_stride + t.pairs + t.units * t.batch_rows + 2 * t.pairs +
                  d.gates * t.units;
  return t;
}

}  // namespace

RecurrenceTile recurrence_tile(const KernelGroup& g, const KernelSchedule& ks) {
  KF_ASSERT(g.recurrence, "group " + g.key + " is not a recurrence");
  const RecurrenceDims& d = *g.recurrence;
  if (ks.strategy == Strategy::tile) return recurrence_cluster_tile(d, ks);
  RecurrenceTile t;
  t.units = ks.items;
  t.blocks = d.directions * ((d.hidden + t.units - 1) / t.units);
  t.pairs = d.gates * t.units * d.batch;
  // The hidden state staged at most 64 KB at a time, in whole 32-column pieces.
  constexpr int64_t kStagedFloats = 16384;
  t.chunk = std::min(d.hidden, std::max<int64_t>(32, kStagedFloats / d.batch / 32 * 32));
  if (ks.vec == 4) {
    t.weights_in_registers = true;
    t.stage_stride = (t.chunk + 3) / 4 * 4;  // rows of whole float4s (a warp reads one row, its lanes side by side)
    const int64_t rows = d.gates * t.units;
    t.row_threads = std::max<int64_t>(1, ks.block / rows);
    t.held = (d.hidden / 4 + t.row_threads - 1) / t.row_threads;
    // Staged h, each thread's partial sums ([row_threads][pairs + 1]: padded so that neither their writes nor
    // their sums meet in one bank), gates, state, two steps' input shares.
    t.smem_floats = d.batch * t.stage_stride + t.row_threads * (t.pairs + 1) + t.pairs + t.units * d.batch + 2 * t.pairs + d.gates * t.units;
    return t;
  }
  tile_dot_products(t, d.gates * t.units, d.batch, ks.block);
  t.stage_stride = (t.chunk + 31) / 32 * 32 + t.splits;
  // The weight rows padded by one float: threads reading neighbouring rows at one column hit different banks.
  // Staged h, gates, state, two steps' input shares of the gates (the next one's in flight), the units' biases.
  const int64_t fixed = d.batch * t.stage_stride + t.pairs + t.units * d.batch + 2 * t.pairs + d.gates * t.units;
  const int64_t weights = d.gates * t.units * (d.hidden + 1);
  t.weights_on_chip = 4 * (fixed + weights) <= kMaxRowCache;
  t.smem_floats = fixed + (t.weights_on_chip ? weights : 0);
  return t;
}

AttentionTile attention_tile(const KernelGroup& g, const KernelSchedule& ks) {
  KF_ASSERT(g.attention, "group " + g.key + " is not an attention");
  const AttentionDims& d = *g.attention;
  AttentionTile t;
  if (ks.strategy == Strategy::mma && is_half(ks.precision)) {
    t.half = true;
    t.rows = 16 * int64_t(ks.items) * (ks.block / 32);
    t.head = (d.head + 15) / 16 * 16;
    t.value_head = (d.value_head + 7) / 8 * 8;
    t.q_stride = t.head + 8;         // 32-bit words 4 g + t apart: a fragment's lanes in 32 banks
    t.v_stride = t.value_head + 8;   // ldmatrix's eight 16-byte rows in distinct bank groups
  } else if (ks.strategy == Strategy::mma) {
    t.rows = 16 * int64_t(ks.block / 32);
    t.head = (d.head + 7) / 8 * 8;
    t.value_head = (d.value_head + 7) / 8 * 8;
    t.v_stride = t.value_head + 8;  // 8 t + g: a fragment's lanes in 32 banks
    t.q_stride = t.head + 4;  // 4 g + t
    t.p_stride = t.keys + 4;
    if (ks.precision == Precision::tf32x3) {
      // Both parts staged (split once a tile, not by each warp reading them) where that keeps the SM's blocks:
      // doubling the tiles' shared memory took a 64-dim head's 8-warp blocks from two an SM to one, and its
      // kernel ran slower than splitting as read. Blocks an SM: by shared memory, and by registers at ~128 a thread.
      AttentionTile parts = t;
      parts.parts = 2;
      if (parts.smem_bytes() > kMaxRowCache) parts.keys = 32, parts.p_stride = parts.keys + 4;
      const int64_t by_registers = std::max<int64_t>(1, kRegistersAnSm / (int64_t(ks.block) * 128));
      auto blocks_an_sm = [&](const AttentionTile& x) { return std::min(by_registers, kMaxRowCache / x.smem_bytes()); };
      if (blocks_an_sm(t) > blocks_an_sm(parts)) t.split_as_read = true;
      else t = parts;
    }
    if (t.smem_bytes() > kMaxRowCache) t.keys = 32, t.p_stride = t.keys + 4;
  } else {
    t.rows = 16 * int64_t(ks.items);
    t.head = (d.head + 3) / 4 * 4;
    t.value_head = (d.value_head + 63) / 64 * 64;
    t.value_quads = t.value_head / 64;
    t.q_stride = t.head + 4;
    t.v_stride = t.value_head;
    t.p_stride = t.keys + 16;  // neighbouring rows 16 banks apart
  }
  t.tiles = (d.rows + t.rows - 1) / t.rows;
  t.blocks = d.heads * t.tiles;
  return t;
}

KernelSchedule attention_on_cuda_cores(const KernelGroup& g) {
  // Eight query rows a thread (128 a block) where the GPU still gets a wave of blocks, else fewer: the more rows a
  // thread holds, the more arithmetic each shared-memory read feeds.
  KernelSchedule ks{.strategy = Strategy::block, .block = kAttentionThreads, .items = 8};
  while (ks.items > 2 && (!is_legal(g, ks) || attention_tile(g, ks).blocks < g.target.sms)) ks.items /= 2;
  return ks;
}

std::optional<KernelSchedule> batch_split_recurrence(const KernelGroup& g) {
  // Ranked by a wave's worth of blocks first (the most that fit the SMs, else the fewest waves), then the thinnest
  // slice, then the smallest cluster: the space's batch-split schedules, legal ones only.
  auto rank = [&](const KernelSchedule& ks) {
    const int64_t blocks = recurrence_tile(g, ks).blocks;
    return std::tuple(blocks <= g.target.sms ? blocks : -blocks, -ks.items, -ks.chunks);
  };
  std::optional<KernelSchedule> best;
  for (const KernelSchedule& ks : schedule_space(g))
    if (ks.strategy == Strategy::tile && (!best || rank(ks) > rank(*best))) best = ks;
  return best;
}

std::pair<double, double> launch_size(const KernelGroup& g, const KernelSchedule& ks) {
  if (g.kind == GroupKind::attention) {
    const double blocks = double(attention_tile(g, ks).blocks);
    return {blocks * ks.block, blocks};
  }
  if (g.kind == GroupKind::recurrence) {
    const double blocks = double(recurrence_tile(g, ks).blocks);
    return {blocks * ks.block, blocks};
  }
  if (g.kind == GroupKind::conv && ks.strategy == Strategy::tile && g.depthwise) {
    const ConvDims& d = *g.depthwise;
    DirectConvTile t = direct_conv_tile(d, ks);
    double blocks = double(d.n * d.c) * std::ceil(double(d.out[0]) / double(t.rows)) * std::ceil(double(d.out[1]) / double(t.cols));
    return {blocks * ks.block, blocks};
  }
  double rows = double(rows_of(g)), n = double(numel(g.shape));
  switch (ks.strategy) {
    case Strategy::flat: {
      double threads = std::ceil(n / (ks.vec * ks.items));
      return {threads, std::ceil(threads / ks.block)};
    }
    case Strategy::thread: return {rows / ks.vec, std::ceil(rows / ks.vec / ks.block)};
    case Strategy::warp: return {rows * 32, std::ceil(rows * 32 / ks.block)};
    case Strategy::block: return {rows * ks.block * ks.chunks, rows * ks.chunks};
    case Strategy::split: return {rows * ks.chunks * ks.block, rows * ks.chunks};
    case Strategy::tile: return {std::ceil(rows / 32) * ks.block * ks.chunks, std::ceil(rows / 32) * ks.chunks};
    // cuBLASLt picks its own geometry; typical: a 128x128 output tile per block of 256 threads, which is
    // exactly kforge's mma kernel's (emit_matmul_mma.cpp).
    case Strategy::library:
    case Strategy::mma: return {std::ceil(n / 16384) * 256, std::ceil(n / 16384)};
  }
  return {0, 0};
}

}  // namespace kforge
