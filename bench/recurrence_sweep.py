"""Each recurrence of a problem under the schedules of both its kernels, the rest of the plan at its default: which
kernel (the unit-split persistent kernel, strategy block; the batch-split one in clusters, strategy tile) and which
geometry is fastest for the layer's size, measured rather than guessed (native protocol, every candidate checked on
every hidden set first); and the plan with every recurrence unrolled into its steps (Schedule::unroll_recurrences).

    python3 bench/recurrence_sweep.py PROBLEM.py ... --out DIR [--db kforge.db] [--all-groups]

Writes DIR/recurrence_sweep.md (a row a schedule: group, schedule, tier, ms, x default) and .json. Only the first
recurrence of a problem is swept unless --all-groups (a network's layers often share their dims)."""
import argparse
import json
import sys
from pathlib import Path

import torch

from kforge.library_sweep import Meter, timed_ms
from kforge.session import host_task

# codegen/schedule_space.cpp's recurrence space, less the 128-thread blocks and the weights in registers.
UNIT_SPLIT = [{"strategy": "block", "block": b, "items": u} for b in (256, 512) for u in (1, 2, 4, 8, 16, 32, 64)]
BATCH_SPLIT = [{"strategy": "tile", "block": 256, "items": r, "chunks": c} for c in (1, 2, 4, 8, 16) for r in (1, 2, 4, 8)]


def recurrence_groups(plan: dict) -> list[str]:
    """The groups whose kernel is a recurrence's (both emitters, and no other, define the step's time `kf_time`)."""
    return sorted({k["group"] for k in plan["kernels"] if "kf_time(" in k["source"]})


def describe(ks: dict) -> str:
    if ks.get("strategy") == "tile":
        return f"batch-split, clusters of {ks['chunks']}, {ks['items']} batch rows a cluster"
    return f"unit-split, {ks['items']} units a block, {ks['block']} threads"


def sweep(path: str, db: str, all_groups: bool) -> list[dict]:
    import kforge._core as core
    hosted = host_task(path, compile_baseline=False)
    name = hosted.problem.path.stem
    task = (json.dumps(hosted.graph), name, *hosted.pointers())
    groups = recurrence_groups(json.loads(core.lower(json.dumps(hosted.graph), "{}")))
    labelled = [({"problem": name, "group": "-", "kernel": "default"}, {}),
                ({"problem": name, "group": "every", "kernel": "unrolled (a product and a cell kernel a step)"},
                 {"unroll_recurrences": True})]
    for g in groups if all_groups else groups[:1]:
        labelled += [({"problem": name, "group": g, "kernel": describe(ks)}, {"kernels": {g: ks}}) for ks in UNIT_SPLIT + BATCH_SPLIT]
    rows = Meter(hosted, db, task).measure(labelled)
    default = timed_ms(rows[0]["eval"])
    for r in rows:
        r["ms"] = timed_ms(r["eval"])
        r["x_default"] = default / r["ms"] if default and r["ms"] else None
        r["tier"] = r["eval"].get("tier") or "failed"
        r["why"] = "" if r["ms"] else (r["eval"].get("log") or "")[:160].replace("\n", " ").replace("|", "/")
    return rows


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("problems", nargs="+")
    ap.add_argument("--out", required=True)
    ap.add_argument("--db", default="kforge.db")
    ap.add_argument("--all-groups", action="store_true")
    args = ap.parse_args()
    if not torch.cuda.is_available():
        print("recurrence_sweep: needs a CUDA GPU", file=sys.stderr)
        return 2
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    lines = [f"GPU: {torch.cuda.get_device_name()}, native protocol", "",
             "| problem | group | kernel | tier | ms | x default |", "|---|---|---|---|---:|---:|"]
    rows = []
    for p in args.problems:
        for r in sweep(p, args.db, args.all_groups):
            rows.append({k: r[k] for k in ("problem", "group", "kernel", "schedule", "tier", "ms", "x_default", "why")})
            ms = f"{r['ms']:.3f}" if r["ms"] else r["why"] or "-"
            x = f"{r['x_default']:.2f}" if r["x_default"] else "-"
            lines.append(f"| {r['problem']} | {r['group']} | {r['kernel']} | {r['tier']} | {ms} | {x} |")
        (out / "recurrence_sweep.md").write_text("\n".join(lines) + "\n")
        (out / "recurrence_sweep.json").write_text(json.dumps(rows, indent=1))
        torch.cuda.empty_cache()
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
