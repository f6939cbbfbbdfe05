"""kforge's Python side: importing KernelBench problems into task bundles, the kb-protocol timer, and the
drop-in `ModelNew` export. The C++ core is the extension module `kforge._core` (built separately)."""

import ctypes

from kforge.errors import ImportProblemError

# libstdc++ into the process's global symbol scope before `kforge._core` loads. Built by GCC 13 in C++20 mode,
# _core carries its own instantiations of some iostream and locale templates (with their facet ids); Python loads
# extension modules with RTLD_LOCAL, so without this _core's references bind to its own copies, whose facet ids
# the locales made by libstdc++.so (already loaded by torch) do not know: any number written to or read from a
# stream then crashed, in _core or in XGBoost. In the global scope, libstdc++'s definitions come first, for every
# library.
try:
    ctypes.CDLL("libstdc++.so.6", mode=ctypes.RTLD_GLOBAL)
except OSError:  # not a GNU toolchain's process: nothing to unify
    pass

__all__ = ["ImportProblemError", "optimize"]


def __getattr__(name):
    """`kforge.optimize` (kforge.api), imported on first use: `import kforge` stays light (no torch)."""
    if name == "optimize":
        from kforge.api import optimize
        return optimize
    raise AttributeError(f"module 'kforge' has no attribute {name!r}")
