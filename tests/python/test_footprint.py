"""The GPU memory a task needs (kforge.footprint), GPU-free: how many hidden sets stay on the GPU, and the one-line
refusal, with its numbers, of a task that cannot run even one set."""
import pytest

from kforge import footprint
from kforge.errors import ImportProblemError

GB = 10 ** 9


def graph(in_floats, out_floats, param_floats=0):
    return {"inputs": [{"name": "x", "dtype": "f32", "shape": [in_floats]}],
            "params": [{"name": "w", "dtype": "f32", "shape": [param_floats]}] if param_floats else [],
            "nodes": [{"name": "y", "dtype": "f32", "shape": [out_floats]}], "outputs": ["y"]}


def test_a_set_is_its_inputs_and_references():
    g = graph(4096 * 393216, 4096 * 393216)
    assert footprint.set_bytes(g) == 2 * 4 * 4096 * 393216
    assert footprint.working_bytes(graph(10, 10, param_floats=5)) == 20 + footprint.WORKING_SETS * 80


def test_small_tasks_keep_every_set_on_the_gpu():
    assert footprint.resident_sets(graph(1 << 20, 1 << 20), 5, 80 * GB) == 5


def test_a_task_of_6_gb_tensors_streams_most_of_its_sets():
    """An elementwise op over 4096 x 393216 floats: 12.9 GB a set, 51.5 GB to run one; on an 80 GB GPU one set
    stays, four stream from host memory; the sum of the same input (a small output) keeps all five."""
    elementwise = graph(4096 * 393216, 4096 * 393216)
    assert footprint.resident_sets(elementwise, 5, 79 * GB) == 1
    footprint.check_fits(elementwise, 79 * GB, "gelu.py")  # fits, one set at a time
    assert footprint.resident_sets(graph(4096 * 393216, 4096), 5, 79 * GB) == 5


def test_a_task_that_cannot_fit_one_set_says_so_with_the_numbers():
    with pytest.raises(ImportProblemError) as e:
        footprint.check_fits(graph(4096 * 393216, 4096 * 393216), 40 * GB, "gelu.py")
    message = str(e.value)
    assert "gelu.py" in message and "64.4 GB" in message and "12.9 GB for one input set" in message
    assert "34.0 GB of the 40.0 GB free" in message


def test_the_search_gets_the_resident_sets_and_the_check_the_streamed_ones():
    """A set in host memory is readable from the GPU too (unified addressing), across PCIe: the search must be
    given the resident sets' pointers only, and a resident set that is not on the GPU is a bug said as one."""
    import torch

    from kforge import session
    on_cpu = [[torch.zeros(2)], [torch.ones(2)]]
    hosted = session.HostedTask(problem=None, model=None, graph={}, params=[], sets=on_cpu, refs=on_cpu,
                                strict_tolerance=[[1e-4], [2e-4]], flags={}, base={}, resident=0)
    assert hosted.pointers() == ([], [], []) and hosted.resident_tolerance() == []
    assert hosted.streamed().inputs == on_cpu and hosted.streamed().tolerances[1]["strict"] == [2e-4]
    hosted.resident = 1
    with pytest.raises(RuntimeError, match="not in GPU memory"):
        hosted.pointers()


def test_streamed_sets_must_fit_in_host_memory_or_the_task_says_so():
    elementwise = graph(4096 * 393216, 4096 * 393216)
    footprint.check_host_fits(elementwise, 4, 128 * GB, "gelu.py")  # 51.5 GB pinned of 128: fine
    with pytest.raises(ImportProblemError) as e:
        footprint.check_host_fits(elementwise, 4, 24 * GB, "gelu.py")
    assert "51.5 GB of pinned host memory" in str(e.value) and "give fewer sets" in str(e.value)
    assert footprint.host_available_bytes() > 0


def test_host_memory_counts_what_the_kernel_can_drop():
    with open("/proc/meminfo") as meminfo:
        fields = {line.split(":")[0]: int(line.split()[1]) * 1024 for line in meminfo}
    available = footprint.host_available_bytes()
    # MemAvailable, read a moment apart: within 5% of it, and never below the free pages alone by much
    assert abs(available - fields["MemAvailable"]) < 0.05 * fields["MemTotal"]
    assert available >= fields["MemFree"] * 0.9


def test_releasing_cached_memory_runs_without_a_gpu():
    footprint.release_cached_memory()  # gc and, where a GPU is, PyTorch's two caches: nothing to raise here
