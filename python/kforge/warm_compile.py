"""`python -m kforge.warm_compile PROBLEM.py [PROBLEM.py ...] --jobs N`

Fills torch.compile's caches (inductor's FX graphs, Triton's kernels; TORCHINDUCTOR_CACHE_DIR) for problems
before a timed suite run, in N processes at once. A cold torch.compile of one problem costs most of the ~30 s the
suite spends on it, nearly all of it on the CPU, and a suite run times its problems one after another; compiled
here in parallel, the timed run finds the compiled graphs and spends its time measuring.

Nothing here is timed or checked. Each problem is compiled as kforge.session's baselines compile it: the model
built as KernelBench builds it, torch.compile in its default mode, called without gradients with PyTorch's
defaults and again with TF32 off (bridge.exact_fp32, the strict tier's baselines), since the TF32 settings are
part of inductor's cache key."""
import argparse
import multiprocessing
import sys
import time
import traceback
from pathlib import Path

import torch

from kforge.bridge import exact_fp32
from kforge.problem import PRECISIONS, load_problem, random_seed


def compile_problem(path: str, device: str = "cuda", precision: str | None = None) -> None:
    problem = load_problem(path, precision)
    model = problem.build_model().to(device)
    inputs = problem.draw_inputs(random_seed(), device)
    compiled = torch.compile(model)  # as session.host_task compiles its baseline
    with torch.no_grad():
        compiled(*inputs)
        with exact_fp32():
            compiled(*inputs)


def compile_share(paths: list[str], device: str, precision: str | None = None) -> list[str]:
    """Compiles each problem in turn; returns one line per problem (its seconds, or why it failed)."""
    lines = []
    for path in paths:
        t0 = time.time()
        try:
            compile_problem(path, device, precision)
            lines.append(f"{Path(path).stem}: {time.time() - t0:.1f} s")
        except Exception as e:  # noqa: BLE001 -- the timed run reports a problem's failure; this only warms caches
            traceback.print_exc()
            lines.append(f"{Path(path).stem}: failed ({type(e).__name__}: {str(e)[:200]})")
        if device == "cuda":
            torch.cuda.empty_cache()
    return lines


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m kforge.warm_compile", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("problems", nargs="+")
    parser.add_argument("--jobs", type=int, default=4, help="processes compiling at once (default %(default)s)")
    parser.add_argument("--device", default="cuda")
    parser.add_argument("--precision", choices=tuple(PRECISIONS), help="KernelBench's precision (as the suite's)")
    args = parser.parse_args(argv)
    shares = [args.problems[i::args.jobs] for i in range(args.jobs) if args.problems[i::args.jobs]]
    t0 = time.time()
    with multiprocessing.get_context("spawn").Pool(len(shares)) as pool:  # spawn: no CUDA state inherited
        results = pool.starmap(compile_share, [(share, args.device, args.precision) for share in shares])
    for lines in results:
        print("\n".join(lines))
    failed = sum("failed" in line for lines in results for line in lines)
    print(f"warm_compile: {len(args.problems)} problems in {time.time() - t0:.0f} s, {args.jobs} at once, {failed} failed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
