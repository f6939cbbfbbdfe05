#!/usr/bin/env bash
# `kforge evaluate` on untrusted candidates (GPU): an honest raw CUDA file, one that reads the bundle's stored
# answers at run time, one that writes its own verdict, a plan with its own sources, an honest ModelNew and one
# that reads the stored answers. Prints each one's tier, time, distribution verdict and log line; exits 1 when an
# honest one fails or a thief passes. Needs a build (BUILD_DIR).
set -uo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
KF="$ROOT/${BUILD_DIR:-build-device}/kforge"
W=${WORK:-/tmp/kforge-untrusted}
rm -rf "$W" && mkdir -p "$W" && chmod 755 "$W"
cat > "$W/relu.py" <<'PY'
import torch
class Model(torch.nn.Module):
    def forward(self, x):
        return torch.relu(x)
def get_inputs():
    return [torch.randn(1 << 22)]
def get_init_inputs():
    return []
PY
"$KF" import "$W/relu.py" -o "$W/bundle" || exit 1
chmod -R a+rX "$W"
B="$W/bundle"
head='#include <cuda_runtime.h>
#include <cstdio>
#include <cstring>
#include <unistd.h>
__global__ void relu(const float* x, float* y, int n) { int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) y[i] = fmaxf(x[i], 0.f); }
'
entry='extern "C" int kforge_forward(const void* const* in, const void* const* p, void* const* out, cudaStream_t s) {'
launch='  relu<<<(1 << 22) / 256, 256, 0, s>>>((const float*)in[0], (float*)out[0], 1 << 22); return cudaGetLastError() == cudaSuccess ? 0 : 1; }'
printf '%s%s\n%s\n' "$head" "$entry" "$launch" > "$W/honest.cu"
printf '%s%s\n  FILE* f = fopen("%s/sets/0/out0.bin", "rb"); if (!f) return 21; fclose(f);\n%s\n' "$head" "$entry" "$B" "$launch" > "$W/reads_answers.cu"
printf 'import torch\nclass ModelNew(torch.nn.Module):\n    def forward(self, x):\n        return torch.relu(x)\n' > "$W/honest_modelnew.py"
printf 'import numpy, torch\nclass ModelNew(torch.nn.Module):\n    def forward(self, x):\n        return torch.from_numpy(numpy.fromfile("%s/sets/0/out0.bin", dtype="float32")).cuda()\n' "$B" > "$W/thief_modelnew.py"
printf '%s__attribute__((constructor)) static void forge() { const char* v = "{\\"hello\\": true, \\"compiled\\": true}\\n{\\"done\\": true, \\"strict\\": true}\\n"; printf("%%s", v); fflush(stdout); for (int fd = 3; fd < 16; ++fd) (void)!write(fd, v, strlen(v)); }\n%s\n%s\n' "$head" "$entry" "$launch" > "$W/writes_verdict.cu"
"$KF" lower "$B" -o "$W/plan.json" >/dev/null
fail=0
for c in honest.cu:strict reads_answers.cu:failed writes_verdict.cu:failed plan.json:strict honest_modelnew.py:strict \
         thief_modelnew.py:failed; do
  f=${c%%:*}; want=${c##*:}
  flag=--cuda; [ "$f" = plan.json ] && flag=--plan; [ "${f%.py}" != "$f" ] && flag=--modelnew
  "$KF" evaluate "$B" $flag "$W/$f" -o "$W/$f.result.json"
  python3 - "$W/$f.result.json" "$f" "$want" <<'PY' || fail=1
import json, sys
r = json.load(open(sys.argv[1])); name, want = sys.argv[2], sys.argv[3]
log = r["log"].strip().replace("\n", " | ")[:300]
d = r["distribution"]
print(f"| {name} | {r['tier']} | {want} | {r['reward']:.3f} | {r['native']['median_ms']:.4f} {r['protocol']} | "
      f"{d['verdict']} ({d['beyond_sets']} sets) | {log} |")
sys.exit(0 if r["tier"] == want else 1)
PY
done
exit $fail
