#!/usr/bin/env bash
# Builds kforge on the GPU machine, runs the GPU test suite and a slice of the benchmark suite, and writes
# a log and JSON summaries under $OUT (device tool: at most 8 files come back).
#
#   scripts/device_check.sh [PROBLEM_GLOBS (space-separated)] [BUDGET]
#   e.g. run with carry [".deps"]: bash scripts/device_check.sh "bench/level1/0[1-9]_*.py" 8
# Knobs (environment):
# - PY_GPU_TESTS: Python test files to run with the GPU (pytest), within PY_GPU_TEST_TIMEOUT (300 s);
# - RUN_GPU_TESTS, RUN_CPU_TESTS (1: run that ctest label), GPU_TEST_TIMEOUT (300 s), GPU_TEST_JOBS (1; 3 ran the
#   suite in 190 s on one H100, every test passing), GPU_TEST_ARGS (more ctest
#   arguments, word-split, so no inner quotes: "-R GpuPlans.*(softmax|pool)");
# - SUITE_TIMEOUT (400 s for each GPU's share of the slice); a glob may carry its own budget (GLOB@BUDGET);
# - PRECISION (fp16 or bf16: the slice in KernelBench's --precision, baselines in the same dtype);
# - GPUS (how many to use; default all: problems dealt round-robin, one process per GPU);
# - WARM (processes that torch.compile the slice untimed beside the build, filling inductor's caches; WARM_ALSO:
#   globs to compile too, for a later call), INDUCTOR_CACHE (below);
# - SWEEP_PROBLEMS (globs: python/kforge/library_sweep.py on them first, within SWEEP_TIMEOUT, 400 s, at
#   SWEEP_BUDGET, default BUDGET).
# PROBLEM_GLOBS "none" skips the suite slice. The device tool stops a command at 10 minutes: the build (~60 s cold)
# and the limits chosen must fit in it.
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
# torch.compile's caches (inductor's FX graphs, Triton's kernels): a cold compile takes most of a problem's ~30 s
# in the suite. INDUCTOR_CACHE names a tarball in the repo (carried) from an earlier run to start from; the
# caches are saved to $OUT/inductor_cache.tar.xz for the next, if under the 16 MB the device tool brings back of a
# file (xz: 3.4 MB for issue 3's 66 problems, where gzip made 12.9).
export TORCHINDUCTOR_CACHE_DIR=/tmp/inductor-cache
mkdir -p "$TORCHINDUCTOR_CACHE_DIR"
[ -n "${INDUCTOR_CACHE:-}" ] && [ -f "$INDUCTOR_CACHE" ] && tar xf "$INDUCTOR_CACHE" -C "$TORCHINDUCTOR_CACHE_DIR" \
  && echo "inductor's caches from $INDUCTOR_CACHE: $(du -sh "$TORCHINDUCTOR_CACHE_DIR" | cut -f1)"
save_inductor_cache() {
  XZ_OPT=-6T0 tar cJf /tmp/inductor_cache.tar.xz -C "$TORCHINDUCTOR_CACHE_DIR" . 2>/dev/null
  local size=$(stat -c %s /tmp/inductor_cache.tar.xz)
  if [ "$size" -lt 16000000 ]; then cp /tmp/inductor_cache.tar.xz "$OUT/"; else echo "inductor's caches: $size bytes, not saved"; fi
}
echo "== machine"; nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader; python3 -c 'import torch; print("torch", torch.__version__)'
# The slice's problem files; a glob may carry its own budget (bench/level1_conv/*.py@7), the others take BUDGET.
declare -A budget_of
if [ "$GLOB" != none ]; then
  for token in $GLOB; do
    pattern=${token%@*}; b=$BUDGET; [ "$pattern" != "$token" ] && b=${token##*@}
    for f in $(ls $pattern); do budget_of[$f]=$b; done
  done
fi
all=$(printf "%s\n" "${!budget_of[@]}" | sort)
if [ "${WARM:-0}" -gt 0 ]; then
  # Untimed, while the build runs: torch.compile of every problem of the slice (and of WARM_ALSO's globs, for a
  # later run on this machine or from the saved caches), WARM processes at once (python/kforge/warm_compile.py),
  # so that the timed run finds inductor's caches full. Within WARM_TIMEOUT (400 s).
  echo "== warm-up: torch.compile of the slice, $WARM processes, in the background"
  PYTHONPATH="$ROOT/python" timeout ${WARM_TIMEOUT:-400} python3 -m kforge.warm_compile $all ${WARM_ALSO:+$(ls $WARM_ALSO)} \
    --jobs "$WARM" ${PRECISION:+--precision $PRECISION} > /tmp/warm_compile.txt 2>&1 &
  warm_pid=$!
  trap 'kill $warm_pid 2>/dev/null' EXIT  # a failed build must not leave it compiling into the next call's timing
fi
echo "== build"
device_build || exit 1
if [ "${RUN_GPU_TESTS:-1}" = 1 ]; then
  echo "== GPU tests (ctest -L gpu)"
  (cd build-device && timeout ${GPU_TEST_TIMEOUT:-300} ctest -L gpu ${GPU_TEST_ARGS:-} -j${GPU_TEST_JOBS:-1} --output-on-failure > /tmp/gpu_tests.txt 2>&1)
  grep -E "got .* expected|Test #.*Failed|tests passed" /tmp/gpu_tests.txt | head -40
  cp /tmp/gpu_tests.txt "$OUT/gpu_tests.txt"
fi
if [ -n "${PY_GPU_TESTS:-}" ]; then
  # Python tests that need the GPU (e.g. "tests/python/test_api.py tests/python/test_modelnew_eval.py").
  echo "== Python GPU tests: $PY_GPU_TESTS"
  KFORGE_BIN="$ROOT/$BUILD_DIR/kforge" PYTHONPATH="$ROOT/python" timeout ${PY_GPU_TEST_TIMEOUT:-300} \
    python3 -m pytest -q $PY_GPU_TESTS > /tmp/py_gpu_tests.txt 2>&1
  tail -5 /tmp/py_gpu_tests.txt; cp /tmp/py_gpu_tests.txt "$OUT/py_gpu_tests.txt"
fi
if [ "${RUN_CPU_TESTS:-1}" = 1 ]; then
  echo "== CPU tests (ctest -L cpu)"
  (cd build-device && timeout 200 ctest -L cpu -j8 > /tmp/cpu_tests.txt 2>&1); tail -3 /tmp/cpu_tests.txt
fi
# Several GPUs: the problems are dealt round-robin, one process per GPU side by side (each problem's kforge and
# baselines still measured in one process on one GPU), then merged into one table.
NGPU=${GPUS:-$(nvidia-smi --query-gpu=index --format=csv,noheader | wc -l)}
# share I N FILES...: the I-th of N round-robin shares of FILES.
share() { local i=$1 n=$2 k=0 p; shift 2; for p in "$@"; do [ $((k++ % n)) = "$i" ] && echo "$p"; done; return 0; }
pids=()  # waited for by PID: a bare `wait` (an empty list too) would also wait for the log's tee, forever
wait_all() { ((${#pids[@]})) && wait "${pids[@]}"; pids=(); }
# A share whose process wrote no table (died at start, cut before its first problem) is named, not merged away.
report_missing() { local f; for f in "$@"; do [ -f "$f" ] || echo "== MISSING: $f was not written (its problems are not in the table)"; done; }
rm -rf /tmp/suite; mkdir -p /tmp/suite  # a warm machine keeps an earlier call's slices and sweeps
# Nothing is timed while the warm-up runs (the GPU tests ran beside it: they check results, they time nothing).
[ -n "${warm_pid:-}" ] && { wait $warm_pid; tail -1 /tmp/warm_compile.txt; }
if [ -n "${SWEEP_PROBLEMS:-}" ]; then
  # Products and convolutions against their library's own algorithms / engines, same tier, same process
  # (python/kforge/library_sweep.py).
  echo "== library sweep: problems $SWEEP_PROBLEMS, budget ${SWEEP_BUDGET:-$BUDGET}, $NGPU GPU(s)"
  swept=$(ls $SWEEP_PROBLEMS) || { echo "== no problem matches SWEEP_PROBLEMS"; exit 2; }
  for i in $(seq 0 $((NGPU - 1))); do
    mine=$(share $i $NGPU $swept); [ -z "$mine" ] && continue
    mkdir -p /tmp/suite/sweep/gpu$i
    CUDA_VISIBLE_DEVICES=$i PYTHONPATH="$ROOT/python" PYTHONUNBUFFERED=1 timeout ${SWEEP_TIMEOUT:-400} \
      python3 -m kforge.library_sweep $mine --budget "${SWEEP_BUDGET:-$BUDGET}" --db /tmp/suite/sweep/gpu$i/kforge.db \
      --out /tmp/suite/sweep/gpu$i > /tmp/suite/sweep/gpu$i.log 2>&1 &
    pids+=($!)
  done
  wait_all
  missing=$(report_missing $(for i in $(seq 0 $((NGPU - 1))); do
    [ -n "$(share $i $NGPU $swept)" ] && echo /tmp/suite/sweep/gpu$i/library_sweep.json; done))
  PYTHONPATH="$ROOT/python" python3 -m kforge.library_sweep --merge /tmp/suite/sweep/gpu*/library_sweep.json \
    --out /tmp/suite/sweep | grep -vE "^\s*$" | tail -70
  [ -n "$missing" ] && echo "$missing" | tee -a /tmp/suite/sweep/library_sweep.md
  grep -hE "Error|error:" /tmp/suite/sweep/gpu*.log | head -20
  cp /tmp/suite/sweep/library_sweep.md "$OUT/" 2>/dev/null
fi
[ "$GLOB" = none ] && { tar czf "$OUT/suite_logs.tgz" -C /tmp/suite sweep 2>/dev/null; save_inductor_cache; echo "== done"; exit 0; }
echo "== benchmark slice: problems $GLOB, budget $BUDGET, $NGPU GPU(s)"
# Eager and torch.compile (no CUDA graphs) on a small network are bound by the host's launch rate: a busy or slow
# host CPU slows them and not kforge's graph-launched plans. The load and the busiest processes go in the log.
echo "host: $(nproc) CPUs, load $(cut -d' ' -f1-3 /proc/loadavg)"
ps -eo pcpu,etimes,comm --sort=-pcpu | awk 'NR > 1 && $1 > 20' | head -5
[ -n "$all" ] || { echo "== no problem matches $GLOB"; exit 2; }
rm -rf /dev/shm/kforge
# One session process per GPU and budget for its share (torch and inductor start once), the budgets one after
# another; the per-problem timeout is the slice's time limit spread over the share's problems.
for i in $(seq 0 $((NGPU - 1))); do
  mine=$(share $i $NGPU $all); [ -z "$mine" ] && continue
  per_problem=$(( ${SUITE_TIMEOUT:-400} / $(echo $mine | wc -w) ))
  (for b in $(for f in $mine; do echo ${budget_of[$f]}; done | sort -nu); do
     files=$(for f in $mine; do [ "${budget_of[$f]}" = "$b" ] && echo $f; done)
     mkdir -p /dev/shm/kforge/gpu$i-b$b
     CUDA_VISIBLE_DEVICES=$i PYTHONUNBUFFERED=1 python3 bench/run_suite.py --kforge build-device/kforge --budget "$b" \
       --in-process --out /tmp/suite/gpu$i-b$b --workdir /dev/shm/kforge/gpu$i-b$b --problems "$(echo $files)" \
       --timeout $per_problem ${PRECISION:+--precision $PRECISION} > /tmp/suite/gpu$i-b$b.txt 2>&1
   done) &
  pids+=($!)
done
wait_all
missing=$(report_missing $(for i in $(seq 0 $((NGPU - 1))); do
  for b in $(for f in $(share $i $NGPU $all); do echo ${budget_of[$f]}; done | sort -nu); do echo /tmp/suite/gpu$i-b$b/suite.json; done
done))
python3 bench/merge_suites.py --partial --by-source $(ls -d /tmp/suite/gpu*/suite.json) -o /tmp/suite/suite.md --json /tmp/suite/suite.json
[ -n "$missing" ] && echo "$missing" | tee -a /tmp/suite/suite.md
cat /tmp/suite/gpu*/logs/session-*.log 2>/dev/null | grep -E "^\|" > /tmp/suite/session_rows.md
cp /tmp/suite/suite.json /tmp/suite/suite.md "$OUT/" 2>/dev/null
# Every candidate's measurement per task, fastest first (schedule, tiers, native ms): what the table's choices
# came from; the full rows stay in the database inside suite_logs.tgz.
python3 - > "$OUT/candidates.md" <<'PY' 2>/dev/null || true
import glob, json, sqlite3
for path in sorted(glob.glob("/tmp/suite/gpu*/kforge.db")):
  db = sqlite3.connect(path)
  for task in [r[0] for r in db.execute("SELECT DISTINCT task FROM measurements ORDER BY task")]:
    print(f"## {task}")
    rows = db.execute("SELECT schedule, compiled, strict, relaxed, median_ms, log FROM measurements WHERE task = ? "
                      "ORDER BY (median_ms IS NULL OR median_ms <= 0), median_ms", (task,)).fetchall()
    for schedule, compiled, strict, relaxed, ms, log in rows:
        s = json.loads(schedule)
        tier = "strict" if strict else "relaxed" if relaxed else "wrong" if compiled else "no build"
        kernels = "; ".join(f"{k}: " + " ".join(f"{a}={b}" for a, b in v.items() if a not in ("chunks", "vec") or b != 1)
                            for k, v in s.get("kernels", {}).items()) or "defaults"
        flags = ("" if s.get("fuse_rows", True) else "unfused ") + ("" if s.get("cuda_graph", True) else "no-graph ")
        flags += ("channels-last-fp16 " if s.get("half_activations") else "channels-last ") if s.get("channels_last") else ""
        flags += "unrolled " if s.get("unroll_recurrences") else ""
        why = f"  [{' '.join((log or '').split())[:300]}]" if tier in ("wrong", "no build") else ""  # the check's reason
        print(f"- {ms if ms else 0:.4f} ms {tier:7} {flags}{kernels}{why}")
PY
for d in /tmp/suite/gpu*/; do cp "$d/kforge.db" "$d/reports/" 2>/dev/null; done
(cd /tmp/suite && tar czf "$OUT/suite_logs.tgz" session_rows.md gpu*.txt gpu*/logs gpu*/reports $([ -d sweep ] && echo sweep) 2>/dev/null)
save_inductor_cache
echo "== done"
