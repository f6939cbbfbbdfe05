#!/usr/bin/env bash
# The test command: C++ tests (GPU-free ones; GPU tests too when a GPU is present) and Python tests.
set -uo pipefail
cd "$(dirname "$0")/.."
labels="-L cpu"
python3 -c 'import ctypes; ctypes.CDLL("libcuda.so.1")' 2>/dev/null && labels=""
(cd build && ctest $labels -j"$(nproc)" --output-on-failure); rc_cpp=$?
PYTHONPATH=python python3 -m pytest -q tests/python; rc_py=$?
[ $rc_cpp -eq 0 ] && [ $rc_py -eq 0 ]
