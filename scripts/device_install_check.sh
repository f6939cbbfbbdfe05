#!/usr/bin/env bash
# The installed package on the GPU machine, as a user has it: a virtual environment that sees the system's torch,
# `pip install` of this clone (no registry there: --no-build-isolation, the build's tools are the image's), then,
# from a folder outside the clone and with nothing of the clone on PYTHONPATH, `kforge optimize` on a bundled
# problem, `kforge.optimize` on a model object and torch.compile's kforge backend, each checked against PyTorch.
#
#   ROOT=$PWD OUT=... bash scripts/device_install_check.sh [BUDGET]      (carry [".deps"])
#
# Writes $OUT/install_check.log; exits non-zero on the first step that fails.
set -uo pipefail
ROOT=${ROOT:-$PWD}
OUT=${OUT:-/tmp/kforge-device-out}
BUDGET=${1:-8}
mkdir -p "$OUT"
LOG="$OUT/install_check.log"
source "$ROOT/scripts/device_build.sh"
step() { echo "== $*" | tee -a "$LOG"; }
fail() { echo "FAILED: $*" | tee -a "$LOG"; exit 1; }

VENV=/tmp/kforge-venv
HOME_DIR=$(mktemp -d)  # the user's own folder, outside the clone
step "venv and pip install (CMake through scikit-build-core, $(nproc) jobs)"
python3 -m venv --system-site-packages "$VENV" >> "$LOG" 2>&1 || fail "venv"
# The image's python3 is itself a virtual environment (torch and the build tools in its site-packages), which
# --system-site-packages does not reach: a .pth file adds it, as a user of such an image would.
python3 -c 'import site; print("\n".join(site.getsitepackages()))' > "$("$VENV/bin/python" -c "import sysconfig; print(sysconfig.get_paths()['purelib'])")/image.pth"
t0=$(date +%s)
CMAKE_BUILD_PARALLEL_LEVEL=$(nproc) \
CMAKE_ARGS="-DCMAKE_PREFIX_PATH=$DEPS -DOPENSSL_ROOT_DIR=$DEPS -DSQLite3_INCLUDE_DIR=$DEPS/include -DSQLite3_LIBRARY=$DEPS/lib/x86_64-linux-gnu/libsqlite3.so" \
  "$VENV/bin/pip" install --no-build-isolation --no-index --no-deps "$ROOT" >> "$LOG" 2>&1 || { tail -40 "$LOG"; fail "pip install"; }
step "installed in $(( $(date +%s) - t0 )) s"

cd "$HOME_DIR" || fail "cd"
unset PYTHONPATH KFORGE_PYTHON_DIR KFORGE_PYTHON KFORGE_BIN
step "kforge optimize (installed command), budget $BUDGET"
cp "$ROOT/bench/level1/24_softmax_last_dim.py" problem.py
"$VENV/bin/kforge" optimize problem.py --budget "$BUDGET" --report report.json --export model_new.py >> "$LOG" 2>&1 \
  || { tail -30 "$LOG"; fail "kforge optimize"; }
"$VENV/bin/python" - >> "$LOG" 2>&1 <<'EOF' || fail "the report"
import json
r = json.load(open("report.json"))
r = r[0] if isinstance(r, list) else r
print(f"report: tier {r['tier']}, eager {r['eager_ms']:.3f} ms, compile {r['compile_ms']:.3f} ms, "
      f"kforge {r['kforge_ms']:.3f} ms, x best {r['speedup_best']:.2f} (kb protocol)")
assert r["tier"] == "strict", r["tier"]
EOF

step "the exported ModelNew and the Python API from the installed package"
"$VENV/bin/python" - >> "$LOG" 2>&1 <<'EOF' || fail "Python API"
import importlib.util, warnings
import torch
import kforge
assert kforge.__file__.startswith("/tmp/kforge-venv"), kforge.__file__
print("kforge from", kforge.__file__)

spec = importlib.util.spec_from_file_location("model_new", "model_new.py")
exported = importlib.util.module_from_spec(spec); spec.loader.exec_module(exported)
spec = importlib.util.spec_from_file_location("problem", "problem.py")
problem = importlib.util.module_from_spec(spec); spec.loader.exec_module(problem)
torch.manual_seed(0)
model = problem.Model(*problem.get_init_inputs()).cuda()
new = exported.ModelNew(*problem.get_init_inputs()).cuda()
new.load_state_dict(model.state_dict())
x = [t.cuda() for t in problem.get_inputs()]
torch.testing.assert_close(new(*x), model(*x), rtol=1e-4, atol=1e-4)
print("exported ModelNew: matches Model")

net = torch.nn.Sequential(torch.nn.Linear(256, 512), torch.nn.GELU(), torch.nn.LayerNorm(512)).cuda()
x = torch.randn(64, 256, device="cuda")
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    fast = kforge.optimize(net, [x], budget=4)
    assert fast is not net, [str(w.message) for w in caught]
    torch.testing.assert_close(fast(x), net(x), rtol=1e-4, atol=1e-4)
    print("kforge.optimize: a plan, matches the model")
    torch._dynamo.reset()
    compiled = torch.compile(net, backend="kforge", options={"budget": 4})
    torch.testing.assert_close(compiled(x), net(x), rtol=1e-4, atol=1e-4)
    print("torch.compile(backend='kforge'): matches the model;",
          [str(w.message)[:200] for w in caught if str(w.message).startswith("kforge")] or "no fallback")
EOF
step "PASSED"
