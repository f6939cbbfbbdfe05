#!/usr/bin/env bash
# Installs what kforge needs (Debian packages, Python packages) when missing, then builds into build/.
set -euo pipefail
cd "$(dirname "$0")/.."
need_apt=()
# chromium: the report's test renders it headless (tests/python/test_report.py).
for pkg in cmake ninja-build g++ libgtest-dev nlohmann-json3-dev libcli11-dev libsqlite3-dev bubblewrap libcpp-httplib-dev libxgboost-dev libseccomp-dev libssl-dev chromium; do
  dpkg -s "$pkg" >/dev/null 2>&1 || need_apt+=("$pkg")
done
if [ ${#need_apt[@]} -gt 0 ] && command -v apt-get >/dev/null; then
  SUDO=$([ "$(id -u)" = 0 ] && echo "" || echo sudo)
  $SUDO apt-get update -qq && $SUDO apt-get install -y -qq "${need_apt[@]}" >/dev/null
fi
# einops: problems written with it (rearrange, repeat, reduce) import through it (python/kforge/fx_ops/einops_ops.py);
# ray: the evaluation pool across GPUs and nodes (python/kforge/pool.py); matplotlib: `kforge report`'s plots;
# tqdm: the progress bars of long runs (python/kforge/log.py).
python3 - <<'PY' || python3 -m pip install -q "torch>=2.4" numpy pybind11 pytest einops ray matplotlib tqdm
import importlib.util, sys
sys.exit(0 if all(importlib.util.find_spec(m) for m in ("torch", "numpy", "pybind11", "pytest", "einops", "ray", "matplotlib", "tqdm")) else 1)
PY
command -v nvcc >/dev/null || [ -d /usr/local/cuda ] || { echo "setup: the CUDA toolkit is required (nvcc, NVRTC)"; exit 1; }
export PATH="/usr/local/cuda/bin:$PATH"
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release -DPython3_EXECUTABLE="$(command -v python3)" >/dev/null
ninja -C build -j"$(nproc)"
