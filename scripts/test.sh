#!/usr/bin/env bash
# The test command: C++ tests (GPU-free ones; GPU tests too when a GPU is present) and Python tests, about five
# minutes on two cores. GPU-free tests labelled `slow` (C++: the CPU emulation of split-precision kernels, the NVRTC
# sweeps; Python, marked slow: builds of torch extensions, services judging ModelNew jobs) run with
# KFORGE_SLOW_TESTS=1, as CI runs them.
set -uo pipefail
cd "$(dirname "$0")/.."
select=(-L "cpu|slow")
python3 -c 'import ctypes; ctypes.CDLL("libcuda.so.1")' 2>/dev/null && select=()
[ "${KFORGE_SLOW_TESTS:-0}" = 1 ] || select+=(-LE slow)
(cd build && ctest "${select[@]}" -j"$(nproc)" --output-on-failure); rc_cpp=$?
PYTHONPATH=python python3 -m pytest -q tests/python; rc_py=$?
[ $rc_cpp -eq 0 ] && [ $rc_py -eq 0 ]
