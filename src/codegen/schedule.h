// A schedule is plain data: every choice the generator makes that does not change what is computed.
// These are the actions that search (and later learning) take. The graph never depends on a schedule;
// the same graph lowered under any legal schedule computes the same function.
#pragma once
#include <optional>
#include <map>
#include <utility>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "codegen/partition.h"

namespace kforge {

// How a kernel maps work to threads.
//   flat:   pointwise; each thread handles `vec` consecutive elements, `items` times (grid-stride).
//   thread: one thread per row (coalesced when the innermost dim is kept, e.g. reducing dim 1 of [B, R, I]).
//   warp:   one warp per row, shuffles only (short rows).
//   block:  one block per row (long rows); with chunks > 1 a thread-block cluster of `chunks` blocks per row,
//           each walking its share (r = rank * block + thread, stepping block * chunks), the statistics combined
//           through distributed shared memory (sm_90), so that an SM holds pieces of several rows in different
//           phases where one 1024-thread block a row would serialize its loads, reductions and writes.
//   split:  rows cut into `chunks` pieces reduced by separate blocks, then combined (few, very long rows).
//   tile:   32 neighbouring rows per block, one per lane, the block's warps splitting each row; for rows
//           whose innermost dim is kept (reducing dim 1 of [B, R, I]): coalesced and parallel along R; with
//           chunks > 1 the 32 rows are split across a cluster's blocks as the block strategy's.
//   library: a matrix product handed to cuBLASLt or a convolution handed to cuDNN (matmul and conv groups
//            only); precision and algo are its choices, and for an fp16x3 product `chunks`: the pieces its
//            reduction is cut into, one cuBLASLt call each, every piece after the first adding its sum to the
//            result in fp32 (beta = 1), so that no tensor-core accumulator runs over the whole K (emit_matmul.cpp).
//   mma:     a matrix product on kforge's own tensor-core kernel (mma.sync, codegen/emit_matmul_mma.cpp), with
//            the epilogue in its store; precision tf32 or tf32x3; items = blocks per SM the registers are
//            capped for (1: ~200 registers, no spills; 2: 128, with spills); vec = floats a staging copy moves
//            (1, or 4 where the operand's rows allow 16-byte copies) (matmul groups only).
enum class Strategy { flat, thread, warp, block, split, tile, library, mma };

// Arithmetic of a matrix product (or convolution). fp32: full fp32 products (cuBLASLt's CUBLAS_COMPUTE_32F,
// cuDNN's engines without tensor-core notes): the strict tier. tf32: tensor cores on inputs rounded to 10
// mantissa bits, ~1e-3 relative error: the relaxed tier, and the strict one only where the check passes it on
// every input set (a sum after the product averages the roundings out; env/evaluator.cpp). tf32x3 (mma only): split precision, each input x = big + small with big = tf32(x) and
// small = tf32(x - big), the product big*big + big*small + small*big on tensor cores: about fp32's accuracy,
// so the strict tier is open to it (ir/tf32.h emulates the arithmetic on the CPU).
// fp16, bf16 (convolutions in channels-last layout only): the cuDNN step computes on 16-bit copies of its input
// and weight (the transposes into channels last round them; fp16: 11 significant bits, range +-65504; bf16: 8
// bits, fp32's range), sums in fp32 and writes a 16-bit result the transpose back widens: tensor cores at twice
// TF32's rate, ~5e-4 (fp16) or ~4e-3 (bf16) relative error: as TF32, judged by the check on every input set
// (an overflow to inf fails it).
// A matrix product's cuBLASLt step takes fp16 too, and fp16x3: the split precision of tf32x3 on fp16 tensor cores
// (twice TF32's rate), each operand scaled by a power of two into fp16's range and split into x = hi + lo, the
// reduction dim tripled so that one fp16 product with fp32 sums adds hi*hi + hi*lo + lo*hi
// (codegen/emit_matmul_split.cpp); fp16 alone rounds the scaled operands once (as TF32: the check decides). A convolution
// takes fp16x3 too (channels last): its transposes write the parts tripling the channels its sum runs over, and
// cuDNN sums fp16 inputs into an fp32 result (codegen/emit_conv_split.cpp).
enum class Precision { fp32, tf32, tf32x3, fp16, bf16, fp16x3 };
// Whether a kernel of this precision computes below fp32's accuracy (tf32x3 and fp16x3 do not: split precision).
inline bool below_fp32(Precision p) { return p == Precision::tf32 || p == Precision::fp16 || p == Precision::bf16; }
inline bool is_half(Precision p) { return p == Precision::fp16 || p == Precision::bf16; }
// Whether a cuBLASLt product of this precision reads 16-bit copies of its operands that kforge makes first.
inline bool reads_half_copies(Precision p) { return p == Precision::fp16 || p == Precision::fp16x3; }
// The precision of a product that reads a task's half-precision tensors directly (KernelGroup::half_operands).
inline Precision direct_precision(DType d) { return d == DType::bf16 ? Precision::bf16 : Precision::fp16; }

// Memory layout a convolution's cuDNN step computes in. nchw: on the graph's own tensors. nhwc (channels last,
// where cuDNN keeps its fastest engines): the step's input and weight are transposed to channels-last copies
// first and its result back after (codegen/emit_conv.cpp): two extra passes that the engine must win back.
enum class Layout { nchw, nhwc };
// Candidates cuBLASLt's heuristic is asked for; `algo` indexes its answer (clamped to what it returned).
constexpr int kMatmulAlgos = 8;
// Threads of the mma kernel's block: 8 warps, 2 x 4 over a 128 x 128 tile of the result.
constexpr int kMmaThreads = 256;
// Engines of cuDNN's heuristic (mode A) a conv's `algo` may pick, among those its precision allows (fp32:
// no engine whose numerical notes say tensor cores or down-converted inputs, i.e. no TF32).
constexpr int kConvEngines = 8;
// Whether groups of this kind are library calls (Strategy::library, precision and algo their only choices).
inline bool is_library_kind(GroupKind k) { return k == GroupKind::matmul || k == GroupKind::conv; }

// Where a warp/block row strategy keeps the row its first pass read, for the later passes to reuse: nowhere
// (they read HBM again), in shared memory, or (block or tile strategy, rows of at most kMaxRegisterRow elements
// per thread) in each thread's registers, the element at r = threadIdx.x + j * block (a tile's: r = warp + j *
// warps) in slot j of a fully unrolled walk, which leaves the shared memory (and so the occupancy) free; or
// (block strategy, reduced dims innermost) in shared memory filled by the copy engine: the next row's bulk
// asynchronous copy (sm_90's cp.async.bulk) runs while the block works on this one, two row buffers a block,
// as many blocks as the GPU holds (emit_row.cpp); a gain for rows walked once too, where nothing is reused but
// the prefetch.
enum class RowCache { none, shared, registers, bulk };

struct KernelSchedule {
  Strategy strategy = Strategy::flat;
  int block = 256;   // threads per block, a multiple of 32 in [32, 1024]
  int vec = 1;       // elements per 16-byte-or-narrower access (1, 2 or 4): flat, and thread rows side by side
  int items = 1;     // grid-stride iterations per thread (flat) or elements per thread (scan block)
  int chunks = 1;    // split: pieces of a row; block: blocks of a cluster sharing a row (1, 2, 4, 8);
                     // library fp16x3 product: pieces of its reduction (a power of two up to 64; fewer
                     // where k is short: pieces hold at least 512 of the copies' k)
  RowCache cache_row = RowCache::none;
  Precision precision = Precision::fp32;  // library only
  int algo = 0;                           // library only: index into the heuristic's list, 0 = its first choice
  Layout layout = Layout::nchw;           // convolutions only
  // Convolutions on cuDNN only: whether cuDNN's own graph applies the epilogue (runtime/cudnn_conv.cpp: the
  // convolution into a virtual fp32 tensor, then pointwise operations: fp16x3's scales, the folded bias and
  // activation of codegen/conv_epilogue.h) before it writes its result, so that no pass follows an NCHW call
  // and the transpose back of a channels-last one only transposes. Otherwise the step writing the result applies
  // them (the transpose back, or a pass in place after an NCHW call). Legal where cuDNN has something to apply:
  // a folded bias or activation, or fp16x3's scales.
  bool library_epilogue = false;
  bool operator==(const KernelSchedule&) const = default;
};

struct Schedule {
  bool fuse_rows = true;   // fuse reductions with the elementwise work that uses them (partition.h)
  bool cuda_graph = true;  // replay the plan as one CUDA graph where the caller's buffers are fixed
  // Lower the channels-last form of the graph (codegen/channels_last.h: channels last kept across convolutions);
  // the same plan where no convolution changes.
  bool channels_last = false;
  // With channels_last: its convolutions read and write fp16 values their neighbours store (codegen/half_activations.h),
  // the relaxed tier's chain of convolutions; ignored without channels_last.
  bool half_activations = false;
  // Lower the form with every recurrence unrolled into its steps (codegen/recurrence_unrolling.h); the same plan
  // where the graph has no recurrence.
  bool unroll_recurrences = false;
  std::map<std::string, KernelSchedule> kernels;  // by KernelGroup::key; absent = default_schedule
  bool operator==(const Schedule&) const = default;
};

std::string to_string(Strategy s);
// Every strategy, in declaration order (the policy's features enumerate them).
const std::vector<Strategy>& all_strategies();
Strategy strategy_from_string(const std::string& s);
std::string to_string(Precision p);
Precision precision_from_string(const std::string& s);
std::string to_string(Layout l);  // "nchw", "nhwc"
Layout layout_from_string(const std::string& s);
nlohmann::json to_json(const Schedule& s);
nlohmann::json to_json(const KernelSchedule& ks);
std::string to_string(RowCache c);  // "none", "shared", "registers", "bulk"
Schedule schedule_from_json(const nlohmann::json& j);

// Throws UserError naming the kernel and the field when `ks` is illegal for `group`.
void check_schedule(const KernelGroup& group, const KernelSchedule& ks);
// check_schedule as a question: whether `ks` is legal for `g` (the reason dropped).
bool is_legal(const KernelGroup& g, const KernelSchedule& ks);
// The hand-written default (tinygrad's heuristic.py): a sensible choice from sizes alone.
KernelSchedule default_schedule(const KernelGroup& group);
// Every legal schedule of a group that search considers.
std::vector<KernelSchedule> schedule_space(const KernelGroup& group);
// The schedule a group gets under `s`.
KernelSchedule schedule_for(const Schedule& s, const KernelGroup& group);

// kforge's direct depthwise convolution (strategy tile on a conv group with KernelGroup::depthwise): a block
// computes a tile of (block / 32) * items output rows by 32 output columns of one (image, channel) plane, from
// its input window in static shared memory; each thread walks `items` consecutive rows of one column.
struct DirectConvTile {
  int64_t rows = 0, cols = 32;              // output tile
  int64_t in_rows = 0, in_cols = 0;         // the input window it reads (padding included)
  int64_t smem_bytes = 0;                   // window and weights
};
DirectConvTile direct_conv_tile(const ConvDims& d, const KernelSchedule& ks);
// A recurrence's persistent kernel (emit_recurrence.cpp) under schedule `ks`: each block owns `units` (items)
// hidden units, all G gates of them, for every step, so that the units' weights (G * units rows of w_hh) stay in
// its shared memory across steps where they fit, and only the hidden state crosses blocks (published through L2
// a step). Every block must be resident at once: at most one an SM. The hidden state is staged `chunk`
// columns at a time. With vec 1 a thread computes a tile of `tile_rows` weight rows x `tile_batch` batch rows (an
// outer product a column: 8 shared-memory loads for a 4 x 4 tile's 16 FMAs, where a dot product a thread loaded
// twice an FMA) over its share of `splits` interleaved columns, the splits (neighbouring lanes) added by shuffles.
// With vec 4 the weights live in registers instead: `row_threads` threads a weight row, each holding `held` groups
// of 4 of its columns for the whole loop, read the (wholly staged) state 4 floats at a time, one load an FMA's
// fourth; their sums meet in shared memory.
// Strategy tile is the batch-split kernel (emit_recurrence_cluster.cpp): the batch rows are independent, so a
// cluster of `cluster` (chunks) blocks takes `batch_rows` (items) of them through every step alone, its blocks
// sharing the hidden units (`units` each, all their weights in shared memory) and handing each other the new
// hidden state through distributed shared memory, one cluster barrier a step: no block waits on another cluster,
// nothing crosses L2, and the grid need not be resident at once. Clusters of 1-16 blocks (16 is Hopper's
// non-portable size: PlanKernel::cluster).
struct RecurrenceTile {
  int64_t units = 1, blocks = 0, chunk = 0, splits = 1;
  // A staged row's floats: the chunk rounded up to 32, plus `splits`, so that a warp's threads (neighbouring
  // batch rows, `splits` columns apart) read 32 different banks.
  int64_t stage_stride = 0;
  int64_t pairs = 0;  // (gate row, batch row) dot products a block computes a step: G * units * N
  // vec 1: a thread's tile, its rows consecutive, its batch rows N / tile_batch apart (so that neighbouring tiles
  // read neighbouring batch rows); `tiles` a block.
  int64_t tile_rows = 1, tile_batch = 1, tiles = 0;
  // Strategy tile: the blocks of a cluster, the batch rows a cluster takes (its slice of the batch), and the
  // slices (batch groups) of a direction.
  int64_t cluster = 1, batch_rows = 0, batch_groups = 1;
  bool weights_on_chip = false;
  bool weights_in_registers = false;  // vec 4
  int64_t row_threads = 0, held = 0;   // vec 4: threads a weight row, float4s of it a thread holds
  int64_t smem_floats = 0;
  int64_t smem_bytes() const { return 4 * smem_floats; }
};
RecurrenceTile recurrence_tile(const KernelGroup& g, const KernelSchedule& ks);
// An attention's kernel (emit_attention.cpp) under schedule `ks`: a block takes `rows` query rows of one head and
// walks its keys `keys` (64) at a time (FlashAttention's loop: a tile of scores, its row maxima and sums, the
// output rescaled). Strategy block (fp32 on the CUDA cores): 256 threads, 16 x 16, `rows` = 16 * items; thread
// (ty, tx) holds the scores of rows ty + 16 i and keys tx + 16 j (items x 4) and the output's rows ty + 16 i,
// columns 64 c + 4 tx .. + 3 (items x 4 * value_quads): interleaved, so that a warp's float4 reads of the shared
// tiles fall in different banks; D padded to a multiple of 4 (4 columns a read), Dv to one of 64. Strategy mma
// (TF32 tensor cores, tf32 or the split tf32x3): a warp takes 16 rows (`rows` = 16 * warps), its scores and
// output as mma.sync.m16n8k8 tiles; D and Dv padded to multiples of 8 (a k step), the rows of each shared tile
// strided so that a fragment's 32 reads meet 32 banks; Q, K and V staged as TF32 parts, keys 32 a step where 64
// would not fit shared memory. Strategy mma in fp16 or bf16 (a half-precision task's attention): mma.sync.m16n8k16
// on the 16-bit values as stored, fp32 sums, the probabilities rounded to the dtype for the second product (as
// PyTorch's flash attention does); D padded to a multiple of 16. Padding is zeros.
struct AttentionTile {
  int64_t rows = 0, keys = 64;
  int64_t head = 0, value_head = 0;  // D and Dv, padded
  int64_t value_quads = 0;           // block: float4 columns of the output a thread holds
  int64_t tiles = 0;                 // query tiles a head
  int64_t blocks = 0;
  // Row strides of the shared tiles, in floats: Q's and K's [.][head + 4], V's, the probabilities'.
  int64_t q_stride = 0, v_stride = 0, p_stride = 0;
  // Copies of Q's, K's and V's tiles: 1, or (tf32x3) their TF32 big and small parts, split once as staged.
  int64_t parts = 1;
  // tf32x3 with the tiles in fp32, every fragment read splitting its values: where staging both parts would leave
  // an SM fewer blocks (attention_tile).
  bool split_as_read = false;
  // fp16 / bf16 (mma on a half-precision task's own tensors): every tile in 16 bits (strides in 16-bit elements),
  // K's and V's twice (the next key tile copied in while this one is used), the probabilities in registers.
  bool half = false;
  int64_t smem_bytes() const {
    if (half) return 2 * (rows * q_stride + 2 * keys * (q_stride + v_stride));
    return 4 * (parts * (rows * q_stride + keys * (q_stride + v_stride)) + rows * p_stride);
  }
};
constexpr int kAttentionThreads = 256;  // strategy block
AttentionTile attention_tile(const KernelGroup& g, const KernelSchedule& ks);
// An attention's kernel on the CUDA cores (strategy block, fp32) with as many query rows a thread as still give the
// GPU a wave of blocks: the default where no tensor-core schedule is legal, and an opening of the search.
KernelSchedule attention_on_cuda_cores(const KernelGroup& g);
// A recurrence's batch-split kernel (strategy tile) with the most blocks a wave holds, the thinnest batch slices
// and smallest clusters where that ties (on two networks' first layers, 1-2 row slices ran 4-10% ahead of 4-row
// ones at equal blocks); nullopt where no cluster holds the weights.
std::optional<KernelSchedule> batch_split_recurrence(const KernelGroup& g);
// Weights a thread of a vec-4 recurrence holds in registers (as the register row cache's share, kMaxRegisterRow).
constexpr int64_t kMaxRegisterWeights = 64;
// Static shared memory a kernel may take without opting in; taps a thread may keep in registers.
constexpr int64_t kMaxStaticSmem = 48 * 1024;
constexpr int64_t kMaxDirectConvTaps = 64;

// Shared memory a row cache takes for `buffers` cached f32 row buffers; at most kMaxRowCache (H100/H200
// allow 227 KB of dynamic shared memory per block).
constexpr int64_t kMaxRowCache = 227 * 1024;
// 32-bit registers an SM holds (sm_80 to sm_90 alike).
constexpr int64_t kRegistersAnSm = 65536;
// Row elements a thread keeps in registers, over all cached buffers (64 registers of the 255 a thread has).
constexpr int64_t kMaxRegisterRow = 64;
// A bulk-copied row's shortest length: its middle, 16-byte aligned at both ends, is then never empty (threads
// load the 0-3 floats on either side), and shorter rows are better served by warps.
constexpr int64_t kMinBulkRow = 64;
int64_t row_cache_bytes(const KernelGroup& g, const KernelSchedule& ks, int buffers);
// The floats a bulk-copied row takes in each of its two buffers: the row shifted by its start's offset from a
// 16-byte boundary (0-3 floats) so that the copied middle lands 16-byte aligned, rounded up to 4 floats.
int64_t bulk_row_floats(const KernelGroup& g);
// The static shared memory of a block-strategy row kernel (reduction scratch, bulk barriers), at most; and the
// shared memory both buffers of a bulk row cache may take beside it.
constexpr int64_t kBlockStaticSmem = 2048;
int64_t bulk_cache_limit(const KernelSchedule& ks);
// The shared memory a row cache may take beside the kernel's static shared memory.
int64_t row_cache_limit(const KernelSchedule& ks);
// Registers one cached row buffer takes per thread: ceil(row / (block * chunks)) under the block strategy (its
// cluster's blocks share a row), ceil(row / warps) under the tile's (its warps share each of 32 rows).
int64_t register_row_slots(const KernelGroup& g, const KernelSchedule& ks);
// The blocks of a cluster sharing each row: chunks under the block and tile strategies, else 1.
inline int cluster_blocks(const KernelSchedule& ks) {
  return ks.strategy == Strategy::block || ks.strategy == Strategy::tile ? ks.chunks : 1;
}
// The step of a block- or tile-strategy walk along a row: the threads (a tile's warps) of all the cluster's
// blocks that share it.
inline int64_t row_walkers(const KernelSchedule& ks) {
  return (ks.strategy == Strategy::tile ? ks.block / 32 : int64_t(ks.block)) * cluster_blocks(ks);
}

constexpr int64_t kMaxSerial = 1 << 16;  // elements one thread may walk alone in a reduction or scan

// Row geometry of a group: kept elements K and reduced elements R (R = 1 for pointwise).
int64_t rows_of(const KernelGroup& g);
// Whether a row or scan group keeps the innermost dim (reduces or scans a middle one): its rows are strided
// in memory, and neighbouring rows lie side by side.
bool keeps_innermost(const KernelGroup& g);
// Whether a row group's reduced dims are the innermost ones, in order: each row one contiguous run of memory.
bool reduces_innermost(const KernelGroup& g);
// (threads, blocks) a group's main kernel launches under `ks`, before the grid clamp.
std::pair<double, double> launch_size(const KernelGroup& g, const KernelSchedule& ks);
int64_t row_length(const KernelGroup& g);

}  // namespace kforge
