# Sourced by the service scripts (fault_injection.sh, service_bench.sh) once they have set ROOT, NAME (the
# log's name) and WORK (their folder, on tmpfs): logs to $OUT/$NAME.log, builds (scripts/device_build.sh),
# makes $WORK afresh, readable by the sandbox user, and sets KFORGE_CACHE and USER_FLAG, the user
# `kforge serve` runs its sandboxes as.
START=$(date +%s)
OUT=${OUT:-/tmp/kforge-$NAME-out}
mkdir -p "$OUT"
exec > >(tee "$OUT/$NAME.log") 2>&1
cd "$ROOT"
source "$ROOT/scripts/device_build.sh"

# nobody when nobody can run the build's kforge and import torch (the service's sandbox drops to it);
# otherwise root, with a note: the sandbox keeps its namespaces, seccomp, read-only file system and
# limits, but not the separate user.
sandbox_user() {
  if python3 - "$ROOT/$BUILD_DIR/kforge" "$(command -v python3)" <<'PY' 2>/dev/null
import os, subprocess, sys
kforge, python = sys.argv[1:]
def as_nobody():
    os.setgroups([]); os.setgid(65534); os.setuid(65534)
ok = os.access(kforge, os.X_OK) and subprocess.run([python, "-c", "import torch"], preexec_fn=as_nobody,
                                                  capture_output=True).returncode == 0
sys.exit(0 if ok and subprocess.run([kforge, "--help"], preexec_fn=as_nobody, capture_output=True).returncode == 0 else 1)
PY
  then echo nobody
  else
    echo "note: user nobody cannot run $ROOT/$BUILD_DIR/kforge or import torch here; sandboxes run as root (namespaces, seccomp, read-only file system and limits still apply)" >&2
    echo root
  fi
}

echo "== machine"; nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
echo "== build"
device_build || exit 1
rm -rf "$WORK" && mkdir -p "$WORK" && chmod 755 "$WORK"
export KFORGE_CACHE="$WORK/cache"
USER_FLAG=$(sandbox_user)
