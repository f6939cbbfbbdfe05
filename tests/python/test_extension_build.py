"""kforge's build of a candidate's load_inline / load (python/kforge/cuda_split.py, kforge/extension_build.py):
the split of a CUDA source into host and device parts, pinned on sources of the shapes LLM agents write, and the
build itself (nvcc and the C++ compiler, no GPU needed to build and import)."""
import json
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import torch

from kforge.cuda_split import LAUNCH_PUSH, LAUNCHER, NotSplittable, split_cuda_source
from kforge.extension_build import trim_build_error

KERNELS = r'''
#include <torch/extension.h>
#include <ATen/cuda/CUDAContext.h>
#include <cuda_fp16.h>
#define BLOCK 256
// a comment with { a brace
const int N_MAX = 1 << 20;
struct Params { int n; float scale; };
namespace ops {
__device__ __forceinline__ float gelu(float x) { return 0.5f * x * (1.f + tanhf(0.79788456f * (x + 0.044715f * x * x * x))); }
__global__ void __launch_bounds__(256) gelu_kernel(const float* __restrict__ x, float* __restrict__ y, Params p) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    #pragma unroll
    for (int k = 0; k < 1; ++k)
        if (i < p.n) y[i] = gelu(x[i]) * p.scale;
}
}
static __global__ void fill(float* y, int n, float v) { int i = threadIdx.x; if (i < n) y[i] = v; }
__host__ __device__ inline int ceil_div(int a, int b) { return (a + b - 1) / b; }
torch::Tensor gelu_cuda(torch::Tensor x) {
    auto y = torch::empty_like(x);
    Params p{(int)x.numel(), 1.0f};
    const char* note = "a { string ; with <<< in it";
    // what nvcc's host pass has and g++ lacks: cuda_runtime.h's kernel-taking templates, min and max
    cudaFuncSetAttribute(ops::gelu_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, min(0, BLOCK));
    ops::gelu_kernel<<<ceil_div(p.n, BLOCK), BLOCK, 0, at::cuda::getCurrentCUDAStream()>>>(x.data_ptr<float>(), y.data_ptr<float>(), p);
    fill<<<dim3(1, 1), dim3(32)>>>(y.data_ptr<float>(), 0, 1.f);
    return y;
}
'''


def test_kernels_go_to_the_device_part_and_their_launches_become_nvccs_own_lowering():
    s = split_cuda_source(KERNELS)
    assert s.kernels == ["gelu_kernel", "fill"]
    # the device part: kernels, device functions, the types and constants they use; never torch
    for text in ("__global__ void __launch_bounds__(256) gelu_kernel", "__device__ __forceinline__ float gelu",
                 "#pragma unroll", "struct Params", "const int N_MAX", "#define BLOCK 256", "ceil_div", "#include <cuda_fp16.h>"):
        assert text in s.device, text
    assert "torch" not in s.device and "gelu_cuda" not in s.device
    assert "static" not in s.device.split("fill")[0].splitlines()[-1]  # the host part must reach its stub
    # the host part: torch, the host function, each kernel declared as its host stub, launches lowered
    assert "void  gelu_kernel(const float* __restrict__ x, float* __restrict__ y, Params p);" in s.host
    assert "void fill(float* y, int n, float v);" in s.host
    assert "__global__" not in s.host and "__launch_bounds__" not in s.host and "tanhf" not in s.host
    assert (f"({LAUNCH_PUSH}(ceil_div(p.n, BLOCK), BLOCK, 0, at::cuda::getCurrentCUDAStream()) ? (void)0 : "
            "ops::gelu_kernel(x.data_ptr<float>(), y.data_ptr<float>(), p))") in s.host
    assert f"({LAUNCH_PUSH}(dim3(1, 1), dim3(32), 0, 0) ? (void)0 : fill(y.data_ptr<float>(), 0, 1.f))" in s.host
    assert '"a { string ; with <<< in it"' in s.host and "ceil_div" in s.host


@pytest.mark.parametrize("source, why", [
    ("template <typename... Ts> __global__ void k(Ts... p) {}", "template parameters not understood"),
    ("__constant__ float w[4];\nvoid load(const float* h) { cudaMemcpyToSymbol(w, h, 16); }", "device-only w"),
    ("namespace { __global__ void k(float* p) { p[0] = 1.f; } }", "anonymous namespace"),
    ("__global__ void k(float* p) { p[0] = 1.f; }\nvoid go(float* p) { launcher<<<1, 1>>>(p); }", "not a kernel"),
    ("__global__ void k(float* p) { p[0] = 1.f; }\nvoid go(float* p) { k<<<1>>>(p); }", "1 configuration"),
    ("__global__ void k(float* p) { p[0] = 1.f; ", "unbalanced"),
    # a launch through the launcher would pick the template where C++ picks the plain overload
    ("template <typename T> __global__ void k(T* p) {}\n__global__ void k(float* p) {}\n"
     "void go(float* p) { k<<<1, 1>>>(p); }", "both a template and an overload"),
    # g++ does not define nvcc's macros: this host code would take the other branch
    ("__global__ void k(float* p) {}\n#ifdef __CUDACC__\nvoid go(float* p) { k<<<1, 1>>>(p); }\n#endif", "__CUDACC__"),
    ("__global__ void k(float* p) {\n#undef W\n#define W 2\n p[0] = W; }", "#define or #undef inside"),
])
def test_what_the_split_cannot_place_with_certainty_is_refused_naming_why(source, why):
    with pytest.raises(NotSplittable, match=why):
        split_cuda_source(source)


TEMPLATES = r'''
#include <torch/extension.h>
#include <ATen/cuda/CUDAContext.h>
template <typename scalar_t, int VEC = 1>
__global__ void __launch_bounds__(256) scale_kernel(const scalar_t* __restrict__ x, scalar_t* __restrict__ y, int64_t n, float s) {
    int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
    if (i < n) y[i] = static_cast<scalar_t>(static_cast<float>(x[i]) * s);
}
namespace detail {
template <typename T>
__global__ void fill_kernel(T* y, T v, int n) { int i = threadIdx.x; if (i < n) y[i] = v; }
}
torch::Tensor scale(torch::Tensor x, double s) {
    auto y = torch::empty_like(x);
    const int64_t n = x.numel();
    AT_DISPATCH_FLOATING_TYPES_AND_HALF(x.scalar_type(), "scale", ([&] {
        scale_kernel<scalar_t><<<(n + 255) / 256, 256, 0, at::cuda::getCurrentCUDAStream()>>>(
            x.data_ptr<scalar_t>(), y.data_ptr<scalar_t>(), n, (float)s);
    }));
    auto z = torch::empty({1}, x.options().dtype(torch::kFloat));  // float whatever x is
    detail::fill_kernel<<<1, 32>>>(z.data_ptr<float>(), 0.f, 0);
    return y;
}
'''


def test_template_kernels_are_launched_through_launchers_instantiated_beside_them():
    s = split_cuda_source(TEMPLATES)
    assert s.templates == ["scale_kernel", "fill_kernel"]  # the default argument's '=' ends no declaration early
    assert (f"{LAUNCHER}scale_kernel<scalar_t>((n + 255) / 256, 256, 0, at::cuda::getCurrentCUDAStream(), "
            "x.data_ptr<scalar_t>(), y.data_ptr<scalar_t>(), n, (float)s);") in s.host
    assert f"detail::{LAUNCHER}fill_kernel(1, 32, 0, 0, z.data_ptr<float>(), 0.f, 0);" in s.host
    assert ("template <typename scalar_t, int VEC = 1>\nvoid __kforge_launch_scale_kernel(dim3, dim3, size_t, cudaStream_t, "
            "const scalar_t* __restrict__ x, scalar_t* __restrict__ y, int64_t n, float s);") in s.host
    assert "scale_kernel<scalar_t, VEC><<<kf_grid, kf_block, kf_shared, kf_stream>>>(x, y, n, s);" in s.device
    assert "torch" not in s.device and "__global__" not in s.host
    # what the compiled host part asks for, instantiated (c10's Half brought in by its own header)
    needed = ["void __kforge_launch_scale_kernel<c10::Half, 1>(dim3, dim3, unsigned long, CUstream_st*, "
              "c10::Half const*, c10::Half*, long, float)", "at::Tensor::numel() const"]
    device = s.device_with(needed)
    assert device.startswith("#include <c10/util/Half.h>") and device.endswith(
        "template void __kforge_launch_scale_kernel<c10::Half, 1>(dim3, dim3, unsigned long, CUstream_st*, "
        "c10::Half const*, c10::Half*, long, float);\n")
    assert "numel" not in device


def test_each_declaration_lands_where_its_head_says():
    s = split_cuda_source(
        "template <typename T, int BLOCK = 256> __device__ T block_sum(T v) { return v; }\n"
        "const int BLOCK = 128;\n"
        "__device__ __forceinline__ float4& operator+=(float4& a, const float4& b) { a.x += b.x; return a; }\n"
        "__host__ __device__ int cdiv(int a, int b) { return (a + b - 1) / b; }\n"
        "__global__ void k(float4* p) { p[0] += p[1]; }\n"
        "void go(float4* p) { constexpr int threads = BLOCK; k<<<cdiv(1, threads), threads>>>(p); }\n")
    assert s.kernels == ["k"]  # `operator+=`'s '=' ended no declaration early; BLOCK is the host's too
    assert "static __host__ __device__ int cdiv" in s.device and "\n__host__ __device__ int cdiv" in s.host
    assert "void go" not in s.device  # `constexpr` in its body makes no host function shared


def test_a_source_without_kernels_is_all_host_code():
    s = split_cuda_source("#include <torch/extension.h>\ntorch::Tensor twice(torch::Tensor x) { return x * 2; }\n")
    assert s.kernels == [] and "twice" in s.host and LAUNCH_PUSH not in s.host and "twice" not in s.device


def test_each_part_names_the_source_line_its_code_came_from():
    # with the source's path, every item of a part follows a #line naming where it begins in the source, so that
    # compiler errors point into the candidate's file (torch's own build names cuda.cu's lines too)
    s = split_cuda_source(KERNELS, "/build/cuda.cu")
    lines = KERNELS.split("\n")
    for part in (s.host, s.device):
        at, copied = None, 0
        for line in part.split("\n"):
            if line.startswith("#line "):
                number, path = line.split()[1:]
                assert path == '"/build/cuda.cu"', line
                at = int(number)
                continue
            if at is not None and line.strip() in {x.strip() for x in lines} and line.strip() not in ("{", "}", ""):
                assert lines[at - 1].strip() == line.strip(), (at, line)
                copied += 1
            at = None if at is None else at + 1
        assert copied >= 5, part
    assert "#line" not in split_cuda_source(KERNELS).host  # without a path, no marks


def test_the_headers_a_source_includes_are_in_its_key(tmp_path):
    # "x.cuh" beside the source, one it includes in turn from an extra include path; <...> and comments are not read
    from kforge.extension_build import local_headers
    (tmp_path / "inc").mkdir()
    (tmp_path / "inc" / "deep.h").write_text("#define DEEP 1\n")
    (tmp_path / "local.cuh").write_text('#include "deep.h"\n#include <cuda_runtime.h>\n')
    source = tmp_path / "k.cu"
    source.write_text('#include "local.cuh"\n// #include "missing.cuh"\n/* #include "gone.h" */\n__global__ void k() {}\n')
    first = local_headers([str(source)], [str(tmp_path / "inc")])
    assert sorted(Path(h).name for h in first) == ["deep.h", "local.cuh"], first
    (tmp_path / "inc" / "deep.h").write_text("#define DEEP 2\n")
    again = local_headers([str(source)], [str(tmp_path / "inc")])
    assert again != first and again[str((tmp_path / "local.cuh").resolve())] == first[str((tmp_path / "local.cuh").resolve())]


def test_only_errors_the_split_cannot_have_caused_are_the_sources_own():
    from kforge.extension_build import _the_sources_own
    own = ['cuda.cu(8): error: a value of type "double" cannot be used to initialize an entity of type "float *"',
           "/b/cuda.cu:14:3: error: expected ';' before 'return'"]
    # what a part lacks (kernels' bodies, torch, CUDA's __CUDACC__-only declarations) shows as a name or overload
    # not found, and a log without the source's lines names nothing of it
    maybe_the_splits = ['cuda.cu(8): error: identifier "at_helper" is undefined',
                        "/b/cuda.cu:20:9: error: no match for 'operator+' (operand types are '__half' and '__half')",
                        "/b/cuda.cu:21:5: error: 'cuda_only' was not declared in this scope",
                        "undefined reference to `k(float*)'", "c++: fatal error: Killed signal terminated program cc1plus"]
    assert all(_the_sources_own(line) for line in own)
    assert not any(_the_sources_own(line) for line in maybe_the_splits)
    assert not _the_sources_own("\n".join(own + maybe_the_splits[:1]))  # one such error is reason enough


def test_build_errors_are_cut_to_their_lines_naming_the_file():
    log = textwrap.dedent("""\
        [1/3] c++ -MMD -MF main.o.d -DTORCH_EXTENSION_NAME=e ... -c /tmp/x/e/main.cpp -o main.o
        FAILED: cuda.cuda.o
        /usr/local/cuda/bin/nvcc ... -c /tmp/x/e/cuda.cu -o cuda.cuda.o
        /tmp/x/e/cuda.cu(7): error: identifier "undefined_thing" is undefined
              y[i] = undefined_thing;
        1 error detected in the compilation of "/tmp/x/e/cuda.cu".
        ninja: build stopped: subcommand failed.
        """)
    out = trim_build_error(log, "e")
    assert out.splitlines()[0] == "Error building extension 'e':"
    assert 'cuda.cu(7): error: identifier "undefined_thing" is undefined' in out and "y[i] = undefined_thing;" in out
    assert "/tmp/x" not in out.split("\n", 2)[1] and "[1/3]" not in out


def _nvcc_matches_torch() -> bool:
    if not shutil.which("nvcc") or not torch.version.cuda:
        return False
    out = subprocess.run(["nvcc", "--version"], capture_output=True, text=True).stdout
    return out.split("release ")[-1].split(".")[0] == torch.version.cuda.split(".")[0]


needs_nvcc = pytest.mark.skipif(not _nvcc_matches_torch(), reason="needs nvcc of torch's CUDA major version")

BUILD = '''
import json, sys, time
import torch
from kforge import extension_build
extension_build.install()
from torch.utils.cpp_extension import load_inline
CUDA = sys.argv[1]
t0 = time.perf_counter()
ext = load_inline("{name}", cpp_sources="torch::Tensor gelu_cuda(torch::Tensor x);", cuda_sources=CUDA,
                  functions=["gelu_cuda"], extra_cuda_cflags={flags})
print(json.dumps({{"builds": extension_build.BUILDS, "has": hasattr(ext, "gelu_cuda"), "s": time.perf_counter() - t0}}))
'''


def run_in_a_process(tmp_path, script, *args, ext="ext", pch=None) -> subprocess.CompletedProcess:
    """`python -c script args...` in a fresh process: kforge importable, torch's extensions under tmp_path/ext, the
    precompiled headers only where `pch` names them."""
    env = {**os.environ, "TORCH_CUDA_ARCH_LIST": "9.0", "TORCH_EXTENSIONS_DIR": str(tmp_path / ext),
           "PYTHONPATH": os.pathsep.join(sys.path)}
    env.pop("KFORGE_TORCH_PCH", None)
    if pch:
        env["KFORGE_TORCH_PCH"] = str(pch)
    return subprocess.run([sys.executable, "-c", script, *args], capture_output=True, text=True, timeout=900, env=env)


def last_json(out: subprocess.CompletedProcess) -> dict:
    """The JSON line a script ended with, once it exited cleanly."""
    assert out.returncode == 0 and out.stdout.strip(), out.stderr[-3000:]
    return json.loads(out.stdout.strip().splitlines()[-1])


def build_in_a_process(tmp_path, source, name="kf_gelu", flags=(), pch=None, script=BUILD):
    return last_json(run_in_a_process(tmp_path, script.format(name=name, flags=list(flags)), source, pch=pch))


@pytest.mark.slow
@needs_nvcc
def test_a_split_build_makes_a_module_and_the_same_source_is_found_by_its_hash(tmp_path):
    first = build_in_a_process(tmp_path, KERNELS)
    assert first["has"] and first["builds"][0]["how"] == "split (no precompiled header, one unit, light headers)", first
    again = build_in_a_process(tmp_path, KERNELS)
    assert again["builds"][0]["how"] == "cached" and again["builds"][0]["s"] < 1, again
    # other flags are another library
    other = build_in_a_process(tmp_path, KERNELS, flags=["--use_fast_math"])
    assert other["builds"][0]["how"].startswith("split"), other


def test_main_cpp_joins_the_host_part_only_where_it_holds_declarations_and_bindings(tmp_path):
    from kforge.extension_build import _joinable
    cu = tmp_path / "cuda.cu"
    splits = {str(cu): split_cuda_source(KERNELS)}
    bindings = ('PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) {\n'
                'm.def("gelu_cuda", torch::wrap_pybind_function(gelu_cuda), "a { doc } #with using");\n}')

    def joinable(cpp_sources):
        main = str(tmp_path / "main.cpp")
        return _joinable([main, str(cu)], {main: "#include <torch/extension.h>\n" + cpp_sources + "\n" + bindings,
                                           str(cu): KERNELS}, splits)

    assert joinable("torch::Tensor gelu_cuda(torch::Tensor x, double s = 1.0);  // a {comment}") is not None
    for not_alone in ("#define N 4\ntorch::Tensor gelu_cuda(torch::Tensor x);",
                      "static int n() { return 4; }\ntorch::Tensor gelu_cuda(torch::Tensor x);",
                      "using namespace at;\ntorch::Tensor gelu_cuda(torch::Tensor x);",
                      "namespace k { int n(); }\ntorch::Tensor gelu_cuda(torch::Tensor x);"):
        assert joinable(not_alone) is None, not_alone


@pytest.mark.slow
@needs_nvcc
def test_a_joined_unit_that_does_not_compile_is_built_apart(tmp_path):
    # main.cpp's declaration of `helper` clashes with the CUDA source's static one only when they share a unit
    clash = KERNELS.replace("torch::Tensor gelu_cuda(", "static int helper(int n) { return n; }\ntorch::Tensor gelu_cuda(")
    build = BUILD.replace('cpp_sources="torch::Tensor gelu_cuda(torch::Tensor x);"',
                          'cpp_sources="int helper(int n);\\ntorch::Tensor gelu_cuda(torch::Tensor x);"')
    r = build_in_a_process(tmp_path, clash, name="kf_clash", script=build)
    assert r["has"] and r["builds"][0]["how"] == "split (no precompiled header)", r


def test_the_light_headers_stand_in_for_torch_extension_h_alone():
    """A unit that includes torch/extension.h (and torch/types.h) is compiled from the light set, its include lines
    blanked in place so that every later line keeps its number; one that includes any other torch header is not."""
    from kforge.extension_build import _light_texts
    main = "#include <torch/extension.h>\ntorch::Tensor f(torch::Tensor x);\n"
    host = '#line 1 "cuda.cu"\n  #  include "torch/extension.h"  // the API\n#include <torch/types.h>\n#include <c10/util/Half.h>\n'
    light_main, light_host = _light_texts(main, host)
    assert light_main == "\ntorch::Tensor f(torch::Tensor x);\n"
    assert light_host.splitlines() == ['#line 1 "cuda.cu"', "", "#include <torch/types.h>", "#include <c10/util/Half.h>"]
    for other in ("#include <torch/torch.h>\n", "#include <torch/nn/functional.h>\n", '#include "torch/python.h"\n'):
        assert _light_texts(main, host + other) is None, other


@pytest.mark.slow
@needs_nvcc
def test_a_source_that_needs_the_whole_header_builds_with_it(tmp_path):
    # torch::nn::functional is declared by torch/extension.h, not by the light set: the light unit misses the name,
    # the whole header builds it, in one unit still
    whole = KERNELS.replace("    auto y = torch::empty_like(x);",
                            "    auto y = torch::empty_like(torch::nn::functional::dropout(x, torch::nn::functional::DropoutFuncOptions().p(0.0)));")
    r = build_in_a_process(tmp_path, whole, name="kf_whole")
    assert r["has"] and r["builds"][0]["how"] == "split (no precompiled header, one unit)", r


FAILING_BUILD = r"""
import json, sys
from kforge import extension_build
extension_build.install()
from torch.utils.cpp_extension import load_inline
try:
    load_inline("kf_broken", cpp_sources="torch::Tensor gelu_cuda(torch::Tensor x);", cuda_sources=sys.argv[1],
                functions=["gelu_cuda"])
except RuntimeError as e:
    print(json.dumps({"error": str(e), "builds": extension_build.BUILDS}))
"""


@pytest.mark.slow
@needs_nvcc
def test_an_error_in_the_sources_own_code_is_answered_at_once_and_remembered(tmp_path):
    # a type error in the kernel: no name the split could have left out, so no build by torch (a minute) follows;
    # the error names cuda.cu's line, and the same build asked again (the candidate's turn) fails at once
    broken = KERNELS.replace("y[i] = gelu(x[i]) * p.scale;", "y[i] = gelu(x[i]) * p.scale; float* bad = 1.5;")
    first, again = (last_json(run_in_a_process(tmp_path, FAILING_BUILD, broken)) for _ in range(2))
    assert [b["how"] for b in first["builds"]] == ["split (failed)"], first
    written = (tmp_path / "ext" / "kf_broken" / "cuda.cu").read_text().split("\n")
    line = next(i + 1 for i, text in enumerate(written) if "float* bad" in text)
    assert f"cuda.cu({line}): error" in first["error"] and "device.cu" not in first["error"], first["error"]
    assert [b["how"] for b in again["builds"]] == ["failed before"] and again["error"] == first["error"], again


@pytest.mark.slow
@needs_nvcc
def test_template_kernels_build_split_with_the_instantiations_their_dispatch_asks_for(tmp_path):
    build = BUILD.replace('"torch::Tensor gelu_cuda(torch::Tensor x);"', '"torch::Tensor scale(torch::Tensor x, double s);"') \
        .replace('functions=["gelu_cuda"]', 'functions=["scale"]').replace('hasattr(ext, "gelu_cuda")', 'hasattr(ext, "scale")')
    r = build_in_a_process(tmp_path, TEMPLATES, name="kf_templates", script=build)
    assert r["has"] and r["builds"][0]["how"].startswith("split"), r
    library = next((tmp_path / "ext" / "kf_templates").glob("kforge-*/kf_templates.so"))
    symbols = subprocess.run(["nm", "-C", str(library)], capture_output=True, text=True).stdout
    for t in ("float", "double", "c10::Half"):  # AT_DISPATCH_FLOATING_TYPES_AND_HALF's three
        assert f"__kforge_launch_scale_kernel<{t}, 1>" in symbols, t


@needs_nvcc
@pytest.mark.slow
def test_what_the_split_refuses_torch_builds_and_its_errors_come_back_trimmed(tmp_path):
    refused = KERNELS.replace("static __global__ void fill(", "__constant__ float table[4];\n"
                              "void upload(const float* t) { cudaMemcpyToSymbol(table, t, 16); }\n"
                              "static __global__ void fill(")
    r = build_in_a_process(tmp_path, refused)
    assert r["has"] and r["builds"][0]["how"] == "torch" and "device-only table" in r["builds"][0]["why"], r
    broken = KERNELS.replace("y[i] = gelu(x[i]) * p.scale;", "y[i] = undefined_thing;")
    out = run_in_a_process(tmp_path, BUILD.format(name="kf_broken", flags=[]), broken, ext="ext2")
    assert out.returncode != 0
    last = out.stderr.strip().splitlines()
    assert any('cuda.cu' in line and 'undefined_thing' in line for line in last), out.stderr[-2000:]
    assert "ninja: build stopped" not in out.stderr


@needs_nvcc
@pytest.mark.slow
def test_the_precompiled_header_is_used_at_its_optimisation_level(tmp_path):
    from kforge.extension_build import build_pch
    assert build_pch(str(tmp_path / "pch")) == {"O0": "built", "O2": "built"}
    assert build_pch(str(tmp_path / "pch")) == {"O0": "kept", "O2": "kept"}
    r = build_in_a_process(tmp_path, KERNELS, pch=tmp_path / "pch")
    assert r["builds"][0]["how"] == "split (precompiled header, one unit, light headers)", r
    r = build_in_a_process(tmp_path, KERNELS, flags=["-O3"], pch=tmp_path / "pch")
    assert r["builds"][0]["how"] == "split (precompiled header, one unit, light headers)", r


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a GPU")
def test_a_split_built_module_computes_what_its_source_says(tmp_path):
    from kforge import extension_build
    extension_build.install()
    from torch.utils.cpp_extension import load_inline
    os.environ["TORCH_EXTENSIONS_DIR"] = str(tmp_path / "ext")
    ext = load_inline("kf_gelu_gpu", cpp_sources="torch::Tensor gelu_cuda(torch::Tensor x);", cuda_sources=KERNELS,
                      functions=["gelu_cuda"])
    assert extension_build.BUILDS[-1]["how"].startswith("split"), extension_build.BUILDS
    x = torch.randn(3000, device="cuda")
    y = ext.gelu_cuda(x)  # its second launch, `fill` of 0 elements, writes none
    assert torch.allclose(y, torch.nn.functional.gelu(x, approximate="tanh"), atol=1e-5)


def test_torchs_half_types_reach_the_device_part_through_their_own_headers():
    s = split_cuda_source("#include <torch/extension.h>\nusing half_t = at::Half;\n"
                          "__global__ void twice(half_t* x, int n) { int i = threadIdx.x; if (i < n) x[i] = x[i] + x[i]; }\n"
                          "void go(torch::Tensor x) { twice<<<1, 32>>>(x.data_ptr<at::Half>(), x.numel()); }\n")
    assert s.device.startswith("#include <c10/util/Half.h>") and "using half_t = at::Half;" in s.device
    assert "ATen" not in s.device and "torch" not in s.device


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a GPU")
def test_a_split_built_half_precision_kernel_computes_what_its_source_says(tmp_path):
    from kforge import extension_build
    extension_build.install()
    from torch.utils.cpp_extension import load_inline
    os.environ["TORCH_EXTENSIONS_DIR"] = str(tmp_path / "ext")
    source = ("#include <torch/extension.h>\n"
              "__global__ void scale_half(const at::Half* x, at::Half* y, long n, float s) {\n"
              "  long i = blockIdx.x * (long)blockDim.x + threadIdx.x;\n"
              "  if (i < n) y[i] = at::Half(static_cast<float>(x[i]) * s);\n}\n"
              "torch::Tensor scale(torch::Tensor x, double s) {\n  auto y = torch::empty_like(x);\n"
              "  scale_half<<<(x.numel() + 255) / 256, 256>>>(x.data_ptr<at::Half>(), y.data_ptr<at::Half>(), x.numel(), (float)s);\n"
              "  return y;\n}\n")
    ext = load_inline("kf_half_gpu", cpp_sources="torch::Tensor scale(torch::Tensor x, double s);", cuda_sources=source,
                      functions=["scale"])
    assert extension_build.BUILDS[-1]["how"].startswith("split"), extension_build.BUILDS
    x = torch.randn(5000, device="cuda", dtype=torch.float16)
    assert torch.equal(ext.scale(x, 0.5), (x.float() * 0.5).half())


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a GPU")
def test_split_built_template_kernels_compute_what_their_source_says(tmp_path):
    from kforge import extension_build
    extension_build.install()
    from torch.utils.cpp_extension import load_inline
    os.environ["TORCH_EXTENSIONS_DIR"] = str(tmp_path / "ext")
    ext = load_inline("kf_templates_gpu", cpp_sources="torch::Tensor scale(torch::Tensor x, double s);",
                      cuda_sources=TEMPLATES, functions=["scale"])
    assert extension_build.BUILDS[-1]["how"].startswith("split"), extension_build.BUILDS
    for dtype in (torch.float32, torch.float64, torch.float16):
        x = torch.randn(5000, device="cuda", dtype=dtype)
        assert torch.equal(ext.scale(x, 0.5), (x.float() * 0.5).to(dtype)), dtype


def test_quotes_are_told_apart_from_digit_separators():
    from kforge.cuda_split import blank_literals
    code = blank_literals("int n = 1'000'000; switch (c) { case'{': break; }")
    assert "1'000'000" in code and "case' ':" in code and code.count("{") == 1 and code.count("}") == 1


LOAD = '''
import json, sys
from kforge import extension_build
extension_build.install()
from torch.utils.cpp_extension import load
ext = load("kf_files", sources=sys.argv[1:])
print(json.dumps({"builds": extension_build.BUILDS, "has": hasattr(ext, "gelu_cuda")}))
'''


@pytest.mark.slow
@needs_nvcc
def test_load_builds_files_the_same_way(tmp_path):
    # torch.utils.cpp_extension.load: the sources are files, a C++ one holding the bindings
    (tmp_path / "local.cuh").write_text("#define KF_HALF 0.5f\n")  # found beside its source by both parts
    (tmp_path / "kernels.cu").write_text('#include "local.cuh"\n' + KERNELS.replace("1.0f};", "KF_HALF * 2.f};"))
    (tmp_path / "bind.cpp").write_text("#include <torch/extension.h>\ntorch::Tensor gelu_cuda(torch::Tensor x);\n"
                                       "PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) { m.def(\"gelu_cuda\", &gelu_cuda); }\n")
    r = last_json(run_in_a_process(tmp_path, LOAD, str(tmp_path / "kernels.cu"), str(tmp_path / "bind.cpp")))
    assert r["has"] and r["builds"][0]["how"] == "split (no precompiled header)", r
