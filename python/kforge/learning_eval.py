"""Held-out evaluation of the learned policy (issue 5): `python -m kforge.learning_eval --problems DIR --out DIR
[--checkpoint CK] [--cost-model CM] [--db DB] [--candidates 64] [--reference 256] [--seconds S]`

For every held-out problem (a `kforge synth` set disjoint from the training set and from bench/), the best time
each policy has found after 1..N distinct measured candidates: trained, untrained (the same network freshly
initialised), random and costmodel (each alone: no hand-written openings) and heuristic (kforge's hand-written
openings, then random proposals); and the best of an R-candidate heuristic search as the reference
(kforge._core.policy_curves: each distinct plan is measured once, native protocol, and shared by the policies
that propose it). Writes OUT/learning_eval.{json,md,svg}:
per problem, the fraction of the reference's best reached at 16 candidates by each policy; the share of problems
where trained@16 reaches 95% of the reference; the mean ratio of trained to random at 16; and the curves.
"""
import argparse
import json
import math
import sys
import time
from pathlib import Path

from kforge import log

POLICIES = ("trained", "untrained", "random", "costmodel", "heuristic")
COLOURS = {"trained": "#d62728", "untrained": "#7f7f7f", "random": "#1f77b4", "costmodel": "#2ca02c",
           "heuristic": "#9467bd"}
AT = 16  # the budget the table reports


def best_at(curve: dict, k: int) -> float | None:
    """Best ms after k candidates; a policy that ran out of distinct plans keeps its last best."""
    values = curve["best_ms"]
    if not values:
        return None
    return values[min(k, len(values)) - 1]


def fraction(reference_ms: float | None, ms: float | None) -> float:
    """Share of the reference's speed reached: reference best / policy best (1 = as fast, 0 = nothing correct)."""
    return reference_ms / ms if reference_ms and ms else 0.0


def geomean(values: list[float]) -> float | None:
    return math.exp(sum(map(math.log, values)) / len(values)) if values else None


def ratios_vs(results: list[dict], other: str, at: int) -> list[float]:
    """Per problem where both ran, the other policy's best ms over trained's after `at` candidates (> 1: trained
    found a faster plan within the same budget)."""
    out = []
    for r in results:
        if "trained" in r["policies"] and other in r["policies"]:
            t, o = best_at(r["policies"]["trained"], at), best_at(r["policies"][other], at)
            if t and o:
                out.append(o / t)
    return out


def summarise(results: list[dict], at: int = AT) -> dict:
    rows = []
    for r in results:
        ref = best_at(r["reference"], r["reference"]["candidates"]) if r["reference"]["candidates"] else None
        row = {"task": r["task"], "reference_ms": ref, "reference_candidates": r["reference"]["candidates"]}
        for name, curve in r["policies"].items():
            row[name] = fraction(ref, best_at(curve, at))
        rows.append(row)
    ratios = ratios_vs(results, "random", at)
    policies = [p for p in POLICIES if any(p in row for row in rows)]
    reached = [row["trained"] >= 0.95 for row in rows if "trained" in row]
    return {
        "at": at, "problems": len(rows), "policies": policies, "rows": rows,
        "trained_reaches_95pct_of_reference": (100.0 * sum(reached) / len(reached)) if reached else None,
        "mean_ratio_trained_vs_random": sum(ratios) / len(ratios) if ratios else None,
        "geomean_ratio_trained_vs_random": geomean(ratios),
        "geomean_ratio_trained_vs_heuristic": geomean(ratios_vs(results, "heuristic", at)),
        "mean_fraction": {p: sum(row.get(p, 0) for row in rows) / len(rows) for p in policies} if rows else {},
    }


def markdown(summary: dict, meta: dict) -> str:
    at, pols = summary["at"], summary["policies"]
    lines = [f"# Held-out evaluation of the learned policy ({meta.get('gpu', '?')}, native protocol)", "",
             f"Fraction of the best plan found by {meta.get('reference', '?')}-candidate heuristic search (kforge's "
             "hand-written openings, then random proposals) reached after "
             f"{at} candidates (1.00 = as fast; 0 = no correct plan).", "",
             "| problem | reference ms | " + " | ".join(f"{p}@{at}" for p in pols) + " |",
             "|---|---|" + "---|" * len(pols)]
    for row in summary["rows"]:
        ref = f"{row['reference_ms']:.4f}" if row["reference_ms"] else "-"
        lines.append(f"| {row['task']} | {ref} | " + " | ".join(f"{row.get(p, 0):.2f}" for p in pols) + " |")
    lines.append("| **mean** | | " + " | ".join(f"**{summary['mean_fraction'][p]:.2f}**" for p in pols) + " |")
    pct, ratio, geo = (summary["trained_reaches_95pct_of_reference"], summary["mean_ratio_trained_vs_random"],
                       summary["geomean_ratio_trained_vs_random"])
    lines += ["", "Summary:",
              f"- held-out problems where trained@{at} >= 95% of the reference (heuristic@{meta.get('reference', '?')}) best: "
              + (f"{pct:.0f}% of {summary['problems']}" if pct is not None else "n/a"),
              f"- mean ratio trained vs random at {at} (random best ms / trained best ms; > 1 favours trained): "
              + (f"{ratio:.3f} (geometric mean {geo:.3f})" if ratio is not None else "n/a"),
              f"- geometric-mean ratio trained vs heuristic at {at} (> 1 favours trained): "
              + (f"{summary['geomean_ratio_trained_vs_heuristic']:.3f}"
                 if summary["geomean_ratio_trained_vs_heuristic"] is not None else "n/a"),
              f"- training: {meta.get('training', 'see train_log.jsonl')}"]
    for name, error in meta.get("errors", {}).items():
        lines.append(f"- not evaluated: {name}: {error[:200]}")
    if meta.get("stopped_early"):
        lines.append(f"- {meta['stopped_early']} (of {meta.get('problems_offered', '?')} offered)")
    lines.append("")
    return "\n".join(lines)


def svg(results: list[dict], width: int = 720, height: int = 420) -> str:
    """Mean fraction of the reference best after k candidates, k = 1..N, one line per policy (no matplotlib)."""
    n = max((c["candidates"] for r in results for c in r["policies"].values()), default=1)
    left, right, top, bottom = 60, 130, 30, 50
    pw, ph = width - left - right, height - top - bottom

    def x(k):  # log2 axis: the early candidates are what a budget buys
        return left + pw * (math.log2(k) / math.log2(max(n, 2)))

    def y(v):
        return top + ph * (1 - min(max(v, 0), 1.05) / 1.05)

    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" font-family="sans-serif" '
             f'font-size="12"><rect width="100%" height="100%" fill="white"/>',
             f'<text x="{left}" y="18" font-size="14">Best found vs candidates measured (held-out, mean over '
             f'{len(results)} problems)</text>']
    for v in (0, 0.25, 0.5, 0.75, 0.95, 1.0):
        dash = ' stroke-dasharray="4 3"' if v in (0.95, 1.0) else ""
        parts.append(f'<line x1="{left}" y1="{y(v):.1f}" x2="{left + pw}" y2="{y(v):.1f}" stroke="#ccc"{dash}/>'
                     f'<text x="{left - 8}" y="{y(v) + 4:.1f}" text-anchor="end">{v:.2f}</text>')
    k = 1
    while k <= n:
        parts.append(f'<line x1="{x(k):.1f}" y1="{top + ph}" x2="{x(k):.1f}" y2="{top + ph + 5}" stroke="black"/>'
                     f'<text x="{x(k):.1f}" y="{top + ph + 18}" text-anchor="middle">{k}</text>')
        k *= 2
    parts.append(f'<line x1="{left}" y1="{top + ph}" x2="{left + pw}" y2="{top + ph}" stroke="black"/>'
                 f'<line x1="{left}" y1="{top}" x2="{left}" y2="{top + ph}" stroke="black"/>'
                 f'<text x="{left + pw / 2}" y="{height - 10}" text-anchor="middle">candidates measured</text>'
                 f'<text x="14" y="{top + ph / 2}" transform="rotate(-90 14 {top + ph / 2})" text-anchor="middle">'
                 f'fraction of the reference best</text>')
    for i, policy in enumerate(p for p in POLICIES if any(p in r["policies"] for r in results)):
        have = [r for r in results if policy in r["policies"]]
        points = []
        for k in range(1, n + 1):
            vals = [fraction(best_at(r["reference"], r["reference"]["candidates"]), best_at(r["policies"][policy], k))
                    for r in have]
            points.append(f"{x(k):.1f},{y(sum(vals) / len(vals)):.1f}")
        colour = COLOURS[policy]
        parts.append(f'<polyline fill="none" stroke="{colour}" stroke-width="2" points="{" ".join(points)}"/>'
                     f'<line x1="{left + pw + 12}" y1="{top + 10 + 18 * i}" x2="{left + pw + 32}" y2="{top + 10 + 18 * i}" '
                     f'stroke="{colour}" stroke-width="2"/><text x="{left + pw + 38}" y="{top + 14 + 18 * i}">{policy}</text>')
    parts.append("</svg>")
    return "\n".join(parts)


def write_report(results: list[dict], meta: dict, out: Path) -> dict:
    out.mkdir(parents=True, exist_ok=True)
    summary = summarise(results)
    (out / "learning_eval.json").write_text(json.dumps({"meta": meta, "summary": summary, "results": results}, indent=1))
    (out / "learning_eval.md").write_text(markdown(summary, meta))
    (out / "learning_eval.svg").write_text(svg(results))
    return summary


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m kforge.learning_eval", description=__doc__.split("\n")[0])
    p.add_argument("--problems", type=Path, required=True, help="folder of held-out problems (kforge synth --out)")
    p.add_argument("--out", type=Path, required=True)
    p.add_argument("--checkpoint", default="kforge_policy", help="trained policy: file or folder (its newest)")
    p.add_argument("--cost-model", default="", help="model from `kforge train-costmodel` (omit: no costmodel curve)")
    p.add_argument("--db", default="learning_eval.db", help="measurement database for the evaluation's plans")
    p.add_argument("--candidates", type=int, default=64)
    p.add_argument("--reference", type=int, default=256)
    p.add_argument("--seconds", type=float, default=400, help="start no new problem after this long")
    p.add_argument("--seed", type=int, default=7)
    p.add_argument("--compile-threads", type=int, default=16)
    p.add_argument("--training", default="", help="one line on how the policy was trained, for the report")
    log.add_arguments(p)
    args = p.parse_args(argv)
    log.configure(args)
    import torch

    import kforge._core as core
    from kforge.errors import ImportProblemError
    from kforge.session import host_task

    problems = sorted(args.problems.glob("*.py"))
    policies = [q for q in POLICIES if q != "costmodel" or args.cost_model]
    meta = {"gpu": torch.cuda.get_device_name(), "protocol": "native", "candidates": args.candidates,
            "reference": args.reference, "checkpoint": args.checkpoint, "cost_model": args.cost_model,
            "training": args.training, "problems_offered": len(problems)}
    results, t0 = [], time.time()
    for path in log.progress(problems, "problems"):
        if time.time() - t0 > args.seconds:
            meta["stopped_early"] = f"time budget of {args.seconds:.0f} s spent after {len(results)} problems"
            break
        t_task, hosted = time.time(), None
        try:
            hosted = host_task(path, 5, compile_baseline=False)
            sets, refs, params = hosted.pointers()
            r = json.loads(core.policy_curves(json.dumps(hosted.graph), path.stem, sets, refs, params, args.db,
                                              hosted.baseline_ms("eager"), 0.0, args.candidates, args.reference, policies,
                                              args.checkpoint, args.cost_model, args.seed, args.compile_threads,
                                              f"torch {torch.__version__}"))
        except (ImportProblemError, RuntimeError) as e:  # reported, and the other problems still evaluated
            meta.setdefault("errors", {})[path.stem] = f"{type(e).__name__}: {e}"[:500]
            log.logger.warning("%s: %s", path.stem, meta["errors"][path.stem])
            continue
        finally:
            del hosted
            torch.cuda.empty_cache()
        r["seconds"] = round(time.time() - t_task, 1)
        results.append(r)
        log.logger.info("%s: %s distinct plans in %s s", path.stem, r["distinct_plans_measured"], r["seconds"])
        write_report(results, meta, args.out)  # partial results survive a timeout
    summary = write_report(results, meta, args.out)
    print(markdown(summary, meta))
    return 0


if __name__ == "__main__":
    sys.exit(main())
