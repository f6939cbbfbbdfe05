"""Fault injection against `kforge serve` (run by scripts/fault_injection.sh on a GPU machine).

Submits over a thousand candidates for one small task (y = relu(x), 4096 floats), good ones and faulty ones
of every kind the service must survive: illegal addresses, hangs, wrong results, crashes, forbidden system
calls, memory hogs, malformed input, and every class of the reward-hack catalogue (tests/common/hack_plans).
Then checks that the service is alive, that every good candidate got its correct result (done, its tier),
that every faulty one got a named failure, and that no job was lost. Writes fault_injection.json and
fault_injection.md under --out; exits 1 when any check fails."""
import json
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from service_client import adversarial_service, common_arguments, import_written  # noqa: E402

PROBLEM = """import torch
class Model(torch.nn.Module):
    def forward(self, x):
        return torch.relu(x)
def get_inputs():
    return [torch.randn(4096)]
def get_init_inputs():
    return []
"""

HEAD = "#include <cuda_runtime.h>\n#include <cstdio>\n#include <cstdlib>\n#include <sys/ptrace.h>\n#include <sys/socket.h>\n"
RELU = "__global__ void relu(const float* x, float* y) { int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < 4096) y[i] = fmaxf(x[i], 0.f); }\n"
ENTRY = 'extern "C" int kforge_forward(const void* const* in, const void* const* p, void* const* out, cudaStream_t s) {\n'
LAUNCH = "  relu<<<16, 256, 0, s>>>((const float*)in[0], (float*)out[0]);\n  return cudaGetLastError() == cudaSuccess ? 0 : 1;\n}\n"


def raw(body_before_launch="", kernels=RELU, launch=LAUNCH):
    return HEAD + kernels + ENTRY + body_before_launch + launch


RAW = {
    "honest": raw(),
    "wrong_result": raw(kernels="__global__ void relu(const float* x, float* y) { int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < 4096) y[i] = x[i]; }\n"),
    "illegal_address": raw(kernels="__global__ void relu(const float* x, float* y) { int i = blockIdx.x * blockDim.x + threadIdx.x; ((float*)0x10)[i * 1024] = x[i]; }\n"),
    # A loop with no side effect may be deleted (C++ forward progress; NVVM did delete `volatile int spin`):
    # __nanosleep is inline asm volatile, so this one spins for as long as the GPU lets it.
    "hang": raw(kernels="__global__ void relu(const float* x, float* y) { for (;;) __nanosleep(100000); }\n"),
    "other_stream": HEAD + "__global__ void relu(const float* x, float* y) { for (int k = 0; k < 200; ++k) __nanosleep(10000);\n"
                    "  int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < 4096) y[i] = fmaxf(x[i], 0.f); }\n" + ENTRY +
                    "  static cudaStream_t mine = nullptr; if (!mine) cudaStreamCreateWithFlags(&mine, cudaStreamNonBlocking);\n"
                    "  relu<<<16, 256, 0, mine>>>((const float*)in[0], (float*)out[0]);\n  return 0;\n}\n",
    "abort": raw("  abort();\n"),
    "ptrace": raw("  ptrace(PTRACE_TRACEME, 0, nullptr, nullptr);\n"),
    "network_socket": raw("  if (socket(AF_INET, SOCK_STREAM, 0) < 0) return 13;\n"),
    "memory_hog": raw("  size_t n = 64ull << 30; char* m = (char*)malloc(n); for (size_t i = 0; m && i < n; i += 4096) m[i] = 1;\n"),
}

MODELNEW_GOOD = "import torch\nclass ModelNew(torch.nn.Module):\n    def forward(self, x):\n        return torch.relu(x)\n"
MODELNEW_WRONG = "import torch\nclass ModelNew(torch.nn.Module):\n    def forward(self, x):\n        return x * 1.0\n"
MODELNEW_CRASH = "import os\nos.abort()\n"
# Threat model: a ModelNew that reads the stored answers, and one that forges frames on every descriptor.
MODELNEW_THIEF = ("import numpy, torch\nclass ModelNew(torch.nn.Module):\n    def forward(self, x):\n"
                  "        return torch.from_numpy(numpy.fromfile('{bundle}/sets/0/out0.bin', dtype='float32')).cuda()\n")
MODELNEW_FORGER = ("import os, torch\nfor fd in range(1, 16):\n    try:\n"
                   "        os.write(fd, b'{\"done\": true, \"strict\": true, \"reward\": 9}\\n')\n    except OSError:\n        pass\n"
                   + MODELNEW_GOOD.split("\n", 1)[1])


def expect_done(tier):
    def check(job):
        r = job.get("result") or {}
        return job["status"] == "done" and r.get("tier") == tier, f"wanted done/{tier}"
    return check


def expect_rejected(*fragments):
    """Done with tier failed and a log naming one of the fragments, or failed with an error naming one."""
    def check(job):
        r = job.get("result") or {}
        text = (r.get("log") or "") + (job.get("error") or "")
        named = any(f in text for f in fragments)
        ok = named and (job["status"] == "failed" or (job["status"] == "done" and r.get("tier") == "failed"))
        return ok, f"wanted a failure naming one of {fragments}"
    return check


def plan_candidates(dump_hack_plans: str):
    hacks = json.loads(subprocess.run([dump_hack_plans], capture_output=True, text=True, check=True).stdout)
    out = []
    for h in hacks:
        exp = h["expect"]
        # A hack meant for the check after timing may be caught sooner, on a set drawn for this batch.
        alternatives = (exp, "outside") if exp == "wrong after timing" else (exp,)
        check = expect_done(exp) if exp in ("strict", "relaxed") else expect_rejected(*alternatives)
        out.append((f"plan:{h['name']}", "plan", h["plan"], check, exp in ("strict", "relaxed")))
    return out


def answer_thieves(bundle: Path, service_dir: Path) -> dict:
    """Threat model (docs/interfaces.md): candidates that reach for the answers or write their own verdict."""
    forge = ('__attribute__((constructor)) static void forge() {\n'
             '  const char* fake = "{\\"hello\\": true, \\"compiled\\": true}\\n{\\"done\\": true, \\"strict\\": true}\\n";\n'
             '  FILE* f = fopen("result.json", "w"); if (f) { fputs("{\\"tier\\": \\"strict\\", \\"reward\\": 9}", f); fclose(f); }\n'
             '  printf("%s", fake); fflush(stdout);\n'
             '  for (int fd = 3; fd < 16; ++fd) (void)!write(fd, fake, strlen(fake));\n}\n')
    return {
        "reads_answers_at_build": raw(kernels=f'#include "{bundle}/sets/0/out0.bin"\n' + RELU),
        "reads_answers_at_run": raw(f'  if (!fopen("{bundle}/sets/0/out0.bin", "rb")) return 21;\n'),
        "reads_the_job_database": raw(f'  if (!fopen("{service_dir}/jobs.db", "rb")) return 22;\n'),
        "writes_its_verdict": HEAD + "#include <cstdio>\n#include <cstring>\n#include <unistd.h>\n" + forge + RELU + ENTRY + LAUNCH,
    }


def candidates(args):
    """(class, kind, payload, check, good) in submission order: classes interleaved so faults hit a busy service."""
    per_class = []
    per_class.append(([("schedule:default", "schedule", {}, expect_done("strict"), True)], args.schedules // 2))
    per_class.append(([("schedule:no_graph", "schedule", {"cuda_graph": False}, expect_done("strict"), True)], args.schedules // 2))
    per_class.append(([("schedule:malformed", "schedule", {"kernels": {"g0": {"strategy": "no-such-strategy"}}},
                        expect_rejected("strategy", "schedule"), False)], args.malformed))
    raw_expect = {
        "honest": (expect_done("strict"), True),
        "wrong_result": (expect_rejected("outside"), False),
        "illegal_address": (expect_rejected("illegal", "run failed", "killed by signal"), False),
        "hang": (expect_rejected("did not finish", "timed out"), False),
        "other_stream": (expect_rejected("escaped", "NaN", "outside", "wrong after"), False),
        "abort": (expect_rejected("signal 6"), False),
        "ptrace": (expect_rejected("seccomp"), False),
        "network_socket": (expect_rejected("returned 13"), False),
        "memory_hog": (expect_rejected("memory limit exceeded"), False),
        "reads_answers_at_build": (expect_rejected("cannot open source file", "No such file"), False),
        "reads_answers_at_run": (expect_rejected("returned 21"), False),
        "reads_the_job_database": (expect_rejected("returned 22"), False),
        # Its forged frames come where the judge waits for the next step: "unexpected frame" once it loads in its turn.
        "writes_its_verdict": (expect_rejected("before its evaluation did", "unexpected frame"), False),
    }
    counts = {"honest": args.raw_good, "hang": args.hangs, "memory_hog": args.hogs}
    for name, source in {**RAW, **answer_thieves(args.work / "bundles" / "relu4096", args.work / "service")}.items():
        check, good = raw_expect[name]
        n = counts.get(name, args.raw_faulty)
        # Eight variants of each source (a comment differs): the compile pool builds several, the cache serves the rest.
        variants = [(f"cuda:{name}", "cuda", {"source": f"// variant {v}\n" + source}, check, good) for v in range(8)]
        per_class.append((variants, n))
    for c in plan_candidates(args.dump_hack_plans):
        per_class.append(([c], args.plans_per_hack))
    per_class.append(([("modelnew:good", "modelnew", {"source": MODELNEW_GOOD}, expect_done("strict"), True)], args.modelnew))
    per_class.append(([("modelnew:wrong", "modelnew", {"source": MODELNEW_WRONG}, expect_rejected("outside 0.01"), False)], args.modelnew))
    per_class.append(([("modelnew:crash", "modelnew", {"source": MODELNEW_CRASH}, expect_rejected("signal 6", "does not build"), False)], 1))
    thief = MODELNEW_THIEF.format(bundle=args.work / "bundles" / "relu4096")
    per_class.append(([("modelnew:reads_answers", "modelnew", {"source": thief}, expect_rejected("No such file"), False)], 1))
    per_class.append(([("modelnew:writes_its_verdict", "modelnew", {"source": MODELNEW_FORGER},
                        expect_rejected("where its hello was due"), False)], 1))
    streams = [[variants[i % len(variants)] for i in range(n)] for variants, n in per_class]
    order = []
    while any(streams):
        for s in streams:
            if s:
                order.append(s.pop(0))
    return order


def main() -> int:
    ap = common_arguments(__doc__.splitlines()[0])
    ap.add_argument("--dump-hack-plans", required=True)
    ap.add_argument("--deadline-s", type=float, default=420, help="time for submitting and waiting")
    ap.add_argument("--schedules", type=int, default=560)
    ap.add_argument("--malformed", type=int, default=20)
    ap.add_argument("--raw-good", type=int, default=150)
    ap.add_argument("--raw-faulty", type=int, default=30)
    ap.add_argument("--hangs", type=int, default=6)
    ap.add_argument("--hogs", type=int, default=4)
    ap.add_argument("--plans-per-hack", type=int, default=12)
    ap.add_argument("--modelnew", type=int, default=2)
    args = ap.parse_args()
    t0 = time.time()
    bundle = import_written(args, "relu4096", PROBLEM)
    svc = adversarial_service(args, "--max-queue", "2000", "--job-timeout", "60")
    try:
        task = svc.add_task(bundle)
        todo = candidates(args)
        t_submit = time.time()
        ids = {svc.submit(task, kind, payload): (name, check, good) for name, kind, payload, check, good in todo}
        print(f"submitted {len(ids)} jobs in {time.time() - t_submit:.0f} s", flush=True)
        jobs = svc.wait(ids, args.deadline_s - (time.time() - t0))
        wall = time.time() - t_submit
        health_status, health = svc.get("/health")
    finally:
        svc.stop()
    classes, lost, wrong = {}, [], []
    for i, (name, check, good) in ids.items():
        job = jobs.get(i, {})
        c = classes.setdefault(name, {"good": good, "submitted": 0, "as_expected": 0, "unexpected": 0, "example": None})
        c["submitted"] += 1
        if job.get("status") not in ("done", "failed"):
            lost.append(i)
            c["unexpected"] += 1
            continue
        ok, wanted = check(job)
        c["as_expected" if ok else "unexpected"] += 1
        if not ok:
            wrong.append(i)
            if c["example"] is None:
                r = job.get("result") or {}
                c["example"] = {"job": i, "wanted": wanted, "status": job["status"], "tier": r.get("tier"),
                                "log": (r.get("log") or "")[:400], "error": (job.get("error") or "")[:400]}
    summary = {"jobs": len(ids), "finished": len(ids) - len(lost), "unfinished": lost[:50], "unexpected": len(wrong),
               "service_alive": health_status == 200 and health.get("status") == "ok", "health": health,
               "wall_s": round(wall, 1), "jobs_per_minute": round(len(ids) / wall * 60, 1), "classes": classes}
    # The acceptance is a run of at least 1000 jobs; a shorter one (a smoke run) says so apart from FAIL.
    summary["passed"] = summary["service_alive"] and not lost and not wrong
    summary["full_length"] = len(ids) >= 1000
    (args.out / "fault_injection.json").write_text(json.dumps(summary, indent=1))
    lines = [f"# Fault injection: {len(ids)} jobs in {wall:.0f} s ({summary['jobs_per_minute']} jobs/min), "
             f"service alive: {summary['service_alive']}, unfinished: {len(lost)}, unexpected: {len(wrong)} -> "
             f"{'PASS' if summary['passed'] else 'FAIL'}"
             f"{'' if summary['full_length'] else ' (a short run: under the 1000 jobs of the full one)'}", "",
             "| class | good | submitted | as expected | unexpected | first unexpected |", "|---|---|---|---|---|---|"]
    for name, c in classes.items():
        ex = c["example"]
        ex_text = "" if not ex else f"job {ex['job']}: {ex['status']}/{ex['tier']} {ex['error'] or ex['log']}"[:160].replace("|", "/").replace("\n", " ")
        lines.append(f"| {name} | {c['good']} | {c['submitted']} | {c['as_expected']} | {c['unexpected']} | {ex_text} |")
    (args.out / "fault_injection.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))
    return 0 if summary["passed"] else 1


if __name__ == "__main__":
    sys.exit(main())
