#!/usr/bin/env bash
# Which cuDNN engine eager PyTorch runs for a convolution problem, and which ones kforge's search tried: both
# under cuDNN's own API log (CUDNN_LOGINFO_DBG), with the libcudnn eager's process mapped (kforge's: the
# device_build.sh line "cuDNN from ..." says, where it is not the system's). For the TF32 gap of
# a conv1d (eager's 3x faster than every engine kforge's heuristic list offered).
#
#   run with carry [".deps"] (scripts/fetch_device_deps.sh first): bash scripts/cudnn_engines.sh [PROBLEM] [BUDGET]
#   (default bench/level1_conv/01_conv1d.py, 12). Writes under $OUT: cudnn_eager.log.gz, cudnn_kforge.log.gz,
#   engines.md (the engine lines of both logs, side by side) and the script's log.
set -uo pipefail
PROBLEM=${1:-bench/level1_conv/01_conv1d.py}
BUDGET=${2:-12}
OUT=${OUT:-/tmp/kforge-cudnn-out}
mkdir -p "$OUT"
exec > >(tee "$OUT/cudnn_engines.log") 2>&1
ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT"
source "$ROOT/scripts/device_build.sh"
export KFORGE_CACHE=/tmp/kforge-cache
echo "== build"
device_build || exit 1
echo "== eager $PROBLEM under the cuDNN log"
CUDNN_LOGLEVEL_DBG=3 CUDNN_LOGINFO_DBG=1 CUDNN_LOGDEST_DBG=/tmp/cudnn_eager.log PYTHONPATH=python python3 - "$PROBLEM" <<'PY'
import sys, torch
from kforge.problem import load_problem
p = load_problem(sys.argv[1])
torch.manual_seed(0)
model = p.build_model().cuda()
inputs = [t.cuda() for t in p.draw_inputs(0, "cpu")]
with torch.no_grad():
    for _ in range(3):
        model(*inputs)
torch.cuda.synchronize()
start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
start.record()
with torch.no_grad():
    model(*inputs)
end.record()
end.synchronize()
print(f"eager: {start.elapsed_time(end):.3f} ms (one warm call), cudnn.allow_tf32={torch.backends.cudnn.allow_tf32}, "
      f"cuDNN {torch.backends.cudnn.version()}")
print("mapped:", sorted({l.split()[-1] for l in open("/proc/self/maps") if "cudnn" in l}))
PY
echo "== kforge optimize, budget $BUDGET, under the cuDNN log"
CUDNN_LOGLEVEL_DBG=3 CUDNN_LOGINFO_DBG=1 CUDNN_LOGDEST_DBG=/tmp/cudnn_kforge.log \
  build-device/kforge optimize "$PROBLEM" --budget "$BUDGET" --db /tmp/cudnn_engines.db --report /tmp/cudnn_report.json \
  > /tmp/kforge_optimize.txt 2>&1
tail -25 /tmp/kforge_optimize.txt
python3 - /tmp/cudnn_engines.db <<'PY'
import sqlite3, sys
for schedule, strict, relaxed, ms in sqlite3.connect(sys.argv[1]).execute(
        "SELECT schedule, strict, relaxed, median_ms FROM measurements ORDER BY rowid"):
    print(f"{ms:9.3f} ms  strict {strict} relaxed {relaxed}  {schedule}")
PY
# The engine lines of both logs (their wording varies across cuDNN releases: several spellings are kept).
{
  for who in eager kforge; do
    echo "## $who"
    echo '```'
    grep -i -E "engine_?id|engineId|global_?index|CUDNN_ATTR_ENGINE_GLOBAL_INDEX|knob|layout|tensor_?core|numerical" \
      "/tmp/cudnn_$who.log" | sort | uniq -c | sort -rn | head -60
    echo '```'
  done
} > "$OUT/engines.md"
gzip -c /tmp/cudnn_eager.log > "$OUT/cudnn_eager.log.gz"
gzip -c /tmp/cudnn_kforge.log > "$OUT/cudnn_kforge.log.gz"
ls -la "$OUT"
echo "== done"
