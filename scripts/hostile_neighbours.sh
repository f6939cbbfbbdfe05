#!/usr/bin/env bash
# Hostile neighbours against `kforge serve` on a GPU machine (bench/hostile_neighbours.py): honest raw CUDA jobs
# alone, then among a fork bomb, a load-time GPU kernel, tmpfs and disk fillers, a lock holder and a GPU-memory hog;
# checks that the honest ones keep their verdict and their time (within 5%) and that the service stays up. Writes
# hostile_neighbours.{json,md}, serve.log and a log under $OUT.
#
#   run with carry [".deps"] (scripts/fetch_device_deps.sh first): bash scripts/hostile_neighbours.sh
set -uo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
NAME=hostile_neighbours
WORK=${WORK:-/dev/shm/kforge-hostile}
source "$ROOT/scripts/service_run_prologue.sh"
echo "== hostile neighbours (sandbox user $USER_FLAG)"
LIMIT_S=${LIMIT_S:-530}  # the whole script's seconds, build included (the device tool allows 600 per command)
timeout $(( LIMIT_S - ($(date +%s) - START) )) python3 bench/hostile_neighbours.py --kforge "$ROOT/$BUILD_DIR/kforge" \
  --work "$WORK" --out "$OUT" --sandbox-user "$USER_FLAG" \
  --deadline-s $(( LIMIT_S - 30 - ($(date +%s) - START) )) "$@"
rc=$?
echo "== done in $(( $(date +%s) - START )) s (exit $rc)"
exit $rc
