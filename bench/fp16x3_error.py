"""`python3 bench/fp16x3_error.py [--kforge build-device/kforge] [--out DIR]` (on the GPU)

Where the error of an fp16x3 product comes from: one [M, K] @ [K, N] product per K, lowered by `kforge lower` with
an explicit schedule (cuBLASLt in fp16x3, each number of reduction pieces, each heuristic algorithm) and run
through kforge's Runner, against the same product in float64 (the suite's reference) and PyTorch's float32 with
TF32 off (what the strict tier's tolerance is 4x of). Inputs at unit scale and at 4x (the hidden set where
07_irregular's fp16x3 missed the strict tier). The figure is the normalised worst error,
max |y - ref| / (1 + |ref|), the smallest atol = rtol that passes the result.

A CPU model of the split (hi/lo as emit_matmul_split.cpp writes them, the products summed exactly) puts fp16x3 5x
inside float32's error at K = 3077; the device's fp16x3 missed by ~60x that model. The table says whether the
error grows with K, shrinks with pieces, or depends on the algorithm: a truncating
accumulator's window, split-K, or something else in cuBLASLt's fp16 kernels."""
import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "python"))
from kforge import _core  # noqa: E402
from kforge.launch import KforgeFunction  # noqa: E402

M = N = 2048
KS = [1024, 3077, 8192, 32768]
PIECES = [1, 4, 16, 64]
ALGOS = [0, 1, 2, 3]
SCALES = [1.0, 4.0]
COLUMNS = [(f"p{p}a{a}", p, a) for p in PIECES for a in ALGOS]  # pN aM: N reduction pieces, heuristic algorithm M


def normalised_error(y: torch.Tensor, ref: torch.Tensor) -> float:
    return float(((y.double() - ref).abs() / (1 + ref.abs())).max())


def plan_for(kforge: str, k: int, schedule: dict, work: Path) -> KforgeFunction:
    """The product's plan under `schedule`, compiled once (both scales run it)."""
    graph = {"inputs": [{"name": "a", "dtype": "f32", "shape": [M, k]}, {"name": "b", "dtype": "f32", "shape": [k, N]}],
             "params": [], "nodes": [{"name": "y", "op": "matmul", "args": ["a", "b"]}], "outputs": ["y"]}
    (work / "graph.json").write_text(json.dumps(graph))
    (work / "schedule.json").write_text(json.dumps(schedule))
    subprocess.run([kforge, "lower", str(work / "graph.json"), "--schedule", str(work / "schedule.json"),
                    "-o", str(work / "plan.json")], check=True, capture_output=True, text=True)
    return KforgeFunction(_core.Runner((work / "plan.json").read_text()), graph)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="fp16x3_error.py")
    parser.add_argument("--kforge", default="build-device/kforge")
    parser.add_argument("--out", default=".")
    args = parser.parse_args(argv)
    torch.backends.cuda.matmul.allow_tf32 = False
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        for k in KS:
            plans = {}
            for col, pieces, algo in COLUMNS:
                ks = {"strategy": "library", "precision": "fp16x3", "algo": algo}
                if pieces > 1:
                    ks["chunks"] = pieces
                try:
                    plans[col] = plan_for(args.kforge, k, {"kernels": {"y": ks}}, work)
                except Exception as e:  # noqa: BLE001 - a refused plan: its column says "-"
                    print(f"K={k} {col}: {e}", file=sys.stderr)
            g = torch.Generator(device="cuda").manual_seed(k)
            base = [torch.randn(M, k, device="cuda", generator=g), torch.randn(k, N, device="cuda", generator=g)]
            for scale in SCALES:
                a, b = (t * scale for t in base)
                ref = a.double() @ b.double()
                row = {"k": k, "scale": scale, "fp32": normalised_error(a @ b, ref)}
                for col, _, _ in COLUMNS:
                    row[col] = None
                    if col in plans:
                        try:
                            (y,) = plans[col]([a, b], [])
                            torch.cuda.synchronize()
                            row[col] = normalised_error(y, ref)
                        except Exception as e:  # noqa: BLE001 - an algorithm the heuristic lacks at run time
                            print(f"K={k} x{scale} {col}: {e}", file=sys.stderr)
                rows.append(row)
                print(json.dumps(row), flush=True)
    cols = [col for col, _, _ in COLUMNS]
    lines = ["| K | scale | fp32 (PyTorch) | " + " | ".join(f"fp16x3 {c}" for c in cols) + " |",
             "|---:|---:|---:|" + "---:|" * len(cols)]
    fmt = lambda v: "-" if v is None else f"{v:.2e}"  # noqa: E731
    for r in rows:
        lines.append(f"| {r['k']} | {r['scale']:g} | {fmt(r['fp32'])} | " + " | ".join(fmt(r[c]) for c in cols) + " |")
    table = "\n".join(lines) + "\n\n(pN aM: N reduction pieces, cuBLASLt heuristic algorithm M; normalised worst error)\n"
    print(table)
    out = Path(args.out)
    (out / "fp16x3_error.md").write_text(table)
    (out / "fp16x3_error.json").write_text(json.dumps(rows, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
