// A recurrence (ir/recurrence.h) as one persistent kernel: the whole time loop of one layer and direction in one
// launch, where the unrolled graph takes a product and a kernel a step.
//
// Block b owns hidden units [b * units, (b + 1) * units) for every step (codegen/schedule.h, RecurrenceTile):
// it loads their G gates' rows of w_hh into shared memory once, keeps their cell state (an LSTM's c, a GRU's h)
// in shared memory, and a step it
//   1. stages the previous hidden state of every unit (all N batch rows, `chunk` columns at a time) in shared
//      memory, read through L2 (ld.global.cg: other blocks wrote it during this kernel, and L1 is not coherent);
//   2. computes its G * units * N dot products of that state with its weight rows, `splits` threads each,
//      the partial sums combined through shared memory;
//   3. applies the cell (PyTorch's equations) to its units and writes their new hidden state (and cell state)
//      to the result; the input's share of the gates it adds was copied to shared memory asynchronously during
//      the step before (cp.async), so that no load from memory waits on the chain of steps;
//   4. waits at a grid barrier (kf_grid_sync) until every block has written its units: the next step reads all
//      of them.
// The launch is cooperative (runtime/executor.cpp): the driver refuses a grid that is not resident at once
// rather than letting the barrier wait forever. On the CPU (tests/common/cpu_kernel_runner.h) a single block
// runs it, the barrier a block barrier.
#include "codegen/emitters.h"

namespace kforge {

namespace {


std::string L(int64_t v) { return i64_literal(v); }

// Statements computing the new state of unit u, batch row n (locals e, u, n; `pre(q)` the recurrent part of gate
// q with its bias, `xq(q)` the input part), writing `y` (and the exchanged h for an LSTM's cell-state result).
std::string cell_code(const RecurrenceDims& d, const std::string& H, const std::string& NH) {
  auto xq = [&](int q) { return "xs[" + std::to_string(q) + " * UNITS * N + e]"; };
  auto pre = [&](int q) { return "kf_gates[(" + std::to_string(q) + " * UNITS + j) * N + n]" + std::string(d.bias ? " + bias[" + std::to_string(q) + " * " + H + " + u]" : ""); };
  const std::string sig = "kf_sigmoid";
  std::string c;
  switch (d.cell) {
    case Cell::lstm:
      c += "        const float ig = " + sig + "(" + xq(0) + " + " + pre(0) + "), fg = " + sig + "(" + xq(1) + " + " + pre(1) + ");\n";
      c += "        const float gg = tanhf(" + xq(2) + " + " + pre(2) + "), og = " + sig + "(" + xq(3) + " + " + pre(3) + ");\n";
      c += "        const float cn = fg * kf_state[e] + ig * gg;\n        kf_state[e] = cn;\n";
      c += "        const float hn = og * tanhf(cn);\n";
      if (d.state_c) c += "        y[out + n * " + H + " + u] = cn;\n        hx[(s & 1) * " + NH + " + n * " + H + " + u] = hn;\n";
      else c += "        y[out + n * " + H + " + u] = hn;\n";
      break;
    case Cell::gru:
      c += "        const float r = " + sig + "(" + xq(0) + " + " + pre(0) + "), z = " + sig + "(" + xq(1) + " + " + pre(1) + ");\n";
      c += "        const float nn = tanhf(" + xq(2) + " + r * (" + pre(2) + "));\n";
      c += "        const float hn = (1.f - z) * nn + z * kf_state[e];\n        kf_state[e] = hn;\n";
      c += "        y[out + n * " + H + " + u] = hn;\n";
      break;
    case Cell::rnn_tanh: c += "        y[out + n * " + H + " + u] = tanhf(" + xq(0) + " + " + pre(0) + ");\n"; break;
    case Cell::rnn_relu: c += "        y[out + n * " + H + " + u] = fmaxf(" + xq(0) + " + " + pre(0) + ", 0.f);\n"; break;
  }
  return c;
}

}  // namespace

std::vector<PlanKernel> emit_recurrence(EmitContext& cx, const KernelGroup& g, const KernelSchedule& ks, const std::string& name) {
  const Graph& gr = *cx.partition.graph;
  const Node& node = gr.at(g.anchor);
  const RecurrenceDims& d = *g.recurrence;
  const RecurrenceTile t = recurrence_tile(g, ks);
  const bool lstm = d.cell == Cell::lstm, keeps_state = lstm || d.cell == Cell::gru;
  const std::string H = L(d.hidden), NH = L(d.batch * d.hidden), GH = L(d.gates * d.hidden), W = L(d.hidden + 1);
  const std::string KS = L(t.stage_stride);

  std::vector<int> args = {buffer_of(cx, node.args[kRecX]), buffer_of(cx, node.args[kRecW])};
  std::string params = "const float* __restrict__ x, const float* __restrict__ w";
  if (d.h0) args.push_back(buffer_of(cx, node.args[kRecH0])), params += ", const float* __restrict__ h0";
  if (d.c0) args.push_back(buffer_of(cx, node.args[kRecC0])), params += ", const float* __restrict__ c0";
  if (d.bias) args.push_back(buffer_of(cx, node.args[kRecBias])), params += ", const float* __restrict__ bias";
  args.push_back(buffer_of(cx, g.anchor));
  params += ", float* y";
  if (d.state_c) {  // the result holds c: h crosses the blocks through two alternating slots of its own
    args.push_back(add_temp(cx, name + "_h", DType::f32, {2, d.batch, d.hidden}));
    params += ", float* hx";
  }
  args.push_back(add_temp(cx, name + "_flags", DType::f32, {t.blocks}));  // the grid barrier's, one a block
  params += ", unsigned* flags";

  std::string s = kernel_header(cx.partition, g, ks, name);
  s += "extern \"C\" __global__ void __launch_bounds__(" + std::to_string(ks.block) + ") " + name + "(" + params + ") {\n";
  s += "  constexpr i64 N = " + L(d.batch) + ", UNITS = " + L(t.units) + ", PAIRS = " + L(t.pairs) + ", SPLITS = " + L(t.splits) +
       ", CHUNK = " + L(t.chunk) + ";\n";
  s += "#ifdef __CUDA_ARCH__\n  extern __shared__ float kf_smem[];\n#else\n  static float kf_smem[" + L(t.smem_floats) + "];\n#endif\n";
  s += "  float* kf_h = kf_smem;                              // [N][" + KS + "] staged hidden state\n";
  s += "  float* kf_part = kf_h + N * " + KS + ";               // [PAIRS][SPLITS] partial dot products\n";
  s += "  float* kf_gates = kf_part + PAIRS * SPLITS;          // [G][UNITS][N] recurrent part of the gates\n";
  s += "  float* kf_state = kf_gates + PAIRS;                  // [UNITS][N] the units' cell state (LSTM c, GRU h)\n";
  s += "  float* kf_x = kf_state + UNITS * N;                  // [2][G][UNITS * N] two steps' input share of the gates\n";
  s += "  float* kf_w = kf_x + 2 * PAIRS;                      // [G * UNITS][H + 1] the units' weight rows\n";
  s += "  const int tid = threadIdx.x;\n  const i64 u0 = (i64)blockIdx.x * UNITS;\n";
  s += "  const unsigned arrived = flags[blockIdx.x];  // where the last launch left the barrier\n";
  if (t.weights_on_chip) {
    s += "  for (i64 e = tid; e < " + L(d.gates * t.units * d.hidden) + "; e += " + std::to_string(ks.block) + ") {\n";
    s += "    const i64 r = e / " + H + ", k = e % " + H + ", u = u0 + r % UNITS;\n";
    s += "    kf_w[r * " + W + " + k] = u < " + H + " ? w[((r / UNITS) * " + H + " + u) * " + H + " + k] : 0.f;\n  }\n";
  }
  if (keeps_state) {
    s += "  for (i64 e = tid; e < UNITS * N; e += " + std::to_string(ks.block) + ") {\n";
    s += "    const i64 u = u0 + e / N, n = e % N;\n";
    const bool given = lstm ? d.c0 : d.h0;
    s += "    kf_state[e] = " + (given ? "u < " + H + " ? " + std::string(lstm ? "c0" : "h0") + "[n * " + H + " + u] : 0.f" : std::string("0.f")) + ";\n  }\n";
  }
  // A thread's dot products: pair p = tid / SPLITS + i * (block / SPLITS), columns sp, sp + SPLITS, ...
  const int64_t lanes = ks.block / t.splits, per_thread = (t.pairs + lanes - 1) / lanes;
  const std::string weight = t.weights_on_chip ? "kf_w[r * " + W + " + k0 + k]"
                                               : "w[((r / UNITS) * " + H + " + u0 + r % UNITS) * " + H + " + k0 + k]";
  // Each thread copies the input share of the gates it will apply a step ahead, into the step's slot, without
  // waiting: the loads from memory overlap the step before, off the chain of steps.
  const std::string B = std::to_string(ks.block);
  auto prefetch = [&](const std::string& step, const std::string& indent) {
    const std::string at = d.reverse ? "(" + L(d.steps - 1) + " - (" + step + "))" : "(" + step + ")";
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
  s += "  const int sp = tid % SPLITS;\n";
  s += "  for (i64 s = 0; s < " + L(d.steps) + "; ++s) {\n";
  s += "    const i64 t = " + std::string(d.reverse ? L(d.steps - 1) + " - s" : "s") + ";\n";
  s += "    if (s + 1 < " + L(d.steps) + ") {\n" + prefetch("s + 1", "      ") + "    } else {\n      kf_copy_async_commit();  // an empty group: the wait below counts one a step\n    }\n";
  const std::string prev_t = d.reverse ? "(t + 1)" : "(t - 1)";
  s += "    const float* hp = s == 0 ? " + std::string(d.h0 ? "h0" : "nullptr") + " : " +
       (d.state_c ? "hx + ((s - 1) & 1) * " + NH : "y + " + prev_t + " * " + NH) + ";\n";
  s += "    float acc[" + std::to_string(per_thread) + "];\n";
  s += "    for (int i = 0; i < " + std::to_string(per_thread) + "; ++i) acc[i] = 0.f;\n";
  s += "    for (i64 k0 = 0; k0 < " + H + "; k0 += CHUNK) {\n";
  s += "      const i64 kc = min((i64)CHUNK, " + H + " - k0);\n";
  s += "      __syncthreads();  // the last chunk's readers are done\n";
  if (d.hidden % 4 == 0 && t.chunk % 4 == 0) {  // 16-byte loads: rows and chunks start on 4-float boundaries
    s += "      for (i64 e = tid; e < N * (kc / 4); e += " + B + ") {\n";
    s += "        const i64 n = e / (kc / 4), k = (e % (kc / 4)) * 4;\n";
    s += "        const float4 v = hp ? kf_load_l2_4(hp + n * " + H + " + k0 + k) : float4{0.f, 0.f, 0.f, 0.f};\n";
    s += "        float* row = kf_h + n * " + KS + " + k;\n";
    s += "        row[0] = v.x; row[1] = v.y; row[2] = v.z; row[3] = v.w;\n      }\n";
  } else {
    s += "      for (i64 e = tid; e < N * kc; e += " + B + ") kf_h[(e / kc) * " + KS +
         " + e % kc] = hp ? kf_load_l2(hp + (e / kc) * " + H + " + k0 + e % kc) : 0.f;\n";
  }
  s += "      __syncthreads();\n";
  s += "      for (int i = 0; i < " + std::to_string(per_thread) + "; ++i) {\n";
  s += "        const i64 p = tid / SPLITS + (i64)i * " + L(lanes) + ";\n";
  s += "        if (p >= PAIRS) break;\n";
  s += "        const i64 r = p / N, n = p % N;\n";
  if (!t.weights_on_chip) s += "        if (u0 + r % UNITS >= " + H + ") continue;\n";
  s += "        float a = acc[i];\n";
  s += "#pragma unroll 8\n";
  s += "        for (i64 k = sp; k < kc; k += SPLITS) a += " + weight + " * kf_h[n * " + KS + " + k];\n";
  s += "        acc[i] = a;\n      }\n    }\n";
  s += "    for (int i = 0; i < " + std::to_string(per_thread) + "; ++i) {\n";
  s += "      const i64 p = tid / SPLITS + (i64)i * " + L(lanes) + ";\n";
  s += "      if (p < PAIRS) kf_part[p * SPLITS + sp] = acc[i];\n    }\n";
  s += "    __syncthreads();\n";
  s += "    for (i64 p = tid; p < PAIRS; p += " + std::to_string(ks.block) + ") {\n";
  s += "      float v = 0.f;\n      for (int q = 0; q < SPLITS; ++q) v += kf_part[p * SPLITS + q];\n";
  s += "      kf_gates[p] = v;\n    }\n";
  s += "    __syncthreads();\n";
  s += "    const i64 out = t * " + NH + ";\n";
  s += "    kf_copy_async_wait<1>();  // this step's input share is in (the next step's may still be on its way)\n";
  s += "    const float* xs = kf_x + (s & 1) * PAIRS;\n";
  s += "    for (i64 e = tid; e < UNITS * N; e += " + std::to_string(ks.block) + ") {\n";
  s += "      const i64 j = e / N, n = e % N, u = u0 + j;\n";
  s += "      if (u < " + H + ") {\n";
  s += cell_code(d, H, NH);
  s += "      }\n    }\n";
  s += "    if (s + 1 < " + L(d.steps) + ") kf_grid_sync(flags, arrived + unsigned(s) + 1u);\n";
  s += "  }\n}\n";

  PlanKernel k = generated_kernel(g, ks, name, s, std::move(args), t.blocks, ks.block);
  k.smem = int(t.smem_bytes());
  k.cooperative = true;
  return {std::move(k)};
}

}  // namespace kforge
