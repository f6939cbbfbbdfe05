// A recurrence (ir/recurrence.h) as one persistent kernel: the whole time loop of one layer and direction in one
// launch, where the unrolled graph takes a product and a kernel a step. This is the unit-split kernel (strategy
// block); strategy tile is the batch-split one (emit_recurrence_cluster.cpp), both chosen by measurement.
//
// Block b owns hidden units [b * units, (b + 1) * units) for every step (codegen/schedule.h, RecurrenceTile):
// it loads their G gates' rows of w_hh into shared memory once, keeps their cell state (an LSTM's c, a GRU's h)
// in shared memory, and a step it
//   1. stages the previous hidden state of every unit (all N batch rows, `chunk` columns at a time) in shared
//      memory, each value waited for where the block that owns it publishes it (below);
//   2. computes its G * units * N dot products of that state with its weight rows, a thread a tile of up to
//      4 rows x 4 batch rows over its share of the columns, a tile's `splits` threads added by shuffles (or,
//      schedule vec 4, with the weight rows held in registers for the whole loop, a row's threads reading the
//      staged state 4 floats at a time, their sums met in shared memory);
//   3. applies the cell (PyTorch's equations) to its units, writes their new hidden state (or cell state) to the
//      result and publishes the hidden state for the next step; the input's share of the gates it adds was copied
//      to shared memory asynchronously during the step before (cp.async), so that no load from memory waits on
//      the chain of steps.
// Publishing (kf_publish, kf_load_published): each value goes out with the step's tag in one 8-byte store, and a
// reader loads again until the tag is the step's (NCCL's low-latency protocol): no fence, flag or
// grid barrier between the steps, one trip through L2. Two slots alternate: a block overwrites the slot of step
// s - 1 only at step s + 1, after it read every block's step-s values, which each block wrote after it had read
// step s - 1's. Tags only go up: a launch starts from the count its block left at the end of the last launch
// (every block's the same; zero in a new buffer: temps start zeroed, runtime/executor.cpp).
// The launch is cooperative (runtime/executor.cpp): the driver refuses a grid that is not resident at once
// rather than letting readers wait forever for a block that never ran. On the CPU (tests/common/
// cpu_kernel_runner.h) a single block runs it.
#include <algorithm>

#include "codegen/emit_recurrence_parts.h"
#include "codegen/emitters.h"

namespace kforge {

namespace recurrence_parts {

Operands operands(EmitContext& cx, const KernelGroup& g) {
  const Node& node = cx.partition.graph->at(g.anchor);
  const RecurrenceDims& d = *g.recurrence;
  const int D = d.directions;
  Operands o;
  auto operand = [&](int dir, size_t i, const std::string& what) {
    const std::string own = what + "_" + std::to_string(dir);
    o.args.push_back(buffer_of(cx, node.args[kRecArgs * size_t(dir) + i]));
    o.params += std::string(o.params.empty() ? "" : ", ") + "const float* __restrict__ " + own;
    if (dir == 0) o.pick += "  const float* __restrict__ " + what + " = " + (D == 2 ? "dir ? " + what + "_1 : " : "") + own + ";\n";
  };
  for (int dir = 0; dir < D; ++dir) {
    operand(dir, kRecX, "x");
    operand(dir, kRecW, "w");
    if (d.h0) operand(dir, kRecH0, "h0");
    if (d.c0) operand(dir, kRecC0, "c0");
    if (d.bias) operand(dir, kRecBias, "bias");
  }
  o.args.push_back(buffer_of(cx, g.anchor));
  o.params += ", float* y";
  return o;
}

std::string cell(const RecurrenceDims& d, const std::string& batch, const std::string& n) {
  const std::string H = i64_literal(d.hidden);
  auto xq = [&](int q) { return "xs[" + std::to_string(q) + " * UNITS * " + batch + " + e]"; };
  auto pre = [&](int q) {
    return "kf_gates[(" + std::to_string(q) + " * UNITS + j) * " + batch + " + " + n + "]" +
           std::string(d.bias ? " + kf_bias[" + std::to_string(q) + " * UNITS + j]" : "");
  };
  const std::string sig = "kf_sigmoid";
  std::string c;
  switch (d.cell) {
    case Cell::lstm:
      c += "        const float ig = " + sig + "(" + xq(0) + " + " + pre(0) + "), fg = " + sig + "(" + xq(1) + " + " + pre(1) + ");\n";
      c += "        const float gg = tanhf(" + xq(2) + " + " + pre(2) + "), og = " + sig + "(" + xq(3) + " + " + pre(3) + ");\n";
      c += "        const float cn = fg * kf_state[e] + ig * gg;\n        kf_state[e] = cn;\n";
      c += "        const float hn = og * tanhf(cn);\n";
      break;
    case Cell::gru:
      c += "        const float r = " + sig + "(" + xq(0) + " + " + pre(0) + "), z = " + sig + "(" + xq(1) + " + " + pre(1) + ");\n";
      c += "        const float nn = tanhf(" + xq(2) + " + r * (" + pre(2) + "));\n";
      c += "        const float hn = (1.f - z) * nn + z * kf_state[e];\n        kf_state[e] = hn;\n";
      break;
    case Cell::rnn_tanh: c += "        const float hn = tanhf(" + xq(0) + " + " + pre(0) + ");\n"; break;
    case Cell::rnn_relu: c += "        const float hn = fmaxf(" + xq(0) + " + " + pre(0) + ", 0.f);\n"; break;
  }
  return c;
}

std::string bias_staging(const RecurrenceDims& d, int block) {
  if (!d.bias) return "";
  const std::string H = i64_literal(d.hidden);
  return "  for (i64 e = tid; e < " + std::to_string(d.gates) + " * UNITS; e += " + std::to_string(block) + ") {\n" +
         "    const i64 u = u0 + e % UNITS;\n" + "    kf_bias[e] = u < " + H + " ? bias[(e / UNITS) * " + H + " + u] : 0.f;\n  }\n";
}

std::string tile_constants(const RecurrenceTile& t, const std::string& batch) {
  return "  constexpr int TR = " + i64_literal(t.tile_rows) + ", TB = " + i64_literal(t.tile_batch) + ";\n" +
         "  constexpr i64 BT = " + batch + " / TB, TILES = " + i64_literal(t.tiles) + ";\n" + "  const int sp = tid % SPLITS;\n";
}

int64_t tiles_a_thread(const RecurrenceTile& t, int block) {
  const int64_t lanes = block / t.splits;
  return (t.tiles + lanes - 1) / lanes;
}

std::string tile_products(const RecurrenceTile& t, int block, const std::string& weight, const std::string& state,
                          const std::string& columns, const std::string& indent) {
  const std::string I = indent, lanes = i64_literal(block / t.splits);
  std::string s = I + "for (int i = 0; i < " + std::to_string(tiles_a_thread(t, block)) + "; ++i) {\n";
  s += I + "  const i64 q = tid / SPLITS + (i64)i * " + lanes + ";\n";
  s += I + "  if (q >= TILES) break;\n";
  s += I + "  const i64 r0 = q / BT * TR, b0 = q % BT;\n";
  s += "#pragma unroll 4\n";
  s += I + "  for (i64 k = sp; k < " + columns + "; k += SPLITS) {\n";
  s += I + "    float wv[TR], hv[TB];\n";
  s += "#pragma unroll\n";
  s += I + "    for (int a = 0; a < TR; ++a) wv[a] = " + weight + ";\n";
  s += "#pragma unroll\n";
  s += I + "    for (int b = 0; b < TB; ++b) hv[b] = " + state + "[(b0 + b * BT) * " + i64_literal(t.stage_stride) + " + k];\n";
  s += "#pragma unroll\n";
  s += I + "    for (int a = 0; a < TR; ++a)\n";
  s += "#pragma unroll\n";
  s += I + "      for (int b = 0; b < TB; ++b) acc[i][a][b] += wv[a] * hv[b];\n";
  s += I + "  }\n" + I + "}\n";
  return s;
}

std::string tile_sums(const RecurrenceTile& t, int block, const std::string& batch) {
  // A tile's splits are neighbouring lanes of one warp: every lane takes part (the loop's count is the same for
  // all), the first writes the sum.
  std::string s = "    for (int i = 0; i < " + std::to_string(tiles_a_thread(t, block)) + "; ++i) {\n";
  s += "      const i64 q = tid / SPLITS + (i64)i * " + i64_literal(block / t.splits) + ";\n";
  s += "#pragma unroll\n";
  s += "      for (int a = 0; a < TR; ++a)\n";
  s += "#pragma unroll\n";
  s += "        for (int b = 0; b < TB; ++b) {\n";
  s += "          float v = acc[i][a][b];\n";
  s += "          for (int o = SPLITS / 2; o > 0; o >>= 1) v += kf_shfl_xor(v, o);\n";
  s += "          if (sp == 0 && q < TILES) kf_gates[(q / BT * TR + a) * " + batch + " + q % BT + b * BT] = v;\n";
  s += "        }\n    }\n";
  s += "    __syncthreads();\n";
  return s;
}

}  // namespace recurrence_parts

namespace {

std::string L(int64_t v) { return i64_literal(v); }

}  // namespace

std::vector<PlanKernel> emit_recurrence(EmitContext& cx, const KernelGroup& g, const KernelSchedule& ks, const std::string& name) {
  if (ks.strategy == Strategy::tile) return emit_recurrence_cluster(cx, g, ks, name);
  const RecurrenceDims& d = *g.recurrence;
  const RecurrenceTile t = recurrence_tile(g, ks);
  const bool lstm = d.cell == Cell::lstm, keeps_state = lstm || d.cell == Cell::gru;
  const std::string H = L(d.hidden), NH = L(d.batch * d.hidden), GH = L(d.gates * d.hidden), W = L(d.hidden + 1);
  const std::string KS = L(t.stage_stride), B = std::to_string(ks.block);

  const int D = d.directions;
  const std::string DH = L(d.width()), NDH = L(d.batch * d.width()), SH = L(d.states() * d.hidden);
  // Each direction's operands (suffix _0, _1); the kernel's blocks take their direction's as x, w, h0, c0, bias.
  auto [args, params, pick] = recurrence_parts::operands(cx, g);
  // The published hidden state: [2 slots][D][N][H] of (value, tag) pairs; and each block's count of steps published.
  args.push_back(add_temp(cx, name + "_published", DType::f32, {2, D, d.batch, d.hidden, 2}));
  params += ", unsigned* hx";
  args.push_back(add_temp(cx, name + "_tags", DType::f32, {t.blocks}));
  params += ", unsigned* tags";

  std::string s = kernel_header(cx.partition, g, ks, name);
  s += "extern \"C\" __global__ void __launch_bounds__(" + std::to_string(ks.block) + ") " + name + "(" + params + ") {\n";
  s += "  constexpr i64 N = " + L(d.batch) + ", UNITS = " + L(t.units) + ", PAIRS = " + L(t.pairs) + ", SPLITS = " + L(t.splits) +
       ", CHUNK = " + L(t.chunk) + ";\n";
  const bool in_registers = t.weights_in_registers;
  // The partial sums (weights in registers): [row threads][PAIRS + 1]; tiles add theirs by shuffles.
  const std::string part_floats = in_registers ? L(t.row_threads * (t.pairs + 1)) : "0";
  s += "#ifdef __CUDA_ARCH__\n  extern __shared__ __align__(16) float kf_smem[];\n#else\n  alignas(16) static float kf_smem[" +
       L(t.smem_floats) + "];\n#endif\n";
  s += "  float* kf_h = kf_smem;                              // [N][" + KS + "] staged hidden state\n";
  s += "  float* kf_part = kf_h + N * " + KS + ";               // partial dot products (weights in registers)\n";
  s += "  float* kf_gates = kf_part + " + part_floats + ";          // [G][UNITS][N] recurrent part of the gates\n";
  s += "  float* kf_state = kf_gates + PAIRS;                  // [UNITS][N] the units' cell state (LSTM c, GRU h)\n";
  s += "  float* kf_x = kf_state + UNITS * N;                  // [2][G][UNITS * N] two steps' input share of the gates\n";
  s += "  float* kf_bias = kf_x + 2 * PAIRS;                   // [G][UNITS] the units' recurrent biases\n";
  if (t.weights_on_chip) s += "  float* kf_w = kf_bias + " + L(d.gates * t.units) + ";  // [G * UNITS][H + 1] the units' weight rows\n";
  // Blocks [0, blocks / D) run direction 0, the rest direction 1 (backward).
  const int64_t per_direction = t.blocks / D;
  s += "  const int tid = threadIdx.x;\n";
  s += "  const int dir = int(blockIdx.x / " + L(per_direction) + ");\n";
  s += "  const i64 u0 = (i64)(blockIdx.x % " + L(per_direction) + ") * UNITS;\n";
  s += pick;
  // The step's time: direction 1 (and a reversed single direction) walks backward.
  const std::string backward = D == 2 ? "dir == 1" : d.reverse ? "true" : "false";
  s += "  auto kf_time = [&](i64 step) { return " + backward + " ? " + L(d.steps - 1) + " - step : step; };\n";
  s += "  const unsigned base = tags[blockIdx.x];  // the last launch's last tag\n";
  if (in_registers) {  // thread (row, sg) holds the row's columns 4 (sg + j RT) .. + 3, RT threads a row
    const std::string RT = L(t.row_threads), HELD = std::to_string(t.held);
    s += "  const i64 own_row = tid / " + RT + ", sg = tid % " + RT + ";\n";
    s += "  const bool holds_row = own_row < " + L(d.gates * t.units) + " && u0 + own_row % UNITS < " + H + ";\n";
    s += "  float4 wr[" + HELD + "];\n";
    s += "#pragma unroll\n";
    s += "  for (int j = 0; j < " + HELD + "; ++j) {\n";
    s += "    const i64 k4 = sg + (i64)j * " + RT + ";\n";
    s += "    wr[j] = holds_row && k4 < " + L(d.hidden / 4) + " ? *reinterpret_cast<const float4*>(w + ((own_row / UNITS) * " + H +
         " + u0 + own_row % UNITS) * " + H + " + 4 * k4) : float4{0.f, 0.f, 0.f, 0.f};\n";
    s += "  }\n";
  }
  if (t.weights_on_chip) {
    s += "  for (i64 e = tid; e < " + L(d.gates * t.units * d.hidden) + "; e += " + B + ") {\n";
    s += "    const i64 r = e / " + H + ", k = e % " + H + ", u = u0 + r % UNITS;\n";
    s += "    kf_w[r * " + W + " + k] = u < " + H + " ? w[((r / UNITS) * " + H + " + u) * " + H + " + k] : 0.f;\n  }\n";
  }
  s += recurrence_parts::bias_staging(d, ks.block);
  if (keeps_state) {
    s += "  for (i64 e = tid; e < UNITS * N; e += " + B + ") {\n";
    s += "    const i64 u = u0 + e / N, n = e % N;\n";
    const bool given = lstm ? d.c0 : d.h0;
    s += "    kf_state[e] = " + (given ? "u < " + H + " ? " + std::string(lstm ? "c0" : "h0") + "[n * " + H + " + u] : 0.f" : std::string("0.f")) + ";\n  }\n";
  }
  // A thread's tiles (recurrence_parts::tile_products): weight row r0 + a, column k0 + k of the chunk.
  const std::string weight = t.weights_on_chip ? "kf_w[(r0 + a) * " + W + " + k0 + k]"
                                               : "(u0 + (r0 + a) % UNITS < " + H + " ? w[(((r0 + a) / UNITS) * " + H +
                                                     " + u0 + (r0 + a) % UNITS) * " + H + " + k0 + k] : 0.f)";
  // Each thread copies the input share of the gates it will apply a step ahead, into the step's slot, without
  // waiting: the loads from memory overlap the step before, off the chain of steps.
  auto prefetch = [&](const std::string& step, const std::string& indent) {
    const std::string at = "kf_time(" + step + ")";
    std::string c = indent + "for (i64 e = tid; e < UNITS * N; e += " + B + ") {\n";
    c += indent + "  const i64 u = u0 + e / N, n = e % N;\n";
    c += indent + "  if (u < " + H + ")\n";
    c += indent + "    for (int q = 0; q < " + std::to_string(d.gates) + "; ++q)\n";
    c += indent + "      kf_copy_async(kf_x + ((" + step + ") & 1) * PAIRS + q * UNITS * N + e, x + (" + at + " * N + n) * " + GH +
         " + q * " + H + " + u);\n";
    c += indent + "}\n" + indent + "kf_copy_async_commit();\n";
    return c;
  };
  s += prefetch("0", "  ");
  if (!in_registers) s += recurrence_parts::tile_constants(t, "N");
  s += "  for (i64 s = 0; s < " + L(d.steps) + "; ++s) {\n";
  s += "    const i64 t = kf_time(s);\n";
  s += "    if (s + 1 < " + L(d.steps) + ") {\n" + prefetch("s + 1", "      ") + "    } else {\n      kf_copy_async_commit();  // an empty group: the wait below counts one a step\n    }\n";
  if (!in_registers) {
    s += "    float acc[" + std::to_string(recurrence_parts::tiles_a_thread(t, ks.block)) + "][TR][TB] = {};\n";
  }
  s += "    for (i64 k0 = 0; k0 < " + H + "; k0 += CHUNK) {\n";
  s += "      const i64 kc = min((i64)CHUNK, " + H + " - k0);\n";
  s += "      __syncthreads();  // the last chunk's readers are done\n";
  // The previous step's state, published by every block: a thread's loads (up to 16) go out together, and all of
  // those that found an older tag are loaded again together, until none has: a trip through L2 a round, however
  // many values a thread waits for (one value after another took a trip each).
  const int64_t batch = std::min<int64_t>(16, (d.batch * t.chunk + ks.block - 1) / ks.block);
  const std::string NB = std::to_string(batch);
  s += "      if (s == 0) {\n";
  s += "        for (i64 e = tid; e < N * kc; e += " + B + ")\n";
  s += "          kf_h[(e / kc) * " + KS + " + e % kc] = " + std::string(d.h0 ? "h0[(e / kc) * " + H + " + k0 + e % kc]" : "0.f") + ";\n";
  s += "      } else {\n";
  s += "        const unsigned want = base + unsigned(s);\n";
  s += "        const unsigned* slot = hx + (((s - 1) & 1) * " + L(D) + " + dir) * " + NH + " * 2;\n";
  s += "        auto at = [&](i64 e) { return slot + ((e / kc) * " + H + " + k0 + e % kc) * 2; };\n";
  s += "        for (i64 e0 = tid; e0 < N * kc; e0 += " + L(batch * ks.block) + ") {\n";
  s += "          uint2 v[" + NB + "];\n";
  s += "#pragma unroll\n";
  s += "          for (int i = 0; i < " + NB + "; ++i) {\n";
  s += "            const i64 e = e0 + i * " + B + ";\n";
  s += "            if (e < N * kc) v[i] = kf_load_published(at(e));\n";
  s += "            else v[i].y = want;  // nothing to wait for\n";
  s += "          }\n";
  s += "          for (bool stale = true; stale;) {\n";
  s += "            stale = false;\n";
  s += "#pragma unroll\n";
  s += "            for (int i = 0; i < " + NB + "; ++i)\n";
  s += "              if (v[i].y != want) stale = true, v[i] = kf_load_published(at(e0 + i * " + B + "));\n";
  s += "#ifndef __CUDA_ARCH__\n";
  s += "            if (stale) abort();  // the CPU's one block reads only what it published itself\n";
  s += "#endif\n";
  s += "          }\n";
  s += "#pragma unroll\n";
  s += "          for (int i = 0; i < " + NB + "; ++i) {\n";
  s += "            const i64 e = e0 + i * " + B + ";\n";
  s += "            if (e < N * kc) kf_h[(e / kc) * " + KS + " + e % kc] = __uint_as_float(v[i].x);\n";
  s += "          }\n";
  s += "        }\n";
  s += "      }\n";
  s += "      __syncthreads();\n";
  if (in_registers) {  // the state whole in one chunk: each thread's share of its row's dot products, every batch row
    const std::string RT = L(t.row_threads), HELD = std::to_string(t.held);
    s += "      if (holds_row)\n";
    s += "        for (i64 n = 0; n < N; ++n) {\n";
    s += "          const float4* hr = reinterpret_cast<const float4*>(kf_h + n * " + KS + ");\n";
    s += "          float a = 0.f;\n";
    s += "#pragma unroll\n";
    s += "          for (int j = 0; j < " + HELD + "; ++j) {\n";
    s += "            const i64 k4 = sg + (i64)j * " + RT + ";\n";
    s += "            if (k4 < " + L(d.hidden / 4) + ") {\n";
    s += "              const float4 v = hr[k4];\n";
    s += "              a += wr[j].x * v.x + wr[j].y * v.y + wr[j].z * v.z + wr[j].w * v.w;\n";
    s += "            }\n          }\n";
    s += "          kf_part[sg * (PAIRS + 1) + own_row * N + n] = a;\n";
    s += "        }\n    }\n";
    // Each dot product's partial sums added up: piece q of pair p at q * (PAIRS + 1) + p (a row's threads).
    s += "    __syncthreads();\n";
    s += "    for (i64 p = tid; p < PAIRS; p += " + B + ") {\n";
    s += "      float v = 0.f;\n      for (i64 q = 0; q < " + RT + "; ++q) v += kf_part[q * (PAIRS + 1) + p];\n";
    s += "      kf_gates[p] = v;\n    }\n";
    s += "    __syncthreads();\n";
  } else {
    s += recurrence_parts::tile_products(t, ks.block, weight, "kf_h", "kc", "      ");
    s += "    }\n";  // the chunks
    s += recurrence_parts::tile_sums(t, ks.block, "N");
  }
  s += "    const i64 out = t * " + NDH + " + dir * " + SH + ";\n";
  s += "    kf_copy_async_wait<1>();  // this step's input share is in (the next step's may still be on its way)\n";
  s += "    const float* xs = kf_x + (s & 1) * PAIRS;\n";
  s += "    for (i64 e = tid; e < UNITS * N; e += " + B + ") {\n";
  s += "      const i64 j = e / N, n = e % N, u = u0 + j;\n";
  s += "      if (u < " + H + ") {\n";
  s += recurrence_parts::cell(d, "N", "n");
  if (d.keeps_h) s += "        y[out + n * " + DH + " + u] = hn;\n";
  if (d.keeps_c) s += "        y[out + n * " + DH + " + " + (d.keeps_h ? H + " + " : std::string()) + "u] = cn;\n";
  s += "        if (s + 1 < " + L(d.steps) + ") kf_publish(hx + (((s & 1) * " + L(D) + " + dir) * " + NH + " + n * " + H + " + u) * 2, hn, base + unsigned(s) + 1u);\n";
  s += "      }\n    }\n";
  s += "  }\n";
  s += "  if (tid == 0) tags[blockIdx.x] = base + " + L(d.steps - 1) + ";  // where the next launch starts\n";
  s += "}\n";

  PlanKernel k = generated_kernel(g, ks, name, s, std::move(args), t.blocks, ks.block);
  k.smem = int(t.smem_bytes());
  k.cooperative = true;
  return {std::move(k)};
}

}  // namespace kforge
