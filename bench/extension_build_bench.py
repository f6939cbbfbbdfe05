"""How fast a ModelNew's `load_inline` builds: torch's own build against kforge's (python/kforge/extension_build.py),
one candidate cold, then `--parallel` new candidates at once (each a process of its own, as the service's slots
are), every module run on the GPU against its PyTorch reference. Sources of three shapes that agents write
(elementwise with a struct and a namespace, a row softmax with shared memory and warp shuffles, a tiled matmul,
and a template kernel under AT_DISPATCH for four dtypes), each variant a new source (another constant), so no build
finds another's. Writes extension_build.{json,md}
under --out.

    python bench/extension_build_bench.py --out $OUT [--parallel 16] [--torch-builds 1]"""
import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

ELEMENTWISE = r'''
#include <torch/extension.h>
#include <ATen/cuda/CUDAContext.h>
#define BLOCK 256
struct Params { long n; float scale; };
namespace ops {
__device__ __forceinline__ float gelu(float x) { return 0.5f * x * (1.f + tanhf(0.7978845608f * (x + 0.044715f * x * x * x))); }
__global__ void gelu_scale_kernel(const float* __restrict__ x, float* __restrict__ y, Params p) {
    long i = blockIdx.x * (long)blockDim.x + threadIdx.x;
    if (i < p.n) y[i] = gelu(x[i]) * p.scale;
}
}
torch::Tensor forward(torch::Tensor x) {
    TORCH_CHECK(x.is_cuda() && x.is_contiguous(), "x: a contiguous CUDA tensor");
    auto y = torch::empty_like(x);
    Params p{x.numel(), VARIANT_F};
    ops::gelu_scale_kernel<<<(p.n + BLOCK - 1) / BLOCK, BLOCK, 0, at::cuda::getCurrentCUDAStream()>>>(
        x.data_ptr<float>(), y.data_ptr<float>(), p);
    return y;
}
'''
ELEMENTWISE_REF = "torch.nn.functional.gelu(x, approximate='tanh') * VARIANT_F"

SOFTMAX = r'''
#include <torch/extension.h>
__device__ float warp_max(float v) { for (int o = 16; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffff, v, o)); return v; }
__device__ float warp_sum(float v) { for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffff, v, o); return v; }
__global__ void softmax_rows(const float* x, float* y, int cols, float t) {
    __shared__ float red[32];
    const float* row = x + (long)blockIdx.x * cols;
    float m = -INFINITY;
    for (int c = threadIdx.x; c < cols; c += blockDim.x) m = fmaxf(m, row[c] * t);
    m = warp_max(m);
    if (threadIdx.x % 32 == 0) red[threadIdx.x / 32] = m;
    __syncthreads();
    m = threadIdx.x % 32 < blockDim.x / 32 ? red[threadIdx.x % 32] : -INFINITY;
    m = warp_max(m);
    __syncthreads();
    float s = 0.f;
    for (int c = threadIdx.x; c < cols; c += blockDim.x) s += __expf(row[c] * t - m);
    s = warp_sum(s);
    if (threadIdx.x % 32 == 0) red[threadIdx.x / 32] = s;
    __syncthreads();
    s = threadIdx.x % 32 < blockDim.x / 32 ? red[threadIdx.x % 32] : 0.f;
    s = warp_sum(s);
    for (int c = threadIdx.x; c < cols; c += blockDim.x) y[(long)blockIdx.x * cols + c] = __expf(row[c] * t - m) / s;
}
torch::Tensor forward(torch::Tensor x) {
    auto y = torch::empty_like(x);
    softmax_rows<<<x.size(0), 256>>>(x.data_ptr<float>(), y.data_ptr<float>(), x.size(1), VARIANT_F);
    return y;
}
'''
SOFTMAX_REF = "torch.softmax(x * VARIANT_F, dim=1)"

MATMUL = r'''
#include <torch/extension.h>
#define TILE 16
__global__ void matmul_tiled(const float* A, const float* B, float* C, int n, float alpha) {
    __shared__ float As[TILE][TILE];
    __shared__ float Bs[TILE][TILE];
    int row = blockIdx.y * TILE + threadIdx.y, col = blockIdx.x * TILE + threadIdx.x;
    float acc = 0.f;
    for (int k0 = 0; k0 < n; k0 += TILE) {
        As[threadIdx.y][threadIdx.x] = (row < n && k0 + threadIdx.x < n) ? A[row * n + k0 + threadIdx.x] : 0.f;
        Bs[threadIdx.y][threadIdx.x] = (col < n && k0 + threadIdx.y < n) ? B[(k0 + threadIdx.y) * n + col] : 0.f;
        __syncthreads();
        #pragma unroll
        for (int k = 0; k < TILE; ++k) acc += As[threadIdx.y][k] * Bs[k][threadIdx.x];
        __syncthreads();
    }
    if (row < n && col < n) C[row * n + col] = alpha * acc;
}
torch::Tensor forward(torch::Tensor a, torch::Tensor b) {
    int n = a.size(0);
    auto c = torch::zeros({n, n}, a.options());
    dim3 block(TILE, TILE), grid((n + TILE - 1) / TILE, (n + TILE - 1) / TILE);
    matmul_tiled<<<grid, block>>>(a.data_ptr<float>(), b.data_ptr<float>(), c.data_ptr<float>(), n, VARIANT_F);
    return c;
}
'''
MATMUL_REF = "(a @ b) * VARIANT_F"

DISPATCH = r'''
#include <torch/extension.h>
#include <ATen/cuda/CUDAContext.h>
template <typename scalar_t>
__global__ void scaled_relu(const scalar_t* __restrict__ x, scalar_t* __restrict__ y, int64_t n, float s) {
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x) {
        float v = static_cast<float>(x[i]) * s;
        y[i] = static_cast<scalar_t>(v > 0.f ? v : 0.f);
    }
}
torch::Tensor forward(torch::Tensor x) {
    auto y = torch::empty_like(x);
    const int64_t n = x.numel();
    AT_DISPATCH_FLOATING_TYPES_AND2(at::ScalarType::Half, at::ScalarType::BFloat16, x.scalar_type(), "scaled_relu", ([&] {
        scaled_relu<scalar_t><<<1024, 256, 0, at::cuda::getCurrentCUDAStream()>>>(
            x.data_ptr<scalar_t>(), y.data_ptr<scalar_t>(), n, VARIANT_F);
    }));
    return y;
}
'''
DISPATCH_REF = "torch.relu(x * VARIANT_F)"

FAMILIES = {"elementwise": (ELEMENTWISE, ELEMENTWISE_REF, "[torch.randn(1 << 20, device='cuda')]"),
            "softmax": (SOFTMAX, SOFTMAX_REF, "[torch.randn(512, 4096, device='cuda')]"),
            "matmul": (MATMUL, MATMUL_REF, "[torch.randn(512, 512, device='cuda'), torch.randn(512, 512, device='cuda')]"),
            "dispatch": (DISPATCH, DISPATCH_REF, "[torch.randn(1 << 20, device='cuda')]")}

ONE = '''
import json, sys, time
import torch
{install}
from torch.utils.cpp_extension import load_inline
t0 = time.perf_counter()
ext = load_inline("{name}", cpp_sources="{decl}", cuda_sources={source!r}, functions=["forward"], verbose=False)
built_s = time.perf_counter() - t0
args = {inputs}
y = ext.forward(*args)
x = args[0]; a = args[0]; b = args[-1]
ref = {ref}
err = (y - ref).abs().max().item()
print(json.dumps({{"built_s": built_s, "max_err": err, "builds": BUILDS}}))
'''


def candidate(family: str, variant: int, name: str, kforge: bool) -> str:
    source, ref, inputs = FAMILIES[family]
    value = f"{1.0 + variant / 64:.6f}f"
    decl = "torch::Tensor forward(torch::Tensor a, torch::Tensor b);" if family == "matmul" else \
        "torch::Tensor forward(torch::Tensor x);"
    install = ("from kforge import extension_build\nextension_build.install()\nBUILDS = extension_build.BUILDS"
               if kforge else "BUILDS = []")
    return ONE.format(install=install, name=name, decl=decl, source=source.replace("VARIANT_F", value),
                      inputs=inputs, ref=ref.replace("VARIANT_F", value[:-1]))


def start(code: str, ext_dir: Path, env: dict):
    return subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env={**env, "TORCH_EXTENSIONS_DIR": str(ext_dir)})


def finish(p, t0) -> dict:
    out, err = p.communicate(timeout=900)
    wall = time.perf_counter() - t0
    try:
        r = json.loads(out.strip().splitlines()[-1])
    except (ValueError, IndexError):
        return {"ok": False, "wall_s": round(wall, 2), "error": err[-1500:]}
    return {"ok": r["max_err"] < 1e-3, "wall_s": round(wall, 2), "built_s": round(r["built_s"], 2),
            "max_err": r["max_err"], "how": [b.get("how") for b in r["builds"]]}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--parallel", type=int, default=16)
    ap.add_argument("--torch-builds", type=int, default=1, help="candidates built by torch's own load_inline")
    ap.add_argument("--pch", type=Path, default=Path(tempfile.gettempdir()) / "kforge_torch_pch")
    args = ap.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    sys.path.insert(0, str(ROOT / "python"))
    from kforge.extension_build import PCH_ENV, build_pch
    env = {**os.environ, "PYTHONPATH": str(ROOT / "python"), PCH_ENV: str(args.pch)}
    work = Path(tempfile.mkdtemp(prefix="kforge_ext_bench_"))
    t0 = time.perf_counter()
    pch = build_pch(str(args.pch))
    pch_s = time.perf_counter() - t0
    print(f"precompiled headers {pch} in {pch_s:.1f} s", flush=True)
    rows = []
    families = list(FAMILIES)
    for i in range(args.torch_builds):  # torch's own, one at a time (each a minute)
        fam = families[i % len(families)]
        t = time.perf_counter()
        rows.append({"what": "torch load_inline, cold, alone", "family": fam,
                     **finish(start(candidate(fam, 100 + i, f"torch_{fam}_{i}", False), work / f"torch{i}", env), t)})
        print(rows[-1], flush=True)
    for i, fam in enumerate(families):  # kforge's, one at a time
        t = time.perf_counter()
        rows.append({"what": "kforge, cold, alone", "family": fam,
                     **finish(start(candidate(fam, 200 + i, f"one_{fam}_{i}", True), work / f"one{i}", env), t)})
        print(rows[-1], flush=True)
        t = time.perf_counter()
        rows.append({"what": "kforge, the same source again", "family": fam,
                     **finish(start(candidate(fam, 200 + i, f"one_{fam}_{i}", True), work / f"one{i}", env), t)})
        print(rows[-1], flush=True)
    t = time.perf_counter()
    procs = [start(candidate(families[i % len(families)], 300 + i, f"par_{i}", True), work / f"par{i}", env) for i in range(args.parallel)]
    parallel = [finish(p, t) for p in procs]
    parallel_wall = time.perf_counter() - t
    print(f"{args.parallel} at once: {parallel_wall:.1f} s", flush=True)
    summary = {"pch": pch, "pch_s": round(pch_s, 1), "rows": rows, "parallel": parallel, "parallel_n": args.parallel,
               "parallel_wall_s": round(parallel_wall, 2), "cpus": os.cpu_count()}
    (args.out / "extension_build.json").write_text(json.dumps(summary, indent=1))
    lines = ["# load_inline builds: torch's own and kforge's (python/kforge/extension_build.py)", "",
             f"{os.cpu_count()} CPUs; torch/extension.h precompiled first ({', '.join(f'{k} {v}' for k, v in pch.items())}) "
             f"in {pch_s:.1f} s, once per machine. Each row a new process (Python start, import torch, build, import, "
             "one run on the GPU checked against PyTorch).", "",
             "| build | family | how | build s | process wall s | max abs error vs PyTorch | correct |", "|---|---|---|---:|---:|---:|---|"]
    for r in rows:
        lines.append(f"| {r['what']} | {r['family']} | {', '.join(r.get('how') or []) or 'torch'} | {r.get('built_s', '-')} | "
                     f"{r['wall_s']} | {r.get('max_err', '-')} | {'yes' if r['ok'] else 'NO: ' + r.get('error', '')[-200:]} |")
    ok = sum(r["ok"] for r in parallel)
    built = sorted(r.get("built_s", float("inf")) for r in parallel)
    lines += ["", f"{args.parallel} new candidates at once (one process each): {parallel_wall:.1f} s wall, "
                  f"{parallel_wall / args.parallel:.2f} s per candidate; builds {built[0]:.1f}-{built[-1]:.1f} s "
                  f"(median {built[len(built) // 2]:.1f}); {ok} of {args.parallel} correct on the GPU; "
                  f"how: {sorted({h for r in parallel for h in (r.get('how') or ['?'])})}"]
    bad = [r for r in parallel if not r["ok"]]
    if bad:
        lines += ["", "First failure: " + json.dumps(bad[0])[:1500]]
    (args.out / "extension_build.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
