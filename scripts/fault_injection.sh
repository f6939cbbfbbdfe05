#!/usr/bin/env bash
# Fault injection against `kforge serve` on a GPU machine: over a thousand candidates for one small task,
# good and faulty (illegal address, hang, wrong result, crash/abort, forbidden system calls, memory hog,
# malformed input, every class of the reward-hack catalogue), then checks that the service is alive, that
# every good candidate has its correct result, every faulty one a named failure, and that no job was lost
# (bench/fault_injection.py). Writes fault_injection.{json,md}, serve.log and a log under $OUT. Under 9
# minutes on one H200 (the build included; BUILD_DIR=an existing build skips most of it).
#
#   run with carry [".deps"] (scripts/fetch_device_deps.sh first): bash scripts/fault_injection.sh
set -uo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
NAME=fault_injection
WORK=${WORK:-/dev/shm/kforge-fault}
source "$ROOT/scripts/service_run_prologue.sh"
echo "== fault injection (sandbox user $USER_FLAG)"
LIMIT_S=${LIMIT_S:-530}  # the whole script's seconds, build included (the device tool allows 600 per command)
timeout $(( LIMIT_S - ($(date +%s) - START) )) python3 bench/fault_injection.py --kforge "$ROOT/$BUILD_DIR/kforge" \
  --dump-hack-plans "$ROOT/$BUILD_DIR/tests/dump_hack_plans" --work "$WORK" --out "$OUT" --sandbox-user "$USER_FLAG" \
  --deadline-s $(( LIMIT_S - 30 - ($(date +%s) - START) )) "$@"
rc=$?
echo "== done in $(( $(date +%s) - START )) s (exit $rc)"
exit $rc
