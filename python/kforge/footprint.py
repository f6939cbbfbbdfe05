"""How much GPU memory a task needs, estimated from its graph before anything is allocated. A task whose hidden
sets do not all fit beside the memory it runs in keeps the rest in pinned host memory and copies them to the GPU
one at a time (session.host_task); one that cannot run even one set says so in one line, with the numbers."""
import gc
import math
import os

import torch

from kforge.bundle import output_specs
from kforge.dtypes import IR_TO_TORCH
from kforge.errors import ImportProblemError

GB = 1e9
# Besides the hidden sets it keeps, a task runs in: its params, and per set checked at a time the reference's
# float64 arithmetic (a float64 copy of the inputs and of the outputs, twice a set's bytes), the model's own
# float32 outputs beside it, and the outputs of a plan, its poisoned copy and the two baselines (a set's bytes
# again, at most). Four sets' bytes bound what a problem of one elementwise op or one reduction allocates;
# intermediate tensors of a longer model come on top, so only a fraction of the free memory is planned.
WORKING_SETS = 4
PLANNED_FRACTION = 0.85


def spec_bytes(specs) -> int:
    return sum(math.prod(s["shape"]) * IR_TO_TORCH[s["dtype"]].itemsize for s in specs)


def set_bytes(graph: dict) -> int:
    """One hidden set on the GPU: its inputs and its reference outputs."""
    return spec_bytes(graph["inputs"]) + spec_bytes(output_specs(graph))


def working_bytes(graph: dict) -> int:
    return spec_bytes(graph["params"]) + WORKING_SETS * set_bytes(graph)


def free_bytes() -> int:
    """The driver's free memory and what PyTorch's caching allocator holds unused (an earlier task's, in a suite)."""
    return torch.cuda.mem_get_info()[0] + torch.cuda.memory_reserved() - torch.cuda.memory_allocated()


def resident_sets(graph: dict, num_sets: int, free: int) -> int:
    """How many of `num_sets` hidden sets stay on the GPU (at least one: check_fits refuses the rest)."""
    room = PLANNED_FRACTION * free - working_bytes(graph)
    return max(1, min(num_sets, int(room // max(set_bytes(graph), 1))))


def host_available_bytes() -> int:
    """What the host can still give without swapping: MemAvailable (free pages plus the page cache the kernel can
    drop), not MemFree, which a machine that has just read a few GB of files shows far too small."""
    try:
        with open("/proc/meminfo") as meminfo:
            for line in meminfo:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")


def release_cached_memory() -> None:
    """Gives back what PyTorch's caching allocators keep of freed tensors, on the GPU and in pinned host memory:
    a previous task's streamed sets, freed but cached by the pinned-host allocator, would otherwise count as taken
    when the next task of the same process measures what the host has free."""
    gc.collect()
    if torch.cuda.is_available():
        torch.cuda.empty_cache()
        if hasattr(torch._C, "_host_emptyCache"):  # the pinned-host allocator's cache (no public API for it)
            torch._C._host_emptyCache()


def check_host_fits(graph: dict, streamed: int, available: int, path) -> None:
    """The streamed sets are pinned in host memory (page-locked: the kernel cannot swap them): refused, with the
    numbers, where they would take more than PLANNED_FRACTION of what the host has free."""
    need = streamed * set_bytes(graph)
    if need > PLANNED_FRACTION * available:
        raise ImportProblemError(path, f"{streamed} hidden sets do not fit on the GPU and need {need / GB:.1f} GB of "
                                       f"pinned host memory, but {PLANNED_FRACTION * available / GB:.1f} GB of the "
                                       f"{available / GB:.1f} GB free can be planned (give fewer sets)")


def check_fits(graph: dict, free: int, path) -> None:
    """Raises ImportProblemError, with the numbers, where not even one hidden set fits beside the working memory."""
    one, work = set_bytes(graph), working_bytes(graph)
    if one + work > PLANNED_FRACTION * free:
        raise ImportProblemError(path, f"needs {(one + work) / GB:.1f} GB of GPU memory ({one / GB:.1f} GB for one "
                                       f"input set and its reference, {work / GB:.1f} GB to run and check it), but "
                                       f"{PLANNED_FRACTION * free / GB:.1f} GB of the {free / GB:.1f} GB free can be "
                                       "planned")
