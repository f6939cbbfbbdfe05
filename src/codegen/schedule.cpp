#include "codegen/schedule.h"

#include <algorithm>
#include <bit>
#include <cmath>

#include "ir/error.h"
#include "ir/types.h"

namespace kforge {

std::string to_string(Strategy s) {
  switch (s) {
    case Strategy::flat: return "flat";
    case Strategy::thread: return "thread";
    case Strategy::warp: return "warp";
    case Strategy::block: return "block";
    case Strategy::split: return "split";
    case Strategy::tile: return "tile";
    case Strategy::library: return "library";
    case Strategy::mma: return "mma";
  }
  return "?";
}

std::string to_string(Precision p) {
  switch (p) {
    case Precision::fp32: return "fp32";
    case Precision::tf32: return "tf32";
    case Precision::tf32x3: return "tf32x3";
    case Precision::fp16: return "fp16";
    case Precision::bf16: return "bf16";
    case Precision::fp16x3: return "fp16x3";
  }
  return "?";
}

Precision precision_from_string(const std::string& s) {
  for (auto p : {Precision::fp32, Precision::tf32, Precision::tf32x3, Precision::fp16, Precision::bf16, Precision::fp16x3})
    if (to_string(p) == s) return p;
  throw UserError("unknown precision '" + s + "' (fp32, tf32, tf32x3, fp16, bf16 or fp16x3)");
}


std::string to_string(Layout l) { return l == Layout::nhwc ? "nhwc" : "nchw"; }

Layout layout_from_string(const std::string& s) {
  for (auto l : {Layout::nchw, Layout::nhwc})
    if (to_string(l) == s) return l;
  throw UserError("unknown layout '" + s + "' (nchw or nhwc)");
}

const std::vector<Strategy>& all_strategies() {
  static const std::vector<Strategy> all = {Strategy::flat, Strategy::thread, Strategy::warp,
                                            Strategy::block, Strategy::split, Strategy::tile, Strategy::library,
                                            Strategy::mma};
  return all;
}

Strategy strategy_from_string(const std::string& s) {
  for (auto st : all_strategies())
    if (to_string(st) == s) return st;
  throw UserError("unknown strategy '" + s + "' (flat, thread, warp, block, split, tile, library or mma)");
}

std::string to_string(RowCache c) {
  switch (c) {
    case RowCache::none: return "none";
    case RowCache::shared: return "shared";
    case RowCache::registers: return "registers";
    case RowCache::bulk: return "bulk";
  }
  return "?";
}

// Schedules recorded before registers joined read true/false.
RowCache row_cache_from_json(const nlohmann::json& v) {
  if (v.is_boolean()) return v.get<bool>() ? RowCache::shared : RowCache::none;
  std::string s = v.is_string() ? v.get<std::string>() : v.dump();
  for (auto c : {RowCache::none, RowCache::shared, RowCache::registers, RowCache::bulk})
    if (to_string(c) == s) return c;
  throw UserError("unknown cache_row '" + s + "' (none, shared, registers or bulk)");
}

nlohmann::json to_json(const KernelSchedule& ks) {
  nlohmann::json j = {{"strategy", to_string(ks.strategy)}, {"block", ks.block}, {"vec", ks.vec},
                      {"items", ks.items}, {"chunks", ks.chunks}, {"cache_row", to_string(ks.cache_row)}};
  // Only library kernels have these: every other schedule's JSON keeps its fields. cache_row was a boolean
  // until `registers` joined; the database's older rows still read back (row_cache_from_json).
  if (ks.strategy == Strategy::library || ks.strategy == Strategy::mma)
    j.update({{"precision", to_string(ks.precision)}, {"algo", ks.algo}});
  if (ks.layout != Layout::nchw) j["layout"] = to_string(ks.layout);  // absent: nchw (older rows read back)
  if (ks.library_epilogue) j["epilogue"] = "library";                   // absent: the kernel writing the result's
  return j;
}

nlohmann::json to_json(const Schedule& s) {
  nlohmann::json k = nlohmann::json::object();
  for (auto& [key, ks] : s.kernels) k[key] = to_json(ks);
  return {{"fuse_rows", s.fuse_rows}, {"cuda_graph", s.cuda_graph}, {"kernels", k}};
}

Schedule schedule_from_json(const nlohmann::json& j) {
  Schedule s;
  s.fuse_rows = j.value("fuse_rows", true);
  s.cuda_graph = j.value("cuda_graph", true);
  const nlohmann::json kernels = j.value("kernels", nlohmann::json::object());  // kept alive for items()
  for (auto& [key, v] : kernels.items()) {
    KernelSchedule ks;
    ks.strategy = strategy_from_string(v.value("strategy", "flat"));
    ks.block = v.value("block", 256);
    ks.vec = v.value("vec", 1);
    ks.items = v.value("items", 1);
    ks.chunks = v.value("chunks", 1);
    ks.cache_row = row_cache_from_json(v.value("cache_row", nlohmann::json(false)));
    ks.precision = precision_from_string(v.value("precision", "fp32"));
    ks.algo = v.value("algo", 0);
    ks.layout = layout_from_string(v.value("layout", "nchw"));
    const std::string epilogue = v.value("epilogue", "kernel");
    if (epilogue != "kernel" && epilogue != "library") throw UserError("schedule of kernel '" + key + "': epilogue must be kernel or library");
    ks.library_epilogue = epilogue == "library";
    s.kernels[key] = ks;
  }
  return s;
}

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
constexpr int64_t kMaxSerial = 1 << 16;  // elements one thread may walk alone in a reduction or scan

[[noreturn]] void illegal(const KernelGroup& g, const std::string& field, const std::string& why) {
  throw UserError("schedule of kernel '" + g.key + "': " + field + " " + why);
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
  if (!is_library_kind(g.kind)) {
    if (ks.strategy == Strategy::library || ks.strategy == Strategy::mma)
      illegal(g, "strategy", to_string(ks.strategy) + " is for matrix products and convolutions only");
    if (ks.precision != Precision::fp32 || ks.algo != 0)
      illegal(g, "precision/algo", "are for matrix products and convolutions only");
  }
  switch (g.kind) {
    case GroupKind::matmul:
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
      if (ks.precision == Precision::bf16) illegal(g, "precision", "bf16 is for convolutions only");
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
      if (ks.vec != 1 && ks.strategy == Strategy::block) {
        // A block's walks `vec` neighbouring elements a step (emit_row.cpp, VecWalk): rows contiguous, whole vectors.
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
          if (ks.strategy != Strategy::block || !suffix)
            illegal(g, "cache_row", "bulk needs the block strategy and the reduced dims innermost (each row one contiguous run)");
          if (row_length(g) < kMinBulkRow)
            illegal(g, "cache_row", "bulk needs rows of at least " + std::to_string(kMinBulkRow) + " elements");
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

KernelSchedule default_schedule(const KernelGroup& g) {
  KernelSchedule ks;
  int64_t n = numel(g.shape);
  switch (g.kind) {
    case GroupKind::pointwise:
      // One 16-byte vector a thread, 128-thread blocks, a block per chunk (emit_pointwise.cpp): the fastest
      // of tools/microbench/elementwise_bw.cu's shapes on the H200 (device run 7.3), 1% faster than the copy
      // engine. (Runs 2.4/2.5 had preferred 1024 x 8-byte x 4, with the grid clamped then.)
      ks.block = 128;
      ks.vec = n % 4 == 0 ? 4 : n % 2 == 0 ? 2 : 1;
      ks.items = 1;
      break;
    case GroupKind::pool:
      // 128 threads of four outputs each: the fastest or within 3% of it on all six pooling problems of runs
      // 8.3/8.4 (39-44: 1D/2D/3D, max and average), where 256 x 1 ran 3-16% slower (42_avg_pool1d 0.966 ms
      // against 0.864).
      ks.block = 128;
      ks.items = 4;
      break;
    case GroupKind::matmul:
    case GroupKind::conv: ks.strategy = Strategy::library; break;  // fp32, the heuristic's first algorithm
    case GroupKind::scan: {
      // Lines along a strided axis go one thread each: neighbouring threads read neighbouring addresses. A line
      // along the contiguous axis is read coalesced only by a block walking it together; one thread per such
      // line strides by the line's length (held-out run 6.2 of docs/results/README.md, 18672 lines of 301: a thread per
      // line 0.164 ms, a 512-thread block per line 0.064 ms). Only lines of a few elements share their sectors
      // between neighbouring threads. Lines up to 1024 get a 128-thread block and enough items to cover them
      // (not yet measured: run 6.2 measured 512 x 2 on its 301-long lines).
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
      // A warp per row up to 2048 elements (run 2.5: argmax over rows of 2039, a warp of 128-thread blocks
      // 0.95 ms against 2.25 for a 256-thread block per row).
      else if (R <= 2048 && K >= 1024) ks.strategy = Strategy::warp, ks.block = R > 1024 ? 128 : 256;
      // Split: ~1056 blocks of 1024 threads, at most 512 chunks a row, no unroll (run 2.5: the best plan of
      // all four scalar losses, 45/46/47/49; mse 0.77 ms against 0.94 for 1024 chunks of 512 threads unrolled).
      else if (K < 264 && R >= 65536 && row_walks(g) == 1 && g.elem_outputs.empty() && !has_online_stat(g))
        ks.strategy = Strategy::split, ks.chunks = int(std::min<int64_t>(512, 1056 / std::max<int64_t>(K, 1) + 1)), ks.block = 1024;
      else ks.strategy = Strategy::block, ks.block = R >= 8192 ? 1024 : 256;
      if (ks.strategy == Strategy::split && ks.chunks < 2) ks.chunks = 2;
      ks.items = ks.strategy == Strategy::split ? 1 : 4;  // elsewhere unrolled row walks: four loads in flight
      const int uncached_items = ks.items;
      // Several passes over a row that fits in shared memory: read it from HBM once.
      bool passes = row_walks(g) > 1;
      // Its walks then read shared memory, not HBM: no unroll (runs 7.3/7.4, 24_softmax_last_dim, rows of 24571
      // cached by 1024-thread blocks: 1.49 ms without, 1.66 with four iterations unrolled).
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
      for (auto p : {Precision::fp32, Precision::tf32, Precision::fp16x3, Precision::fp16})
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
          for (int c : {8, 32, 128, 512}) keep({Strategy::split, b, 1, it, c});
      }
      break;
  }
  return out;
}

KernelSchedule schedule_for(const Schedule& s, const KernelGroup& g) {
  auto it = s.kernels.find(g.key);
  KernelSchedule ks = it == s.kernels.end() ? default_schedule(g) : it->second;
  check_schedule(g, ks);
  return ks;
}

DirectConvTile direct_conv_tile(const ConvDims& d, const KernelSchedule& ks) {
  DirectConvTile t;
  t.rows = int64_t(ks.block / 32) * ks.items;
  t.in_rows = (t.rows - 1) * d.stride[0] + (d.kernel[0] - 1) * d.dilation[0] + 1;
  t.in_cols = (t.cols - 1) * d.stride[1] + (d.kernel[1] - 1) * d.dilation[1] + 1;
  t.smem_bytes = 4 * (t.in_rows * t.in_cols + numel(d.kernel));
  return t;
}

std::pair<double, double> launch_size(const KernelGroup& g, const KernelSchedule& ks) {
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

bool starves_memory(const KernelGroup& g, const KernelSchedule& ks) {
  constexpr double kSMs = 132, kMinThreads = 132 * 512, kL2Bytes = 64.0 * (1 << 20);
  if (double(numel(g.shape)) * 4 <= kL2Bytes || is_library_kind(g.kind)) return false;  // the library's geometry
  auto [threads, blocks] = launch_size(g, ks);
  // A thread of `vec` columns has vec loads' bytes in flight (a flat thread's vec is in its count already).
  const double loads = ks.strategy == Strategy::thread ? threads * ks.vec : threads;
  if (blocks < kSMs || loads < kMinThreads) return true;
  if (ks.strategy == Strategy::split && row_length(g) / ks.chunks < ks.block) return true;
  if (!keeps_innermost(g)) return false;
  // A split's blocks walk a slice of one strided row (device run 8.1, 19_amax_first_dim: five split candidates
  // past the 250 ms limit, against 0.90 ms for a thread per four columns; run 7.2, 17_sum_middle_dim: 15 ms).
  if (ks.strategy == Strategy::split) return true;
  bool row_per_warp_or_block = ks.strategy == Strategy::warp || ks.strategy == Strategy::block;
  return (g.kind == GroupKind::row && row_per_warp_or_block) || (g.kind == GroupKind::scan && ks.strategy == Strategy::block);
}

}  // namespace kforge
