"""`python -m kforge.bridge import PROBLEM -o BUNDLE [--sets 5] [--device cuda|cpu] [--no-baselines]`

Imports a KernelBench problem into a task bundle (docs/interfaces.md): the IR graph, the parameters, K hidden
input sets with their reference outputs (PyTorch in float64, rounded once), and the eager / torch.compile baselines (kb protocol)."""
import argparse
import contextlib
import copy
import math
import shutil
import sys
import traceback
from dataclasses import dataclass
from datetime import datetime, timezone

import torch

from kforge import footprint, fx_to_ir, log, timing
from kforge.bundle import BundleWriter, output_specs
from kforge.dtypes import HALF, IR_TO_TORCH
from kforge.errors import ImportProblemError
from kforge.fx_to_ir import lookup
from kforge.opaque import opaque_graph
from kforge.problem import PRECISIONS, Problem, load_problem, random_seed

# (scale, shift) of float inputs per hidden set, cycling from set 0: other value ranges than get_inputs() draws,
# mild enough that exp() and prod() stay finite.
VARIANTS = [(1.0, 0.0), (0.1, 0.0), (4.0, 0.0), (1.0, 0.5)]
CONSTANT_SPREAD, NEAR_ZERO = 1e-6, 1e-3
TOLERANCE = {"strict": 1e-4, "relaxed": 1e-2}
# The strict tier's floor per output dtype (the relaxed tier is 1e-2 for all three, KernelBench's own tolerance
# for fp16 and bf16, docs/interfaces.md). A half-precision output computed in float32 and rounded once is within
# one unit in the last place of the exact result rounded once: 2^-10 (f16), 2^-8 (bf16) of |ref|, below 1e-3 and
# 4e-3 of 1 + |ref|.
STRICT_FLOOR = {torch.float32: TOLERANCE["strict"], torch.float16: 1e-3, torch.bfloat16: 4e-3}
# The strict tier's allowance over PyTorch's own float32 error on an input set (strict_tolerance): a float32 sum in
# another order (cuBLAS's algorithms, a split-K kernel) has an error distribution like PyTorch's, and the maximum
# over millions of elements is stable to ~1.5x, while TF32's error (10-bit mantissas) is ~2000x PyTorch's.
FP32_ALLOWANCE = 4.0
ERROR_CHUNK = 1 << 24  # elements per step of own_error


def as_list(out) -> list[torch.Tensor]:
    return list(out) if isinstance(out, (tuple, list)) else [out]


@contextlib.contextmanager
def exact_fp32():
    """float32 arithmetic throughout: PyTorch lets cuDNN convolutions use TF32 tensor cores by default (and
    matmuls where asked), whose 10-bit mantissas put a reference ~1e-3 from the exact result, further than the
    strict tier's 1e-4. References are exact; the baselines are timed with PyTorch's defaults, as users run it."""
    saved = torch.backends.cudnn.allow_tf32, torch.backends.cuda.matmul.allow_tf32
    torch.backends.cudnn.allow_tf32 = torch.backends.cuda.matmul.allow_tf32 = False
    try:
        yield
    finally:
        torch.backends.cudnn.allow_tf32, torch.backends.cuda.matmul.allow_tf32 = saved


def widened_outputs(model: torch.nn.Module, inputs, dtype=torch.float64) -> list[torch.Tensor] | None:
    """The model's outputs with its arithmetic in `dtype` (float64, or float32 for a half-precision model): a copy
    of it in that dtype (the model itself is left alone), float inputs widened, tensors made inside forward in it
    by default. None where that copy cannot run (a float32 tensor made explicitly inside forward meets a float64
    one in a matmul, say)."""
    saved = torch.get_default_dtype()
    try:
        twin = copy.deepcopy(model).to(dtype)
        torch.set_default_dtype(dtype)
        return as_list(twin(*[t.to(dtype) if t.is_floating_point() else t.clone() for t in inputs]))
    except Exception:  # noqa: BLE001 - any failure of the widened copy falls back to the model's own run
        return None
    finally:
        torch.set_default_dtype(saved)


def root_mean_square(t: torch.Tensor) -> float:
    """The RMS of a float tensor's finite elements (0 where it has none), in float64 chunks: no GB-sized copy."""
    total, count = 0.0, 0
    flat = t.reshape(-1)
    for start in range(0, flat.numel(), ERROR_CHUNK):
        c = flat[start:start + ERROR_CHUNK].double()
        c = c[torch.isfinite(c)]
        total, count = total + float((c * c).sum()), count + c.numel()
    return math.sqrt(total / count) if count else 0.0


def strict_floor(t: torch.Tensor) -> float:
    return STRICT_FLOOR.get(t.dtype, TOLERANCE["strict"])


def closer_reference(narrow: torch.Tensor, wide: torch.Tensor) -> torch.Tensor:
    """The float64 result rounded once where it is the same function as the float32 one: a float output of the
    same shape within the relaxed tier of it (its absolute part at least the strict tier times the output's RMS),
    infinities and NaNs in the same places. Elsewhere (float32 overflow the float64 run does not have,
    torch.finfo(x.dtype) constants, a floor or comparison that flips) the float32 run's own output: that is what
    the model computes in float32. Integer and boolean outputs (argmax, masks) are the float32 run's.
    The scale matters where outputs near zero are sums of large terms: on the set scaled by 4, a product over
    K = 32768 (outputs ~3000) has float32 rounding past 1e-2 on its elements near zero; judged against 1e-2
    absolute, that rounding read as another function, the float32 run became the reference and every other
    summation order (cuBLAS's second algorithm, split precision in pieces) failed a strict tier of 1e-4 from
    PyTorch's own rounding (measured on the GPU). The allowance is 1e-4 of the output's scale (0.3 there), not 1e-2
    of it: a floor or comparison that flips moves an element by its own unit, which 1e-2 of a large RMS would
    pass for rounding."""
    if not narrow.is_floating_point() or not wide.is_floating_point() or wide.shape != narrow.shape:
        return narrow
    rounded = wide.to(narrow.dtype)
    del wide
    tol = TOLERANCE["relaxed"]
    atol = max(tol, strict_floor(narrow) * root_mean_square(rounded))
    r, n = rounded.reshape(-1), narrow.reshape(-1)  # in chunks: allclose's temporaries of a GB-sized output add up
    close = all(torch.allclose(r[i:i + ERROR_CHUNK], n[i:i + ERROR_CHUNK], rtol=tol, atol=atol, equal_nan=True)
                for i in range(0, r.numel(), ERROR_CHUNK))
    return rounded if close else narrow


def own_error(narrow: torch.Tensor, reference: torch.Tensor) -> float:
    """PyTorch's own run's (float32, or the problem's half precision) largest normalised error,
    max |narrow - ref| / (1 + |ref|): the smallest t with which atol = rtol = t passes it. 0 where the reference is that run itself, or is no float; elements that are not
    finite in either are left out (they pass or fail on their own, and carry no rounding error to measure)."""
    if reference is narrow or not reference.is_floating_point():
        return 0.0
    worst = 0.0
    flat_n, flat_r = narrow.reshape(-1), reference.reshape(-1)
    for start in range(0, flat_r.numel(), ERROR_CHUNK):  # in chunks: an output can be GBs, float64 twice that
        n, r = flat_n[start:start + ERROR_CHUNK].double(), flat_r[start:start + ERROR_CHUNK].double()
        err = ((n - r).abs() / (1.0 + r.abs()))[torch.isfinite(n) & torch.isfinite(r)]
        if err.numel():
            worst = max(worst, float(err.max()))
    return worst


def strict_tolerance(own: float, floor: float = TOLERANCE["strict"]) -> float:
    """The strict tier on one output of one input set: its dtype's floor (1e-4 for float32), or FP32_ALLOWANCE
    times PyTorch's own error there where that is larger, never above the relaxed tier. On the set scaled by 4 a
    product over K >= 1000 misses 1e-4 with any float32 arithmetic, PyTorch's own included (sums 16x larger,
    elements near zero): the tier is meant to tell float32-faithful arithmetic from TF32 / bf16, not to ask for
    better than float32 (in half precision: better than PyTorch's own half-precision run)."""
    return min(TOLERANCE["relaxed"], max(floor, FP32_ALLOWANCE * own))


def reference_outputs(model, inputs) -> tuple[list[torch.Tensor], list[float]]:
    """Reference outputs: the model's arithmetic done in float64 on the same float32 (or half-precision) values,
    each float output rounded once to its dtype (closer_reference says where the float32 run's own output stands
    instead), and the strict tier's tolerance on each (strict_tolerance, from PyTorch's own run's error against it). A float32
    run alone carries its own rounding: PyTorch's sum of 4093 floats was measured 1.2e-4 from the exact value, so
    every exact kernel failed the strict tier against it. Runs on copies: a model that writes its inputs in place
    leaves the stored inputs as drawn."""
    with torch.no_grad(), exact_fp32():
        narrow = as_list(model(*[t.clone() for t in inputs]))
        wide = widened_outputs(model, inputs)
        # A half-precision run rounds every op's output, and its distance from the exact result says nothing of
        # whether that is the same function (a cumulative sum's fp16 partial sums drift past 1e-2): the float32 run
        # on the same half-precision values decides that, and its choice is rounded to the output's dtype.
        mid = widened_outputs(model, inputs, torch.float32) if any(n.dtype in HALF for n in narrow) else None
    if wide is None or len(wide) != len(narrow):
        refs = narrow
    else:  # each float64 output freed as soon as it is rounded; .to() of a float32 output is that output itself
        judges = mid if mid is not None and len(mid) == len(narrow) else narrow
        refs = [closer_reference(m if n.dtype in HALF else n, wide.pop(0)).to(n.dtype) for n, m in zip(narrow, judges)]
    return refs, [strict_tolerance(own_error(n, r), strict_floor(n)) for n, r in zip(narrow, refs)]


def run_model(model, inputs) -> list[torch.Tensor]:
    """reference_outputs without the tolerances."""
    return reference_outputs(model, inputs)[0]


def set_tolerance(strict: list[float]) -> dict:
    """The tolerance a hidden set is judged with (kbtime.compare): the strict tier per output, the relaxed one."""
    return {"strict": list(strict), "relaxed": TOLERANCE["relaxed"]}


def all_finite(tensors) -> bool:
    return all(bool(torch.isfinite(t).all()) for t in tensors if t.is_floating_point())


def draw_set(problem, model, k, device):
    """Inputs, reference outputs and the strict tolerance per output (reference_outputs) of hidden set k >= 1.
    A variant whose outputs overflow falls back to the inputs as drawn: the sets check other value ranges, they
    are not meant to produce infinities."""
    inputs = problem.draw_inputs(random_seed(), device)
    scale, shift = VARIANTS[k % len(VARIANTS)]
    if (scale, shift) != (1.0, 0.0):
        varied = [t * scale + shift if t.is_floating_point() else t for t in inputs]
        outputs, strict = reference_outputs(model, varied)
        if all_finite(outputs):
            return varied, outputs, strict
    return (inputs, *reference_outputs(model, inputs))


def hidden_set(problem, model, k, inputs0, device):
    """draw_set, with set 0 the problem's own get_inputs() draw `inputs0`."""
    return draw_set(problem, model, k, device) if k else (inputs0, *reference_outputs(model, inputs0))


def check_outputs(problem, graph, outputs) -> None:
    """The traced graph must describe what the model really returns; a mismatch means a conversion bug."""
    specs = output_specs(graph)
    got = [(t.dtype, list(t.shape)) for t in outputs]
    want = [(IR_TO_TORCH[s["dtype"]], s["shape"]) for s in specs]
    if got != want:
        raise RuntimeError(f"{problem.path}: the model returned {got} but the IR graph says {want}")


def output_ranges(outputs, so_far=None) -> list:
    """(min, max) of each output, merged with the ranges of earlier sets: no copy of a GB-sized output."""
    ranges = [(float(t.min()), float(t.max())) for t in outputs if t.numel()]
    return ranges if so_far is None else [(min(a[0], b[0]), max(a[1], b[1])) for a, b in zip(so_far, ranges)]


def flags(ranges) -> dict:
    """Outputs a trivial kernel could fake (the same value on every hidden set, or all near zero): the reward
    must not trust such tasks. `ranges` spans every set, so a scalar loss that moves with the inputs is fine."""
    return {"constant_output": all(hi - lo < CONSTANT_SPREAD for lo, hi in ranges),
            "near_zero_output": all(max(-lo, hi) < NEAR_ZERO for lo, hi in ranges)}


def baselines(model, inputs, compile_baseline: bool = True) -> tuple[dict, object]:
    """eager's and torch.compile's (inductor, default mode) times on `inputs`, interleaved (kb protocol), and the
    compiled model; eager alone, and None, without compile_baseline. Where torch.compile cannot compile the model
    (an inductor error), eager alone too, the reason under "compile_failed": PyTorch's failure is not the task's,
    and kforge is then compared with eager."""
    runs = {"eager": lambda: model(*inputs)}
    compiled, failed = compiled_model(model, inputs) if compile_baseline else (None, None)
    if compiled is not None:
        runs["compile"] = lambda: compiled(*inputs)
    with torch.no_grad():
        stats = timing.time_interleaved(runs)
    if failed:
        stats["compile_failed"] = failed
    return stats, compiled


def compiled_model(model, inputs) -> tuple[object, str | None]:
    """torch.compile(model), compiled by a first call on `inputs`, and None; or None and the reason where inductor
    cannot compile the model (said once in the log)."""
    compiled = torch.compile(model)
    try:
        with torch.no_grad():
            compiled(*inputs)
        return compiled, None
    except Exception as e:  # noqa: BLE001 -- any failure of inductor's: eager stands alone
        first_line = (str(e).strip().splitlines() or [""])[0]
        failed = f"{type(e).__name__}: {first_line[:300]}"
        log.logger.warning("torch.compile failed on this model (%s); kforge is compared with eager alone", failed)
        return None, failed


def best_baseline_ms(*times) -> float:
    """The better (smaller) of the baselines' times that were measured (None: torch.compile failed, or was not
    asked for)."""
    return min(t for t in times if t is not None)


def ratio(baseline_ms, ours_ms):
    """baseline / ours, None where the baseline was not measured."""
    return None if baseline_ms is None else baseline_ms / ours_ms


@dataclass
class ImportedTask:
    """A problem traced into kforge's IR (or kept whole), its model and params as built, on `device`; its hidden
    sets are drawn one at a time (hidden_sets), for a bundle on disk (import_problem) or a task kept in memory
    (session.host_task): one import path."""
    problem: object
    model: torch.nn.Module
    inputs0: list
    graph: dict
    params: list  # the weights as built, before any forward runs (a training-mode BatchNorm updates its buffers)
    importer: dict
    device: str

    def hidden_sets(self, num_sets: int):
        """(inputs, reference outputs, strict tolerance per output) of each hidden set in turn, checked against
        the graph's outputs; one set at a time on the device."""
        for k in range(num_sets):
            one = hidden_set(self.problem, self.model, k, self.inputs0, self.device)
            check_outputs(self.problem, self.graph, one[1])
            yield one
            del one  # the caller has it: not held here while the next set's references are computed


def imported_task(path, device: str, keep_whole: bool = True, precision: str | None = None) -> ImportedTask:
    """The problem at `path` traced on `device`. A problem the importer cannot express is kept whole (a task for
    candidates, refused by kforge's generator), or, without `keep_whole` (a caller that only runs the generator),
    refused with ImportProblemError before anything is computed; so is one whose single hidden set cannot fit on
    the GPU (footprint.check_fits). `precision` casts the problem as KernelBench's --precision does (problem.py)."""
    if device == "cuda" and not torch.cuda.is_available():
        raise ImportProblemError(path, "--device cuda but no CUDA device is available (use --device cpu)")
    problem = path if isinstance(path, Problem) else load_problem(path, precision)  # a file, or one made in memory (kforge.api)
    model = problem.build_model().to(device)
    inputs0 = problem.draw_inputs(random_seed(), device)  # set 0: get_inputs() as the problem draws it
    importer = {"opaque": False}
    try:
        graph = fx_to_ir.convert(model, inputs0, problem.path)  # raises before anything is written
    except ImportProblemError as e:
        if not keep_whole:
            raise
        # Still a task: candidates are judged against PyTorch's references; kforge's generator refuses it.
        why = str(e).removeprefix(f"{e.file}: ")
        graph = opaque_graph(model, inputs0, problem.path, why)
        importer = {"opaque": True, "why": why}
        print(f"kforge import: {problem.path.name}: kept whole (kforge's generator will refuse it): {why}", file=sys.stderr)
    if device == "cuda":  # set 0's inputs are drawn already: they are part of the set the estimate counts
        drawn = sum(t.numel() * t.element_size() for t in inputs0)
        footprint.check_fits(graph, footprint.free_bytes() + drawn, problem.path)
    params = [lookup(model, p["name"]).detach().to(IR_TO_TORCH[p["dtype"]], copy=True) for p in graph["params"]]
    return ImportedTask(problem, model, inputs0, graph, params, importer, device)


def import_problem(path, out, num_sets: int, device: str, with_baselines: bool, keep_whole: bool = True,
                   precision: str | None = None) -> None:
    """The bundle of the problem at `path` in `out` (imported_task, its hidden sets written one at a time)."""
    task = imported_task(path, device, keep_whole, precision)
    problem, graph = task.problem, task.graph
    with BundleWriter(out) as bundle:
        for i, t in enumerate(task.params):
            bundle.write_tensor(f"params/{i}.bin", t)
        strict, ranges = [], None  # per set, per output
        for k, (inputs_k, outputs_k, strict_k) in enumerate(task.hidden_sets(num_sets)):
            strict.append(strict_k)
            for i, t in enumerate(inputs_k):
                bundle.write_tensor(f"sets/{k}/in{i}.bin", t)
            for j, t in enumerate(outputs_k):
                bundle.write_tensor(f"sets/{k}/out{j}.bin", t)
            ranges = output_ranges(outputs_k, ranges)
        # The problem as imported, for sets drawn later (kforge.drawn_sets): an edit to the file after import
        # must not change what those sets' references are.
        shutil.copyfile(problem.path, bundle.tmp / "problem.py")
        bundle.write_json("task.json", {
            "name": problem.name, "source": str(problem.path), "graph": graph,
            "gpu": torch.cuda.get_device_name() if device == "cuda" else "cpu",
            "torch_version": torch.__version__,
            "created": datetime.now(timezone.utc).isoformat(timespec="seconds"),
            "baselines": baselines(task.model, task.inputs0)[0] if with_baselines and device == "cuda" else None,
            "num_sets": num_sets, "flags": flags(ranges), "tolerance": TOLERANCE, "strict_tolerance": strict,
            "importer": task.importer, "precision": task.problem.precision})
        bundle.commit()


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m kforge.bridge")
    commands = parser.add_subparsers(dest="command", required=True)
    imp = commands.add_parser("import", help="import a KernelBench problem into a task bundle")
    imp.add_argument("problem")
    imp.add_argument("-o", "--out", required=True, help="bundle folder to write")
    imp.add_argument("--sets", type=int, default=5, help="number of hidden input sets (default 5)")
    imp.add_argument("--device", choices=("cuda", "cpu"), default="cuda",
                     help="where inputs and references are computed; baselines are timed on cuda only")
    imp.add_argument("--no-baselines", action="store_true", help="skip timing eager and torch.compile")
    imp.add_argument("--precision", choices=tuple(PRECISIONS),
                     help="KernelBench's precision: Model, ModelNew and the float inputs cast to it")
    args = parser.parse_args(argv)
    if args.sets < 1:
        parser.error("--sets must be at least 1")
    try:
        import_problem(args.problem, args.out, args.sets, args.device, not args.no_baselines, precision=args.precision)
    except ImportProblemError as e:
        print(f"kforge import: {e}", file=sys.stderr)
        return 1
    except Exception as e:  # a kforge bug or a device failure: the traceback is what a bug report needs
        traceback.print_exc()
        print(f"kforge import: {args.problem}: internal error: {type(e).__name__}: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
