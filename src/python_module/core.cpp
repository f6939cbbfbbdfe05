// kforge._core: the C++ library seen from Python. The bridge uses it for the CPU interpreter (tests),
// and the kb protocol and exported ModelNew files use Runner to call a plan on PyTorch's tensors, on
// PyTorch's current stream, in PyTorch's process.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include "codegen/lower.h"
#include "ir/decompose.h"
#include "ir/error.h"
#include "ir/interpreter.h"
#include "runtime/crash_trace.h"
#include "runtime/driver.h"
#include "runtime/executor.h"
#include "search/features.h"
#include "search/measure.h"
#include "search/optimize.h"
#include "search/policy_curves.h"
#include "search/policy_trainer.h"

namespace py = pybind11;
using namespace kforge;

namespace {

HostTensor to_host(const py::array& a, const TensorType& want, const std::string& what) {
  HostTensor t{want, std::vector<double>(size_t(numel(want.shape)))};
  py::array_t<double, py::array::c_style | py::array::forcecast> d(a);
  if (size_t(d.size()) != t.data.size())
    throw UserError(what + " has " + std::to_string(d.size()) + " elements, expected shape " + to_string(want.shape));
  std::copy(d.data(), d.data() + d.size(), t.data.begin());
  return t;
}

py::array from_host(const HostTensor& t) {
  std::vector<py::ssize_t> shape(t.type.shape.begin(), t.type.shape.end());
  auto fill = [&](auto arr) {
    auto* p = arr.mutable_data();
    for (size_t i = 0; i < t.data.size(); ++i) p[i] = static_cast<std::remove_pointer_t<decltype(p)>>(t.data[i]);
    return py::array(arr);
  };
  switch (t.type.dtype) {
    case DType::f32: return fill(py::array_t<float>(shape));
    case DType::i64: return fill(py::array_t<int64_t>(shape));
    case DType::boolean: return fill(py::array_t<bool>(shape));
    case DType::f16:
    case DType::bf16: return fill(py::array_t<float>(shape));  // the half values, exactly (numpy has no bf16)
  }
  return py::array();
}

class Runner {
 public:
  explicit Runner(const std::string& plan_json, const std::string& cache_dir)
      : plan_(std::make_unique<LoadedPlan>(Plan::from_json(nlohmann::json::parse(plan_json)),
                                           Compiler({.cache_dir = cache_dir.empty() ? default_cache_dir() : cache_dir}))) {}
  void run(const std::vector<uintptr_t>& in, const std::vector<uintptr_t>& params, const std::vector<uintptr_t>& out,
           uintptr_t stream) {
    Bindings b;
    for (auto p : in) b.inputs.push_back(CUdeviceptr(p));
    for (auto p : params) b.params.push_back(CUdeviceptr(p));
    for (auto p : out) b.outputs.push_back(CUdeviceptr(p));
    plan_->run(b, reinterpret_cast<CUstream>(stream));
  }
  std::vector<std::pair<std::string, std::vector<int64_t>>> output_specs() const {
    std::vector<std::pair<std::string, std::vector<int64_t>>> specs;
    std::vector<const PlanBuffer*> outs;
    for (auto& b : plan_->plan().buffers)
      if (b.role == BufferRole::output) outs.push_back(&b);
    std::sort(outs.begin(), outs.end(), [](auto* a, auto* b) { return a->index < b->index; });
    for (auto* b : outs) specs.push_back({to_string(b->dtype), b->shape});
    return specs;
  }

 private:
  std::unique_ptr<LoadedPlan> plan_;
};

using PtrSets = std::vector<std::vector<uintptr_t>>;
using PerSet = std::vector<std::vector<double>>;  // [set][output]

// One task as Python hands it over: PyTorch's tensors (device pointers) as a DeviceTask, so inputs and references
// never leave the GPU, with its database and compiler, and the strict tier per set and output (empty: the global
// one). Built with the GIL released (it sets up the CUDA context).
struct BorrowedTask {
  TaskSpec spec;
  std::unique_ptr<DeviceTask> task;
  MeasurementDB db;
  Compiler compiler{{.cache_dir = default_cache_dir()}};
  BorrowedTask(const std::string& graph_json, const std::string& name, const PtrSets& sets, const PtrSets& refs,
               const std::vector<uintptr_t>& params, const std::string& db_path, double eager_ms, double compile_ms,
               const PerSet& strict_tolerance = {})
      : spec{name, graph_from_json(nlohmann::json::parse(graph_json)), eager_ms, compile_ms}, db(db_path) {
    auto ptrs = [](const PtrSets& v) {
      std::vector<std::vector<CUdeviceptr>> out;
      for (auto& s : v) out.emplace_back(s.begin(), s.end());
      return out;
    };
    SetTolerances tolerances(strict_tolerance, int(sets.size()), int(spec.graph.outputs.size()), Tolerance{});
    ensure_context();
    task = std::make_unique<DeviceTask>(spec.graph, ptrs(sets), ptrs(refs), std::vector<CUdeviceptr>(params.begin(), params.end()),
                                        std::move(tolerances));
  }
};

// The on-policy learner seen from Python (python/kforge/train.py hosts the tasks on PyTorch's GPU tensors).
class Trainer {
 public:
  Trainer(const std::string& checkpoint_dir, int samples, int compile_threads, uint64_t seed, double learning_rate,
          double entropy_bonus, const std::string& versions) {
    trainer_ = std::make_unique<PolicyTrainer>(TrainerOptions{
        .checkpoint_dir = checkpoint_dir, .samples = samples, .compile_threads = compile_threads,
        .policy = {.learning_rate = learning_rate, .entropy_bonus = entropy_bonus, .seed = seed}, .versions = versions});
  }
  std::string collect(const std::string& graph_json, const std::string& name, const PtrSets& sets, const PtrSets& refs,
                      const std::vector<uintptr_t>& params, const std::string& db_path, double eager_ms, double compile_ms,
                      const PerSet& strict_tolerance) {
    py::gil_scoped_release release;
    BorrowedTask t(graph_json, name, sets, refs, params, db_path, eager_ms, compile_ms, strict_tolerance);
    return trainer_->collect(t.spec, *t.task, t.db, t.compiler).dump();
  }
  std::string update(int64_t tasks_done) {
    py::gil_scoped_release release;
    return trainer_->update(tasks_done).dump();
  }
  std::string progress() { return trainer_->policy().progress().dump(); }
  int64_t step() { return trainer_->policy().step(); }
  bool resumed() const { return trainer_->resumed(); }

 private:
  std::unique_ptr<PolicyTrainer> trainer_;
};

}  // namespace

PYBIND11_MODULE(_core, m) {
  m.doc() = "kforge core: IR, interpreter, code generation and plan runner";
  install_crash_trace_if_asked();
  py::register_exception<UserError>(m, "KforgeError", PyExc_ValueError);
  m.def("version", [] { return std::string("0.1.0"); });
  m.def("check_graph", [](const std::string& j) { return graph_to_json(graph_from_json(nlohmann::json::parse(j))).dump(); });
  m.def("decompose", [](const std::string& j) { return graph_to_json(decompose(graph_from_json(nlohmann::json::parse(j)))).dump(); });
  m.def("lower", [](const std::string& j, const std::string& schedule) {
    Graph g = graph_from_json(nlohmann::json::parse(j));
    Schedule s = schedule.empty() ? Schedule{} : schedule_from_json(nlohmann::json::parse(schedule));
    return lower(g, s).to_json().dump();
  }, py::arg("graph_json"), py::arg("schedule_json") = "");
  m.def("interpret", [](const std::string& j, const std::vector<py::array>& inputs, const std::vector<py::array>& params) {
    Graph g = decompose(graph_from_json(nlohmann::json::parse(j)));
    std::vector<HostTensor> in, pa;
    for (size_t i = 0; i < inputs.size() && i < g.inputs.size(); ++i) in.push_back(to_host(inputs[i], g.at(g.inputs[i]).type, "input " + std::to_string(i)));
    for (size_t i = 0; i < params.size() && i < g.params.size(); ++i) pa.push_back(to_host(params[i], g.at(g.params[i]).type, "param " + std::to_string(i)));
    std::vector<py::array> out;
    for (auto& t : interpret(g, in, pa)) out.push_back(from_host(t));
    return out;
  });
  m.def("optimize", [](const std::string& graph_json, const std::string& name,
                       const std::vector<std::vector<uintptr_t>>& sets, const std::vector<std::vector<uintptr_t>>& refs,
                       const std::vector<uintptr_t>& params, int budget, const std::string& db_path, double eager_ms,
                       double compile_ms, uint64_t seed, bool progress, const std::string& versions,
                       const std::string& policy, const std::string& cost_model, const std::string& checkpoint,
                       const PerSet& strict_tolerance) {
    OptimizeResult r;
    {
      py::gil_scoped_release release;
      BorrowedTask t(graph_json, name, sets, refs, params, db_path, eager_ms, compile_ms, strict_tolerance);
      OptimizeOptions opts;
      opts.budget = budget;
      opts.seed = seed;
      opts.progress = progress;
      opts.versions = versions;
      opts.policy = policy_from_string(policy);
      opts.cost_model = cost_model;
      if (!checkpoint.empty()) opts.checkpoint = checkpoint;
      r = optimize(t.spec, *t.task, t.db, t.compiler, opts);
    }
    nlohmann::json out = {{"gpu", r.gpu}, {"copy_gbs", r.copy_gbs}, {"policy", r.policy}, {"candidates", r.candidates},
                          {"compiled", r.compiled}, {"correct", r.correct}, {"strict", r.strict},
                          {"tier", r.best ? r.best_eval.tier() : "failed"}, {"log", r.best ? r.best_eval.log : r.last_failure}};
    if (r.best) {
      out["plan"] = r.best->to_json();
      out["min_bytes"] = r.best->min_bytes();
      out["flops"] = roofline_flops(graph_from_json(nlohmann::json::parse(graph_json)));
      out["native"] = to_json(r.best_eval.native);
      out["reward"] = r.best_eval.reward.reward;
      out["kernels"] = r.best->kernels.size();
      out["kernel_profile"] = r.kernel_profile;
    }
    // The relaxed tier's own winner where it is another plan than the best (a TF32 plan beating every fp32 one).
    if (r.fastest_relaxed && r.best && r.fastest_relaxed->to_json() != r.best->to_json())
      out["relaxed"] = {{"plan", r.fastest_relaxed->to_json()}, {"native", to_json(r.fastest_relaxed_eval.native)},
                        {"reward", r.fastest_relaxed_eval.reward.reward}, {"tier", r.fastest_relaxed_eval.tier()}};
    return out.dump();
  }, py::arg("graph_json"), py::arg("name"), py::arg("sets"), py::arg("refs"), py::arg("params"), py::arg("budget"),
     py::arg("db_path"), py::arg("eager_ms") = 0.0, py::arg("compile_ms") = 0.0, py::arg("seed") = 1,
     py::arg("progress") = true, py::arg("versions") = "", py::arg("policy") = "local", py::arg("cost_model") = "", py::arg("checkpoint") = "",
     py::arg("strict_tolerance") = PerSet{});
  m.def("policy_curves", [](const std::string& graph_json, const std::string& name, const PtrSets& sets, const PtrSets& refs,
                            const std::vector<uintptr_t>& params, const std::string& db_path, double eager_ms, double compile_ms,
                            int candidates, int reference, const std::vector<std::string>& policies,
                            const std::string& checkpoint, const std::string& cost_model, uint64_t seed, int compile_threads,
                            const std::string& versions) {
    py::gil_scoped_release release;
    BorrowedTask t(graph_json, name, sets, refs, params, db_path, eager_ms, compile_ms);
    CurveOptions o{.candidates = candidates, .reference = reference, .policies = policies,
                   .search = {.cost_model = cost_model, .checkpoint = checkpoint, .seed = seed, .versions = versions},
                   .compile_threads = compile_threads};
    return policy_curves(t.spec, *t.task, t.db, t.compiler, o).dump();
  }, "Best time after 1..N candidates for each policy, and a longer random search's best (search/policy_curves.h).");
  m.def("measure_schedules", [](const std::string& graph_json, const std::string& name, const PtrSets& sets, const PtrSets& refs,
                                const std::vector<uintptr_t>& params, const std::string& db_path,
                                const std::vector<std::string>& schedules, const PerSet& strict_tolerance,
                                const std::string& versions, double eager_ms) {
    // Given schedules, each checked and timed in the environment (native protocol) and recorded in the database:
    // what a sweep over one action measures (python/kforge/library_sweep.py). eager_ms sets the run limit as the
    // search's (max(250 ms, 50 x eager)).
    std::vector<Schedule> parsed;
    for (auto& s : schedules) parsed.push_back(schedule_from_json(nlohmann::json::parse(s)));
    py::gil_scoped_release release;
    BorrowedTask t(graph_json, name, sets, refs, params, db_path, eager_ms, 0.0, strict_tolerance);
    PlanMeter meter(t.spec, *t.task, t.db, t.compiler, versions, 4);
    nlohmann::json out = {{"gpu", meter.gpu()}, {"copy_gbs", meter.copy_gbs()}, {"results", nlohmann::json::array()}};
    for (auto& r : meter.measure(parsed))
      out["results"].push_back({{"key", r.key}, {"repeat", r.repeat}, {"eval", r.eval.to_json()}});
    return out.dump();
  }, py::arg("graph_json"), py::arg("name"), py::arg("sets"), py::arg("refs"), py::arg("params"), py::arg("db_path"),
     py::arg("schedules"), py::arg("strict_tolerance") = PerSet{}, py::arg("versions") = "", py::arg("eager_ms") = 0.0,
     "Each schedule's evaluation (env/evaluator.h's JSON), in order, recorded in db_path (search/measure.h).");
  m.def("candidate_sequences", [](const std::string& graph_json, int candidates, const std::vector<std::string>& policies,
                                  const std::string& checkpoint, const std::string& cost_model, uint64_t seed, double copy_gbs) {
    // GPU-free: what each policy would measure first on this graph, in order (the reference sequence last).
    py::gil_scoped_release release;
    CurveOptions o{.candidates = candidates, .reference = candidates, .policies = policies,
                   .search = {.cost_model = cost_model, .checkpoint = checkpoint, .seed = seed}};
    nlohmann::json out = nlohmann::json::object();
    for (auto& [name, seq] : candidate_sequences(graph_from_json(nlohmann::json::parse(graph_json)), o, copy_gbs)) {
      out[name] = nlohmann::json::array();
      for (auto& s : seq) out[name].push_back(to_json(s));
    }
    return out.dump();
  }, py::arg("graph_json"), py::arg("candidates"), py::arg("policies"), py::arg("checkpoint") = "",
     py::arg("cost_model") = "", py::arg("seed") = 1, py::arg("copy_gbs") = 4000.0,
     "Each policy's first distinct schedules for a graph, without a GPU (search/policy_curves.h).");
  m.def("learned_policy_available", &learned_policy_available, "Whether this module was built with libtorch.");
  m.def("warm_start_from_db", [](const std::string& db_path, const std::string& dir, int top, int epochs, uint64_t seed) {
    // GPU-free: behaviour cloning of the fastest recorded plans, continuing the newest checkpoint in `dir`.
    py::gil_scoped_release release;
    MeasurementDB db(db_path);
    auto policy = resume_or_start(dir, {.seed = seed});
    nlohmann::json stats = warm_start_from_db(*policy, db, top, epochs);
    stats["checkpoint"] = checkpoint_path(dir, policy->step());
    policy->save(stats["checkpoint"]);
    return stats.dump();
  }, py::arg("db_path"), py::arg("checkpoint_dir"), py::arg("top") = 4, py::arg("epochs") = 50, py::arg("seed") = 1);
  py::class_<Trainer>(m, "Trainer")
      .def(py::init<const std::string&, int, int, uint64_t, double, double, const std::string&>(), py::arg("checkpoint_dir"),
           py::arg("samples") = 16, py::arg("compile_threads") = 16, py::arg("seed") = 1, py::arg("learning_rate") = 3e-3,
           py::arg("entropy_bonus") = 0.01, py::arg("versions") = "")
      .def("collect", &Trainer::collect, py::arg("graph_json"), py::arg("name"), py::arg("sets"), py::arg("refs"),
           py::arg("params"), py::arg("db_path"), py::arg("eager_ms") = 0.0, py::arg("compile_ms") = 0.0,
           py::arg("strict_tolerance") = PerSet{})
      .def("update", &Trainer::update, py::arg("tasks_done"))
      .def("progress", &Trainer::progress)
      .def("step", &Trainer::step)
      .def("resumed", &Trainer::resumed);
  m.def("reward", [](bool correct, double ms, double eager_ms, double compile_ms, double floor_ms) {
    RewardResult r = compute_reward({correct, ms, eager_ms, compile_ms, floor_ms});
    return py::dict(py::arg("reward") = r.reward, py::arg("speedup_eager") = r.speedup_eager,
                    py::arg("speedup_compile") = r.speedup_compile, py::arg("speedup_best") = r.speedup_best,
                    py::arg("suspect") = r.suspect);
  }, "The environment's reward (env/reward.h), for candidates timed on the Python side.");
  py::class_<Runner>(m, "Runner")
      .def(py::init<const std::string&, const std::string&>(), py::arg("plan_json"), py::arg("cache_dir") = "")
      .def("run", &Runner::run, py::arg("inputs"), py::arg("params"), py::arg("outputs"), py::arg("stream"))
      .def("output_specs", &Runner::output_specs);
}
