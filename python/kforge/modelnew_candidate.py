"""`python -m kforge.modelnew_candidate --inputs /task --candidate FILE --problem FILE [--rules] [--device]`
(or `--prebuild --candidate FILE --problem FILE`: ModelNew built on the CPU only, its extensions cached)

The untrusted end of a ModelNew's evaluation (the KernelBench solution format, as LLM agents write it, often with
`torch.utils.cpp_extension.load_inline`). `kforge evaluate --modelnew` and `kforge serve` start it inside a
sandbox with a minimal root: it sees the problem file, the task's params and inputs, never a reference, a
tolerance, the bundle's folder or the service's. It speaks the protocol of env/candidate_link.h with the trusted
judge of env/judge.h on stdin/stdout, in the same steps as kforge's own candidates (env/evaluator.cpp): every
set's outputs are sent to the judge, which compares them and pays; the timing (kb protocol) is reported and
bounded by the judge's clock.

The checks here (in-place edits, lazy outputs, CUDA-Agent's no-torch-operator rule, patched timers, work escaping
the timed stream) run in the candidate's own process: they name honest mistakes and plain tricks; what a
candidate that rewrites this process spoils is only its own report, never the verdict (docs/interfaces.md,
"Threat model")."""
import argparse
import contextlib
import importlib.util
import json
import os
import sys
import time
from pathlib import Path

import torch
from torch.overrides import TorchFunctionMode

from kforge import extension_build, timing
from kforge.bundle import output_specs, read_tensor, tensor_bytes
from kforge.dtypes import IR_TO_TORCH
from kforge.fx_to_ir import lookup
from kforge.problem import PRECISIONS, dropout_off, load_problem

# What a forward may still call under the CUDA-Agent rules: allocation, metadata and views of its own
# buffers. Everything else (torch.relu, F.softmax, a + b on tensors, matmul) is a torch operator.
ALLOWED = {"empty", "empty_like", "empty_strided", "zeros", "zeros_like", "size", "dim", "numel", "stride",
           "data_ptr", "is_contiguous", "contiguous", "view", "reshape", "flatten", "unsqueeze", "squeeze",
           "__get__", "device", "dtype", "shape", "is_cuda", "element_size", "__len__", "__getitem__",
           "storage_offset", "cuda", "to", "new_empty", "get_device", "__format__", "__repr__"}


class Rejected(Exception):
    """A hack of the catalogue, or a rule broken, caught here: the message names it."""


class ForbidTorchOps(TorchFunctionMode):
    """Raises on any torch function outside ALLOWED while active."""

    def __torch_function__(self, func, types, args=(), kwargs=None):
        name = getattr(func, "__name__", str(func))
        if name not in ALLOWED:
            raise Rejected(f"forward calls torch operator '{name}' (not allowed under --rules cuda-agent)")
        return func(*args, **(kwargs or {}))


def copy_plain_tensors(reference, candidate, graph) -> None:
    """The task's tensors that are plain attributes of the model (`self.h0 = torch.randn(...)` in __init__, outside
    the state_dict) into the candidate's attributes of the same name and shape, as load_state_dict does for
    parameters and buffers: the candidate's own draw need not be the reference's."""
    state = reference.state_dict()
    with torch.no_grad():
        for p in graph["params"]:
            if p["name"] in state:
                continue
            try:
                mine = lookup(candidate, p["name"])
            except AttributeError:
                continue  # the candidate keeps no such tensor: its forward is its own business
            theirs = lookup(reference, p["name"])
            if isinstance(mine, torch.Tensor) and mine.shape == theirs.shape:
                mine.copy_(theirs)


def _trusted_objects() -> dict:
    """What the timer and these checks call: each must still be the object it was before the candidate loaded."""
    import statistics
    return {"torch.cuda.Event": torch.cuda.Event, "torch.cuda.Event.record": torch.cuda.Event.record,
            "torch.cuda.Event.elapsed_time": torch.cuda.Event.elapsed_time,
            "torch.cuda.Event.synchronize": torch.cuda.Event.synchronize, "torch.cuda.synchronize": torch.cuda.synchronize,
            "torch.cuda.current_stream": torch.cuda.current_stream, "time.perf_counter": time.perf_counter,
            "torch.Tensor.zero_": torch.Tensor.zero_, "torch.equal": torch.equal,
            "statistics.median": statistics.median, "statistics.fmean": statistics.fmean,
            "kforge.timing.time_interleaved": timing.time_interleaved, "kforge.timing.stats": timing.stats}


def check_trusted(before: dict) -> None:
    changed = [name for name, obj in _trusted_objects().items() if obj is not before[name]]
    if changed:
        raise Rejected(f"the candidate replaced {', '.join(changed)} (rejected: timer patching)")


def check_outputs(out: list, specs: list[dict]) -> None:
    """Plain tensors of the task's dtypes and shapes. A tensor subclass can compute (or fetch) its values when
    read rather than in forward, outside the timer (hack catalogue, lazy outputs)."""
    if len(out) != len(specs):
        raise Rejected(f"forward returned {len(out)} outputs; the task has {len(specs)}")
    for i, (t, spec) in enumerate(zip(out, specs)):
        if type(t) not in (torch.Tensor, torch.nn.Parameter):  # a forward may return one of its parameters
            raise Rejected(f"output {i} is a {type(t).__module__}.{type(t).__qualname__}, not a plain torch.Tensor "
                           "(rejected: lazy or custom output)")
        want = (IR_TO_TORCH[spec["dtype"]], list(spec["shape"]))
        if (t.dtype, list(t.shape)) != want:
            raise Rejected(f"output {i} is {t.dtype} {list(t.shape)}; the task's is {want[0]} {want[1]}")


def escaped_stream_ms(call, events_ms: float, rounds: int = 3) -> float | None:
    """Hack catalogue, work on another stream: the kb timer's events sit on the current stream only. The
    fastest fully synchronized run must not take much longer than the events say, in each of `rounds` rounds
    (other processes only ever add time to a run). Returns that synchronized time where it escaped, else None.
    env/evaluator.cpp's escapes_timed_stream, for a Python callable."""
    synced = 0.0
    for _ in range(rounds):
        fastest_run = fastest_idle = float("inf")
        for _ in range(5):
            torch.cuda.synchronize()
            t0 = time.perf_counter()
            torch.cuda.synchronize()
            fastest_idle = min(fastest_idle, time.perf_counter() - t0)
            t1 = time.perf_counter()
            call()
            torch.cuda.synchronize()
            fastest_run = min(fastest_run, time.perf_counter() - t1)
        synced = (fastest_run - fastest_idle) * 1e3
        if synced <= 2.0 * events_ms + 0.2:
            return None
    return synced


def build_candidate(path, problem):
    """ModelNew built as KernelBench builds it: its module run, then the class called on get_init_inputs()."""
    cls = load_candidate(path)
    torch.manual_seed(42)  # KernelBench's seed before building ModelNew
    return problem.bind(cls(*problem.module.get_init_inputs()))  # the problem's Python numbers, as its Model's


def prebuild(args) -> None:
    """The candidate's module run and ModelNew built on the CPU, in a sandbox that shows no GPU: what it compiles
    (load_inline, load) lands in TORCH_EXTENSIONS_DIR, where its evaluation finds it built. Failing here is no
    verdict (a module may need the GPU to build): the evaluation builds it again, in its turn."""
    t0 = time.perf_counter()
    try:
        build_candidate(args.candidate, load_problem(args.problem))
        print(json.dumps({"prebuilt": True, "ms": (time.perf_counter() - t0) * 1e3,
                          "builds": extension_build.BUILDS}), flush=True)
    except Exception as e:  # noqa: BLE001 -- a candidate's failure, reported, not raised
        print(json.dumps({"prebuilt": False, "ms": (time.perf_counter() - t0) * 1e3,
                          "why": f"{type(e).__name__}: {e}"[:2000], "builds": extension_build.BUILDS}), flush=True)


def load_candidate(path):
    spec = importlib.util.spec_from_file_location("kforge_candidate", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    if not hasattr(module, "ModelNew"):
        raise ValueError(f"{Path(path).name} defines no ModelNew")
    return module.ModelNew


class Link:
    """Frames of env/candidate_link.h: a JSON line, then `bytes` raw bytes where the header says so."""

    def __init__(self):
        # The link keeps descriptors of its own; what the candidate prints goes to stderr, never to the judge.
        self.out = os.dup(1)
        self.inp = os.fdopen(os.dup(0), "rb")
        os.dup2(2, 1)
        null = os.open(os.devnull, os.O_RDONLY)
        os.dup2(null, 0)
        os.close(null)

    def send(self, header: dict, payload: bytes = b"") -> None:
        if payload:
            header = {**header, "bytes": len(payload)}
        data = memoryview((json.dumps(header) + "\n").encode() + payload)
        while data:
            data = data[os.write(self.out, data):]

    def receive(self) -> dict:
        line = self.inp.readline()
        if not line:
            raise EOFError("the judge closed the link")
        return json.loads(line)


def run_candidate(args) -> None:
    link = Link()
    header = link.receive()
    graph = header["task"]["graph"]
    stored, drawn = header["num_sets"], header.get("drawn", [])
    sets = stored + len(drawn)
    last = stored + sum(1 for d in drawn if not d.get("beyond")) - 1  # the check after timing's set
    trials = header.get("timing", {}).get("trials", 0)
    device = args.device
    specs = output_specs(graph)
    inputs = [[read_tensor(Path(args.inputs) / "sets" / str(k) / f"in{i}.bin", s, device)
               for i, s in enumerate(graph["inputs"])] for k in range(sets)]
    problem = load_problem(args.problem, args.precision)
    reference = problem.build_model()
    with torch.no_grad():
        for i, p in enumerate(graph["params"]):
            lookup(reference, p["name"]).copy_(read_tensor(Path(args.inputs) / "params" / f"{i}.bin", p, "cpu"))
    link.send({"ready": True})

    # The candidate's code runs only in its turn on the GPU (the judge holds the lock), so no code of it, at
    # import or in __init__, touches the GPU while another evaluation is timed. Its load_inline builds were made
    # before, in a sandbox without a GPU (`--prebuild`): here they are found built.
    link.send({"turn": True})
    if not link.receive().get("turn"):
        return
    trusted = _trusted_objects()
    t0 = time.perf_counter()
    try:
        candidate = problem.as_precision(build_candidate(args.candidate, problem))  # KernelBench casts ModelNew too
        candidate.load_state_dict(reference.state_dict(), strict=True)  # same parameters, same names
        copy_plain_tensors(reference, candidate, graph)
        candidate = candidate.to(device)
        dropout_off(candidate.train(reference.training))  # as the reference's dropout (problem.dropout_off)
    except Exception as e:  # noqa: BLE001 -- a broken candidate is an answer, not a crash
        link.send({"hello": True, "compiled": False, "log": f"candidate does not build: {type(e).__name__}: {e}"})
        return
    link.send({"hello": True, "compiled": True, "compile_ms": (time.perf_counter() - t0) * 1e3})

    def run(xs):
        kept = [t.clone() for t in xs]
        with torch.no_grad():
            with ForbidTorchOps() if args.rules == "cuda-agent" else contextlib.nullcontext():
                out = candidate(*xs)
        out = list(out) if isinstance(out, (tuple, list)) else [out]
        if device == "cuda":
            torch.cuda.synchronize()
        if any(not torch.equal(a, b) for a, b in zip(xs, kept)):
            raise Rejected("the candidate wrote into its inputs (rejected: in-place edit)")
        check_outputs(out, specs)
        return out

    def judged(k, xs, after_timing=False) -> bool:
        out = run(xs)
        payload = b"".join(tensor_bytes(t) for t in out)
        link.send({"judge": True, "set": k, "after_timing": after_timing}, payload)
        return link.receive().get("relaxed", False)

    try:
        for k in range(last + 1):  # get_inputs' distribution: the KernelBench-compatible verdict
            if not judged(k, inputs[k]):
                return
        check_trusted(trusted)
        x0 = inputs[0]
        if trials > 0:
            with torch.no_grad():
                t_start = time.perf_counter()
                kb = timing.time_interleaved({"candidate": lambda: candidate(*x0)},
                                             trials=max(trials, timing.KB_TRIALS))["candidate"]
                wall_ms = (time.perf_counter() - t_start) * 1e3 / kb["trials"]
                check_trusted(trusted)
                escaped = escaped_stream_ms(lambda: candidate(*x0), kb["median_ms"])
            link.send({"timed": kb, "wall_ms": wall_ms})
            if escaped is not None:
                link.send({"escaped": {"events_ms": kb["median_ms"], "synced_ms": escaped}})
                return
        # After timing: the timed tensors get the last declared set's values (results cached by address
        # would be stale), and the candidate is checked again (correct while checked, wrong afterwards).
        for t, v in zip(x0, inputs[last]):
            t.copy_(v)
        if not judged(last, x0, after_timing=True):
            return
        check_trusted(trusted)
        # Last, the sets beyond get_inputs' distribution: their own verdict (a failure here changes only that).
        for k in range(last + 1, sets):
            judged(k, inputs[k])
    except Rejected as e:
        link.send({"rejected": f"{e}\n"})
    except Exception as e:  # noqa: BLE001
        link.send({"rejected": f"candidate failed: {type(e).__name__}: {e}\n"})
    finally:
        link.send({"done": True})


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m kforge.modelnew_candidate")
    parser.add_argument("--inputs", help="folder with params/<i>.bin and sets/<k>/in<i>.bin")
    parser.add_argument("--prebuild", action="store_true",
                        help="only build ModelNew on the CPU (its load_inline builds cached), print a JSON line, exit")
    parser.add_argument("--candidate", required=True, help="the ModelNew file")
    parser.add_argument("--problem", required=True, help="the problem file (Model, get_init_inputs)")
    parser.add_argument("--rules", choices=("none", "cuda-agent"), default="none")
    parser.add_argument("--device", choices=("cuda", "cpu"), default="cuda")
    parser.add_argument("--precision", choices=tuple(PRECISIONS), help="the task's (KernelBench's --precision)")
    args = parser.parse_args(argv)
    extension_build.install()  # the candidate's load_inline / load: split, precompiled, cached (seconds, not a minute)
    if args.prebuild:
        prebuild(args)
    elif not args.inputs:
        parser.error("--inputs is required to evaluate")
    else:
        run_candidate(args)
    sys.stdout.flush()
    os._exit(0)  # tearing down a context a candidate left behind can block


if __name__ == "__main__":
    sys.exit(main())
