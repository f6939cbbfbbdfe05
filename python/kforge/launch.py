"""Calling a compiled kforge plan like a torch function (kbtime and the exported ModelNew use it)."""
import torch

from kforge.dtypes import IR_TO_TORCH


def _spec(entry):
    return IR_TO_TORCH[entry["dtype"]], tuple(entry["shape"])


class KforgeFunction:
    """Checks the tensors it is given, allocates the outputs with torch.empty and launches the plan through
    `kforge._core.Runner` on the current CUDA stream. The plan was generated for fixed shapes and dtypes and
    reads raw pointers, so a wrong tensor must fail here rather than read or write out of bounds.

    `signature` holds the graph's "inputs" and "params" entries (name, dtype, shape)."""

    def __init__(self, runner, signature: dict):
        self.runner = runner
        self.input_specs = [_spec(e) for e in signature["inputs"]]
        self.param_specs = [_spec(e) for e in signature["params"]]
        self.output_specs = [(IR_TO_TORCH[dtype], tuple(shape)) for dtype, shape in runner.output_specs()]
        self._device = None  # the CUDA device of the first call; outputs go there

    def __call__(self, inputs, params, out=None) -> list[torch.Tensor]:
        """`out` lets a checker pass poisoned buffers, to see that the plan writes every element."""
        self._check("input", inputs, self.input_specs)
        self._check("param", params, self.param_specs)
        if self._device is None:
            self._device = torch.device("cuda", torch.cuda.current_device())
        if out is None:
            out = [torch.empty(shape, dtype=dtype, device=self._device) for dtype, shape in self.output_specs]
        else:
            self._check("output", out, self.output_specs)
        self.runner.run([t.data_ptr() for t in inputs], [p.data_ptr() for p in params],
                        [o.data_ptr() for o in out], _current_stream(self._device.index))
        return out

    @staticmethod
    def _check(kind, tensors, specs):
        # Hot path (every call, also inside the kb timer): one comparison per tensor, details only on failure.
        if len(tensors) == len(specs) and all(
                t.is_cuda and t.dtype == dtype and t.shape == shape and t.is_contiguous()
                for t, (dtype, shape) in zip(tensors, specs)):
            return
        if len(tensors) != len(specs):
            raise ValueError(f"kforge plan takes {len(specs)} {kind}s, got {len(tensors)}")
        for i, (t, (dtype, shape)) in enumerate(zip(tensors, specs)):
            if not (t.is_cuda and t.is_contiguous() and t.dtype == dtype and tuple(t.shape) == shape):
                raise ValueError(f"kforge plan {kind} {i}: wants a contiguous CUDA {dtype} tensor of shape "
                                 f"{list(shape)}, got {'CUDA' if t.is_cuda else t.device.type} {t.dtype} "
                                 f"{list(t.shape)}{'' if t.is_contiguous() else ' (not contiguous)'}")


def _current_stream(device_index: int) -> int:
    """The raw handle of PyTorch's current stream. torch.cuda.current_stream() builds a Stream object on every
    call; the raw getter (which Triton uses too) does not, and this runs on every call of a plan."""
    raw = getattr(torch._C, "_cuda_getCurrentRawStream", None)
    return raw(device_index) if raw is not None else torch.cuda.current_stream().cuda_stream
