// Features: what a cost model or a policy sees of a task and of a candidate plan, as named structs
// (Halide's Featurization.h) flattened into one vector with a fixed order of names. Every op family's
// schedule choices appear through the kernel groups and their KernelSchedule fields, so a new family
// joins the feature space without changes here.
#pragma once
#include <string>
#include <vector>

#include "codegen/analysis.h"
#include "codegen/schedule.h"
#include "ir/graph.h"

namespace kforge {

struct GpuInfo {
  double copy_gbs = 4250;  // measured device-to-device copy bandwidth (read + write)
  int sms = 132;
};

struct TaskFeatures {
  double nodes = 0, inputs = 0, params = 0, outputs = 0;
  double elementwise = 0, transcendental = 0, reductions = 0, scans = 0, pools = 0, gathers = 0, views = 0;
  double input_bytes = 0, output_bytes = 0, min_bytes = 0, flops = 0, intensity = 0, max_rank = 0;
  double floor_ms = 0;  // min_bytes at the copy bandwidth: no plan can beat it by much
  double gpu_copy_gbs = 0, gpu_sms = 0;
};

struct PlanFeatures {
  double kernels = 0, fuse_rows = 0, cuda_graph = 0;
  // The plan's form (codegen/analysis.h): channels last, with fp16 convolutions, recurrences unrolled.
  double channels_last = 0, half_activations = 0, unrolled = 0;
  double pointwise_groups = 0, row_groups = 0, scan_groups = 0, pool_groups = 0;
  // Per strategy: how many groups use it.
  double flat = 0, thread = 0, warp = 0, block = 0, split = 0, tile = 0;
  double mean_block = 0, max_vec = 0, mean_items = 0, max_chunks = 0, cached_rows = 0;
  double log_max_row_length = 0, log_min_rows = 0, log_total_threads = 0, passes = 0;
};

TaskFeatures task_features(const Graph& graph, const GpuInfo& gpu);
// 2 M N K of one matmul node, 2 x multiply-adds of one conv node (0 for any other op); the roofline's FLOPs:
// those of the matrix products and convolutions (the only ops whose arithmetic can bind before memory on an
// H200; every other op is counted in bytes).
double matmul_flops(const Graph& g, const Node& n);
// 2 x multiply-adds of a recurrence node's steps (its gates' products with the hidden state).
double recurrence_flops(const Graph& g, const Node& n);
// Those of a kernel group's anchor op (a product, convolution, attention or recurrence; 0 for other groups).
double group_flops(const Graph& prim, const KernelGroup& g);
double roofline_flops(const Graph& g);
PlanFeatures plan_features(const GraphAnalysis& analysis, const Schedule& schedule);

// The flat vector a learner takes, and the name of each entry: the task's entries, then the plan's.
std::vector<double> feature_vector(const TaskFeatures& t, const PlanFeatures& p);
const std::vector<std::string>& feature_names();
// The task's entries alone (sizes on a log2 scale), the first task_feature_count() of feature_vector.
std::vector<double> task_vector(const TaskFeatures& t);
size_t task_feature_count();

}  // namespace kforge
