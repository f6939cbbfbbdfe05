"""Is a kforge plan's kb time its kernels' time, or does its Python call show? The kb protocol (kforge.timing)
records the start event right after a 256 MB L2 flush is queued; a call whose CPU work outlasts the flush leaves
the GPU idle inside the timed interval. For each problem with a best plan in WORKDIR (device_check.sh leaves
them in /dev/shm/kforge), prints the CPU microseconds one call takes (eager, kforge, and kforge's Runner.run
alone), then the kb medians with the usual flush and with a 2 GB one, long enough to hide any call behind it.

    python3 tools/microbench/kb_call_overhead.py WORKDIR PROBLEM.py [PROBLEM.py ...]
"""
import sys
import time
from pathlib import Path

import torch

import kforge._core as core
from kforge import timing
from kforge.launch import KforgeFunction, _current_stream
from kforge.session import host_task


def cpu_us(fn, calls: int = 20) -> float:
    """CPU time per call with the GPU busy (calls queue behind each other; none waits for the GPU)."""
    fn()
    torch.cuda.synchronize()
    t = time.perf_counter()
    for _ in range(calls):
        fn()
    us = (time.perf_counter() - t) / calls * 1e6
    torch.cuda.synchronize()
    return us


def main(workdir: str, problems: list[str]) -> None:
    for path in problems:
        hosted = host_task(path, 1, compile_baseline=False)
        name = Path(path).stem
        plan = Path(workdir) / name / "best_plan.json"
        if not plan.exists():
            print(f"{name}: no best plan in {workdir}")
            continue
        kf = KforgeFunction(core.Runner(plan.read_text()), hosted.graph)
        inputs, params, model = hosted.sets[0], hosted.params, hosted.model
        outs = kf(inputs, params)
        ptrs = ([t.data_ptr() for t in inputs], [p.data_ptr() for p in params], [o.data_ptr() for o in outs])
        stream = _current_stream(torch.cuda.current_device())
        fns = {"eager": lambda: model(*inputs), "kforge": lambda: kf(inputs, params)}
        with torch.no_grad():
            cpu = {k: cpu_us(f) for k, f in fns.items()}
            cpu["Runner.run"] = cpu_us(lambda: kf.runner.run(*ptrs, stream))
            kb = {}
            for flush_mb in (256, 2048):
                timing.L2_FLUSH_BYTES = flush_mb << 20
                kb[flush_mb] = {k: v["median_ms"] for k, v in timing.time_interleaved(fns).items()}
        timing.L2_FLUSH_BYTES = 256 << 20
        print(f"{name}: CPU us per call " + ", ".join(f"{k} {v:.1f}" for k, v in cpu.items()) + "; kb median ms " +
              "; ".join(f"flush {mb} MB: eager {r['eager']:.4f} kforge {r['kforge']:.4f}" for mb, r in kb.items()), flush=True)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2:])
