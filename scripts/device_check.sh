#!/usr/bin/env bash
# Builds kforge on the GPU machine, runs the GPU test suite and a slice of the benchmark suite, and writes
# a log and JSON summaries under $OUT (device tool: at most 8 files come back).
#
#   scripts/device_check.sh [PROBLEM_GLOBS (space-separated)] [BUDGET]
#   e.g. run with carry [".deps"]: bash scripts/device_check.sh "bench/level1/0[1-9]_*.py" 8
# Knobs (environment): RUN_GPU_TESTS, RUN_CPU_TESTS (1: run that ctest label), GPU_TEST_TIMEOUT (300 s),
# GPU_TEST_ARGS (more ctest arguments, word-split, so no inner quotes: "-R GpuPlans.*(softmax|pool)"),
# SUITE_TIMEOUT (400 s for the whole slice), SWEEP_PROBLEMS (globs: run python/kforge/library_sweep.py on them
# first, within SWEEP_TIMEOUT, 400 s). PROBLEM_GLOBS "none" skips the suite slice. The device tool stops a command
# at 10 minutes: the build (~60 s cold) and the limits chosen must fit in it.
#
# The device image lacks sqlite3.h, cpp-httplib, XGBoost and bubblewrap: scripts/fetch_device_deps.sh unpacks
# Debian's packages into .deps/root here; the run carries them (carry [".deps"]).
set -uo pipefail
GLOB=${1:-bench/level1/*.py}
BUDGET=${2:-8}
OUT=${OUT:-/tmp/kforge-device-out}
mkdir -p "$OUT"
LOG="$OUT/device_check.log"
exec > >(tee "$LOG") 2>&1
ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT"
source "$ROOT/scripts/device_build.sh"
export KFORGE_CACHE=/tmp/kforge-cache
echo "== machine"; nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader; python3 -c 'import torch; print("torch", torch.__version__)'
echo "== build"
device_build || exit 1
if [ "${RUN_GPU_TESTS:-1}" = 1 ]; then
  echo "== GPU tests (ctest -L gpu)"
  (cd build-device && timeout ${GPU_TEST_TIMEOUT:-300} ctest -L gpu ${GPU_TEST_ARGS:-} -j1 --output-on-failure > /tmp/gpu_tests.txt 2>&1)
  grep -E "got .* expected|Test #.*Failed|tests passed" /tmp/gpu_tests.txt | head -40
  cp /tmp/gpu_tests.txt "$OUT/gpu_tests.txt"
fi
if [ "${RUN_CPU_TESTS:-1}" = 1 ]; then
  echo "== CPU tests (ctest -L cpu)"
  (cd build-device && timeout 200 ctest -L cpu -j8 > /tmp/cpu_tests.txt 2>&1); tail -3 /tmp/cpu_tests.txt
fi
if [ -n "${SWEEP_PROBLEMS:-}" ]; then
  # Products and convolutions against their library's own algorithms / engines, same tier, same process
  # (python/kforge/library_sweep.py).
  echo "== library sweep: problems $SWEEP_PROBLEMS, budget $BUDGET"
  mkdir -p /tmp/suite/sweep
  PYTHONPATH="$ROOT/python" PYTHONUNBUFFERED=1 timeout ${SWEEP_TIMEOUT:-400} python3 -m kforge.library_sweep $SWEEP_PROBLEMS \
    --budget "$BUDGET" --db /tmp/suite/sweep/kforge.db --out /tmp/suite/sweep 2>&1 | grep -vE "^\s*$" | tail -60
  cp /tmp/suite/sweep/library_sweep.md "$OUT/" 2>/dev/null
fi
[ "$GLOB" = none ] && { tar czf "$OUT/suite_logs.tgz" -C /tmp/suite sweep 2>/dev/null; echo "== done"; exit 0; }
echo "== benchmark slice: problems $GLOB, budget $BUDGET"
rm -rf /dev/shm/kforge && mkdir -p /dev/shm/kforge
# One session process for the slice (torch and inductor start once); the per-problem timeout is the
# slice's time limit spread over its problems.
n=$(ls $GLOB | wc -l)
PYTHONUNBUFFERED=1 python3 bench/run_suite.py --kforge build-device/kforge --budget "$BUDGET" --in-process \
  --out /tmp/suite --workdir /dev/shm/kforge --problems "$GLOB" --timeout $(( ${SUITE_TIMEOUT:-400} / n ))
cat /tmp/suite/logs/session-*.log 2>/dev/null | grep -E "^\|" | tail -80 > "$OUT/session_rows.md"
cp /tmp/suite/suite.json /tmp/suite/suite.md "$OUT/" 2>/dev/null
# Every candidate's measurement per task, fastest first (schedule, tiers, native ms): what the table's choices
# came from; the full rows stay in the database inside suite_logs.tgz.
python3 - > "$OUT/candidates.md" <<'PY' 2>/dev/null || true
import json, sqlite3
db = sqlite3.connect("/tmp/suite/kforge.db")
tasks = [r[0] for r in db.execute("SELECT DISTINCT task FROM measurements ORDER BY task")]
for task in tasks:
    print(f"## {task}")
    rows = db.execute("SELECT schedule, compiled, strict, relaxed, median_ms, log FROM measurements WHERE task = ? "
                      "ORDER BY (median_ms IS NULL OR median_ms <= 0), median_ms", (task,)).fetchall()
    for schedule, compiled, strict, relaxed, ms, log in rows:
        s = json.loads(schedule)
        tier = "strict" if strict else "relaxed" if relaxed else "wrong" if compiled else "no build"
        kernels = "; ".join(f"{k}: " + " ".join(f"{a}={b}" for a, b in v.items() if a not in ("chunks", "vec") or b != 1)
                            for k, v in s.get("kernels", {}).items()) or "defaults"
        flags = ("" if s.get("fuse_rows", True) else "unfused ") + ("" if s.get("cuda_graph", True) else "no-graph ")
        why = f"  [{' '.join((log or '').split())[:300]}]" if tier in ("wrong", "no build") else ""  # the check's reason
        print(f"- {ms if ms else 0:.4f} ms {tier:7} {flags}{kernels}{why}")
PY
cp /tmp/suite/kforge.db /tmp/suite/reports/ 2>/dev/null
tar czf "$OUT/suite_logs.tgz" -C /tmp/suite logs reports $([ -d /tmp/suite/sweep ] && echo sweep) 2>/dev/null
echo "== done"
