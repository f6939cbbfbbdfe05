#include "search/features.h"

#include <algorithm>
#include <cmath>
#include <set>

#include "codegen/lower.h"
#include "ir/attention.h"
#include "ir/conv.h"
#include "ir/decompose.h"
#include "ir/matmul.h"
#include "ir/ops.h"
#include "ir/pool.h"
#include "ir/recurrence.h"

namespace kforge {

namespace {
const std::set<std::string> kTranscendental = {"exp", "log", "tanh", "sigmoid", "erf", "gelu", "silu", "softplus", "selu",
                                               "elu", "mish", "sin", "cos", "sqrt", "rsqrt", "pow", "pow_scalar"};
double bytes(const Node& n) { return double(nbytes(n.type)); }
}  // namespace

double matmul_flops(const Graph& g, const Node& n) {
  if (n.op == "conv") return 2.0 * conv_macs(conv_dims(g.at(n.args[0]).type.shape, g.at(n.args[1]).type.shape, n.attrs, ""));
  if (n.op == "conv_transpose")  // the same multiply-adds as the forward convolution it is the gradient of
    return 2.0 * conv_macs(conv_transpose_dims(g.at(n.args[0]).type.shape, g.at(n.args[1]).type.shape, n.attrs, "").forward);
  if (n.op != "matmul" && !is_attention_op(n.op)) return 0;
  return 2.0 * double(numel(n.type.shape)) * double(matmul_dims(g.at(n.args[0]).type.shape, g.at(n.args[1]).type.shape, "").k);
}

double recurrence_flops(const Graph& g, const Node& n) {
  const RecurrenceDims d = recurrence_dims(g, n);
  return 2 * double(numel(n.type.shape)) * double(d.gates * d.hidden);
}

double group_flops(const Graph& prim, const KernelGroup& g) {
  if (g.anchor < 0) return 0;
  const Node& n = prim.at(g.anchor);
  return n.op == "recurrence" ? recurrence_flops(prim, n) : matmul_flops(prim, n);
}

double roofline_flops(const Graph& g) {
  double f = 0;
  for (auto& n : g.nodes)
    f += matmul_flops(g, n);
  return f;
}

TaskFeatures task_features(const Graph& graph, const GpuInfo& gpu) {
  Graph g = decompose(graph);
  TaskFeatures t;
  t.nodes = double(g.nodes.size());
  t.inputs = double(g.inputs.size());
  t.params = double(g.params.size());
  t.outputs = double(g.outputs.size());
  for (auto& n : g.nodes) {
    double count = double(numel(n.type.shape));
    t.max_rank = std::max(t.max_rank, double(n.type.shape.size()));
    if (n.op == "input" || n.op == "param" || n.op == "const") continue;
    if (is_view_op(n.op)) ++t.views;
    else if (n.op == "gather") ++t.gathers, t.flops += count;
    else if (is_elementwise_op(n.op)) {
      bool heavy = kTranscendental.count(n.op) > 0;
      ++t.elementwise;
      t.transcendental += heavy;
      t.flops += count * (heavy ? 8 : 1);  // a special-function call costs several instructions
    } else if (n.op == "reduce") ++t.reductions, t.flops += double(numel(g.at(n.args[0]).type.shape));
    else if (n.op == "scan") ++t.scans, t.flops += count;
    else if (n.op == "matmul" || is_conv_op(n.op) || is_attention_op(n.op)) t.flops += matmul_flops(g, n);
    else if (n.op == "recurrence") t.flops += recurrence_flops(g, n);
    else if (n.op == "pool") {
      ++t.pools;
      double window = 1;
      for (const PoolDim& d : pool_dims(n.attrs, g.at(n.args[0]).type.shape, n.name)) window *= double(d.kernel);
      t.flops += count * window;
    }
  }
  for (int i : g.inputs) t.input_bytes += bytes(g.at(i));
  for (int p : g.params) t.input_bytes += bytes(g.at(p));
  for (int o : g.outputs) t.output_bytes += bytes(g.at(o));
  t.min_bytes = double(min_bytes(g));
  t.intensity = t.min_bytes > 0 ? t.flops / t.min_bytes : 0;
  t.floor_ms = gpu.copy_gbs > 0 ? t.min_bytes / (gpu.copy_gbs * 1e9) * 1e3 : 0;
  t.gpu_copy_gbs = gpu.copy_gbs;
  t.gpu_sms = gpu.sms;
  return t;
}

PlanFeatures plan_features(const GraphAnalysis& analysis, const Schedule& schedule) {
  PlanFeatures p;
  p.fuse_rows = schedule.fuse_rows;
  p.cuda_graph = schedule.cuda_graph;
  const int form = layout_form(analysis.has_channels_last_form(), schedule.channels_last, schedule.half_activations);
  p.channels_last = form >= 1;
  p.half_activations = form == 2;
  p.unrolled = schedule.unroll_recurrences && analysis.has_unrolled_form();
  const std::vector<KernelGroup>& groups = analysis.groups(schedule);
  double min_rows = 1e300, max_row = 1, threads = 0;
  for (auto& g : groups) {
    KernelSchedule ks = schedule_for(schedule, g);
    p.kernels += ks.strategy == Strategy::split ? 2 : 1;
    switch (g.kind) {
      case GroupKind::pointwise: ++p.pointwise_groups; break;
      case GroupKind::row: ++p.row_groups; break;
      case GroupKind::scan: ++p.scan_groups; break;
      case GroupKind::pool: ++p.pool_groups; break;
      case GroupKind::matmul:
      case GroupKind::conv:
      case GroupKind::recurrence:
      case GroupKind::attention: break;  // seen through the task's flops and intensity
    }
    switch (ks.strategy) {
      case Strategy::flat: ++p.flat; break;
      case Strategy::thread: ++p.thread; break;
      case Strategy::warp: ++p.warp; break;
      case Strategy::block: ++p.block; break;
      case Strategy::split: ++p.split; break;
      case Strategy::tile: ++p.tile; break;
      case Strategy::library:
      case Strategy::mma: break;  // product steps: seen through the task's flops and the group counts above
    }
    p.mean_block += ks.block;
    p.mean_items += ks.items;
    p.max_vec = std::max(p.max_vec, double(ks.vec));
    p.max_chunks = std::max(p.max_chunks, double(ks.chunks));
    p.cached_rows += ks.cache_row != RowCache::none;
    p.passes += double(row_walks(g));
    min_rows = std::min(min_rows, double(rows_of(g)));
    max_row = std::max(max_row, double(row_length(g)));
    threads += double(numel(g.shape)) / std::max<double>(1, ks.strategy == Strategy::flat ? ks.vec * ks.items : 1);
  }
  double n = std::max<double>(1, double(groups.size()));
  p.mean_block /= n;
  p.mean_items /= n;
  p.log_max_row_length = std::log2(max_row);
  p.log_min_rows = groups.empty() ? 0 : std::log2(std::max(1.0, min_rows));
  p.log_total_threads = std::log2(std::max(1.0, threads));
  return p;
}

const std::vector<std::string>& feature_names() {
  static const std::vector<std::string> names = {
      "task.nodes", "task.inputs", "task.params", "task.outputs", "task.elementwise", "task.transcendental",
      "task.reductions", "task.scans", "task.pools", "task.gathers", "task.views", "task.log_input_bytes",
      "task.log_output_bytes", "task.log_min_bytes", "task.log_flops", "task.intensity", "task.max_rank",
      "task.floor_ms", "gpu.copy_gbs", "gpu.sms",
      "plan.kernels", "plan.fuse_rows", "plan.cuda_graph", "plan.pointwise_groups", "plan.row_groups",
      "plan.scan_groups", "plan.pool_groups", "plan.flat", "plan.thread", "plan.warp", "plan.block", "plan.split",
      "plan.tile", "plan.mean_block", "plan.max_vec", "plan.mean_items", "plan.max_chunks", "plan.cached_rows",
      "plan.log_max_row_length", "plan.log_min_rows", "plan.log_total_threads", "plan.passes", "plan.channels_last",
      "plan.half_activations", "plan.unrolled"};
  return names;
}

size_t task_feature_count() { return 20; }

std::vector<double> task_vector(const TaskFeatures& t) {
  auto lg = [](double x) { return std::log2(std::max(1.0, x)); };
  return {t.nodes, t.inputs, t.params, t.outputs, t.elementwise, t.transcendental, t.reductions, t.scans, t.pools,
          t.gathers, t.views, lg(t.input_bytes), lg(t.output_bytes), lg(t.min_bytes), lg(t.flops), t.intensity,
          t.max_rank, t.floor_ms, t.gpu_copy_gbs, t.gpu_sms};
}

std::vector<double> feature_vector(const TaskFeatures& t, const PlanFeatures& p) {
  std::vector<double> v = task_vector(t);
  v.insert(v.end(), {p.kernels, p.fuse_rows, p.cuda_graph, p.pointwise_groups, p.row_groups, p.scan_groups, p.pool_groups,
          p.flat, p.thread, p.warp, p.block, p.split, p.tile, p.mean_block, p.max_vec, p.mean_items, p.max_chunks,
          p.cached_rows, p.log_max_row_length, p.log_min_rows, p.log_total_threads, p.passes, p.channels_last,
          p.half_activations, p.unrolled});
  return v;
}

}  // namespace kforge
