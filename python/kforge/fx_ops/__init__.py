"""FX call targets -> high-level IR ops (docs/interfaces.md).

Each handler's parameters mirror the PyTorch signature it stands for, so Python's own argument binding sorts out
positional and keyword forms; `b` is the GraphBuilder. Arguments arrive resolved: a tensor is a `Val`, a value
FX computed from shapes alone (x.size(0)) is a plain Python value. ShapeProp has already run every call in
PyTorch, so handlers may accept a superset of what PyTorch would (an `inplace` flag torch.relu lacks).
The final dtype of every op is PyTorch's (b.out_dtype); inputs are cast to it first, so an IR op never mixes
dtypes. Tables: FUNCTIONS (call_function targets), METHODS (call_method names), MODULES (call_module classes),
filled by importing one module per op family.
"""
from kforge.fx_ops import (compositions, conv, einops_ops, elementwise, loss_compositions, losses, matmul, norms,  # noqa: F401
                           pointwise_compositions, pooling, recurrent, reductions, scans, shapes,  # (registers)
                           tensor_compositions)
from kforge.fx_ops.common import ALIAS, FUNCTIONS, METHODS, MODULES, STATIC

__all__ = ["ALIAS", "FUNCTIONS", "METHODS", "MODULES", "STATIC"]
