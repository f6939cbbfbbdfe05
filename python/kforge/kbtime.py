"""`python -m kforge.kbtime BUNDLE PLAN_JSON -o OUT.json`

Checks a kforge plan against the exact reference on a fresh input draw (and the baselines' own outputs, as they
are timed, against the same reference, and on every hidden set of the bundle), then times eager, torch.compile
and the plan side by side in one process under the kb protocol; where eager or torch.compile as PyTorch runs them
by default miss the strict tier, also both with TF32 off. Writes check_and_time's result: {"eager", "compile",
"kforge", "eager_fp32", "compile_fp32": Stats, "check": {"strict", "relaxed", "max_abs_err", "strict_tolerance"},
"baseline_tiers": {name: "strict"|"relaxed"|"none"}, "fp32_baselines": "timed"|"defaults"}."""
import argparse
import json
import math
import sys
from dataclasses import dataclass
from pathlib import Path

import torch

from kforge import log, timing
from kforge.bridge import TOLERANCE, as_list, compiled_model, exact_fp32, reference_outputs, set_tolerance
from kforge.bundle import read_inputs, read_outputs, read_params, read_strict_tolerance, read_task
from kforge.dtypes import HALF
from kforge.fx_to_ir import lookup
from kforge.launch import KforgeFunction
from kforge.problem import load_problem, random_seed


def per_output(tol, n: int) -> list[float]:
    """A tier's tolerance for each of n outputs: one number for all, or a list with one per output."""
    return list(tol) if isinstance(tol, (list, tuple)) else [tol] * n


COMPARE_CHUNK = 1 << 26  # elements: allclose's and the float64 difference's temporaries of a GB-sized output add up


def chunks(g: torch.Tensor, e: torch.Tensor):
    """Matching pieces of two tensors of one shape, flattened."""
    g, e = g.reshape(-1), e.reshape(-1)
    return [(g[i:i + COMPARE_CHUNK], e[i:i + COMPARE_CHUNK]) for i in range(0, max(e.numel(), 1), COMPARE_CHUNK)]


def compare(got: list[torch.Tensor], expected: list[torch.Tensor], tolerance: dict) -> dict:
    """Both tiers of docs/interfaces.md (atol = rtol = tol), as torch.allclose judges them: NaN never passes. A
    tier's tolerance is one number, or one per output (a hidden set's strict tier: bridge.strict_tolerance).
    max_abs_err is null where it is no number (a shape or dtype mismatch, a NaN): JSON cannot carry NaN."""
    if [(t.dtype, t.shape) for t in got] != [(t.dtype, t.shape) for t in expected]:
        return {**dict.fromkeys(tolerance, False), "max_abs_err": None}
    def wide(t):  # half precision judged in float32, as the C++ verifier does (env/verify.cpp)
        return t.float() if t.dtype in HALF else t
    result = {tier: all(all(torch.allclose(wide(gc), wide(ec), rtol=t, atol=t) for gc, ec in chunks(g, e))
                        for g, e, t in zip(got, expected, per_output(tol, len(expected))))
              for tier, tol in tolerance.items()}
    errors = [max(float((gc.double() - ec.double()).abs().max()) for gc, ec in chunks(g, e))
              for g, e in zip(got, expected) if e.numel()]
    worst = max(errors, default=0.0, key=lambda x: math.inf if math.isnan(x) else x)
    result["max_abs_err"] = worst if math.isfinite(worst) else None
    return result


@dataclass
class HiddenSets:
    """A task's hidden input sets, each with its reference outputs and tolerance (bridge.set_tolerance)."""
    inputs: list
    refs: list
    tolerances: list


def poisoned(kforge: KforgeFunction) -> list[torch.Tensor]:
    """Output buffers full of a value no correct kernel leaves behind, so an element never written shows."""
    def fill(dtype):
        return math.nan if dtype.is_floating_point else (True if dtype == torch.bool else -(2 ** 62))
    return [torch.full(shape, fill(dtype), dtype=dtype, device="cuda") for dtype, shape in kforge.output_specs]


def kbtime(bundle, plan_path) -> dict:
    import kforge._core as core  # only here: the rest of the package works without the C++ build

    task = read_task(bundle)
    graph = task["graph"]
    problem = load_problem(task["source"], task.get("precision"))
    model = problem.build_model().to("cuda")
    params = read_params(bundle, graph, "cuda")
    for p, t in zip(graph["params"], params):
        if not torch.equal(lookup(model, p["name"]), t):
            raise RuntimeError(f"param {p['name']} differs from the bundle: {task['source']} changed since import")
    kforge = KforgeFunction(core.Runner(Path(plan_path).read_text()), graph)
    sets = range(task["num_sets"])
    hidden = HiddenSets([read_inputs(bundle, k, graph, "cuda") for k in sets],
                        [read_outputs(bundle, k, graph, "cuda") for k in sets],
                        [set_tolerance(strict) for strict in read_strict_tolerance(task)])
    compiled, failed = compiled_model(model, [t.clone() for t in hidden.inputs[0]])  # on clones: a model may write its inputs
    result = check_and_time(problem, model, compiled, kforge, params, hidden.inputs[0], hidden)
    return {**result, "compile_failed": failed} if failed else result


def tf32_off(run):
    """`run` called with TF32 off (bridge.exact_fp32): PyTorch's own float32 arithmetic, the strict tier's
    baseline. The two flag writes around the call are host time inside the kb events, about a microsecond."""
    def call(*args):
        with exact_fp32():
            return run(*args)
    return call


def check_and_time(problem, model, compiled, kforge: KforgeFunction, params, inputs,
                   hidden: HiddenSets | None = None) -> dict:
    """The kb protocol for a plan: checked on a fresh draw (poisoned outputs) against its exact reference, the
    strict tier with that draw's own tolerance (bridge.strict_tolerance); the baselines' own tiers on that draw
    and, given `hidden`, on every hidden set (the worst); then eager, torch.compile and kforge timed side by side
    on `inputs`. Given `hidden`, where eager or torch.compile as PyTorch runs them by default (cuDNN convolutions
    in TF32) miss the strict tier, both are also timed with TF32 off in the same run and their tiers found the
    same way: the strict tier's baselines ("fp32_baselines": "timed"); where the defaults hold it everywhere,
    they are the strict tier's baselines too ("defaults": eager_fp32 and compile_fp32 repeat their numbers).
    Returns {eager, compile, kforge[, eager_fp32, compile_fp32]: Stats, check, baseline_tiers[, fp32_baselines]}."""
    fresh = [t.contiguous() for t in problem.draw_inputs(random_seed(), "cuda")]  # the plan reads dense memory
    expected, strict = reference_outputs(model, fresh)
    tolerance = set_tolerance(strict)
    # torch.compile where it compiled the model (bridge.baselines: where it failed, eager stands alone)
    defaults = {"eager": model, **({"compile": compiled} if compiled is not None else {})}
    with torch.no_grad():
        check = compare(kforge(fresh, params, out=poisoned(kforge)), expected, tolerance)
    check["strict_tolerance"] = max(strict, default=TOLERANCE["strict"])
    tiers = tiers_everywhere(defaults, fresh, expected, tolerance, hidden)
    runs = {name: (lambda run=run: run(*inputs)) for name, run in defaults.items()}
    runs["kforge"] = lambda: kforge(inputs, params)
    timed_fp32 = hidden is not None and any(tier != "strict" for tier in tiers.values())
    if timed_fp32:
        fp32 = {f"{name}_fp32": tf32_off(run) for name, run in defaults.items()}
        fp32 = {name: run for name, run in fp32.items() if runs_on_clones(name, run, fresh)}  # TF32 off recompiles
        tiers.update(tiers_everywhere(fp32, fresh, expected, tolerance, hidden))
        runs.update({name: (lambda run=run: run(*inputs)) for name, run in fp32.items()})
    with torch.no_grad():
        stats = timing.time_interleaved(runs)
    result = {**stats, "check": check, "baseline_tiers": tiers}
    if hidden is not None:
        if not timed_fp32:
            for name in defaults:
                result[f"{name}_fp32"], tiers[f"{name}_fp32"] = stats[name], tiers[name]
        result["fp32_baselines"] = "timed" if timed_fp32 else "defaults"
    return result


def runs_on_clones(name: str, run, inputs) -> bool:
    """Whether `run` runs on clones of `inputs`; where it raises (torch.compile recompiling under other flags can
    fail where its first compile did not), said once in the log: that baseline is left out, not the problem."""
    try:
        with torch.no_grad():
            run(*[t.clone() for t in inputs])
        return True
    except Exception as e:  # noqa: BLE001 -- any failure of the baseline's own
        log.logger.warning("%s failed (%s: %s); left out of the timing", name, type(e).__name__, str(e)[:200])
        return False


def tiers_everywhere(runs: dict, fresh, expected, tolerance: dict, hidden: HiddenSets | None) -> dict:
    """Each run's tier on the fresh draw and, given `hidden`, on every hidden set: the worst."""
    tiers = baseline_tiers(runs, fresh, expected, tolerance)
    if hidden is None:
        return tiers
    on_sets = baseline_tiers_on_sets(runs, hidden.inputs, hidden.refs, hidden.tolerances)
    return {name: worst_tier([tiers[name], on_sets[name]]) for name in runs}


def baseline_tiers(runs: dict, inputs, expected, tolerance: dict) -> dict:
    """The tier each baseline's own output reaches against the exact reference, run as it is timed: under
    PyTorch's defaults (cuDNN convolutions in TF32), or with TF32 off (tf32_off). Where it misses the strict
    tier, the strict tier asks more of kforge than of the baseline it is timed against. On clones: a model may
    write its inputs."""
    with torch.no_grad():
        return {name: tier_of(compare(as_list(run(*[t.clone() for t in inputs])), expected, tolerance))
                for name, run in runs.items()}


def tier_of(check: dict) -> str:
    """The tightest tier a compare() result passes: strict, relaxed or none."""
    return "strict" if check.get("strict") else "relaxed" if check.get("relaxed") else "none"


TIER_ORDER = ("none", "relaxed", "strict")


def worst_tier(tiers) -> str:
    """The loosest of several tiers (a result holds a tier only where it holds it on every input set)."""
    return min(tiers, key=TIER_ORDER.index, default="strict")


def baseline_tiers_on_sets(runs: dict, sets: list, refs: list, tolerances) -> dict:
    """baseline_tiers over every hidden input set (the value ranges kforge's plans are verified on: scaled by
    0.1 and 4, shifted by 0.5), each set judged with its own tolerance (one dict per set, or one for all), the
    worst set's tier per baseline: the same test as a plan's, where one fresh unit-range draw asks less."""
    tolerances = tolerances if isinstance(tolerances, list) else [tolerances] * len(sets)
    tiers = {name: [] for name in runs}
    for inputs, expected, tolerance in zip(sets, refs, tolerances):  # a set in host memory: on the GPU for its turn
        inputs, expected = on_gpu(inputs), on_gpu(expected)
        for name, tier in baseline_tiers(runs, inputs, expected, tolerance).items():
            tiers[name].append(tier)
    return {name: worst_tier(t) for name, t in tiers.items()}


def on_gpu(tensors) -> list:
    """A hidden set's tensors where they are checked: one kept in pinned host memory (session.HostedTask streams
    the sets that do not fit) copied to the GPU for its turn, the others as they are."""
    return [t.to("cuda", non_blocking=True) if t.is_pinned() else t for t in tensors]


def plan_tier_on_sets(kforge: KforgeFunction, params, hidden: HiddenSets) -> str:
    """The worst tier a plan reaches over `hidden`'s sets (poisoned outputs, each set's own tolerance), one set on
    the GPU at a time; "strict" over no set."""
    tiers = []
    with torch.no_grad():
        for inputs, expected, tolerance in zip(hidden.inputs, hidden.refs, hidden.tolerances):
            got = kforge(on_gpu(inputs), params, out=poisoned(kforge))
            tiers.append(tier_of(compare(got, on_gpu(expected), tolerance)))
    return worst_tier(tiers)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m kforge.kbtime")
    parser.add_argument("bundle")
    parser.add_argument("plan", help="plan JSON file")
    parser.add_argument("-o", "--out", required=True, help="result JSON file")
    args = parser.parse_args(argv)
    result = kbtime(args.bundle, args.plan)
    Path(args.out).write_text(json.dumps(result, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
