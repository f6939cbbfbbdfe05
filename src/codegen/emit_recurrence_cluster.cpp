// A recurrence (ir/recurrence.h) split by batch rows (schedule.h, RecurrenceTile, strategy tile): a layer's batch
// rows never meet, so a cluster of C blocks takes a slice of `batch_rows` of them through every step on its own.
// Block r of the cluster owns hidden units [r * units, (r + 1) * units): their G gates' weight rows stay in its
// shared memory for the whole loop, with a copy of the slice's whole hidden state, two steps' of it. A step it
//   1. computes its units' gates for the slice from the local state, a thread a tile of up to 4 weight rows x
//      4 batch rows over its share of the columns (the splits of a tile added by warp shuffles), while the input's
//      share of the next step's gates is on its way (cp.async);
//   2. applies the cell (PyTorch's equations), writes the new states to the result, and stores its units' new
//      hidden state into the next step's state of every block of the cluster (distributed shared memory);
//   3. waits at the cluster's barrier (release / acquire: the stores are seen after it).
// The state alternates between two buffers: a block writes step s + 1's while its peers may still read step s's,
// and step s + 2 overwrites step s's only after the barrier that every block passes once done reading it.
// Nothing goes through L2 between steps and no block waits on another cluster, so the grid is an ordinary launch.
// The CPU (tests/common/cpu_kernel_runner.h) runs clusters of one block (its barrier __syncthreads), one after the
// other.
#include "codegen/emit_recurrence_parts.h"
#include "codegen/emitters.h"
#include "codegen/emit_row_parts.h"

namespace kforge {

namespace {

std::string L(int64_t v) { return i64_literal(v); }

}  // namespace

std::vector<PlanKernel> emit_recurrence_cluster(EmitContext& cx, const KernelGroup& g, const KernelSchedule& ks, const std::string& name) {
  const RecurrenceDims& d = *g.recurrence;
  const RecurrenceTile t = recurrence_tile(g, ks);
  const bool lstm = d.cell == Cell::lstm, keeps_state = lstm || d.cell == Cell::gru;
  const int64_t C = t.cluster;
  const std::string H = L(d.hidden), GH = L(d.gates * d.hidden), W = L(d.hidden + 1), KS = L(t.stage_stride);
  const std::string B = std::to_string(ks.block), DH = L(d.width()), NDH = L(d.batch * d.width()), SH = L(d.states() * d.hidden);
  auto [args, params, pick] = recurrence_parts::operands(cx, g);

  std::string s = kernel_header(cx.partition, g, ks, name);
  s += "extern \"C\" __global__ void __launch_bounds__(" + B + ") " + row_parts::cluster_dims(int(C)) + name + "(" + params + ") {\n";
  s += "  constexpr i64 N = " + L(d.batch) + ", NB = " + L(t.batch_rows) + ", UNITS = " + L(t.units) + ", PAIRS = " + L(t.pairs) +
       ", SPLITS = " + L(t.splits) + ";\n";
  s += "#ifdef __CUDA_ARCH__\n  extern __shared__ __align__(16) float kf_smem[];\n#else\n  alignas(16) static float kf_smem[" +
       L(t.smem_floats) + "];\n#endif\n";
  s += "  float* kf_w = kf_smem;                               // [G * UNITS][H + 1] the units' weight rows\n";
  s += "  float* kf_h = kf_w + " + L(d.gates * t.units * (d.hidden + 1)) + ";  // [2][NB][" + KS + "] the slice's state, two steps'\n";
  s += "  float* kf_gates = kf_h + 2 * NB * " + KS + ";            // [G][UNITS][NB] recurrent part of the gates\n";
  s += "  float* kf_state = kf_gates + PAIRS;                  // [UNITS][NB] the units' cell state (LSTM c, GRU h)\n";
  s += "  float* kf_x = kf_state + UNITS * NB;                 // [2][G][UNITS * NB] two steps' input share of the gates\n";
  s += "  float* kf_bias = kf_x + 2 * PAIRS;                   // [G][UNITS] the units' recurrent biases\n";
  s += "  const int tid = threadIdx.x;\n";
  s += "  const unsigned rank = " + std::string(C > 1 ? "kf_cluster_rank()" : "0u") + ";\n";
  s += "  const i64 slice = blockIdx.x / " + L(C) + ";\n";
  s += "  const int dir = int(slice / " + L(t.batch_groups) + ");\n";
  s += "  const i64 n0 = (slice % " + L(t.batch_groups) + ") * NB, u0 = (i64)rank * UNITS;\n";
  s += pick;
  const std::string backward = d.directions == 2 ? "dir == 1" : d.reverse ? "true" : "false";
  s += "  auto kf_time = [&](i64 step) { return " + backward + " ? " + L(d.steps - 1) + " - step : step; };\n";
  s += "  for (i64 e = tid; e < " + L(d.gates * t.units * d.hidden) + "; e += " + B + ") {\n";
  s += "    const i64 r = e / " + H + ", k = e % " + H + ", u = u0 + r % UNITS;\n";
  s += "    kf_w[r * " + W + " + k] = u < " + H + " ? w[((r / UNITS) * " + H + " + u) * " + H + " + k] : 0.f;\n  }\n";
  s += recurrence_parts::bias_staging(d, ks.block);
  if (keeps_state) {
    const bool given = lstm ? d.c0 : d.h0;
    s += "  for (i64 e = tid; e < UNITS * NB; e += " + B + ") {\n";
    s += "    const i64 u = u0 + e / NB, n = n0 + e % NB;\n";
    s += "    kf_state[e] = " + (given ? "u < " + H + " && n < N ? " + std::string(lstm ? "c0" : "h0") + "[n * " + H + " + u] : 0.f" : std::string("0.f")) + ";\n  }\n";
  }
  s += "  for (i64 e = tid; e < NB * " + H + "; e += " + B + ") {\n";
  s += "    const i64 b = e / " + H + ", k = e % " + H + ";\n";
  s += "    kf_h[b * " + KS + " + k] = " + std::string(d.h0 ? "n0 + b < N ? h0[(n0 + b) * " + H + " + k] : 0.f" : "0.f") + ";\n  }\n";
  // The input's share of the gates a thread applies, copied a step ahead into the step's slot.
  auto prefetch = [&](const std::string& step, const std::string& indent) {
    std::string c = indent + "for (i64 e = tid; e < UNITS * NB; e += " + B + ") {\n";
    c += indent + "  const i64 u = u0 + e / NB, n = n0 + e % NB;\n";
    c += indent + "  if (u < " + H + " && n < N)\n";
    c += indent + "    for (int q = 0; q < " + std::to_string(d.gates) + "; ++q)\n";
    c += indent + "      kf_copy_async(kf_x + ((" + step + ") & 1) * PAIRS + q * UNITS * NB + e, x + (kf_time(" + step + ") * N + n) * " +
         GH + " + q * " + H + " + u);\n";
    c += indent + "}\n" + indent + "kf_copy_async_commit();\n";
    return c;
  };
  s += prefetch("0", "  ");
  // Every block of the cluster has started (its shared memory exists) before any stores into it.
  s += std::string(C > 1 ? "  kf_cluster_sync();\n" : "  __syncthreads();\n");
  s += recurrence_parts::tile_constants(t, "NB");
  s += "  for (i64 s = 0; s < " + L(d.steps) + "; ++s) {\n";
  s += "    const i64 t = kf_time(s);\n";
  s += "    if (s + 1 < " + L(d.steps) + ") {\n" + prefetch("s + 1", "      ") +
       "    } else {\n      kf_copy_async_commit();  // an empty group: the wait below counts one a step\n    }\n";
  s += "    const float* hc = kf_h + (s & 1) * NB * " + KS + ";\n";
  s += "    float* hn_all = kf_h + ((s + 1) & 1) * NB * " + KS + ";\n";
  s += "    float acc[" + std::to_string(recurrence_parts::tiles_a_thread(t, ks.block)) + "][TR][TB] = {};\n";
  s += recurrence_parts::tile_products(t, ks.block, "kf_w[(r0 + a) * " + W + " + k]", "hc", H, "    ");
  s += recurrence_parts::tile_sums(t, ks.block, "NB");
  s += "    const i64 out = t * " + NDH + " + dir * " + SH + ";\n";
  s += "    kf_copy_async_wait<1>();  // this step's input share is in (the next step's may still be on its way)\n";
  s += "    const float* xs = kf_x + (s & 1) * PAIRS;\n";
  s += "    for (i64 e = tid; e < UNITS * NB; e += " + B + ") {\n";
  s += "      const i64 j = e / NB, b = e % NB, u = u0 + j, n = n0 + b;\n";
  s += "      if (u < " + H + " && n < N) {\n";
  s += recurrence_parts::cell(d, "NB", "b");
  if (d.keeps_h) s += "        y[out + n * " + DH + " + u] = hn;\n";
  if (d.keeps_c) s += "        y[out + n * " + DH + " + " + (d.keeps_h ? H + " + " : std::string()) + "u] = cn;\n";
  s += "        if (s + 1 < " + L(d.steps) + ")\n";
  if (C > 1) {
    s += "#pragma unroll\n";
    s += "          for (unsigned p = 0; p < " + L(C) + "; ++p) kf_cluster_store(hn_all + b * " + KS + " + u, p, hn);\n";
  } else {
    s += "          hn_all[b * " + KS + " + u] = hn;\n";
  }
  s += "      }\n    }\n";
  // The new state is everywhere in the cluster before any block reads it, and nobody writes the buffer being
  // read until every block is done with it (two steps on).
  s += std::string(C > 1 ? "    kf_cluster_sync();\n" : "    __syncthreads();\n");
  s += "  }\n";
  s += "}\n";

  PlanKernel k = generated_kernel(g, ks, name, s, std::move(args), t.blocks, ks.block);
  k.smem = int(t.smem_bytes());
  k.cluster = int(C);
  return {std::move(k)};
}

}  // namespace kforge
