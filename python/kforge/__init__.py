"""kforge's Python side: importing KernelBench problems into task bundles, the kb-protocol timer, and the
drop-in `ModelNew` export. The C++ core is the extension module `kforge._core` (built separately)."""

from kforge.errors import ImportProblemError

__all__ = ["ImportProblemError"]
