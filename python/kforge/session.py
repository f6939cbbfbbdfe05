"""`python -m kforge.session PROBLEM.py [PROBLEM.py ...] --budget N --db DB --reports DIR --workdir DIR`

One process hosts the whole loop for one or many problems: PyTorch traces the problem, draws the hidden input
sets and computes their references on the GPU, and times eager and torch.compile; the C++ search
(`kforge._core.optimize`) reads those tensors in place, so inputs of several GB never go through a disk; then
the best plan is checked on a fresh draw and timed side by side with eager and torch.compile (kb protocol).
`kforge optimize PROBLEM.py` runs this for one problem; the suite driver runs it for many in one process.

For each problem it writes WORKDIR/NAME/{task.json, best_plan.json, kb.json} (a bundle without sets, enough for
`kforge export`) and REPORTS/NAME.json (docs/interfaces.md), and prints the table row."""
import argparse
import json
import math
import sys
import time
import traceback
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path

import torch

from kforge import footprint, log, roofline
from kforge.bridge import TOLERANCE, baselines, best_baseline_ms, flags, imported_task, output_ranges, ratio, set_tolerance
from kforge.bundle import read_inputs, read_outputs, read_params, read_strict_tolerance, read_task
from kforge.errors import ImportProblemError
from kforge.kbtime import TIER_ORDER, HiddenSets, check_and_time, plan_tier_on_sets, tier_of, worst_tier
from kforge.launch import KforgeFunction
from kforge.problem import PRECISIONS, Problem, load_problem, task_name

HEADER = ("| problem | eager ms | compile ms | kforge ms | x eager | x compile | x best | tier | relaxed ms "
          "| x best (relaxed) | TF32-off best ms | x best (TF32 off) | protocol |\n|---|---|---|---|---|---|---|---|---|---|---|---|---|")


def ptrs(tensors) -> list[int]:
    return [t.data_ptr() for t in tensors]


@dataclass
class HostedTask:
    """A problem on the GPU: its model, traced graph, params, hidden input sets with references and the strict
    tier's tolerance per set and output (bridge.strict_tolerance), and baselines. The first `resident` sets are on
    the GPU; the others, where they do not all fit (footprint.resident_sets), in pinned host memory."""
    problem: object
    model: torch.nn.Module
    graph: dict
    params: list
    sets: list
    refs: list
    strict_tolerance: list  # [set][output]
    flags: dict
    base: dict  # {"eager": Stats, "compile": Stats (absent without the compile baseline or where it failed:
                #  "compile_failed", the reason)}
    compiled: object = None  # torch.compile(model), when its baseline was timed
    resident: int = 0

    def pointers(self) -> tuple:
        """The resident sets' device pointers (what the C++ search verifies on), the params'."""
        n = self.resident
        on_gpu = [t for s in self.sets[:n] + self.refs[:n] + [self.params] for t in s]
        if any(not t.is_cuda for t in on_gpu):
            raise RuntimeError("a resident hidden set or param is not in GPU memory (a bug of host_task)")
        return [ptrs(s) for s in self.sets[:n]], [ptrs(r) for r in self.refs[:n]], ptrs(self.params)

    def resident_tolerance(self) -> list:
        """The strict tier per resident set and output, parallel to pointers()' sets."""
        return self.strict_tolerance[:self.resident]

    def hidden(self) -> HiddenSets:
        """Every set, resident or not (a streamed one is copied to the GPU where it is checked)."""
        return HiddenSets(self.sets, self.refs, [set_tolerance(strict) for strict in self.strict_tolerance])

    def streamed(self) -> HiddenSets:
        n = self.resident
        return HiddenSets(self.sets[n:], self.refs[n:], [set_tolerance(s) for s in self.strict_tolerance[n:]])

    def baseline_ms(self, which: str) -> float:
        """A baseline's median, 0.0 where it was not timed (what the C++ side reads as unknown)."""
        return median_ms(self.base, which) or 0.0


def dense(tensors) -> list:
    return [t.contiguous() for t in tensors]


def on_host(tensors) -> list:
    return [t.to("cpu").pin_memory() for t in tensors]


def host_task(path, num_sets: int = 5, compile_baseline: bool = True) -> HostedTask:
    """Imports a problem (as `kforge import` does, one import path, kept in memory: sets of several GB never go
    through a disk) or loads a bundle from `kforge import` onto the GPU, and times its baselines (kb protocol).
    The sets that do not fit beside the task's working memory stay in pinned host memory (footprint.py).
    Without compile_baseline only eager is timed: torch.compile takes seconds per task, which training cannot
    afford on every task; the reward then measures speed against eager alone."""
    footprint.release_cached_memory()  # what an earlier task of this process freed counts as free here
    if not isinstance(path, Problem) and Path(path).is_dir():
        stored = read_task(path)
        if stored.get("importer", {}).get("opaque"):  # a bundle kept whole: nothing for kforge's generator
            raise ImportProblemError(stored["source"], f"kept whole at import: {stored['importer'].get('why')}")
        problem, graph = load_problem(stored["source"], stored.get("precision")), stored["graph"]
        footprint.check_fits(graph, footprint.free_bytes(), problem.path)
        resident = footprint.resident_sets(graph, stored["num_sets"], footprint.free_bytes())
        footprint.check_host_fits(graph, stored["num_sets"] - resident, footprint.host_available_bytes(), problem.path)
        params = read_params(path, graph, "cuda")

        def held(read, k):  # a resident set on the GPU, the others pinned in host memory
            return read(path, k, graph, "cuda") if k < resident else on_host(read(path, k, graph, "cpu"))
        sets = [held(read_inputs, k) for k in range(stored["num_sets"])]
        refs = [held(read_outputs, k) for k in range(stored["num_sets"])]
        strict, task_flags = read_strict_tolerance(stored), stored["flags"]
    else:  # a problem file
        imported = imported_task(path, "cuda", keep_whole=False)
        problem, graph, params = imported.problem, imported.graph, imported.params
        resident = footprint.resident_sets(graph, num_sets, footprint.free_bytes())
        # Where some sets stream, every set waits in host memory while the others are drawn (a float64 reference
        # of a GB-sized set needs several times its size), and the resident ones come back once all are drawn.
        streams = resident < num_sets
        if streams:
            footprint.check_host_fits(graph, num_sets, footprint.host_available_bytes(), problem.path)
        sets, refs, strict, ranges = [], [], [], None
        for inputs_k, outputs_k, strict_k in imported.hidden_sets(num_sets):
            imported.inputs0 = None  # set 0's inputs: in `sets` from here on, the import's hold dropped
            ranges = output_ranges(outputs_k, ranges)
            inputs_k, outputs_k = dense(inputs_k), dense(outputs_k)  # the plans read raw pointers, as a bundle's
            sets.append(on_host(inputs_k) if streams else inputs_k)
            refs.append(on_host(outputs_k) if streams else outputs_k)
            strict.append(strict_k)
            del inputs_k, outputs_k
        sets[:resident] = [[t.to("cuda") for t in s] for s in sets[:resident]]
        refs[:resident] = [[t.to("cuda") for t in r] for r in refs[:resident]]
        task_flags = flags(ranges)
        del imported
    model = problem.build_model().to("cuda")  # a fresh model: the import's ran every set
    base, compiled = baselines(model, sets[0], compile_baseline)
    torch.cuda.synchronize()  # the search runs on its own stream and reads these tensors
    return HostedTask(problem, model, graph, params, sets, refs, strict, task_flags, base, compiled, resident)


def optimize_problem(path, budget: int, db: str, workdir: Path, num_sets: int = 5, seed: int = 1,
                     progress: bool = True, policy: str = "local", cost_model: str = "", checkpoint: str = "",
                     compile_baseline: bool = True) -> dict:
    import kforge._core as core

    hosted = host_task(path, num_sets, compile_baseline)
    problem, model, graph, params, compiled = hosted.problem, hosted.model, hosted.graph, hosted.params, hosted.compiled
    sets, task_flags, base, inputs0 = hosted.sets, hosted.flags, hosted.base, hosted.sets[0]
    num_sets = len(sets)

    name = problem.name
    out_dir = Path(path) if not isinstance(path, Problem) and Path(path).is_dir() else workdir / name
    out_dir.mkdir(parents=True, exist_ok=True)
    task = {"name": name, "source": str(problem.path), "graph": graph, "gpu": torch.cuda.get_device_name(),
            "torch_version": torch.__version__, "created": datetime.now(timezone.utc).isoformat(timespec="seconds"),
            "baselines": base, "num_sets": num_sets, "flags": task_flags, "tolerance": TOLERANCE,
            "strict_tolerance": hosted.strict_tolerance, "precision": problem.precision}
    if not (out_dir / "task.json").exists():  # a bundle keeps its own task.json (with its sets)
        (out_dir / "task.json").write_text(json.dumps(task, indent=1))
    # The search verifies on the resident sets only: a pointer into pinned host memory is valid on the GPU too
    # (unified addressing), and a plan would read it across PCIe at a hundredth of the speed.
    set_ptrs, ref_ptrs, param_ptrs = hosted.pointers()
    result = json.loads(core.optimize(json.dumps(graph), name, set_ptrs, ref_ptrs, param_ptrs, budget, db,
                                      base["eager"]["median_ms"], hosted.baseline_ms("compile"), seed, progress,
                                      f"torch {torch.__version__}", policy, cost_model, checkpoint,
                                      hosted.resident_tolerance()))
    report = {"name": name, "source": str(problem.path), "gpu": result["gpu"], "torch_version": torch.__version__,
              "protocol": "kb", "policy": result["policy"], "candidates": result["candidates"], "correct_candidates": result["correct"],
              "strict_candidates": result["strict"], "copy_bandwidth_gbs": result["copy_gbs"], "flags": task_flags,
              "eager_ms": base["eager"]["median_ms"], "compile_ms": median_ms(base, "compile"),
              "strict_tolerance": [max(t, default=TOLERANCE["strict"]) for t in hosted.strict_tolerance], "error": None}
    if "compile_failed" in base:
        report["compile_failed"] = base["compile_failed"]
    report["strict_tolerance_widest"] = max(report["strict_tolerance"])
    if "plan" not in result:
        report.update(tier="failed", error=f"no correct candidate among {result['candidates']}: {result['log'][:2000]}")
        return report
    plan_json = json.dumps(result["plan"])
    (out_dir / "best_plan.json").write_text(plan_json)

    # kb protocol: a fresh draw checked against its exact reference, the baselines' tiers there and on every hidden
    # set (as the plan's tier was found), then eager, torch.compile (and both with TF32 off, where the defaults miss
    # the strict tier) and kforge side by side.
    kforge = KforgeFunction(core.Runner(plan_json), graph)
    kb = check_and_time(problem, model, compiled, kforge, params, inputs0, hosted.hidden())
    check = kb["check"]
    (out_dir / "kb.json").write_text(json.dumps(kb, indent=1))
    eager, comp, ours = (median_ms(kb, k) for k in ("eager", "compile", "kforge"))
    # The search verified on the resident sets; the plan must hold its tier on the streamed ones too.
    tier = held_tier(result["tier"], check, plan_tier_on_sets(kforge, params, hosted.streamed()))
    native = result["native"]["median_ms"]
    report["strict_tolerance_widest"] = max(report["strict_tolerance_widest"], check["strict_tolerance"])
    report.update(tier=tier, eager_ms=eager, compile_ms=comp, kforge_ms=ours, kforge_native_ms=native,
                  eager_tier=kb["baseline_tiers"]["eager"], compile_tier=kb["baseline_tiers"].get("compile"),
                  speedup_eager=eager / ours, speedup_compile=ratio(comp, ours),
                  speedup_best=best_baseline_ms(eager, comp) / ours,
                  **fp32_baselines_report(kb, ours, tier),
                  bytes_min=result["min_bytes"], bandwidth_gbs=result["min_bytes"] / (ours * 1e-3) / 1e9,
                  native_bandwidth_gbs=result["min_bytes"] / (native * 1e-3) / 1e9,
                  best_schedule=result["plan"]["schedule"], kernels=result["kernels"], reward=result["reward"], kb=kb,
                  kernel_profile=result.get("kernel_profile"),
                  below_fp32=roofline.below_fp32(result["plan"]),  # TF32/fp16 arithmetic, whatever tier it passed
                  **roofline.report(result["min_bytes"], result.get("flops", 0.0), result["copy_gbs"], result["plan"], ours))
    report.update(resident_sets=hosted.resident, streamed_sets=len(sets) - hosted.resident)
    if tier == "failed":
        report["error"] = ("the best plan failed the check on a fresh input draw" if not check["relaxed"] else
                           "the best plan failed the check on a hidden set streamed from host memory")
    report.update(relaxed_tier_report(result, hosted, out_dir, report))
    return report


def held_tier(searched: str, check: dict, on_streamed: str) -> str:
    """The tier a plan holds: the worst of the search's (on the resident sets), its fresh draw's (check) and the
    streamed sets'; "failed" below relaxed."""
    tier = worst_tier([searched if searched in TIER_ORDER else "none", tier_of(check), on_streamed])
    return "failed" if tier == "none" else tier


def fp32_baselines_report(kb: dict, ours: float, tier: str) -> dict:
    """The strict tier's baselines (kbtime.check_and_time): eager and torch.compile with TF32 off where PyTorch's
    defaults miss the strict tier, else the defaults themselves ("fp32_baselines": "defaults"), and the strict
    plan's speedup over the better of the two (null for a plan outside the strict tier)."""
    eager, comp = median_ms(kb, "eager_fp32"), median_ms(kb, "compile_fp32")
    return {"fp32_baselines": kb["fp32_baselines"], "eager_fp32_ms": eager, "compile_fp32_ms": comp,
            "eager_fp32_tier": kb["baseline_tiers"]["eager_fp32"], "compile_fp32_tier": kb["baseline_tiers"].get("compile_fp32"),
            "speedup_best_fp32": best_baseline_ms(eager, comp) / ours if tier == "strict" else None}


def median_ms(stats: dict, name: str):
    """A timed run's median (kbtime.check_and_time, bridge.baselines), None where it was not timed (torch.compile
    failed on the model)."""
    return stats[name]["median_ms"] if name in stats else None


def relaxed_tier_report(result: dict, hosted: HostedTask, out_dir: Path, report: dict) -> dict:
    """Both tiers in every report: the relaxed tier's fastest plan, where the search found one faster than the
    best (strict-first) plan, is checked on its own fresh draw and timed side by side with eager and
    torch.compile again (kb protocol); otherwise the relaxed tier's numbers are the best plan's."""
    import kforge._core as core

    if "relaxed" not in result:
        return best_plan_as_relaxed(report)
    plan_json = json.dumps(result["relaxed"]["plan"])
    (out_dir / "relaxed_plan.json").write_text(plan_json)
    kforge = KforgeFunction(core.Runner(plan_json), hosted.graph)
    kb = check_and_time(hosted.problem, hosted.model, hosted.compiled, kforge, hosted.params, hosted.sets[0])
    check = kb["check"]
    eager, comp, ours = (median_ms(kb, k) for k in ("eager", "compile", "kforge"))
    tier = held_tier(result["relaxed"]["tier"], check, plan_tier_on_sets(kforge, hosted.params, hosted.streamed()))
    if tier == "failed":  # the best plan, which passed, stands for the relaxed tier
        return {**best_plan_as_relaxed(report),
                "relaxed_error": "the relaxed tier's fastest plan failed the check on a fresh draw"}
    return {"relaxed_tier": tier, "relaxed_ms": ours, "relaxed_native_ms": result["relaxed"]["native"]["median_ms"],
            "strict_tolerance_widest": max(report.get("strict_tolerance_widest", TOLERANCE["strict"]),
                                           check.get("strict_tolerance", TOLERANCE["strict"])),
            "relaxed_speedup_eager": eager / ours, "relaxed_speedup_compile": ratio(comp, ours),
            "relaxed_speedup_best": best_baseline_ms(eager, comp) / ours, "relaxed_schedule": result["relaxed"]["plan"]["schedule"],
            "relaxed_kb": kb}


def best_plan_as_relaxed(report: dict) -> dict:
    """The relaxed-tier fields when the best plan stands for that tier too (a strict plan passes it)."""
    if report["tier"] == "failed":
        return {"relaxed_tier": "failed"}
    return {"relaxed_tier": report["tier"], "relaxed_ms": report["kforge_ms"],
            **{f"relaxed_{k}": report[k] for k in ("speedup_eager", "speedup_compile", "speedup_best")}}


def baselines_alone(path, precision: str | None = None) -> dict:
    """eager's and torch.compile's times (kb protocol) of a problem kforge cannot take (an op it lacks): the user
    still learns what PyTorch does with it. Empty where the problem does not even run in PyTorch."""
    try:
        problem = path if isinstance(path, Problem) else load_problem(path, precision)
        base, _ = baselines(problem.build_model().to("cuda"), problem.draw_inputs(1, "cuda"))
        return {"eager_ms": base["eager"]["median_ms"], "compile_ms": median_ms(base, "compile"),
                **({"compile_failed": base["compile_failed"]} if "compile_failed" in base else {})}
    except Exception as e:  # noqa: BLE001 -- the report keeps the import's reason; this one is said on the side
        log.logger.warning("%s: eager and torch.compile not timed either: %s: %s", Path(str(path)).stem,
                           type(e).__name__, str(e)[:300])
        return {}


def row(r: dict) -> str:
    fp32 = [r[k] for k in ("eager_fp32_ms", "compile_fp32_ms") if isinstance(r.get(k), (int, float))]
    values = {**r, "fp32_best_ms": min(fp32, default=None)}

    def f(key, spec=".3f"):
        v = values.get(key)
        return format(v, spec) if isinstance(v, (int, float)) and math.isfinite(v) and v > 0 else "-"
    return (f"| {r['name']} | {f('eager_ms')} | {f('compile_ms')} | {f('kforge_ms')} | {f('speedup_eager', '.2f')} | "
            f"{f('speedup_compile', '.2f')} | {f('speedup_best', '.2f')} | {r.get('tier', 'failed')} | "
            f"{f('relaxed_ms')} | {f('relaxed_speedup_best', '.2f')} | {f('fp32_best_ms')} | "
            f"{f('speedup_best_fp32', '.2f')} | kb |")


# Exit status when a problem left this process's CUDA context unusable (a sticky error such as an illegal address
# in a generated kernel): its report is written; bench/run_suite.py starts a fresh process for the rest.
CONTEXT_LOST = 3


def cuda_context_alive() -> bool:
    try:
        torch.cuda.synchronize()
        return torch.ones(1, device="cuda").add_(1).item() == 2.0
    except Exception:  # noqa: BLE001 -- any error here means the context is gone
        return False


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m kforge.session")
    parser.add_argument("problems", nargs="+", help="problem files or bundle folders from `kforge import`")
    parser.add_argument("--budget", type=int, default=32)
    parser.add_argument("--db", default="kforge.db")
    parser.add_argument("--reports", default=None, help="folder for NAME.json reports")
    parser.add_argument("--report", default=None, help="report path (one problem)")
    parser.add_argument("--workdir", default="kforge_out")
    parser.add_argument("--sets", type=int, default=5)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--precision", choices=tuple(PRECISIONS),
                        help="KernelBench's precision for problem files: Model and the float inputs cast to it")
    parser.add_argument("--no-progress", action="store_true", help="no progress bars")
    log.add_arguments(parser)
    parser.add_argument("--policy", choices=("local", "random", "costmodel", "trained", "untrained"), default="trained")
    parser.add_argument("--cost-model", default="", help="model file for --policy costmodel (kforge train-costmodel)")
    parser.add_argument("--checkpoint", default="", help="policy checkpoint file or folder for --policy trained "
                        "(default kforge_policy/: its newest; with none, the local policy, with a notice)")
    args = parser.parse_args(argv)
    log.configure(args)
    if not torch.cuda.is_available():
        log.logger.error("error: optimize needs a CUDA GPU (none is visible to PyTorch)")
        return 2
    failures = 0
    print(HEADER, flush=True)
    # One problem: the search's own bar over its candidates (with its ETA); several: a bar over the problems.
    several = len(args.problems) > 1
    candidates_bar = not args.no_progress and not several and not log.quiet()
    problems = log.progress(args.problems, "problems") if several and not args.no_progress else args.problems
    for path in problems:
        t0 = time.time()
        try:
            task = load_problem(path, args.precision) if args.precision and Path(path).is_file() else path
            report = optimize_problem(task, args.budget, args.db, Path(args.workdir), args.sets, args.seed,
                                      candidates_bar, args.policy, args.cost_model, args.checkpoint)
        except ImportProblemError as e:
            report = {"name": task_name(Path(path).stem, args.precision), "tier": "failed", "error": str(e),
                      **baselines_alone(path, args.precision)}
        except Exception as e:  # noqa: BLE001 -- one problem's failure must not end the others
            traceback.print_exc()
            report = {"name": task_name(Path(path).stem, args.precision), "tier": "failed", "error": f"{type(e).__name__}: {e}"}
        report["seconds"] = round(time.time() - t0, 1)
        failures += report["tier"] == "failed"
        out = Path(args.report) if args.report and len(args.problems) == 1 else (
            Path(args.reports) / f"{report['name']}.json" if args.reports else None)
        if out:
            out.parent.mkdir(parents=True, exist_ok=True)
            out.write_text(json.dumps(report, indent=1))
        log.say(row(report) + (f"  <- {report['error'][:300]}" if report.get("error") else ""))
        log.logger.debug("%s: %s candidates, %s correct, %.1f s", report["name"], report.get("candidates", 0),
                         report.get("correct_candidates", 0), report["seconds"])
        if report["tier"] == "failed" and not cuda_context_alive():
            print(f"kforge: the CUDA context is unusable after {report['name']}; stopping this process "
                  f"(exit {CONTEXT_LOST}) so that the rest run in a fresh one", file=sys.stderr, flush=True)
            return CONTEXT_LOST
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
