"""The roofline of a problem on the GPU in hand: its floor is the larger of its minimum bytes over the measured
copy bandwidth and its matrix-product FLOPs over the measured matmul rate of its precision tier, both
ceilings measured in the same process as the times they are compared with (never a datasheet figure)."""
import torch

from kforge import timing

_ceilings: dict[str, float] = {}


def matmul_tflops(tier: str, n: int = 8192) -> float:
    """TFLOP/s of PyTorch's own n x n x n product: strict = float32 in plain fp32 arithmetic, relaxed = float32
    with TF32 tensor cores allowed, "relaxed (fp16)" = float16 operands (the rate of an fp16 or bf16 plan).
    Measured once per process."""
    if tier not in _ceilings:
        old = torch.backends.cuda.matmul.allow_tf32
        torch.backends.cuda.matmul.allow_tf32 = tier == "relaxed"
        dtype = torch.float16 if tier == "relaxed (fp16)" else torch.float32
        try:
            a = torch.randn(n, n, device="cuda", dtype=dtype)
            b = torch.randn(n, n, device="cuda", dtype=dtype)
            ms = timing.time_callable(lambda: torch.mm(a, b))["median_ms"]
            _ceilings[tier] = 2.0 * n ** 3 / (ms * 1e-3) / 1e12
            del a, b
        finally:
            torch.backends.cuda.matmul.allow_tf32 = old
    return _ceilings[tier]


def below_fp32(plan: dict) -> bool:
    """Whether some step computes on inputs rounded below fp32 (TF32, fp16, bf16): its ceiling is that tensor-core
    rate (the tier is the check's: such a plan is strict only where it passes the strict tier on every set)."""
    return any(uses_precision(plan, p) for p in ("tf32", "fp16", "bf16"))


def uses_precision(plan: dict, precision: str) -> bool:
    return any(k.get("schedule", {}).get("precision") == precision for k in plan.get("kernels", []))


def floor(bytes_min: float, flops: float, copy_gbs: float, tflops: float) -> float:
    """Milliseconds no implementation can beat: the slower of moving the bytes and doing the arithmetic."""
    memory = bytes_min / (copy_gbs * 1e9) * 1e3 if copy_gbs > 0 else 0.0
    compute = flops / (tflops * 1e12) * 1e3 if flops > 0 and tflops > 0 else 0.0
    return max(memory, compute)


def report(bytes_min: float, flops: float, copy_gbs: float, plan: dict, kforge_ms: float) -> dict:
    """The roofline fields of a problem's report. The compute ceiling is measured only for problems with
    matrix products (it costs a few hundred milliseconds)."""
    tier = "strict"
    if below_fp32(plan):
        tier = "relaxed (fp16)" if uses_precision(plan, "fp16") or uses_precision(plan, "bf16") else "relaxed"
    tflops = matmul_tflops(tier) if flops > 0 else 0.0
    if flops > 0 and tier == "strict" and uses_precision(plan, "tf32x3"):
        # Split precision is strict-tier arithmetic at three TF32 products each: its ceiling is the faster of
        # fp32 and a third of the measured TF32 rate.
        tier, tflops = "strict (split tf32)", max(tflops, matmul_tflops("relaxed") / 3)
    elif flops > 0 and tier == "strict" and uses_precision(plan, "fp16x3"):
        # The same on fp16 tensor cores (cuBLASLt on hi/lo copies): a third of the measured fp16 rate.
        tier, tflops = "strict (split fp16)", max(tflops, matmul_tflops("relaxed (fp16)") / 3)
    f = floor(bytes_min, flops, copy_gbs, tflops)
    return {"flops": flops, "matmul_tflops": tflops or None, "matmul_tier": tier if flops > 0 else None,
            "floor_ms": f, "pct_roofline": 100.0 * f / kforge_ms if kforge_ms > 0 and f > 0 else None}
