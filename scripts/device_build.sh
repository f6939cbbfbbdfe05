# Sourced by the device scripts: the environment for the dependencies that scripts/fetch_device_deps.sh
# unpacked into .deps/root (carried to the GPU machine with carry [".deps"]), and a build into
# $BUILD_DIR (default build-device). An existing build is reused: ninja rebuilds only what changed.
# Needs $ROOT (the repository); CMake's output goes to /tmp/cmake.txt (its tail on failure).
DEPS="$ROOT/.deps/root/usr"
export LD_LIBRARY_PATH="$DEPS/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export PATH="$DEPS/bin:/usr/local/cuda/bin:$PATH"
BUILD_DIR=${BUILD_DIR:-build-device}
# cuDNN is opened at run time (runtime/cudnn_api.h): where the system has no libcudnn.so.9, the torch wheel's.
if ! ldconfig -p 2>/dev/null | grep -q "libcudnn.so.9" && [ ! -e /usr/local/cuda/lib64/libcudnn.so.9 ]; then
  CUDNN_WHEEL=$(python3 -c 'import nvidia.cudnn, os; print(os.path.join(list(nvidia.cudnn.__path__)[0], "lib"))' 2>/dev/null)
  [ -n "$CUDNN_WHEEL" ] && export LD_LIBRARY_PATH="$CUDNN_WHEEL:$LD_LIBRARY_PATH" && echo "cuDNN from the torch wheel: $CUDNN_WHEEL"
fi
# Wheels fetched here (einops), installed once into the device's Python (no registry there).
for wheel in "$ROOT"/.deps/wheels/*.whl; do
  [ -f "$wheel" ] || continue
  module=${wheel##*/}; module=${module%%-*}
  python3 -c "import $module" 2>/dev/null || python3 -m pip install -q --no-index --no-deps "$wheel"
done
device_build() {
  local t0=$(date +%s)
  cmake -S "$ROOT" -B "$ROOT/$BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE=Release -DPython3_EXECUTABLE="$(which python3)" \
    -DCMAKE_PREFIX_PATH="$DEPS" -DOPENSSL_ROOT_DIR="$DEPS" -DSQLite3_INCLUDE_DIR="$DEPS/include" \
    -DSQLite3_LIBRARY="$DEPS/lib/x86_64-linux-gnu/libsqlite3.so" > /tmp/cmake.txt 2>&1 || { tail -30 /tmp/cmake.txt; return 1; }
  grep -E "not found: building" /tmp/cmake.txt || true
  ninja -k 0 -C "$ROOT/$BUILD_DIR" -j"$(nproc)" > /tmp/ninja.txt 2>&1 || { grep -E "error" /tmp/ninja.txt | head -40; return 1; }
  echo "built $BUILD_DIR in $(( $(date +%s) - t0 )) s"
}
