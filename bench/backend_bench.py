"""torch.compile(model, backend="kforge") as a user calls it, on problem files: the first call's time (dynamo's
capture and kforge's search of every graph), the outputs checked against the exact reference on a fresh draw (the
strict and relaxed tiers, as the suite judges plans), then eager and the compiled model timed side by side under
the kb protocol. Each problem runs in a process of its own, so a crash or a hang costs that problem only.

    python3 bench/backend_bench.py PROBLEM.py ... --out DIR [--budget 8] [--tier strict] [--timeout 300]

Writes DIR/backend_bench.md (a row a problem) and DIR/backend_bench.json. "PyTorch ran" lists what the backend
left to PyTorch, with its reason (the warnings kforge gives): a graph or a piece kforge could not take."""
import argparse
import json
import math
import subprocess
import sys
import time
import warnings
from pathlib import Path

COLUMNS = ("problem", "first call s", "tier", "max abs err", "eager ms", "backend ms", "x eager", "PyTorch ran")


def measure(path: str, budget: int, tier: str) -> dict:
    """One problem, in this process."""
    import torch

    import kforge.api  # noqa: F401 -- registers the backend
    from kforge import timing
    from kforge.bridge import as_list, reference_outputs, set_tolerance
    from kforge.kbtime import compare, tier_of
    from kforge.problem import load_problem, random_seed

    problem = load_problem(path)
    model = problem.build_model().to("cuda")  # as KernelBench builds it: training mode
    inputs = problem.draw_inputs(random_seed(), "cuda")
    compiled = torch.compile(model, backend="kforge", options={"budget": budget, "tier": tier})
    with warnings.catch_warnings(record=True) as caught, torch.no_grad():
        warnings.simplefilter("always")
        start = time.perf_counter()
        compiled(*[t.clone() for t in inputs])  # on clones: a model may write its inputs
        torch.cuda.synchronize()
        first_call_s = time.perf_counter() - start
    left = [str(w.message).removeprefix("kforge: ") for w in caught if str(w.message).startswith("kforge:")]
    fresh = problem.draw_inputs(random_seed(), "cuda")
    expected, strict = reference_outputs(model, fresh)
    with torch.no_grad():
        check = compare(as_list(compiled(*[t.clone() for t in fresh])), expected, set_tolerance(strict))
        stats = timing.time_interleaved({"eager": lambda: model(*inputs), "backend": lambda: compiled(*inputs)})
    eager, ours = stats["eager"]["median_ms"], stats["backend"]["median_ms"]
    return {"problem": Path(path).stem, "first_call_s": first_call_s, "tier": tier_of(check),
            "max_abs_err": check["max_abs_err"], "eager_ms": eager, "backend_ms": ours, "speedup_eager": eager / ours,
            "pytorch_ran": left, "gpu": torch.cuda.get_device_name()}


def in_own_process(path: str, args) -> dict:
    cmd = [sys.executable, __file__, "--one", path, "--budget", str(args.budget), "--tier", args.tier]
    try:
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=args.timeout)
    except subprocess.TimeoutExpired:
        return {"problem": Path(path).stem, "error": f"no answer within {args.timeout} s"}
    lines = [line for line in done.stdout.splitlines() if line.startswith("{")]
    if done.returncode != 0 or not lines:
        return {"problem": Path(path).stem, "error": f"exit {done.returncode}: {done.stderr.strip()[-600:]}"}
    return json.loads(lines[-1])


def row(r: dict) -> str:
    if "error" in r:
        return f"| {r['problem']} | - | failed | - | - | - | - | {r['error'][:200]} |".replace("\n", " ")

    def f(v, spec):
        return format(v, spec) if isinstance(v, (int, float)) and math.isfinite(v) else "-"
    left = "; ".join(r["pytorch_ran"])[:200] or "nothing"
    return (f"| {r['problem']} | {f(r['first_call_s'], '.1f')} | {r['tier']} | {f(r['max_abs_err'], '.2e')} | "
            f"{f(r['eager_ms'], '.3f')} | {f(r['backend_ms'], '.3f')} | {f(r['speedup_eager'], '.2f')} | {left} |")


def summary(rows: list[dict]) -> str:
    done = [r for r in rows if "error" not in r]
    held = [r for r in done if r["tier"] == "strict"]
    ahead = [r for r in held if r["speedup_eager"] >= 1.0]
    mean = math.exp(sum(math.log(r["speedup_eager"]) for r in done) / len(done)) if done else float("nan")
    return (f"{len(rows)} problems: {len(done)} ran, {len(held)} within the strict tier, {len(ahead)} of those at "
            f"least as fast as eager ({len(ahead) / max(len(rows), 1):.0%} of all); geometric mean x eager "
            f"{mean:.3f} over those that ran.")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="bench/backend_bench.py")
    parser.add_argument("problems", nargs="+")
    parser.add_argument("--out", help="folder for backend_bench.md and .json")
    parser.add_argument("--budget", type=int, default=8, help="kforge's candidates per graph")
    parser.add_argument("--tier", default="strict", choices=("strict", "relaxed"))
    parser.add_argument("--timeout", type=int, default=300, help="seconds a problem may take")
    parser.add_argument("--one", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.one:
        print(json.dumps(measure(args.problems[0], args.budget, args.tier)))
        return 0
    if not args.out:
        parser.error("--out is required")
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    rows = []
    for path in args.problems:
        rows.append(in_own_process(path, args))
        print(row(rows[-1]), flush=True)
    header = "| " + " | ".join(COLUMNS) + " |\n|" + "---|" * len(COLUMNS)
    table = "\n".join([header, *map(row, rows)])
    (out / "backend_bench.md").write_text(f"{table}\n\n{summary(rows)} Protocol: kb (eager and the compiled model "
                                          f"interleaved, L2 flushed, median of 100); budget {args.budget}, tier "
                                          f"{args.tier}.\n")
    (out / "backend_bench.json").write_text(json.dumps(rows, indent=1))
    print(summary(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
