"""A task for a problem kforge's importer cannot express in its IR (an op it lacks, a forward torch.fx cannot
follow): the graph names the inputs, the model's parameters and buffers, and one `opaque` node per output with its
dtype and shape. The environment judges any candidate against it (a ModelNew, raw CUDA) from the hidden sets and
the references PyTorch computes; kforge's own generator refuses it, naming why the importer could not follow."""
import torch

from kforge.dtypes import TORCH_TO_IR
from kforge.errors import ImportProblemError


def as_list(out) -> list:
    return list(out) if isinstance(out, (tuple, list)) else [out]


def spec(name: str, t: torch.Tensor) -> dict:
    return {"name": name, "dtype": TORCH_TO_IR[t.dtype], "shape": list(t.shape)}


def same(a: torch.Tensor, b: torch.Tensor) -> bool:
    """Equal up to the rounding of a reduction's order (atomics on the GPU), far inside the strict tier."""
    if a.shape != b.shape or a.dtype != b.dtype:
        return False
    return torch.allclose(a, b, rtol=1e-5, atol=1e-6, equal_nan=True) if a.is_floating_point() else torch.equal(a, b)


def opaque_graph(model: torch.nn.Module, inputs: list[torch.Tensor], file, why: str) -> dict:
    """The IR graph of a model kept whole. Raises ImportProblemError, naming `why` (the importer's reason) and
    its own, where the model cannot run on the inputs, gives other outputs on a second run (random ops: no
    reference could judge a candidate), or uses dtypes the environment does not carry (f32, f16, bf16, i64, bool)."""
    def refuse(reason: str) -> ImportProblemError:
        return ImportProblemError(file, f"{why}; and it cannot be kept whole: {reason}")

    for i, t in enumerate(inputs):
        if t.dtype not in TORCH_TO_IR:
            raise refuse(f"input {i} is {t.dtype}; tasks carry float32, float16, bfloat16, int64 and bool tensors")
    try:
        with torch.no_grad():
            runs = [as_list(model(*[t.clone() for t in inputs])) for _ in range(2)]
    except Exception as e:  # noqa: BLE001 -- the problem's own failure, named
        raise refuse(f"the model does not run on get_inputs(): {type(e).__name__}: {e}") from e
    outputs = runs[0]
    for j, t in enumerate(outputs):
        if not isinstance(t, torch.Tensor) or t.dtype not in TORCH_TO_IR:
            what = type(t).__name__ if not isinstance(t, torch.Tensor) else str(t.dtype)
            raise refuse(f"output {j} is {what}; tasks carry float32, float16, bfloat16, int64 and bool tensors")
    if len(runs[1]) != len(outputs) or not all(same(a, b) for a, b in zip(outputs, runs[1])):
        raise refuse("two runs on the same inputs give other outputs (a random op?): no reference can judge it")
    # Parameters and buffers of a carried dtype, as a raw CUDA candidate receives them (a ModelNew gets the whole
    # state_dict from the problem's own Model).
    params = [spec(name, t) for name, t in list(model.named_parameters()) + list(model.named_buffers())
              if t.dtype in TORCH_TO_IR]
    graph_inputs = [spec(f"input{i}", t) for i, t in enumerate(inputs)]
    args = [v["name"] for v in graph_inputs + params]
    nodes = [{"name": f"output{j}", "op": "opaque", "args": args,
              "attrs": {"dtype": TORCH_TO_IR[t.dtype], "shape": list(t.shape), "why": why},
              "dtype": TORCH_TO_IR[t.dtype], "shape": list(t.shape)} for j, t in enumerate(outputs)]
    return {"version": 1, "inputs": graph_inputs, "params": params, "nodes": nodes, "outputs": [n["name"] for n in nodes]}
