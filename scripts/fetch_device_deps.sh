#!/usr/bin/env bash
# Unpacks the Debian packages the GPU machine's image lacks into .deps/root (ignored by git; pass it to the
# device tool with carry [".deps"]): SQLite's header, cpp-httplib (kforge serve), XGBoost (the cost model),
# bubblewrap and libseccomp (the sandbox), OpenSSL's headers (SHA-256 cache keys); and einops' wheel. Run here, where
# apt-get and pip reach their registries.
set -euo pipefail
cd "$(dirname "$0")/.."
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
(cd "$tmp" && apt-get download -q libsqlite3-dev libsqlite3-0 libcpp-httplib-dev libcpp-httplib0.11 libbrotli1 \
  libxgboost-dev libxgboost0 libdmlc0 bubblewrap libseccomp-dev libseccomp2 libssl-dev libssl3 >/dev/null 2>&1)
rm -rf .deps/root && mkdir -p .deps/root
for deb in "$tmp"/*.deb; do dpkg -x "$deb" .deps/root; done
# Python packages the device image lacks, as wheels (scripts/device_build.sh installs them there): einops.
rm -rf .deps/wheels && python3 -m pip download -q --no-deps -d .deps/wheels einops
du -sh .deps/root .deps/wheels
