#!/usr/bin/env bash
# The untrusted path on a GPU machine, in one device call (under 9 minutes on one H100/H200):
# `kforge evaluate` on honest and thieving candidates of every kind (scripts/untrusted_check.sh), the ModelNew
# tests that need a GPU, a small fault injection through `kforge serve`, and the service's throughput with fresh
# sets on and off (scripts/service_bench.sh twice). Writes untrusted.txt, pytest_modelnew.txt, fault.txt,
# fault_injection.md and service_bench_{fresh,stored}.md under $OUT; prints a summary.
#
#   run with carry [".deps"] (scripts/fetch_device_deps.sh first): bash scripts/untrusted_device_check.sh
set -uo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
export OUT=${OUT:-/tmp/kforge-untrusted-out}
mkdir -p "$OUT"
cd "$ROOT"
source "$ROOT/scripts/device_build.sh"
echo "== machine"; nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
device_build || exit 1
echo "== kforge evaluate on untrusted candidates (| candidate | tier | wanted | reward | ms protocol | distribution | log |)"
timeout 200 bash scripts/untrusted_check.sh > "$OUT/untrusted.txt" 2>&1
grep "^|" "$OUT/untrusted.txt"; grep -v "^|" "$OUT/untrusted.txt" | tail -5
echo "== ModelNew tests (GPU)"
KFORGE_BIN="$ROOT/$BUILD_DIR/kforge" PYTHONPATH="$ROOT/python" timeout 150 python3 -m pytest -q tests/python/test_modelnew_eval.py \
  > "$OUT/pytest_modelnew.txt" 2>&1
tail -3 "$OUT/pytest_modelnew.txt"
echo "== fault injection"
LIMIT_S=${FAULT_LIMIT_S:-150} timeout 170 bash scripts/fault_injection.sh --schedules 40 --raw-good 8 --raw-faulty 2 --hangs 1 \
  --hogs 1 --plans-per-hack 1 --modelnew 2 --malformed 2 > "$OUT/fault.txt" 2>&1
grep -E "^# Fault|\| [0-9]+ \| [1-9][0-9]* \| " "$OUT/fault.txt" | head -20
for run in fresh:128 stored:0; do
  echo "== service throughput, ${run%%:*} sets (--fresh-every ${run##*:})"
  LIMIT_S=${BENCH_LIMIT_S:-110} SCHEDULES=100 RAW=40 MODELNEW=2 timeout 125 bash scripts/service_bench.sh bench/service/relu_small.py \
    --plans 40 --load-inline 0 --fresh-every "${run##*:}" --tag "${run%%:*}" > "$OUT/bench_${run%%:*}.txt" 2>&1
  grep -E "^\||^#" "$OUT/service_bench_${run%%:*}.md" 2>/dev/null || tail -5 "$OUT/bench_${run%%:*}.txt"
done
echo "== done"
