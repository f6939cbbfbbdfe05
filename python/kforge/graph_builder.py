"""Builds the high-level IR graph of docs/interfaces.md node by node while FX nodes are converted.

Besides the contract's fields, every node carries the `shape` and `dtype` PyTorch gave it (from ShapeProp), so
the C++ shape rules can be checked against PyTorch's."""
import math
from dataclasses import dataclass

import torch

from kforge.dtypes import HALF, TORCH_TO_IR, compute_dtype
from kforge.errors import ImportProblemError


@dataclass(frozen=True)
class Val:
    """A tensor value of the IR graph: an input, a param or a node's result."""
    name: str
    dtype: torch.dtype
    shape: tuple[int, ...]

    @property
    def ndim(self) -> int:
        return len(self.shape)


def non_finite_as_strings(v):
    if isinstance(v, float) and not math.isfinite(v):
        return "nan" if math.isnan(v) else ("inf" if v > 0 else "-inf")
    if isinstance(v, dict):
        return {k: non_finite_as_strings(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [non_finite_as_strings(x) for x in v]
    return v


class GraphBuilder:
    def __init__(self, file, reserved):
        self.file = file
        self.used = set(reserved)  # every FX node name and param name, so fresh names never collide
        self.inputs, self.nodes, self.outputs = [], [], []
        self.params = {}  # qualified name -> Val, in first-use order
        self.param_casts = {}  # qualified name of a half-precision param -> its cast to f32 (read by every use)
        self.node = None  # the FX node being converted: names the final IR node and errors
        self.op = None    # how errors name that node's target

    def at(self, node, op: str) -> None:
        self.node, self.op = node, op

    def refuse(self, reason: str):
        raise ImportProblemError(self.file, reason, self.node.name if self.node else None, self.op)

    def storage_dtype(self, dtype: torch.dtype) -> str:
        """The IR dtype a tensor of `dtype` is stored in (a task's inputs and outputs)."""
        if dtype not in TORCH_TO_IR:
            self.refuse(f"dtype {dtype} is not supported (kforge has f32, f16, bf16, i64 and bool)")
        return TORCH_TO_IR[dtype]

    def ir_dtype(self, dtype: torch.dtype) -> str:
        """The IR dtype a node computing a value of `dtype` has: half precision computes in f32."""
        self.storage_dtype(dtype)  # refuses a dtype no task carries
        return TORCH_TO_IR[compute_dtype(dtype)]

    # The current FX node's result as PyTorch computed it; the final IR node of a conversion takes it.
    @property
    def out_dtype(self) -> torch.dtype:
        return self.node.meta["tensor_meta"].dtype

    @property
    def out_shape(self) -> tuple[int, ...]:
        return tuple(self.node.meta["tensor_meta"].shape)

    def add_input(self, name: str, dtype, shape) -> Val:
        """A forward argument. A half-precision one is stored as it is and read through a cast to f32."""
        self.inputs.append({"name": name, "dtype": self.storage_dtype(dtype), "shape": list(shape)})
        return self.read_through_cast(name, dtype, shape) if dtype in HALF else Val(name, dtype, tuple(shape))

    def read_through_cast(self, name: str, dtype, shape) -> Val:
        """The f32 value a stored half-precision tensor is read as: a cast node (its Val keeps the torch dtype,
        so that PyTorch's type promotion still decides the handlers' casts)."""
        cast = self.fresh(f"{name}_f32")
        self.nodes.append({"name": cast, "op": "cast", "args": [name], "attrs": {"dtype": "f32"},
                           "shape": list(shape), "dtype": "f32"})
        return Val(cast, dtype, tuple(shape))

    def add_output(self, v: Val) -> None:
        """A result of forward, stored in its own dtype (a half-precision result: a cast from f32 writes it)."""
        if v.dtype in HALF:
            name = self.fresh(f"{v.name}_{TORCH_TO_IR[v.dtype]}")
            self.nodes.append({"name": name, "op": "cast", "args": [v.name], "attrs": {"dtype": TORCH_TO_IR[v.dtype]},
                               "shape": list(v.shape), "dtype": TORCH_TO_IR[v.dtype]})
            v = Val(name, v.dtype, v.shape)
        self.outputs.append(v.name)

    def param(self, qualname: str, dtype, shape) -> Val:
        """A parameter or buffer under its qualified name in the model; registered once, in first-use order."""
        if qualname not in self.params:
            if any(i["name"] == qualname for i in self.inputs):
                self.refuse(f"parameter '{qualname}' has the same name as a forward argument; rename one")
            self.ir_dtype(dtype)  # refuse a float64 weight here, where the node that reads it is known
            self.params[qualname] = Val(qualname, dtype, tuple(shape))
        if dtype not in HALF:
            return self.params[qualname]
        if qualname not in self.param_casts:  # stored as it is, read through one cast (as an input)
            self.param_casts[qualname] = self.read_through_cast(qualname, dtype, shape)
        return self.param_casts[qualname]

    def fresh(self, base: str) -> str:
        name, i = base, 1
        while name in self.used:
            name, i = f"{base}_{i}", i + 1
        self.used.add(name)
        return name

    def emit(self, op: str, args, attrs=None) -> Val:
        """The final IR node for the current FX node: its name and PyTorch's shape and dtype."""
        return self._add(self.node.name, op, args, attrs, self.out_dtype, self.out_shape)

    def emit_tmp(self, op: str, args, attrs, dtype, shape) -> Val:
        """An intermediate node of a decomposition (a cast, a constant, a norm inside F.normalize)."""
        return self._add(self.fresh(f"{self.node.name}_{op}"), op, args, attrs, dtype, tuple(shape))

    def const(self, value, dtype) -> Val:
        value = {torch.int64: int, torch.bool: lambda v: int(bool(v))}.get(dtype, float)(value)  # JSON bools are no numbers
        return self.emit_tmp("const", [], {"value": value, "dtype": self.ir_dtype(dtype)}, dtype, ())

    def cast(self, v: Val, dtype) -> Val:
        if v.dtype == dtype:
            return v
        return self.emit_tmp("cast", [v], {"dtype": self.ir_dtype(dtype)}, dtype, v.shape)

    def _add(self, name, op, args, attrs, dtype, shape) -> Val:
        # JSON has no inf or nan: such a number is written as the string "inf", "-inf" or "nan", which the C++ side
        # reads as that number (Node::attr_f).
        attrs = non_finite_as_strings(attrs or {})
        arg_names = []
        for a in args:
            if a is not None and not isinstance(a, Val):
                raise TypeError(f"internal: argument {a!r} of {op} is not a tensor value")
            arg_names.append(a.name if a is not None else "")
        self.nodes.append({"name": name, "op": op, "args": arg_names, "attrs": attrs,
                           "shape": list(shape), "dtype": self.ir_dtype(dtype)})
        return Val(name, dtype, tuple(shape))

    def graph(self) -> dict:
        """The IR graph. Params that no node reads are dropped: a buffer that forward only updates as a side
        effect (BatchNorm's running stats in training mode) is not an input of the computation."""
        read = {a for n in self.nodes for a in n["args"]} | set(self.outputs)
        params = [{"name": p.name, "dtype": self.storage_dtype(p.dtype), "shape": list(p.shape)}
                  for p in self.params.values() if p.name in read]
        return {"version": 1, "inputs": self.inputs, "params": params, "nodes": self.nodes,
                "outputs": self.outputs}
