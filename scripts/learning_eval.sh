#!/usr/bin/env bash
# Issue 5 on the GPU machine: trains the learned policy on `kforge synth` tasks, then compares it on held-out synth
# problems (another seed, near-duplicates of the training set and of bench/ filtered out) with the untrained
# network, random search and the XGBoost cost model (each alone) and kforge's heuristic search (hand-written
# openings, then random proposals; 256 of it are the reference). Never trains on bench/.
#
# Two device commands of under 10 minutes each, on one warm machine (the second reuses the first's work folder,
# build-device/learning, which git ignores); run with carry [".deps"] after scripts/fetch_device_deps.sh:
#   bash scripts/learning_eval.sh train   # build, synth both sets, train for TRAIN_SECONDS         (~6 min)
#   bash scripts/learning_eval.sh eval    # cost model from the training measurements, curves, report (~4 min)
#   bash scripts/learning_eval.sh all     # both in one command, with smaller budgets               (~8.5 min)
# Knobs (environment): TRAIN_TASKS (24), HELDOUT_TASKS (6), TRAIN_SECONDS (180; all: 120), SAMPLES (16),
# BATCH (4), HELDOUT_SEED (202), EVAL_SECONDS (200; all: 150), CANDIDATES (64), REFERENCE (256), MAX_ELEMS (16M), SELF_IMITATION (1:
# after PPO, behaviour cloning of the fastest plans the training run measured; 0: the PPO policy alone).
# Under $OUT (the device tool brings back 8 files at most): learning_eval.md (table), learning_eval.svg (plot),
# learning_eval.json, train_log.jsonl, train.db, the newest checkpoint, the log, and aux_MODE.tgz (CMake output,
# synth logs and manifests). RESTORE=folder lets `eval` run on a fresh machine from what `train` brought back.
set -uo pipefail
MODE=${1:-all}
OUT=${OUT:-/tmp/kforge-learning-out}
mkdir -p "$OUT"
exec > >(tee -a "$OUT/learning_eval_$MODE.log") 2>&1
AUX=$(mktemp -d)
trap 'tar czf "$OUT/aux_$MODE.tgz" -C "$AUX" . 2>/dev/null' EXIT
ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT"
DEPS="$ROOT/.deps/root/usr"
export LD_LIBRARY_PATH="$DEPS/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export PATH="$DEPS/bin:$PATH"
export KFORGE_CACHE=/tmp/kforge-cache PYTHONUNBUFFERED=1
W="$ROOT/build-device/learning"
KF="$ROOT/build-device/kforge"
TRAIN_TASKS=${TRAIN_TASKS:-24}
HELDOUT_TASKS=${HELDOUT_TASKS:-6}
SAMPLES=${SAMPLES:-16}
BATCH=${BATCH:-4}
CANDIDATES=${CANDIDATES:-64}
REFERENCE=${REFERENCE:-256}
MAX_ELEMS=${MAX_ELEMS:-16777216}
HELDOUT_SEED=${HELDOUT_SEED:-202}
HELDOUT="$W/heldout_$HELDOUT_SEED"
THREADS=$(nproc)
if [ "$MODE" = all ]; then TRAIN_SECONDS=${TRAIN_SECONDS:-120} EVAL_SECONDS=${EVAL_SECONDS:-150}; fi
TRAIN_SECONDS=${TRAIN_SECONDS:-180}
EVAL_SECONDS=${EVAL_SECONDS:-200}

build() {
  echo "== build ($(date +%T))"
  local t0=$(date +%s)
  cmake -S . -B build-device -G Ninja -DCMAKE_BUILD_TYPE=Release -DPython3_EXECUTABLE="$(which python3)" \
    -DCMAKE_PREFIX_PATH="$DEPS" -DSQLite3_INCLUDE_DIR="$DEPS/include" -DKFORGE_WITH_TORCH=ON \
    -DSQLite3_LIBRARY="$DEPS/lib/x86_64-linux-gnu/libsqlite3.so" > "$AUX/cmake.txt" 2>&1 || { tail -30 "$AUX/cmake.txt"; exit 1; }
  grep -E "not found: building" "$AUX/cmake.txt" || true
  ninja -C build-device -j"$THREADS" > /tmp/ninja.txt 2>&1 || { grep -B2 -A10 error /tmp/ninja.txt | head -80; exit 1; }
  echo "built in $(( $(date +%s) - t0 )) s"
}

# Deterministic for a seed: a fresh machine regenerates the same files.
synth_sets() {
  echo "== synth ($(date +%T))"
  local common=(--device cuda --no-compile-check --max-elems "$MAX_ELEMS" --exclude bench)
  [ -f "$W/train/manifest.json" ] || "$KF" synth --count "$TRAIN_TASKS" --seed 101 --out "$W/train" "${common[@]}" > "$AUX/synth_train.txt" 2>&1 \
    || { tail -20 "$AUX/synth_train.txt"; exit 1; }
  [ -f "$HELDOUT/manifest.json" ] || "$KF" synth --count "$HELDOUT_TASKS" --seed "$HELDOUT_SEED" --out "$HELDOUT" "${common[@]}" \
    --exclude "$W/train" > "$AUX/synth_heldout.txt" 2>&1 || { tail -20 "$AUX/synth_heldout.txt"; exit 1; }
  cp "$W/train/manifest.json" "$AUX/manifest_train.json"; cp "$HELDOUT/manifest.json" "$AUX/manifest_heldout.json"
  echo "training tasks: $(ls "$W"/train/*.py | wc -l), held-out (seed $HELDOUT_SEED): $(ls "$HELDOUT"/*.py | wc -l)"
}

train() {
  echo "== train for ${TRAIN_SECONDS} s, K=$SAMPLES, batch $BATCH ($(date +%T))"
  "$KF" train --tasks "$W/train" --checkpoints "$W/policy" --db "$W/train.db" --samples "$SAMPLES" --batch "$BATCH" \
    --seconds "$TRAIN_SECONDS" --compile-threads "$THREADS" --log "$W/policy/train_log.jsonl" > "$AUX/train_stdout.txt" \
    || { tail -20 "$AUX/train_stdout.txt"; exit 1; }
  python3 - "$W/policy/train_log.jsonl" <<'PY'
import json, sys
for line in open(sys.argv[1]):
    r = json.loads(line)
    print(f"step {r['step']:3d}  tasks {r['tasks_done']:4d}  {r['elapsed_s']:6.0f} s  reward {r['mean_reward']:+.3f}  "
          f"policy loss {r['policy_loss']:+.3f}  value loss {r['value_loss']:.3f}  entropy {r['entropy']:.2f}")
PY
  if [ "${SELF_IMITATION:-1}" = 1 ]; then
    # Off-policy from the same run's records: behaviour cloning of the 2 fastest plans measured per training task.
    echo "== behaviour cloning of the best measured training plans ($(date +%T))"
    "$KF" train --from-db "$W/train.db" --checkpoints "$W/policy" --top 2 --epochs 30 || exit 1
  fi
  cp "$W/policy/train_log.jsonl" "$W/train.db" "$OUT/"
  cp "$(ls "$W"/policy/policy-*.pt | tail -1)" "$OUT/"
}

# A fresh machine (the warm one lost between the two commands) evaluates what `train` brought back: copy its
# train_log.jsonl, train.db and policy-*.pt into an ignored folder here and name it in RESTORE (and in carry).
restore() {
  [ -n "${RESTORE:-}" ] || return 0
  [ -n "$(ls "$W"/policy/policy-*.pt 2>/dev/null)" ] && return 0
  echo "== restoring the training run from $RESTORE"
  mkdir -p "$W/policy"
  cp "$RESTORE"/policy-*.pt "$RESTORE/train_log.jsonl" "$W/policy/" && cp "$RESTORE/train.db" "$W/" || exit 1
}

evaluate() {
  [ -n "$(ls "$W"/policy/policy-*.pt 2>/dev/null)" ] || { echo "no checkpoint in $W/policy: run 'train' first on this machine"; exit 1; }
  echo "== cost model from the training measurements ($(date +%T))"
  local cm=()
  if "$KF" train-costmodel --db "$W/train.db" -o "$W/costmodel.json"; then cm=(--cost-model "$W/costmodel.json"); fi
  echo "== held-out curves, up to ${EVAL_SECONDS} s ($(date +%T))"
  local steps tasks
  steps=$(tail -1 "$W/policy/train_log.jsonl" | python3 -c 'import json,sys; r=json.load(sys.stdin); print(r["step"], r["tasks_done"])')
  PYTHONPATH="$ROOT/python" python3 -m kforge.learning_eval --problems "$HELDOUT" --out "$OUT" --checkpoint "$W/policy" \
    "${cm[@]}" --db "$W/eval.db" --candidates "$CANDIDATES" --reference "$REFERENCE" --seconds "$EVAL_SECONDS" \
    --compile-threads "$THREADS" --training "PPO steps and tasks seen: $steps (K=$SAMPLES, ${TRAIN_TASKS} synth tasks, seed 101), \
then behaviour cloning of the best measured plans: $([ "${SELF_IMITATION:-1}" = 1 ] && echo yes || echo no)"
}

echo "== machine"; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; python3 -c 'import torch; print("torch", torch.__version__)'
case "$MODE" in
  train) build; synth_sets; train ;;
  eval) build; synth_sets; restore; evaluate ;;
  all) build; synth_sets; train; evaluate ;;
  *) echo "usage: scripts/learning_eval.sh train|eval|all"; exit 2 ;;
esac
echo "== done ($(date +%T)); results in $OUT"
