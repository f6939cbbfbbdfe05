"""Where each millisecond goes: per-kernel GPU times of eager, torch.compile (PyTorch's defaults and TF32 off) and
kforge's best strict and relaxed plans, for KernelBench-format problems, side by side in one process on one GPU
(torch.profiler, which reads CUPTI: kernels replayed from a CUDA graph are counted one by one), plus the code
inductor generated for each problem.

    python3 bench/profile_problem.py PROBLEM.py ... --workdir DIR --out OUT [--budget 16] [--iters 20] [--precision fp16]

First runs `python -m kforge.session` on the problems (the search, as `kforge optimize` runs it), which writes each
problem's best_plan.json and relaxed_plan.json under DIR; then profiles. Writes OUT/profile.md (per problem: each
variant's time per forward by CUDA events, its kernels' sum and the kernels themselves) and OUT/NAME.inductor.py."""
import argparse
import subprocess
import sys
from collections import defaultdict
from pathlib import Path

import torch

from kforge.bridge import exact_fp32
from kforge.bundle import read_task
from kforge.fx_to_ir import lookup
from kforge.launch import KforgeFunction
from kforge.problem import load_problem, task_name


def event_ms(fn, iters: int) -> float:
    """Median time of one forward by CUDA events (as the kb protocol times it), after warm-up."""
    for _ in range(3):
        fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(iters):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        fn()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end))
    return sorted(times)[len(times) // 2]


def kernels_per_forward(fn, iters: int) -> list[tuple[str, float, float]]:
    """(kernel name, launches per forward, µs per forward) of every GPU kernel and copy `fn` ran, largest first."""
    from torch.profiler import ProfilerActivity, profile
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        for _ in range(iters):
            fn()
        torch.cuda.synchronize()
    us, calls = defaultdict(float), defaultdict(int)
    for e in prof.events():
        if e.device_type == torch.autograd.DeviceType.CUDA:
            us[e.name] += e.time_range.elapsed_us()
            calls[e.name] += 1
    return sorted(((n, calls[n] / iters, us[n] / iters) for n in us), key=lambda k: -k[2])


def inductor_code(model, inputs) -> str:
    """The Python and Triton code inductor wrote for `model` (compiled afresh so that the code is emitted)."""
    import torch._dynamo
    from torch._inductor.utils import run_and_get_code
    torch._dynamo.reset()
    _, codes = run_and_get_code(torch.compile(model), *inputs)
    return "\n\n# ---- next graph ----\n\n".join(codes) if codes else "# inductor emitted no code (cache hit?)\n"


def variants(problem_path: Path, bundle: Path, out: Path, precision: str | None = None):
    """(label, forward) for each way of running the problem (cast to `precision` as KernelBench's --precision
    casts it, the baselines in that dtype too); writes inductor's code beside the profile."""
    import kforge._core as core
    problem = load_problem(problem_path, precision)
    model = problem.build_model().to("cuda")
    inputs = problem.draw_inputs(1, "cuda")
    graph = read_task(bundle)["graph"]
    params = [lookup(model, p["name"]) for p in graph["params"]]
    with torch.no_grad():
        (out / f"{bundle.name}.inductor.py").write_text(inductor_code(model, inputs))
    compiled = torch.compile(model)

    def fp32(fn):
        def run():
            with exact_fp32():
                return fn()
        return run

    found = [("eager", lambda: model(*inputs)), ("compile", lambda: compiled(*inputs)),
             ("eager, TF32 off", fp32(lambda: model(*inputs))), ("compile, TF32 off", fp32(lambda: compiled(*inputs)))]
    for label, file in (("kforge strict", "best_plan.json"), ("kforge relaxed", "relaxed_plan.json")):
        if (bundle / file).exists():
            plan = KforgeFunction(core.Runner((bundle / file).read_text()), graph)
            found.append((label, lambda plan=plan: plan(inputs, params)))
    return found


def profile_problem(problem_path: Path, bundle: Path, out: Path, iters: int, precision: str | None = None) -> str:
    lines = [f"## {bundle.name}", "", "| variant | ms per forward (events) | kernel ms (sum) | launches | kernels, µs per forward |",
             "|---|---:|---:|---:|---|"]
    details = []
    with torch.no_grad():
        for label, fn in variants(problem_path, bundle, out, precision):
            ms = event_ms(fn, iters)
            kernels = kernels_per_forward(fn, iters)
            total = sum(k[2] for k in kernels) / 1000
            launches = sum(k[1] for k in kernels)
            top = "; ".join(f"{name[:60]} {us:.0f}" for name, _, us in kernels[:4])
            lines.append(f"| {label} | {ms:.3f} | {total:.3f} | {launches:.0f} | {top} |")
            details += [f"- {label}: " + "; ".join(f"`{name[:120]}` x{n:g} {us:.1f} µs" for name, n, us in kernels)]
    return "\n".join(lines + [""] + details + [""])


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("problems", nargs="+")
    ap.add_argument("--workdir", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--budget", type=int, default=16)
    ap.add_argument("--iters", type=int, default=20)
    ap.add_argument("--skip-search", action="store_true", help="profile the plans already in --workdir")
    ap.add_argument("--precision", choices=("fp32", "fp16", "bf16"), help="KernelBench's --precision: the problem cast")
    args = ap.parse_args(argv)
    work, out = Path(args.workdir), Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    if not args.skip_search:
        subprocess.run([sys.executable, "-m", "kforge.session", *args.problems, "--budget", str(args.budget),
                        "--workdir", str(work), "--reports", str(work / "reports"), "--db", str(work / "profile.db"),
                        "--no-progress", *(["--precision", args.precision] if args.precision else [])], check=False)
    sections = []
    for path in map(Path, args.problems):
        try:
            sections.append(profile_problem(path, work / task_name(path.stem, args.precision), out, args.iters, args.precision))
        except Exception as e:  # noqa: BLE001 -- one problem's failure is reported in its section
            sections.append(f"## {task_name(path.stem, args.precision)}\n\nfailed: {type(e).__name__}: {str(e)[:500]}\n")
        print(sections[-1], flush=True)
        torch.cuda.empty_cache()
    (out / "profile.md").write_text("# Per-kernel profile\n\n" + "\n".join(sections))
    return 0


if __name__ == "__main__":
    sys.exit(main())
