"""`kforge report RUN_DIR -o report.html` (python -m kforge.report): one self-contained HTML page of a suite run
(RUN_DIR holds `suite.json` from bench/run_suite.py or scripts/device_check.sh, and the run's measurement database
`kforge.db` where there is one): kforge's speed-up over the better of eager and torch.compile per problem in both
tiers, every problem's plan on the roofline (achieved GFLOP/s against arithmetic intensity, under the measured copy
bandwidth), every kernel of the best plans on the same roofline (their groups timed apart: `kernel_profile`), the
search's best-so-far curve per task, and the failures with their reasons. Plots are matplotlib's,
embedded as PNG."""
import argparse
import base64
import html
import io
import json
import math
import sqlite3
import sys
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402 (after the backend is chosen)


def png(fig) -> str:
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=100, bbox_inches="tight")
    plt.close(fig)
    return f'<img alt="plot" src="data:image/png;base64,{base64.b64encode(buf.getvalue()).decode()}">'


def speedups(rows) -> str:
    shown = [r for r in rows if r.get("speedup_best")]
    fig, ax = plt.subplots(figsize=(9, max(2.5, 0.28 * len(shown) + 1)))
    y = range(len(shown))
    # The strict tier against its own baselines: PyTorch in fp32 (TF32 off) where its defaults miss the tier.
    ax.barh([i + 0.2 for i in y], [r.get("speedup_best_fp32") or r["speedup_best"] for r in shown], 0.4,
            label="strict tier (against PyTorch's fp32 where its TF32 misses the tier)")
    ax.barh([i - 0.2 for i in y], [r.get("relaxed_speedup_best") or r["speedup_best"] for r in shown], 0.4,
            label="relaxed tier (fastest plan, against PyTorch's defaults)")
    ax.axvline(1.0, color="black", linewidth=0.8)
    ax.set_xscale("log")
    ax.set_yticks(list(y), [r["problem"] for r in shown], fontsize=7)
    ax.set_xlabel("speed-up over the better of eager and torch.compile (kb protocol)")
    ax.legend(loc="lower right", fontsize=8)
    return png(fig)


def roofline(rows) -> str:
    points = [r for r in rows if r.get("kforge_ms") and r.get("bytes_min")]
    fig, ax = plt.subplots(figsize=(8, 5))
    bandwidth = max((r.get("copy_bandwidth_gbs") or 0 for r in points), default=0)
    for r in points:
        flops = r.get("flops") or 0
        intensity = max(flops, 1.0) / r["bytes_min"]
        achieved = max(flops, 1.0) / (r["kforge_ms"] * 1e-3) / 1e9
        ax.scatter(intensity, achieved, s=14)
        ax.annotate(r["problem"].split("_", 1)[0], (intensity, achieved), fontsize=6)
    if bandwidth and points:
        xs = [min(max(r.get("flops") or 1.0, 1.0) / r["bytes_min"] for r in points) / 2,
              max(max(r.get("flops") or 1.0, 1.0) / r["bytes_min"] for r in points) * 2]
        ax.plot(xs, [x * bandwidth for x in xs], color="gray", linewidth=0.8,
                label=f"copy bandwidth {bandwidth:.0f} GB/s")
        ax.legend(fontsize=8)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("arithmetic intensity (FLOP per byte moved at least)")
    ax.set_ylabel("achieved GFLOP/s")
    return png(fig)


def kernel_points(rows) -> list[dict]:
    """Every kernel group of every problem's best plan that was timed apart (search/kernel_profile.h): its problem,
    op, time, bytes and FLOPs. Groups that count no FLOPs (elementwise, rows, pools) are placed by bandwidth."""
    points = []
    for r in rows:
        profile = r.get("kernel_profile")
        if not isinstance(profile, list):
            continue
        for g in profile:
            if g.get("ms", 0) > 0 and g.get("bytes", 0) > 0:
                points.append({"problem": r["problem"], "bandwidth": r.get("copy_bandwidth_gbs") or 0,
                               "matmul_tflops": r.get("matmul_tflops") or 0, **g})
    return points


def kernel_roofline(rows) -> str | None:
    """Products, convolutions, attention and recurrences on the roofline (GFLOP/s against FLOP per byte); every
    other kernel by its share of the copy bandwidth, the time it takes marked by the dot's size."""
    points = kernel_points(rows)
    if not points:
        return None
    fig, (ax, bw) = plt.subplots(1, 2, figsize=(12, 5))
    total = sum(p["ms"] for p in points)
    for p in points:
        size = 6 + 300 * p["ms"] / total
        gbs = p["bytes"] / (p["ms"] * 1e-3) / 1e9
        if p["flops"] > 0:
            ax.scatter(p["flops"] / p["bytes"], p["flops"] / (p["ms"] * 1e-3) / 1e9, s=size, alpha=0.6)
        elif p["bandwidth"]:
            bw.scatter(p["ms"] * 1e3, 100 * gbs / p["bandwidth"], s=size, alpha=0.6)
    bandwidth = max(p["bandwidth"] for p in points)
    if bandwidth and any(p["flops"] > 0 for p in points):
        xs = [min(p["flops"] / p["bytes"] for p in points if p["flops"] > 0) / 2,
              max(p["flops"] / p["bytes"] for p in points if p["flops"] > 0) * 2]
        ax.plot(xs, [x * bandwidth for x in xs], color="gray", linewidth=0.8, label=f"copy bandwidth {bandwidth:.0f} GB/s")
        roof = max(p["matmul_tflops"] for p in points)
        if roof:  # the product rate measured for a plan's arithmetic (roofline.py), the fastest of the run's
            ax.axhline(roof * 1e3, color="black", linewidth=0.8, label=f"measured product rate {roof:.0f} TFLOP/s")
        ax.legend(fontsize=8)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("arithmetic intensity (FLOP per byte the kernel binds)")
    ax.set_ylabel("achieved GFLOP/s")
    ax.set_title("products, convolutions, attention, recurrences", fontsize=9)
    bw.axhline(100, color="gray", linewidth=0.8)
    bw.set_xscale("log")
    bw.set_xlabel("kernel time (µs)")
    bw.set_ylabel("% of the copy bandwidth (bytes it binds / its time)")
    bw.set_title("every other kernel", fontsize=9)
    return png(fig)


def slowest_kernels(rows, count: int = 30) -> str:
    """The kernels that take the most time over the run, with what they achieve: where to look first."""
    points = sorted(kernel_points(rows), key=lambda p: -p["ms"])[:count]
    cells = "".join(
        f"<tr><td>{html.escape(p['problem'])}</td><td>{html.escape(p['group'])}</td><td>{html.escape(p['op'])}</td>"
        f"<td>{p['ms'] * 1e3:.1f}</td><td>{p['bytes'] / (p['ms'] * 1e-3) / 1e9:.0f}</td>"
        f"<td>{p['flops'] / (p['ms'] * 1e-3) / 1e12:.2f}</td>"
        f"<td>{html.escape(', '.join(s['kind'] for s in p['steps']))}</td></tr>" for p in points)
    return (f"<table><tr><th>problem</th><th>group</th><th>op</th><th>µs</th><th>GB/s</th><th>TFLOP/s</th>"
            f"<th>steps</th></tr>{cells}</table>")


def best_so_far(db: Path) -> str | None:
    if not db.exists():
        return None
    con = sqlite3.connect(db)
    tasks = {}
    for task, ms, ok in con.execute("SELECT task, median_ms, relaxed FROM measurements ORDER BY id"):
        tasks.setdefault(task, []).append(ms if ok and ms and ms > 0 else math.inf)
    if not tasks:
        return None
    fig, ax = plt.subplots(figsize=(8, 4))
    for task, times in tasks.items():
        best, curve = math.inf, []
        for t in times:
            best = min(best, t)
            curve.append(best)
        final = curve[-1]
        if math.isfinite(final):
            ax.plot(range(1, len(curve) + 1), [final / c if math.isfinite(c) else 0 for c in curve], linewidth=0.8)
    ax.set_xlabel("candidates measured")
    ax.set_ylabel("best so far / final best (speed)")
    ax.set_ylim(0, 1.05)
    return png(fig)


def failures(rows) -> str:
    failed = [r for r in rows if r.get("tier") == "failed" or r.get("error")]
    if not failed:
        return "<p>None.</p>"
    items = "".join(f"<tr><td>{html.escape(r['problem'])}</td><td>{html.escape(str(r.get('error') or r.get('log') or '')[:600])}</td></tr>"
                    for r in failed)
    return f"<table><tr><th>problem</th><th>why</th></tr>{items}</table>"


def render(run_dir: Path) -> str:
    suite = json.loads((run_dir / "suite.json").read_text())
    rows = suite["rows"]
    summary = suite.get("summary", {})
    curve = best_so_far(run_dir / "kforge.db")
    kernels = kernel_roofline(rows)
    table = "".join(
        f"<tr><td>{html.escape(r['problem'])}</td><td>{r.get('tier')}</td><td>{fmt(r.get('eager_ms'))}</td>"
        f"<td>{fmt(r.get('compile_ms'))}</td><td>{fmt(r.get('kforge_ms'))}</td><td>{fmt(r.get('speedup_best'), 2)}</td>"
        f"<td>{fmt(r.get('relaxed_speedup_best'), 2)}</td></tr>" for r in rows)
    facts = "".join(f"<li>{html.escape(k)}: {html.escape(str(v))}</li>" for k, v in summary.items())
    return f"""<!doctype html><html><head><meta charset="utf-8"><title>kforge report: {html.escape(run_dir.name)}</title>
<style>body{{font-family:sans-serif;margin:2em;max-width:1100px}}table{{border-collapse:collapse;font-size:12px}}
td,th{{border:1px solid #ccc;padding:2px 6px}}img{{max-width:100%}}</style></head><body>
<h1>kforge report: {html.escape(str(run_dir))}</h1><ul>{facts}</ul>
<h2>Speed-up per problem, both tiers</h2>{speedups(rows)}
<h2>Roofline (each problem's plan)</h2>{roofline(rows)}
<h2>Every kernel of the best plans</h2>{kernels or '<p>No per-kernel profile in this run (suites before it).</p>'}
<h3>The kernels that take the most time</h3>{slowest_kernels(rows)}
<h2>The search's best so far</h2>{curve or '<p>No measurement database in this run folder.</p>'}
<h2>Failures</h2>{failures(rows)}
<h2>All problems</h2><table><tr><th>problem</th><th>tier</th><th>eager ms</th><th>compile ms</th><th>kforge ms</th>
<th>x best</th><th>x best (relaxed)</th></tr>{table}</table></body></html>"""


def fmt(v, digits: int = 3) -> str:
    return "-" if v is None else f"{v:.{digits}f}"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="kforge report", description=__doc__.splitlines()[0])
    ap.add_argument("run_dir")
    ap.add_argument("-o", "--out", default="report.html")
    args = ap.parse_args(argv)
    run_dir = Path(args.run_dir)
    if not (run_dir / "suite.json").exists():
        print(f"kforge report: {run_dir} has no suite.json (a run folder of bench/run_suite.py)", file=sys.stderr)
        return 2
    Path(args.out).write_text(render(run_dir))
    print(f"kforge report: {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
