"""Throughput of `kforge serve` on one GPU (run by scripts/service_bench.sh): candidate evaluations per
GPU-minute for the built-in generator's schedules (persistent worker), raw CUDA candidates (compile pool,
then a fresh sandboxed process each) and ModelNew candidates (a fresh Python process each), plus one
ModelNew built with torch's load_inline, and raw CUDA answers through the RL frameworks' reward path
(POST /reward, verl's compute_score), all on one task of KernelBench level-1 size, in one run.
Each kind: submit N jobs at once, wait for all; the rate is N over the time from the first submission to the
last answer. Writes service_bench.json and service_bench.md under --out."""
import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from service_client import Service, common_arguments, import_bundle, slot_users  # noqa: E402

RAW = """// variant {variant}
#include <cuda_runtime.h>
__global__ void relu(const float* __restrict__ x, float* __restrict__ y, long long n) {{
  long long i = (blockIdx.x * (long long)blockDim.x + threadIdx.x) * 4;
  if (i + 3 < n) {{
    float4 v = *reinterpret_cast<const float4*>(x + i);
    v.x = fmaxf(v.x, 0.f); v.y = fmaxf(v.y, 0.f); v.z = fmaxf(v.z, 0.f); v.w = fmaxf(v.w, 0.f);
    *reinterpret_cast<float4*>(y + i) = v;
  }} else {{
    for (; i < n; ++i) y[i] = fmaxf(x[i], 0.f);
  }}
}}
extern "C" int kforge_forward(const void* const* in, const void* const* p, void* const* out, cudaStream_t s) {{
  const long long n = {numel};
  relu<<<(unsigned)((n / 4 + 255) / 256), 256, 0, s>>>((const float*)in[0], (float*)out[0], n);
  return cudaGetLastError() == cudaSuccess ? 0 : 1;
}}
"""

MODELNEW = "import torch\nclass ModelNew(torch.nn.Module):\n    def forward(self, x):\n        return torch.relu(x)\n"

LOAD_INLINE = '''import torch
from torch.utils.cpp_extension import load_inline
CUDA = r"""
// variant {variant}
__global__ void relu_kernel(const float* x, float* y, long long n) {
  long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
  if (i < n) y[i] = fmaxf(x[i], 0.f);
}
torch::Tensor relu_cuda(torch::Tensor x) {
  auto y = torch::empty_like(x);
  long long n = x.numel();
  relu_kernel<<<(unsigned)((n + 255) / 256), 256>>>(x.data_ptr<float>(), y.data_ptr<float>(), n);
  return y;
}
"""
ext = load_inline(name="kforge_bench_relu_{variant}", cpp_sources="torch::Tensor relu_cuda(torch::Tensor x);",
                  cuda_sources=CUDA, functions=["relu_cuda"], verbose=False)
class ModelNew(torch.nn.Module):
    def forward(self, x):
        return ext.relu_cuda(x)
'''


def load_inline_source(variant) -> str:
    """LOAD_INLINE with `variant` in its CUDA source and its module's name: a build no other job has made."""
    return LOAD_INLINE.replace("{variant}", str(variant))


def broken_source(variant) -> str:
    """A new load_inline candidate with a type error in its kernel (the kind an agent's first drafts have): judged
    "does not build" from its own compiler error, without torch's build or a second build in its turn."""
    return load_inline_source(f"broken_{variant}").replace("y[i] = fmaxf(x[i], 0.f);",
                                                          "y[i] = fmaxf(x[i], 0.f); float* wrong = 1.5;")


def answer(source: str) -> str:
    """A model's answer as an RL framework hands it over: prose, then the kernel in a fenced code block."""
    return f"The kernel reads four floats a thread.\n```cuda\n{source}```\n"


def rewards_row(kind: str, wall: float, rewards: list, details: list) -> dict:
    tiers = {}
    for d in details:
        tier = d.get("tier") or d.get("status") or "refused"
        tiers[tier] = tiers.get(tier, 0) + 1
    errors = [d["error"][-600:] for d in details if d.get("error")][:3]
    median = sorted(rewards)[len(rewards) // 2]
    return {"kind": kind, "jobs": len(rewards), "wall_s": round(wall, 2), "per_gpu_minute": round(len(rewards) / wall * 60, 1),
            "seconds_per_job": round(wall / len(rewards), 3), "tiers": tiers, "median_native_ms": None,
            "median_compile_ms": None, "median_reward": round(median, 3), "errors": errors}


def measure_rewards(svc, task, answers: list, threads: int) -> list:
    """The RL frameworks' paths to a reward (python/kforge/rl): OpenRLHF's remote reward model posts a batch of
    answers to POST /reward at once; verl's compute_score posts one answer a call, its reward manager calling it
    from `threads` threads. Each answer a new raw CUDA source."""
    from concurrent.futures import ThreadPoolExecutor
    from kforge.rl import verl_reward
    half = len(answers) // 2
    t0 = time.time()
    status, body = svc.post("/reward", {"query": answers[:half], "labels": [str(task)] * half, "timeout_s": 600})
    if status != 200:
        raise RuntimeError(f"POST /reward: HTTP {status}: {str(body)[:300]}")
    rows = [rewards_row("reward (OpenRLHF: one POST /reward of the batch)", time.time() - t0, body["rewards"], body["details"])]
    os.environ["KFORGE_SERVICE_URL"] = f"http://127.0.0.1:{svc.port}"
    t0 = time.time()
    with ThreadPoolExecutor(max_workers=threads) as pool:
        replies = list(pool.map(lambda a: verl_reward.reward_request([a], [task]), answers[half:]))
    rows.append(rewards_row(f"reward (verl: compute_score an answer, {threads} threads)", time.time() - t0,
                            [r["rewards"][0] for r in replies], [r["details"][0] for r in replies]))
    return rows


def measure(svc, task, kind, payloads, timeout_s):
    if not payloads:
        return None
    t0 = time.time()
    ids = [svc.submit(task, kind, p) for p in payloads]
    jobs = svc.wait(ids, timeout_s)
    wall = time.time() - t0
    tiers, errors = {}, []
    for j in jobs.values():
        tier = (j.get("result") or {}).get("tier") if j.get("status") == "done" else j.get("status")
        tiers[tier] = tiers.get(tier, 0) + 1
        if j.get("status") != "done" and len(errors) < 3:
            errors.append((j.get("error") or "")[-600:])
    results = [j["result"] for j in jobs.values() if j.get("status") == "done"]
    builds = {}  # how a ModelNew's extensions were built (the judge's log: "extension 'x': HOW build, S s")
    for r in results:
        for m in re.finditer(r"^extension '[^']*': (.*?) build", r.get("log", ""), re.M):
            builds[m.group(1)] = builds.get(m.group(1), 0) + 1
    median = lambda xs: sorted(xs)[len(xs) // 2] if xs else None  # noqa: E731
    return {"kind": kind, "jobs": len(ids), "wall_s": round(wall, 2), "per_gpu_minute": round(len(ids) / wall * 60, 1),
            "seconds_per_job": round(wall / len(ids), 3), "tiers": tiers,
            "median_native_ms": median([r["native"]["median_ms"] for r in results if r.get("native", {}).get("trials")]),
            "median_compile_ms": median([r.get("compile_ms", 0) for r in results]), "errors": errors,
            "not_built": sum(1 for r in results if not r.get("compiled")),
            "named_lines": sum(1 for r in results if re.search(r"cuda\.cu\(\d+\): error", r.get("log", ""))),
            **({"builds": builds} if builds else {})}


def main() -> int:
    ap = common_arguments(__doc__.splitlines()[0])
    ap.add_argument("--problem", required=True)
    ap.add_argument("--schedules", type=int, default=100)
    ap.add_argument("--raw", type=int, default=60)
    ap.add_argument("--modelnew", type=int, default=3)
    ap.add_argument("--slots", type=int, default=3)
    ap.add_argument("--plans", type=int, default=60, help="plan jobs (the generator's default plan, its sources inside)")
    ap.add_argument("--load-inline", type=int, default=1,
                    help="new load_inline ModelNew candidates (each its own source), after one that warms the machine "
                         "(torch's headers precompiled once)")
    ap.add_argument("--broken", type=int, default=0,
                    help="new load_inline candidates with a compile error in their kernel (the time to their verdict)")
    ap.add_argument("--reward", type=int, default=0,
                    help="raw CUDA answers judged through the RL frameworks' reward path: half in one POST /reward "
                         "(OpenRLHF), half by verl's compute_score from --slots * 2 threads")
    ap.add_argument("--fresh-every", type=int, default=128,
                    help="kforge serve --fresh-every: evaluations per draw of fresh sets (0: the stored sets only)")
    ap.add_argument("--tag", default="", help="suffix of the output files' names")
    args = ap.parse_args()
    name = Path(args.problem).stem
    bundle = args.work / "bundles" / name
    import_s = import_bundle(args, Path(args.problem), bundle)
    graph = json.loads((bundle / "task.json").read_text())["graph"]
    if [n["op"] for n in graph["nodes"]] != ["relu"]:
        print(f"{args.problem}: the bench's raw CUDA and ModelNew candidates compute ReLU; give a ReLU problem")
        return 1
    numel = 1
    for d in graph["inputs"][0]["shape"]:
        numel *= d
    print(f"imported {name} ({numel} elements per input, {import_s:.0f} s)", flush=True)
    svc = Service(args.kforge, args.work / "service", args.out / "serve.log", "--workers", "1", "--slots-per-gpu", str(args.slots),
                  "--compile-workers", "8", "--max-queue", "1000", "--job-timeout", "300", "--memory-limit", "65536",
                  "--sandbox-user", args.sandbox_user, "--fresh-every", str(args.fresh_every),
                  "--unsafe-shared", *slot_users(args))  # a machine of its own: no delegated cgroup needed
    rows = []
    try:
        task = svc.add_task(bundle)
        rows.append(measure(svc, task, "schedule", [{}] * args.schedules, 300))
        print(rows[-1], flush=True)
        # Every raw candidate differs (a comment): each is built by the compile pool, overlapping the GPU work.
        raw = measure(svc, task, "cuda", [{"source": RAW.format(variant=i, numel=numel)} for i in range(args.raw)], 400)
        rows.append(raw)
        print(rows[-1], flush=True)
        if args.reward:
            answers = [answer(RAW.format(variant=f"reward {i}", numel=numel)) for i in range(args.reward)]
            for row in measure_rewards(svc, task, answers, 2 * args.slots):
                rows.append(row)
                print(row, flush=True)
        if args.plans:
            plan_path = args.work / "plan.json"
            subprocess.run([args.kforge, "lower", str(bundle), "-o", str(plan_path)], check=True, capture_output=True)
            rows.append(measure(svc, task, "plan", [json.loads(plan_path.read_text())] * args.plans, 400))
            print(rows[-1], flush=True)
        if args.modelnew:
            rows.append(measure(svc, task, "modelnew", [{"source": MODELNEW}] * args.modelnew, 400))
            print(rows[-1], flush=True)
        if args.load_inline:
            rows.append(measure(svc, task, "modelnew", [{"source": load_inline_source("first")}], 400))
            rows[-1]["kind"] = "modelnew (load_inline, the machine's first: precompiles torch's headers)"
            print(rows[-1], flush=True)
            rows.append(measure(svc, task, "modelnew", [{"source": load_inline_source(i)} for i in range(args.load_inline)], 600))
            rows[-1]["kind"] = "modelnew (load_inline, each a new source)"
            print(rows[-1], flush=True)
        if args.broken:
            rows.append(measure(svc, task, "modelnew", [{"source": broken_source(i)} for i in range(args.broken)], 600))
            rows[-1]["kind"] = "modelnew (load_inline, a compile error in its kernel, each a new source)"
            print(rows[-1], flush=True)
        health = svc.get("/health")[1]
    finally:
        svc.stop()
    rows = [r for r in rows if r]  # kinds asked for 0 jobs
    summary = {"problem": args.problem, "numel": numel, "import_s": round(import_s, 1), "slots_per_gpu": args.slots,
               "fresh_every": args.fresh_every, "rows": rows, "health": health}
    tag = f"_{args.tag}" if args.tag else ""
    (args.out / f"service_bench{tag}.json").write_text(json.dumps(summary, indent=1))
    fresh = (f"fresh sets drawn every {args.fresh_every} evaluations of the task" if args.fresh_every
             else "the stored sets only, no fresh draws")
    lines = [f"# kforge serve throughput on {name} (one GPU, {args.slots} evaluation slots, {fresh}; protocol native/kb "
             "as each kind reports)", "",
             "| kind | jobs | wall s | evaluations per GPU-minute | s per job | tiers | median kernel ms | median compile ms |",
             "|---|---|---|---|---|---|---|---|"]
    for row in rows:
        lines.append(f"| {row['kind']} | {row['jobs']} | {row['wall_s']} | {row['per_gpu_minute']} | {row['seconds_per_job']} | "
                     f"{json.dumps(row['tiers'])} | {row['median_native_ms']} | {row['median_compile_ms']} |")
    if raw:
        all_correct = raw["tiers"].get("strict", 0) == raw["jobs"]  # a fast answer that is an error does not count
        lines += ["", f"Issue 4's target, raw CUDA candidates at >= 100 evaluations per GPU-minute, all correct: "
                      f"{'met' if raw['per_gpu_minute'] >= 100 and all_correct else 'NOT met'} ({raw['per_gpu_minute']}, "
                      f"tiers {raw['tiers']})."]
    new = [r for r in rows if r["kind"].startswith("modelnew (load_inline, each")]
    if new:
        r = new[0]
        lines += ["", f"Issue 29's target, new load_inline candidates at >= 30 judged per GPU-minute: "
                      f"{'met' if r['per_gpu_minute'] >= 30 and r['tiers'].get('strict', 0) == r['jobs'] else 'NOT met'} "
                      f"({r['per_gpu_minute']}, tiers {r['tiers']})."]
    shims = [r for r in rows if r["kind"].startswith("reward")]
    if shims:
        slowest = min(shims, key=lambda r: r["per_gpu_minute"])
        correct = all(r["tiers"].get("strict", 0) == r["jobs"] for r in shims)
        lines += ["", f"Issue 25's target, >= 100 candidate evaluations per GPU-minute through the verl and OpenRLHF "
                      f"paths, all correct: {'met' if slowest['per_gpu_minute'] >= 100 and correct else 'NOT met'} "
                      f"(slowest {slowest['per_gpu_minute']}: {slowest['kind']})."]
    broken = [r for r in rows if "compile error" in r["kind"]]
    if broken:
        r = broken[0]
        lines += ["", f"Candidates with a compile error: {r['per_gpu_minute']} judged per GPU-minute; {r['not_built']} of "
                      f"{r['jobs']} answered 'does not build', {r['named_lines']} naming the line of cuda.cu."]
    built = [f"{row['kind']}: extensions built {json.dumps(row['builds'])}" for row in rows if row.get("builds")]
    lines += ["", *built] if built else []
    errors = [e for row in rows for e in row["errors"]]
    if errors:
        lines += ["", "First errors:", *["    " + e.replace("\n", "\n    ") for e in errors[:4]]]
    (args.out / f"service_bench{tag}.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
