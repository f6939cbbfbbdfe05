"""Synthetic training problems: `python -m kforge.synth --count N --seed S --out DIR` writes N KernelBench-format
files (chains of 1-5 ops that kforge supports, drawn by kforge.synth_ops) and DIR/manifest.json.

Only problems that pass every filter are kept; each rejection is counted by reason in the manifest:
  eager_error / nonfinite   the file must import, build and run in eager on --device, with finite outputs
  nondeterministic          two eager runs on the same inputs must agree bit for bit
  constant_output           the output must vary (a task whose answer is one number invites a faked kernel)
  near_zero_output          ... and not be all near zero (a kernel writing zeros would pass the tolerance)
  importer                  kforge's bridge (fx_to_ir.convert) must accept it
  duplicate / excluded      its signature must be new in this set and absent from every --exclude folder
  compile_error / compile_mismatch   torch.compile (inductor) must run it and match eager within 1e-4
  too_fast / too_slow       eager time within [--min-ms, --max-ms] (CUDA only; skipped on the CPU)
Cheap filters run first. The same seed gives byte-identical problem files: each candidate is drawn from its own
seed, derived from --seed and the attempt number, and every filter except timing is deterministic.
"""
import argparse
import contextlib
import hashlib
import json
import math
import random
import sys
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

import torch

from kforge import fx_to_ir, synth_ops, timing
from kforge.errors import ImportProblemError
from kforge.problem import load_problem

CONSTANT_SPREAD = 1e-6
NEAR_ZERO = 1e-3
COMPILE_TOLERANCE = 1e-4  # KernelBench's strict tier


class Rejected(Exception):
    def __init__(self, reason: str, detail: str = ""):
        super().__init__(f"{reason}: {detail}" if detail else reason)
        self.reason, self.detail = reason, detail


@dataclass
class Options:
    count: int
    seed: int
    out: Path
    device: str = "cpu"
    min_elems: int = 1 << 20
    max_elems: int = 64 << 20
    min_ms: float = 0.02
    max_ms: float = 20.0
    compile_check: bool = True
    exclude: list = field(default_factory=list)
    max_attempts: int | None = None  # default: 20 per problem asked for, plus 100


# ---- loading and running -------------------------------------------------------------------------------------

@contextlib.contextmanager
def no_bytecode():
    """Candidates reuse file names within a second; a cached .pyc keyed by mtime and size could then be the old
    candidate's code. Writing none also keeps __pycache__ out of the --exclude folders."""
    before = sys.dont_write_bytecode
    sys.dont_write_bytecode = True
    try:
        yield
    finally:
        sys.dont_write_bytecode = before


def load(path):
    with no_bytecode():
        return load_problem(path)


def run(model, inputs) -> list[torch.Tensor]:
    """Eager outputs as a list. Inputs are cloned so a model editing them in place cannot change the next run."""
    with torch.no_grad():
        out = model(*[t.clone() for t in inputs])
    return list(out) if isinstance(out, (tuple, list)) else [out]


def finite(outputs) -> bool:
    return all(torch.isfinite(t).all() for t in outputs if t.is_floating_point())


# ---- filters -------------------------------------------------------------------------------------------------

def check_eager(problem, device, seed):
    try:
        model = problem.build_model().to(device)
        inputs = problem.draw_inputs(seed, device)
        outputs = run(model, inputs)
    except Exception as e:  # anything the file does wrong: ImportProblemError, a shape error, a dtype error
        raise Rejected("eager_error", f"{type(e).__name__}: {e}") from e
    if not outputs or not all(isinstance(t, torch.Tensor) for t in outputs):
        raise Rejected("eager_error", "forward must return a tensor or a tuple of tensors")
    if not finite(outputs):
        raise Rejected("nonfinite", "the output holds NaN or Inf")
    return model, inputs, outputs


def check_deterministic(model, inputs, outputs) -> None:
    again = run(model, inputs)
    if len(again) != len(outputs) or not all(torch.equal(a, b) for a, b in zip(outputs, again)):
        raise Rejected("nondeterministic", "two eager runs on the same inputs differ")


def check_informative(problem, model, device, seed, outputs) -> dict:
    """Spread within each output; a single-element output (a loss) has none, so its spread is how much it moves
    between two input draws instead."""
    spreads = []
    other = None
    for j, t in enumerate(outputs):
        t = t.detach().double()
        if t.numel() > 1:
            spreads.append(float(t.max() - t.min()))
        else:
            if other is None:
                other = run(model, problem.draw_inputs(seed + 1, device))
            spreads.append(float((t.flatten()[0] - other[j].double().flatten()[0]).abs()) if t.numel() else 0.0)
    max_abs = max(float(t.detach().double().abs().max()) if t.numel() else 0.0 for t in outputs)
    if max(spreads) <= CONSTANT_SPREAD:
        raise Rejected("constant_output", f"spread {max(spreads):.3g}")
    if max_abs <= NEAR_ZERO:
        raise Rejected("near_zero_output", f"max |out| {max_abs:.3g}")
    return {"spread": max(spreads), "max_abs": max_abs}


def check_importer(model, inputs, path) -> dict:
    try:
        return fx_to_ir.convert(model, inputs, path)
    except ImportProblemError as e:
        raise Rejected("importer", str(e)) from e


def check_unique(sig, seen: dict, excluded: dict) -> None:
    if sig in excluded:
        raise Rejected("excluded", f"same signature as {excluded[sig]}")
    if sig in seen:
        raise Rejected("duplicate", f"same signature as {seen[sig]}")


def check_compile(problem, device, inputs, outputs) -> float:
    """torch.compile (inductor, default mode) on a freshly built model must match eager; the largest difference
    is returned. Dynamo's caches are cleared after each problem so thousands of them do not pile up."""
    try:
        compiled = torch.compile(problem.build_model().to(device))
        got = run(compiled, inputs)
    except Exception as e:
        raise Rejected("compile_error", f"{type(e).__name__}: {str(e)[:300]}") from e
    finally:
        torch._dynamo.reset()
    diff = 0.0
    for a, b in zip(outputs, got):
        if a.shape != b.shape or a.dtype != b.dtype:
            raise Rejected("compile_mismatch",
                           f"eager gives {a.dtype} {list(a.shape)}, compile {b.dtype} {list(b.shape)}")
        if a.numel():
            diff = max(diff, float((a.double() - b.double()).abs().max()))
        if not torch.allclose(a.double(), b.double(), atol=COMPILE_TOLERANCE, rtol=COMPILE_TOLERANCE):
            raise Rejected("compile_mismatch", f"max |eager - compile| {diff:.3g}")
    if len(got) != len(outputs):
        raise Rejected("compile_mismatch", "a different number of outputs")
    return diff


def check_timing(model, inputs, device, min_ms, max_ms) -> dict:
    """The kb protocol's eager mean; on the CPU there is nothing to time that would say anything about a GPU."""
    if device != "cuda":
        return {"eager_ms": None, "timing": f"skipped: device is {device}"}
    with torch.no_grad():
        ms = timing.time_callable(lambda: model(*inputs))["mean_ms"]
    if ms < min_ms:
        raise Rejected("too_fast", f"{ms:.4f} ms < {min_ms} ms")
    if ms > max_ms:
        raise Rejected("too_slow", f"{ms:.4f} ms > {max_ms} ms")
    return {"eager_ms": ms, "timing": "kb protocol, mean"}


def evaluate(path, device, seed, *, seen=None, excluded=None, compile_check=True, min_ms=0.0,
             max_ms=math.inf) -> tuple[dict, str, dict]:
    """Every filter on one problem file, in order of cost: (IR graph, signature, measurements) or Rejected."""
    try:
        problem = load(path)
    except ImportProblemError as e:
        raise Rejected("eager_error", str(e)) from e
    model, inputs, outputs = check_eager(problem, device, seed)
    check_deterministic(model, inputs, outputs)
    measured = {"output_shapes": [list(t.shape) for t in outputs],
                **check_informative(problem, model, device, seed, outputs)}
    graph = check_importer(model, inputs, path)
    sig = signature(graph)
    check_unique(sig, seen or {}, excluded or {})
    measured["compile_max_diff"] = check_compile(problem, device, inputs, outputs) if compile_check else "skipped"
    measured.update(check_timing(model, inputs, device, min_ms, max_ms))
    return graph, sig, measured


# ---- signatures ----------------------------------------------------------------------------------------------

def bucket(n: int) -> int:
    """The nearest power of two: 2047, 2048 and 2100 are one size for deduplication."""
    return 1 if n <= 1 else 2 ** round(math.log2(n))


def canonical(value, key=None):
    """Attributes made comparable: floats to two significant digits (a slope of 0.051 is 0.05's near-duplicate),
    static shapes (reshape, expand) bucketed like input shapes."""
    if isinstance(value, dict):
        return {k: canonical(v, k) for k, v in sorted(value.items())}
    if key == "shape" and isinstance(value, list):
        return [bucket(v) for v in value]
    if isinstance(value, list):
        return [canonical(v) for v in value]
    if isinstance(value, float):
        return float(f"{value:.2g}")
    return value


def signature(graph: dict) -> str:
    """What makes two problems near-duplicates: the IR op sequence with its parameters (and which optional
    arguments, such as a norm's weight, are present) and the inputs' dtypes and bucketed shapes."""
    ops = [[n["op"], canonical(n.get("attrs", {})), [a != "" for a in n["args"]]] for n in graph["nodes"]]
    inputs = [[i["dtype"], [bucket(d) for d in i["shape"]]] for i in graph["inputs"]]
    return hashlib.sha256(json.dumps([ops, inputs], sort_keys=True).encode()).hexdigest()[:16]


def problem_signature(path) -> str:
    """The signature of an existing problem, traced on meta tensors: KernelBench inputs can be GBs and only
    shapes matter. A problem that meta tensors cannot run is traced on the CPU."""
    problem = load(path)
    model = problem.build_model()
    try:
        return signature(fx_to_ir.convert(model.to("meta"), problem.draw_inputs(0, "meta"), problem.path))
    except Exception:
        model = problem.build_model()
        return signature(fx_to_ir.convert(model, problem.draw_inputs(0, "cpu"), problem.path))


def exclude_signatures(folders) -> tuple[dict, list]:
    """{signature: file} over every *.py under the folders, and the files that are not importable problems."""
    sigs, skipped = {}, []
    for folder in folders:
        for path in sorted(Path(folder).rglob("*.py")):
            try:
                sigs.setdefault(problem_signature(path), str(path))
            except ImportProblemError:
                skipped.append(str(path))
    return sigs, skipped


# ---- generation ----------------------------------------------------------------------------------------------

def problem_seed(seed: int, attempt: int) -> int:
    """Candidate `attempt`'s own seed: one problem can be redrawn alone (synth_ops.sample_problem with it)."""
    return int.from_bytes(hashlib.sha256(f"kforge.synth:{seed}:{attempt}".encode()).digest()[:7], "little")


def generate(opts: Options) -> dict:
    out = Path(opts.out)
    out.mkdir(parents=True, exist_ok=True)
    excluded, skipped = exclude_signatures(opts.exclude)
    max_attempts = opts.max_attempts or 20 * opts.count + 100
    seen, problems, rejected, examples = {}, [], Counter(), {}
    attempt = 0
    while len(problems) < opts.count and attempt < max_attempts:
        pseed = problem_seed(opts.seed, attempt)
        attempt += 1
        spec = synth_ops.sample_problem(random.Random(pseed), opts.min_elems, opts.max_elems)
        path = out / f"{len(problems):04d}_{spec.slug()}.py"
        path.write_text(spec.render())
        try:
            graph, sig, measured = evaluate(path, opts.device, pseed, seen=seen, excluded=excluded,
                                            compile_check=opts.compile_check, min_ms=opts.min_ms, max_ms=opts.max_ms)
        except Rejected as r:
            path.unlink()
            rejected[r.reason] += 1
            examples.setdefault(r.reason, f"{path.name}: {r.detail}"[:400])
            continue
        seen[sig] = path.name
        problems.append({
            "file": path.name, "seed": pseed, "label": spec.label,
            "chain": [{"op": op.kind, "params": op.params, "out_shape": list(op.out.shape)} for op in spec.ops],
            "input_shapes": [i["shape"] for i in graph["inputs"]],
            "output_shapes": measured.pop("output_shapes"),
            "ir_ops": [n["op"] for n in graph["nodes"]], "signature": sig, "measurements": measured,
        })
    manifest = {
        "generator": "kforge.synth", "seed": opts.seed, "count": opts.count, "device": opts.device,
        "options": {"min_elems": opts.min_elems, "max_elems": opts.max_elems, "min_ms": opts.min_ms,
                    "max_ms": opts.max_ms, "compile_check": opts.compile_check,
                    "exclude": [str(f) for f in opts.exclude]},
        "attempts": attempt, "generated": len(problems), "rejected": dict(sorted(rejected.items())),
        "rejected_examples": dict(sorted(examples.items())),
        "skipped_filters": ([] if opts.compile_check else ["compile"]) + ([] if opts.device == "cuda" else ["timing"]),
        "excluded_signatures": len(excluded), "exclude_unreadable": skipped, "problems": problems,
    }
    (out / "manifest.json").write_text(json.dumps(manifest, indent=1) + "\n")
    return manifest


def parse_args(argv):
    p = argparse.ArgumentParser(prog="python -m kforge.synth", description=__doc__.split("\n")[0])
    p.add_argument("--count", type=int, required=True)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--out", type=Path, required=True)
    p.add_argument("--device", choices=("cpu", "cuda"), default="cpu")
    p.add_argument("--min-elems", type=int, default=Options.min_elems, help="smallest input (elements)")
    p.add_argument("--max-elems", type=int, default=Options.max_elems, help="largest input (elements)")
    p.add_argument("--min-ms", type=float, default=Options.min_ms, help="eager time floor (CUDA only)")
    p.add_argument("--max-ms", type=float, default=Options.max_ms, help="eager time ceiling (CUDA only)")
    p.add_argument("--exclude", action="append", default=[], type=Path,
                   help="folder of problems whose near-duplicates must not be generated (repeatable)")
    p.add_argument("--no-compile-check", dest="compile_check", action="store_false",
                   help="skip the torch.compile agreement filter (slow on the CPU)")
    p.add_argument("--max-attempts", type=int, default=None)
    args = p.parse_args(argv)
    if args.count < 1 or not 1 <= args.min_elems <= args.max_elems:
        p.error("need --count >= 1 and 1 <= --min-elems <= --max-elems")
    return Options(**vars(args))


def main(argv=None) -> int:
    opts = parse_args(sys.argv[1:] if argv is None else argv)
    if opts.device == "cuda" and not torch.cuda.is_available():
        print("kforge.synth: --device cuda but no CUDA device is available", file=sys.stderr)
        return 2
    manifest = generate(opts)
    rejected = ", ".join(f"{k} {v}" for k, v in manifest["rejected"].items()) or "none"
    print(f"kforge.synth: wrote {manifest['generated']} of {opts.count} problems to {opts.out} in "
          f"{manifest['attempts']} attempts (rejected: {rejected})")
    return 0 if manifest["generated"] == opts.count else 1


if __name__ == "__main__":
    sys.exit(main())
