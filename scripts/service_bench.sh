#!/usr/bin/env bash
# Throughput of `kforge serve` on one GPU (bench/service_bench.py): evaluations per GPU-minute for
# generator schedules, raw CUDA candidates and ModelNew candidates, and one load_inline ModelNew, on a
# KernelBench level-1 task. Writes service_bench.{json,md}, serve.log and a log under $OUT.
#
#   run with carry [".deps"] (scripts/fetch_device_deps.sh first): bash scripts/service_bench.sh [PROBLEM [ARGS]]
#   (default bench/service/relu_small.py; SCHEDULES, RAW, MODELNEW, SLOTS set the counts; LIMIT_S the
#   script's seconds, build included)
set -uo pipefail
PROBLEM=${1:-bench/service/relu_small.py}
shift $(( $# > 0 ? 1 : 0 ))  # the rest goes to bench/service_bench.py (--fresh-every N --tag T --plans N ...)
ROOT=$(cd "$(dirname "$0")/.." && pwd)
NAME=service_bench
WORK=${WORK:-/dev/shm/kforge-bench}  # tmpfs: the hidden sets load from memory
source "$ROOT/scripts/service_run_prologue.sh"
echo "== service bench: $PROBLEM (sandbox user $USER_FLAG)"
timeout $(( ${LIMIT_S:-570} - ($(date +%s) - START) )) python3 bench/service_bench.py --kforge "$ROOT/$BUILD_DIR/kforge" --problem "$PROBLEM" \
  --work "$WORK" --out "$OUT" --sandbox-user "$USER_FLAG" --schedules "${SCHEDULES:-100}" --raw "${RAW:-60}" \
  --modelnew "${MODELNEW:-3}" --slots "${SLOTS:-4}" "$@"
rc=$?
rm -rf "$WORK"
echo "== done in $(( $(date +%s) - START )) s (exit $rc)"
exit $rc
