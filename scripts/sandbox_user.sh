# Sourced by the device scripts: prints the user `kforge serve` should run its sandboxes as. nobody when
# nobody can run the build's kforge and import torch (the service's sandbox drops to it); otherwise root,
# with a note: the sandbox keeps its namespaces, seccomp, read-only file system and limits, but not the
# separate user. Needs $ROOT and $BUILD_DIR.
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
