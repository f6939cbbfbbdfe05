"""Hostile neighbours against `kforge serve` (run by scripts/hostile_neighbours.sh on a GPU machine).

One task (y = relu(x) over 16M floats). First honest raw CUDA candidates alone; then the same candidates again,
submitted among candidates that attack their neighbours: a fork bomb, a load-time GPU kernel (a library
constructor spinning the GPU), a tmpfs filler, a disk filler, a holder of every lock file it can reach and a
GPU-memory hog. Checks that every honest job gets
the same verdict as alone and a time within 5% of its time alone (median over the honest jobs, native protocol),
and that the service stays up. Writes hostile_neighbours.{json,md} under --out; exits 1 when a check fails."""
import json
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from service_client import adversarial_service, common_arguments, import_written  # noqa: E402

N = 1 << 24
PROBLEM = f"""import torch
class Model(torch.nn.Module):
    def forward(self, x):
        return torch.relu(x)
def get_inputs():
    return [torch.randn({N})]
def get_init_inputs():
    return []
"""

HEAD = ("#include <cuda_runtime.h>\n#include <cstdio>\n#include <cstdlib>\n#include <cstring>\n#include <unistd.h>\n"
        f"__global__ void relu(const float* x, float* y) {{ long i = blockIdx.x * (long)blockDim.x + threadIdx.x; "
        f"if (i < {N}) y[i] = fmaxf(x[i], 0.f); }}\n")
ENTRY = 'extern "C" int kforge_forward(const void* const* in, const void* const* p, void* const* out, cudaStream_t s) {\n'
LAUNCH = (f"  relu<<<{N // 256}, 256, 0, s>>>((const float*)in[0], (float*)out[0]);\n"
          "  return cudaGetLastError() == cudaSuccess ? 0 : 1;\n}\n")


def raw(variant: int, before_launch: str = "", prelude: str = "") -> str:
    return f"// {variant}\n" + HEAD + prelude + ENTRY + before_launch + LAUNCH


HOSTILE = {
    # Every process it may make, each waiting: a shared process limit would stop other jobs' sandboxes starting.
    "fork_bomb": raw(0, "  for (int i = 0; i < 100000; ++i) { pid_t c = fork(); if (c == 0) { for (;;) pause(); } if (c < 0) break; }\n"),
    # A kernel spinning ~3 s launched when the library loads: before its turn it would run beside another's timing.
    "load_time_kernel": raw(0, prelude="__global__ void spin() { for (int k = 0; k < 30000; ++k) __nanosleep(100000); }\n"
                                       "__attribute__((constructor)) static void early() { spin<<<132, 32>>>(); }\n"),
    # Memory the resident-memory watchdog does not see: files in the private /dev/shm and /tmp.
    "tmpfs_filler": raw(0, "  static char block[1 << 20]; memset(block, 1, sizeof block);\n"
                           "  for (const char* f : {\"/dev/shm/fill\", \"/tmp/fill\"}) { FILE* o = fopen(f, \"w\");\n"
                           "    for (int i = 0; o && i < (64 << 10); ++i) if (fwrite(block, 1, sizeof block, o) != sizeof block) break;\n"
                           "    if (o) fclose(o); }\n"),
    # Disk in its own job folder (the only one it may write), in files of the per-file limit.
    "disk_filler": raw(0, "  static char block[1 << 20]; memset(block, 1, sizeof block);\n"
                          "  for (int k = 0; k < 4; ++k) { char name[32]; snprintf(name, sizeof name, \"fill%d\", k); FILE* o = fopen(name, \"w\");\n"
                          "    for (int i = 0; o && i < 2048; ++i) if (fwrite(block, 1, sizeof block, o) != sizeof block) break;\n"
                          "    if (o) fclose(o); }\n"),
    # Every lock file it can reach, taken and held (flock needs only read access): the GPU's lock, were it in reach,
    # would stop every other job's turn until this one's time ran out. It reports what it took, then runs honestly.
    "gpu_lock_holder": raw(0, "  static int taken = 0; if (!taken) { taken = 1; hold_locks(\"/\", 0); fprintf(stderr, \"locks held: %d\\n\", held);\n"
                              "    sleep(5); }\n",
                           prelude="#include <dirent.h>\n#include <fcntl.h>\n#include <sys/file.h>\nstatic int held = 0;\n"
                                   "static void hold_locks(const char* dir, int depth) { DIR* d = opendir(dir); if (!d || depth > 6) { if (d) closedir(d); return; }\n"
                                   "  for (dirent* e; (e = readdir(d));) { if (e->d_name[0] == '.' || !strcmp(dir, \"/proc\") || !strcmp(dir, \"/sys\")) continue;\n"
                                   "    char path[4096]; snprintf(path, sizeof path, \"%s/%s\", strcmp(dir, \"/\") ? dir : \"\", e->d_name);\n"
                                   "    if (e->d_type == DT_DIR) hold_locks(path, depth + 1);\n"
                                   "    else if (strstr(e->d_name, \"lock\")) { int fd = open(path, O_RDONLY); if (fd >= 0 && flock(fd, LOCK_EX | LOCK_NB) == 0) ++held; } }\n"
                                   "  closedir(d); }\n"),
    # Most of the GPU's memory, held through its evaluation.
    "gpu_memory_hog": raw(0, "  static void* hog = nullptr; if (!hog) { size_t free_b = 0, total = 0; cudaMemGetInfo(&free_b, &total);\n"
                             "    cudaMalloc(&hog, free_b / 10 * 9); }\n"),
}


def honest_times(jobs: dict, ids: list) -> tuple[list, list]:
    """(native median ms of each honest job that is strict, (id, status, tier, error) of the others)."""
    times, bad = [], []
    for i in ids:
        j = jobs.get(i, {})
        r = j.get("result") or {}
        if j.get("status") == "done" and r.get("tier") == "strict":
            times.append(r["native"]["median_ms"])
        else:
            bad.append((i, j.get("status"), r.get("tier"), (j.get("error") or r.get("log") or "")[:300]))
    return times, bad


def main() -> int:
    ap = common_arguments(__doc__.splitlines()[0])
    ap.add_argument("--honest", type=int, default=12, help="honest jobs in each phase")
    ap.add_argument("--each-hostile", type=int, default=2)
    ap.add_argument("--deadline-s", type=float, default=420)
    args = ap.parse_args()
    t0 = time.time()
    bundle = import_written(args, "relu16m", PROBLEM)
    svc = adversarial_service(args, "--job-timeout", "40", "--max-queue", "1000", "--fresh-every", "0")
    try:
        task = svc.add_task(bundle)
        left = lambda: args.deadline_s - (time.time() - t0)  # noqa: E731
        alone_ids = [svc.submit(task, "cuda", {"source": raw(v)}) for v in range(1, args.honest + 1)]
        alone, alone_bad = honest_times(svc.wait(alone_ids, left() / 3), alone_ids)
        print(f"alone: {len(alone)} strict, median {statistics.median(alone) if alone else 0:.4f} ms", flush=True)
        mixed_ids, hostile_ids = [], {}
        for v in range(args.honest):
            mixed_ids.append(svc.submit(task, "cuda", {"source": raw(1000 + v)}))
            if v < args.each_hostile * len(HOSTILE):
                name = list(HOSTILE)[v % len(HOSTILE)]
                source = HOSTILE[name].replace("// 0\n", f"// {v}\n", 1)
                hostile_ids[svc.submit(task, "cuda", {"source": source})] = name
        jobs = svc.wait(mixed_ids + list(hostile_ids), left())
        mixed, mixed_bad = honest_times(jobs, mixed_ids)
        health_status, health = svc.get("/health")
    finally:
        svc.stop()
    alive = health_status == 200 and health.get("status") == "ok"
    ratio = statistics.median(mixed) / statistics.median(alone) if alone and mixed else float("nan")
    passed = alive and not alone_bad and not mixed_bad and len(mixed) == args.honest and abs(ratio - 1) <= 0.05
    hostile = {}
    for i, name in hostile_ids.items():
        j = jobs.get(i, {})
        r = j.get("result") or {}
        hostile.setdefault(name, []).append(f"{j.get('status')}/{r.get('tier')}: " +
                                            " ".join(((j.get("error") or r.get("log") or "")[:160]).split()))
    summary = {"honest_alone_ms": alone, "honest_with_neighbours_ms": mixed, "ratio": ratio, "alone_bad": alone_bad,
               "with_neighbours_bad": mixed_bad, "hostile": hostile, "service_alive": alive, "passed": passed}
    (args.out / "hostile_neighbours.json").write_text(json.dumps(summary, indent=1))
    lines = [f"# Hostile neighbours: {'PASS' if passed else 'FAIL'} (service alive: {alive})", "",
             "| honest raw CUDA jobs | strict | median native ms | other verdicts |", "|---|---|---|---|",
             f"| alone | {len(alone)} of {args.honest} | {statistics.median(alone) if alone else 0:.4f} | {alone_bad[:2]} |",
             f"| among neighbours | {len(mixed)} of {args.honest} | {statistics.median(mixed) if mixed else 0:.4f} | {mixed_bad[:2]} |",
             "", f"Time among neighbours / alone: {ratio:.3f} (target within 5%).", "",
             "| neighbour | its own verdicts |", "|---|---|"]
    lines += [f"| {name} | {'; '.join(v)[:400].replace('|', '/')} |" for name, v in hostile.items()]
    (args.out / "hostile_neighbours.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))
    return 0 if passed else 1


if __name__ == "__main__":
    sys.exit(main())
