#include "search/optimize.h"

#include <array>
#include <chrono>
#include <filesystem>
#include <map>
#include <cstdio>
#include <set>
#include <thread>

#include "codegen/lower.h"
#include "codegen/recurrence_unrolling.h"
#include "ir/error.h"
#include "ir/hash.h"
#include "ir/matmul.h"
#include "runtime/driver.h"
#include "runtime/target.h"
#include "search/cost_model.h"
#include "search/crossover.h"
#include "search/features.h"
#include "search/learned_policy.h"
#include "search/measure.h"
#include "search/proposer.h"

namespace kforge {

namespace {
void progress(int done, int total, double best_speedup, double elapsed_s) {
  int width = 30, filled = total ? done * width / total : width;
  double eta = done ? elapsed_s / done * (total - done) : 0;
  std::fprintf(stderr, "\r[%.*s%*s] %d/%d candidates  best x%.2f vs best baseline  %.0fs left ", filled,
               "##############################", width - filled, "", done, total, best_speedup, eta);
  std::fflush(stderr);
}
}  // namespace

std::string to_string(Policy p) {
  switch (p) {
    case Policy::local: return "local";
    case Policy::random: return "random";
    case Policy::costmodel: return "costmodel";
    case Policy::trained: return "trained";
    case Policy::untrained: return "untrained";
  }
  return "?";
}

Policy policy_from_string(const std::string& s) {
  if (s == "local") return Policy::local;
  if (s == "random") return Policy::random;
  if (s == "costmodel") return Policy::costmodel;
  if (s == "trained") return Policy::trained;
  if (s == "untrained") return Policy::untrained;
  throw UserError("unknown policy '" + s + "' (local, random, costmodel, trained or untrained)");
}

namespace {
// Many distinct proposals around the default, in the model's search order (best-scored first, half explored).
std::vector<Schedule> ranked_by_model(const GraphAnalysis& analysis, ScheduleProposer& proposer, const CostModel& model,
                                      int count, double copy_gbs, uint64_t seed) {
  std::vector<Schedule> pool;
  for (int k = 0; k < count; ++k)
    if (auto s = proposer.next(Schedule{})) pool.push_back(*s);
  TaskFeatures t = task_features(analysis.graph(), {copy_gbs, Target::here().sms});
  std::vector<std::vector<double>> rows;
  for (auto& s : pool) rows.push_back(feature_vector(t, plan_features(analysis, s)));
  std::vector<Schedule> out;
  for (size_t i : search_order(model.predict(rows), seed)) out.push_back(pool[i]);
  return out;
}
}  // namespace

std::vector<Schedule> opening_candidates(const GraphAnalysis& analysis, Policy& policy, const OptimizeOptions& opts,
                                         ScheduleProposer& proposer, double copy_gbs) {
  GpuInfo gpu{copy_gbs, Target::here().sms};
  if (policy == Policy::trained) {
    // The default policy: where no usable checkpoint is (none trained yet, one of another action space, a
    // build without libtorch), the search goes on with the local policy and says why.
    std::string path = std::filesystem::is_directory(opts.checkpoint) ? newest_checkpoint(opts.checkpoint) : opts.checkpoint;
    std::string why;
    if (path.empty() || !std::filesystem::exists(path)) {
      why = "no policy checkpoint at '" + opts.checkpoint + "' (train one with kforge train)";
    } else {
      try {
        return LearnedPolicy::load(path)->propose(analysis, gpu, 4 * opts.budget);
      } catch (const UserError& e) {
        why = e.what();
      }
    }
    std::fprintf(stderr, "kforge: %s: searching with the local policy instead\n", why.c_str());
    policy = Policy::local;
  }
  if (policy == Policy::untrained) return LearnedPolicy(PolicyOptions{.seed = opts.seed}).propose(analysis, gpu, 4 * opts.budget);
  std::vector<Schedule> queue;
  if (opts.openings) queue = hand_written_openings(analysis);
  if (policy == Policy::costmodel) {
    auto model = load_boosted_cost_model(opts.cost_model);
    for (auto& s : ranked_by_model(analysis, proposer, *model, 16 * opts.budget, copy_gbs, opts.seed)) queue.push_back(s);
  }
  return queue;
}

namespace {
// Seventh, where a row group walks its rows more than once (a norm's statistics, then its output): the ways of
// not reading a row from HBM twice, the i-th way on every such group at once (where legal; the default
// elsewhere). Rows contiguous in memory (a block per row): first the bulk-copied rows in 512- and 1024-thread
// blocks (the copy engine fetches a block's next row while it works on this one), then a shared-memory cache
// filled by the threads in 512-thread blocks (two rows in flight per SM, one loading while the other reduces)
// or in 1024-thread blocks, and no cache in 1024-thread blocks (few rows in flight, so the second walk finds
// the row in L2). Walks are unrolled so that a warp has several loads in flight (26_layer_norm's cached
// 512-thread blocks without unroll, 1.98 ms, lost to reading x twice, 1.73; unrolled, 1.74). Rows in registers,
// 24 or 48 a thread: no longer spilling since kf_tid (12.6 ms while they spilled, 2.08 and 3.13 ms on 26 since).
// Last, rows of whole 16-byte vectors walked a vector a step, uncached (the second walk finds the row in L2, as
// torch.compile's layer norm does: 26's best, 1.41 ms) or bulk-copied. Rows across the innermost dim (a tile of
// 32 side by side): a 1024- or 512-thread tile without cache, whose 32 rows stay in L2 for the second walk where
// the default's shared-memory cache of 32 long rows leaves one block per SM (tiles with their rows in registers,
// one block an SM, ran 1.89 ms against 1.21 for 256-thread tiles uncached on 25_log_softmax_channel_dim: the
// search may still reach them).
// Contiguous rows walked once: bulk-copied rows in 128- and 256-thread blocks. The local search rarely reaches
// these by single steps from the default.
std::vector<Schedule> row_openings(const std::vector<KernelGroup>& fused) {
  const std::vector<KernelSchedule> rows = {
      {.strategy = Strategy::block, .block = 256, .chunks = 4, .cache_row = RowCache::registers},
      {.strategy = Strategy::block, .block = 512, .chunks = 2, .cache_row = RowCache::registers},
      {.strategy = Strategy::block, .block = 256, .vec = 4, .chunks = 4},
      {.strategy = Strategy::block, .block = 512, .cache_row = RowCache::bulk},
      {.strategy = Strategy::block, .block = 1024, .cache_row = RowCache::bulk},
      {.strategy = Strategy::block, .block = 512, .items = 8, .cache_row = RowCache::shared},
      {.strategy = Strategy::block, .block = 1024, .cache_row = RowCache::registers},
      {.strategy = Strategy::block, .block = 512, .cache_row = RowCache::registers},
      {.strategy = Strategy::block, .block = 1024, .items = 4, .cache_row = RowCache::shared},
      {.strategy = Strategy::block, .block = 1024, .items = 8},
      {.strategy = Strategy::block, .block = 512, .vec = 4, .items = 4},
      {.strategy = Strategy::block, .block = 512, .vec = 4, .cache_row = RowCache::bulk},
      {.strategy = Strategy::block, .block = 1024, .vec = 4, .items = 2}};
  // Tiles split across clusters, in registers: tools/microbench/row_cluster.cu on the H200, log-softmax over the
  // 1021 channels of [64, 1021, 6144]: 2 blocks of 512 0.924 ms, 4 of 256 1.002, against 1.405 for uncached
  // 256-thread tiles.
  const std::vector<KernelSchedule> tiles = {{.strategy = Strategy::tile, .block = 512, .chunks = 2, .cache_row = RowCache::registers},
                                             {.strategy = Strategy::tile, .block = 256, .chunks = 4, .cache_row = RowCache::registers},
                                             {.strategy = Strategy::tile, .block = 1024, .items = 4},
                                             {.strategy = Strategy::tile, .block = 512, .items = 4}};
  // Contiguous rows walked once (a sum or mean over the last dim): bulk copies for the prefetch alone.
  const std::vector<KernelSchedule> streams = {{.strategy = Strategy::block, .block = 128, .cache_row = RowCache::bulk},
                                               {.strategy = Strategy::block, .block = 256, .cache_row = RowCache::bulk}};
  std::vector<Schedule> out;
  for (size_t i = 0; i < rows.size(); ++i) {
    Schedule s;
    for (const KernelGroup& g : fused) {
      if (g.kind != GroupKind::row) continue;
      const auto& ways = keeps_innermost(g) ? tiles : row_walks(g) >= 2 ? rows : streams;
      if ((row_walks(g) >= 2 || &ways == &streams) && i < ways.size() && is_legal(g, ways[i])) s.kernels[g.key] = ways[i];
    }
    if (!s.kernels.empty()) out.push_back(s);
  }
  // Eighth, where a row group keeps the innermost dim and walks its rows once (a reduction over a leading or
  // middle dim): a thread of two neighbouring columns in 64-thread blocks, the best plan measured on 17, 23 and
  // 31 (23_argmin 0.900 ms), then of four in 128-thread blocks, unrolled, 19_amax's best (emit_thread_vec; the
  // other width where a width is illegal).
  for (auto [vec, block, items] : {std::array{2, 64, 1}, std::array{4, 128, 4}}) {
    Schedule columns;
    for (const KernelGroup& g : fused)
      for (int v : {vec, 6 - vec}) {
        KernelSchedule ks{.strategy = Strategy::thread, .block = block, .vec = v, .items = items};
        if (g.kind == GroupKind::row && !columns.kernels.count(g.key) && is_legal(g, ks)) columns.kernels[g.key] = ks;
      }
    if (!columns.kernels.empty()) out.push_back(columns);
  }
  // Ninth, where a row group's default splits its rows into chunks (a whole-tensor norm or loss): the same split
  // with its walk unrolled four times, four loads in flight a thread (33_frobenius_normalize's 512 chunks of 1024
  // threads were measured only with the plain walk, 0.998x).
  Schedule unrolled_split;
  for (const KernelGroup& g : fused) {
    if (g.kind != GroupKind::row) continue;
    KernelSchedule ks = default_schedule(g);
    ks.items = 4;
    if (ks.strategy == Strategy::split && is_legal(g, ks)) unrolled_split.kernels[g.key] = ks;
  }
  if (!unrolled_split.kernels.empty()) out.push_back(unrolled_split);
  return out;
}

// The reduction length of a product group's matmul (its anchor).
int64_t matmul_k(const Graph& prim, const KernelGroup& g) {
  const Node& mm = prim.at(g.anchor);
  return matmul_dims(prim.at(mm.args[0]).type.shape, prim.at(mm.args[1]).type.shape, "node '" + mm.name + "': ").k;
}

// The pieces an fp16x3 product's reduction opens with: its tripled K cut into runs of at most 4096 addends, a
// power of two up to 8; 1 where K is short. Measured: one accumulator over the copies of K = 3077, 6144 and
// 32768 put a few elements outside the widened strict tolerance (the tensor cores' truncating sums), over K = 4096
// at unit scale none; tests/ir/test_tf32.cpp (Fp16x3) models the gain. `prim` is the primitive graph the groups
// index (codegen/lower.h). With kFinePieceRun and kMostFinePieces it gives the finer opening of every product
// the coarse cut splits: runs of at most 640 addends, up to 64 pieces. Over K = 32768 at 4x scale, 8 pieces of
// 12288 addends put 959 elements outside 1e-2 of the float64 result where PyTorch's own float32 put 23 (kforge's
// tf32x3 kernel, none); 64 pieces, none. bench/fp16x3_error.py (2048 x K x 2048) found the worst error growing
// about linearly with the run, and runs of 384-577 addends put fp16x3 at 0.2-0.6x of float32's error at
// K = 3077-8192 where runs of 2308 put it at 2-3x (07_irregular's misses, with 4 pieces). Each piece re-reads and
// rewrites the output (beta = 1): both cuts are measured.
constexpr int64_t kPieceRun = 4096, kFinePieceRun = 640;
constexpr int kMostPieces = 8, kMostFinePieces = 64;
int opening_pieces(const Graph& prim, const KernelGroup& g, int64_t run, int most) {
  const int64_t k = matmul_k(prim, g);
  int pieces = 1;
  while (pieces < most && 3 * k > run * pieces) pieces *= 2;
  return pieces;
}
// kforge's direct kernel for each 2-D depthwise convolution group (by key, in either partition: a conv group's
// key is its convolution's): 256 threads of 8 rows each where legal, else the first legal tile.
std::map<std::string, KernelSchedule> direct_depthwise(const GraphAnalysis& analysis) {
  std::map<std::string, KernelSchedule> direct;
  for (bool fuse : {true, false})
    for (const KernelGroup& g : analysis.groups(fuse)) {
      if (!g.depthwise) continue;
      for (const KernelSchedule& ks : schedule_space(g))
        if (ks.strategy == Strategy::tile && (!direct.count(g.key) || (ks.block == 256 && ks.items == 8))) direct[g.key] = ks;
    }
  return direct;
}
}  // namespace

size_t openings_to_measure(size_t left, int budget, int measured, bool crossovers_to_come) {
  const int room = budget - measured - (crossovers_to_come && budget >= 2 * kCrossoverRoom ? kCrossoverRoom : 0);
  return room > 0 ? std::min(left, size_t(room)) : 0;
}

std::vector<Schedule> hand_written_openings(const GraphAnalysis& analysis) {
  // The hand-written default first; the unfused default second: a fused row kernel with few long rows
  // (BatchNorm over 64 channels) leaves most of the GPU idle, where split reductions plus a pointwise kernel fill it.
  std::vector<Schedule> queue = {Schedule{}};
  Schedule unfused;
  unfused.fuse_rows = false;
  const Graph& prim = analysis.primitive();
  const std::vector<KernelGroup>& fused = analysis.groups(true);
  if (analysis.groups(false).size() != fused.size()) queue.push_back(unfused);
  // Third, where the graph has library steps: each library's first heuristic choice in TF32, the relaxed tier's
  // natural opening (PyTorch's convolutions run TF32 by default). The search still prefers any strict plan; the
  // report gives the fastest relaxed plan beside it.
  // Fourth: split precision on fp16 tensor cores (fp16x3: hi/lo copies, three products per pair, ~fp32's
  // accuracy) through cuBLASLt for products and cuDNN in channels last for convolutions, the way to strict-tier
  // tensor-core speed (both libraries' fp32 is plain SIMT arithmetic); then, where a product's K is long, the
  // same with its reduction in pieces (opening_pieces); then, where the graph has matrix products, kforge's own
  // split-precision kernel (tf32x3 on mma.sync); an attention, on tensor cores by default, takes the CUDA cores'
  // kernel in the third;
  // after the convolutions' openings, the products on one rounded fp16 copy (the check decides its tier, as for
  // every plan: relaxed, or strict where a sum after the product averages the roundings out).
  // Fifth, where the graph has convolutions: the TF32 opening in channels-last (cuDNN's tensor-core kernels are
  // NHWC kernels; on NCHW tensors it may pick none), paying the generated transposes.
  // Then, for convolutions, the same in fp16 (16-bit copies made by those transposes, fp32 sums): tensor cores
  // at twice TF32's rate, where PyTorch's own convolutions run TF32; relaxed where every input set passes 1e-2,
  // strict where every set passes that tier (as measured with a sum, mean or logsumexp after the convolution).
  // That is the order of a graph of products; a graph with convolutions takes its calls' openings in another
  // (below). The fp16x3 opening is followed by the same with cuDNN's graph undoing the parts' scales and applying
  // the folded bias and activation (library_epilogue; conv_epilogue.h), the transpose back then only transposing:
  // the same passes, but cuDNN's runtime-fusion engine for that graph ran 1.2x faster than the engine it picks for the bare
  // convolution (1.65-1.91 ms against 2.06-2.33 ms on four conv chains). In fp16 the bare convolution's
  // engine won there (0.77 against 0.84 ms): that form stays in the space, not among the openings.
  // 2-D depthwise convolutions take kforge's direct kernel (fp32, strict) in every opening: memory-bound work where
  // cuDNN's fp32 engines reached a twelfth of the floor and ran 1.42x slower than the direct kernel; TF32 and fp16
  // gain nothing there (no reuse for tensor cores), and a network whose depthwise layers follow the other
  // convolutions into cuDNN in every opening never sees the direct kernel. The openings vary the other groups; the
  // depthwise ones on cuDNN come last (`on_library`).
  Schedule tf32, split_fp16, split_pieces, finer_pieces, split, tf32_nhwc, fp16_nhwc, fp16_products;
  Schedule split_fp16_fused;  // the convolutions' epilogues in cuDNN's graph
  Schedule wide_attention;    // a half-precision task's attention with two row tiles a warp
  for (auto& g : fused) {
    if (g.kind == GroupKind::attention) {
      // The default runs it on tensor cores (tf32x3, or a half-precision task's dtype); the TF32 opening tries the
      // CUDA cores' fp32 kernel instead (plain TF32 attention misses 1e-2 on inputs at 4x scale: the softmax
      // turns the scores' rounding into large relative errors).
      const KernelSchedule cuda_cores = attention_on_cuda_cores(g);
      if (is_legal(g, cuda_cores) && default_schedule(g) != cuda_cores) tf32.kernels[g.key] = tf32_nhwc.kernels[g.key] = cuda_cores;
      // A half-precision task's, second: 4 warps of two 16-row tiles each (FlashAttention-2's block), every K and V
      // fragment a warp loads serving both tiles, against the default's 8 warps of one.
      const KernelSchedule two_tiles{.strategy = Strategy::mma, .block = 128, .items = 2, .precision = default_schedule(g).precision};
      if (g.half_operands && is_legal(g, two_tiles)) wide_attention.kernels[g.key] = two_tiles;
      continue;
    }
    if (g.kind != GroupKind::matmul && g.kind != GroupKind::conv) continue;
    if (g.half_operands) continue;  // a product of half-precision tensors has one form (ir/matmul.h)
    tf32.kernels[g.key] = tf32_nhwc.kernels[g.key] = {.strategy = Strategy::library, .precision = Precision::tf32};
    split_fp16.kernels[g.key] = {.strategy = Strategy::library, .precision = Precision::fp16x3};
    if (g.kind == GroupKind::matmul) {
      split.kernels[g.key] = {.strategy = Strategy::mma, .block = kMmaThreads, .vec = 4, .precision = Precision::tf32x3};
      fp16_products.kernels[g.key] = {.strategy = Strategy::library, .precision = Precision::fp16};
    } else {
      tf32_nhwc.kernels[g.key].layout = split_fp16.kernels[g.key].layout = Layout::nhwc;
      fp16_nhwc.kernels[g.key] = {.strategy = Strategy::library, .precision = Precision::fp16, .layout = Layout::nhwc};
    }
    split_fp16_fused.kernels[g.key] = split_fp16.kernels[g.key];
    split_fp16_fused.kernels[g.key].library_epilogue = g.kind == GroupKind::conv;
    split_pieces.kernels[g.key] = finer_pieces.kernels[g.key] = split_fp16.kernels[g.key];
    if (g.kind == GroupKind::matmul) {
      split_pieces.kernels[g.key].chunks = opening_pieces(prim, g, kPieceRun, kMostPieces);
      // Only where the coarse cut splits the reduction at all.
      if (3 * matmul_k(prim, g) > kPieceRun) finer_pieces.kernels[g.key].chunks = opening_pieces(prim, g, kFinePieceRun, kMostFinePieces);
    }
  }
  if (!wide_attention.kernels.empty()) queue.insert(queue.begin() + 1, wide_attention);
  // A recurrence's batch-split kernel (clusters a slice of the batch, the state through distributed shared
  // memory), second: where the weights fit a cluster, its steps wait on no other SM (the default's wait on every
  // block through L2, which cuDNN's persistent kernels beat 2-3x on small layers).
  Schedule batch_split;
  for (auto& g : fused)
    if (g.kind == GroupKind::recurrence)
      if (auto ks = batch_split_recurrence(g)) batch_split.kernels[g.key] = *ks;
  if (!batch_split.kernels.empty()) queue.insert(queue.begin() + 1, batch_split);
  // Every recurrence unrolled into its steps, next, where a layer's weights fit no portable cluster: a product of
  // the state with the recurrent weights a step (cuBLASLt) and one kernel of the cell's arithmetic, cuDNN's own form
  // for such layers (a GRU of 512 units: a product and a cell kernel, 7.4 µs a step, where the unit-split kernel
  // took 53 staging the state from L2 every step). Elsewhere the form is left out (unrolled_form_worth_measuring).
  if (unrolled_form_worth_measuring(fused)) {
    Schedule steps;
    steps.unroll_recurrences = true;
    queue.insert(queue.begin() + (batch_split.kernels.empty() ? 1 : 2), steps);
  }
  // The channels-last form (codegen/channels_last.h), where two or more convolutions change (what the form saves
  // is the transposes between them; a single convolution's chain has as many either way, and its statistics
  // become column reductions): the convolutions' strict opening (fp16x3 with cuDNN's epilogue), fp16 and TF32,
  // after the default form's (below). The form keeps the other groups' keys, so the products' schedules carry
  // over. The local search flips the form on any graph that has it.
  Schedule split_fp16_last, tf32_last, fp16_last, half_last;
  int convolutions_last = 0, of_f32_tensors = 0;
  for (const KernelGroup& g : analysis.groups(true, true))
    if (g.kind == GroupKind::conv && g.channels_last) ++convolutions_last, of_f32_tensors += !g.half_operands;
  if (convolutions_last >= 2) {
    for (Schedule* form : {&split_fp16_last, &tf32_last, &fp16_last}) form->channels_last = true;
    // And its fp16 form (codegen/half_activations.h): the convolutions read and write the fp16 values their
    // neighbours store, no copies around them; the other groups as in the fp16 opening. (A half-precision task's
    // own convolutions are so already.)
    half_last.channels_last = half_last.half_activations = of_f32_tensors > 0;
    for (const KernelGroup& g : analysis.groups(true, true, false, true)) {
      auto rest = fp16_nhwc.kernels.find(g.key);
      const KernelSchedule fp16_call{.strategy = Strategy::library, .precision = Precision::fp16, .layout = Layout::nhwc};
      if (g.kind == GroupKind::conv && is_legal(g, fp16_call)) half_last.kernels[g.key] = fp16_call;
      else if (g.kind != GroupKind::conv && rest != fp16_nhwc.kernels.end() && is_legal(g, rest->second)) half_last.kernels[g.key] = rest->second;
    }
    split_fp16_last.kernels = split_fp16_fused.kernels;
    tf32_last.kernels = tf32_nhwc.kernels;
    fp16_last.kernels = fp16_nhwc.kernels;
    for (const KernelGroup& g : analysis.groups(true, true))
      if (g.kind == GroupKind::conv && g.channels_last) {
        // A half-precision task's own convolutions keep their fixed precision (the default schedule).
        const std::pair<Schedule*, KernelSchedule> calls[] = {
            {&split_fp16_last, {.strategy = Strategy::library, .precision = Precision::fp16x3, .layout = Layout::nhwc, .library_epilogue = true}},
            {&tf32_last, {.strategy = Strategy::library, .precision = Precision::tf32, .layout = Layout::nhwc}},
            {&fp16_last, {.strategy = Strategy::library, .precision = Precision::fp16, .layout = Layout::nhwc}}};
        for (const auto& [form, call] : calls) {
          if (is_legal(g, call)) form->kernels[g.key] = call;
          else form->kernels.erase(g.key);
        }
      }
  }
  // A half-precision task's own convolutions have no calls' openings (their precision and layout are the dtype's):
  // where two or more change, the channels-last form opens after the default (and its unfused twin). Its
  // 16-bit values meet between convolutions without transposes (09_unet_small and 28_vgg_bn in fp16 on an H100:
  // 1.18 and 1.13 ms native, where their default form's best took 1.39 and 1.72; the local search alone found it).
  if (convolutions_last >= 2 && of_f32_tensors == 0) {
    Schedule own_last;
    own_last.channels_last = true;
    queue.insert(queue.begin() + long(std::min<size_t>(2, queue.size())), own_last);
  }
  if (tf32_nhwc != tf32) {
    // Some group is a convolution: each tier's usual winner first, so that the crossovers after the first openings
    // (crossover.h) take their calls. Over 32 convolution chains the strict tier's fastest call was fp16x3 with
    // cuDNN's epilogue on 19 (the default's fp32 on 6) and the relaxed tier's fp16 in channels last on 26, where
    // TF32 on NCHW tensors (for most, cuDNN picks no tensor-core engine there) beat TF32 in channels last on 6;
    // the crossovers then pair those calls with the unfused rest (a BatchNorm's statistics split across the GPU),
    // which they met only with the default's fp32 call while those came fifth and seventh. The channels-last form
    // last of the calls' openings: none of 23 of its plans measured on 40 networks was its problem's fastest.
    queue.push_back(split_fp16_fused);
    if (half_last.channels_last) queue.push_back(half_last);  // the fp16 opening without its copies
    queue.push_back(fp16_nhwc);
    queue.push_back(tf32_nhwc);
    queue.push_back(split_fp16);
    queue.push_back(tf32);
    for (const Schedule* last : {&split_fp16_last, &fp16_last, &tf32_last})
      if (last->channels_last) queue.push_back(*last);
  } else {
    if (!tf32.kernels.empty()) queue.push_back(tf32);
    if (!split_fp16.kernels.empty()) queue.push_back(split_fp16);
  }
  if (split_pieces != split_fp16) queue.push_back(split_pieces);  // some product's K is long
  if (finer_pieces != split_fp16) queue.push_back(finer_pieces);  // some product's K is very long
  if (!split.kernels.empty()) queue.push_back(split);
  if (!fp16_products.kernels.empty()) queue.push_back(fp16_products);
  std::map<std::string, KernelSchedule> direct = direct_depthwise(analysis);
  if (!direct.empty()) {
    for (Schedule& s : queue)
      for (const auto& [key, ks] : direct) s.kernels[key] = ks;
    queue.push_back(Schedule{});  // on_library: the depthwise convolutions in cuDNN, the rest as the default
  }
  for (Schedule s : row_openings(fused)) {
    for (const auto& [key, ks] : direct) s.kernels[key] = ks;
    queue.push_back(s);
  }
  return queue;
}

OptimizeResult optimize(const TaskSpec& spec, DeviceTask& task, MeasurementDB& db, const Compiler& compiler,
                        const OptimizeOptions& opts) {
  OptimizeResult res;
  // NVRTC's memory grows with its threads: one per hardware thread, at most 16 (as the other measuring callers).
  int threads = opts.compile_threads > 0 ? opts.compile_threads
                                         : int(std::clamp(std::thread::hardware_concurrency(), 1u, 16u));
  PlanMeter meter(spec, task, db, compiler, opts.versions, threads, opts.eval);
  res.gpu = meter.gpu();
  res.copy_gbs = meter.copy_gbs();
  const GraphAnalysis& analysis = meter.analysis();
  // The local search skips memory-starving schedules; random search stays uniform (the learning baseline).
  ScheduleProposer proposer(analysis, opts.seed, opts.policy == Policy::local);
  Policy policy = opts.policy;
  std::vector<Schedule> queue = opening_candidates(analysis, policy, opts, proposer, res.copy_gbs);
  res.policy = to_string(policy);
  if (opts.use_db_prior)
    if (auto prior = db.best(analysis.graph_hash(), res.gpu)) queue.push_back(schedule_from_json(nlohmann::json::parse(prior->schedule_json)));
  Schedule best_schedule, fastest_relaxed_schedule;
  double best_ms = 1e30;
  std::vector<MeasuredSchedule> correct;  // for the crossovers (crossover.h)
  bool crossed = false;
  // The library walk takes turns between the best plan's calls and the fastest relaxed plan's where those differ:
  // the relaxed tier's TF32 and fp16 forms have engine lists of their own, whose first entry is only the
  // heuristic's guess, and the best (strict-first) plan's walk never visits them.
  bool relaxed_turn = true;
  auto next_engine = [&]() -> std::optional<Schedule> {
    std::vector<const Schedule*> order = {&best_schedule};
    if (res.fastest_relaxed && !(fastest_relaxed_schedule == best_schedule))
      order.insert(relaxed_turn ? order.begin() : order.end(), &fastest_relaxed_schedule);
    relaxed_turn = !relaxed_turn;
    for (const Schedule* from : order)
      if (auto a = proposer.next_algorithm(*from)) return a;
    return std::nullopt;
  };
  auto t0 = std::chrono::steady_clock::now();
  // Schedules that lower to the same kernels (a fusion flag on a graph without reductions, say) are measured
  // once: the budget counts distinct plans (tinygrad drops duplicate binaries the same way), and the meter
  // hands a repeat back marked as one.
  int measured = 0, proposals = 0;
  size_t next_opening = 0;
  const bool crosses = policy == Policy::local;
  while (measured < opts.budget && proposals < 20 * opts.budget) {
    std::vector<Schedule> batch;
    if (size_t n = openings_to_measure(queue.size() - next_opening, opts.budget, measured, crosses && !crossed)) {
      // The openings do not depend on what is measured: one batch (their kernels compiled in parallel first).
      batch.assign(queue.begin() + long(next_opening), queue.begin() + long(next_opening + n));
      next_opening += n;
      for (const Schedule& s : batch) proposer.mark(s);  // the proposer need not offer them again
    } else if (policy == Policy::local && !crossed) {
      // Once, after the openings: the best strict plan's and the fastest relaxed plan's products and
      // convolutions with the fastest other rests, before the library walk spends the budget on engines.
      crossed = true;
      std::vector<Schedule> donors = {best_schedule};
      if (res.fastest_relaxed && !(fastest_relaxed_schedule == best_schedule)) donors.push_back(fastest_relaxed_schedule);
      for (Schedule& c : crossovers(analysis, res.best ? donors : std::vector<Schedule>{}, correct))
        if (batch.size() < size_t(opts.budget - measured) && proposer.mark(c)) batch.push_back(std::move(c));
      if (batch.empty()) continue;
    } else if (auto a = policy == Policy::local ? next_engine() : std::nullopt) {
      batch = {*a};  // library calls along their lists (products', then convolutions'), then edits anywhere
    } else if (auto n = proposer.next(policy == Policy::local ? best_schedule : Schedule{})) {
      batch = {*n};
    } else {
      break;  // space exhausted
    }
    proposals += int(batch.size());
    std::vector<PlanMeter::Result> results = meter.measure(batch);
    for (size_t k = 0; k < batch.size(); ++k) {
      PlanMeter::Result& m = results[k];
      if (m.repeat) continue;
      ++measured;
      const EvalResult& r = m.eval;
      ++res.candidates;
      res.compiled += r.compiled;
      res.correct += r.relaxed;
      res.strict += r.strict;
      for (auto& step : r.library)
        proposer.note_offered(step.value("group", ""),
                              {precision_from_string(step.value("precision", "fp32")), step.value("layout", ""),
                               step.value("epilogue", "") == "library"},
                              step.value("offered", 0), step.value("requested", 0), step.value("algo", 0));
      if (!r.relaxed) res.last_failure = r.log;
      // Prefer strict-tier plans: a relaxed-only plan wins only if no strict plan exists.
      bool better = r.relaxed && (!res.best || (r.strict && !res.best_eval.strict) ||
                                  (r.strict == res.best_eval.strict && r.native.median_ms < best_ms));
      if (better) {
        best_ms = r.native.median_ms;
        best_schedule = batch[k];
        res.best = m.plan;
        res.best_eval = r;
      }
      if (r.relaxed) correct.push_back({batch[k], r.native.median_ms});
      if (r.relaxed && (!res.fastest_relaxed || r.native.median_ms < res.fastest_relaxed_eval.native.median_ms)) {
        fastest_relaxed_schedule = batch[k];
        res.fastest_relaxed = m.plan;
        res.fastest_relaxed_eval = r;
      }
      if (opts.progress)
        progress(measured, opts.budget, res.best ? res.best_eval.reward.speedup_best : 0,
                 std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
    }
  }
  if (opts.progress) std::fprintf(stderr, "\n");
  if (res.best) {
    try {
      res.kernel_profile = meter.profile(*res.best);
    } catch (const std::exception& e) {  // the plan was measured whole: a breakdown that fails leaves it standing
      res.kernel_profile = {{"error", e.what()}};
    }
  }
  return res;
}

}  // namespace kforge
