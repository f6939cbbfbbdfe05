"""`python -m kforge.modelnew_eval BUNDLE CANDIDATE.py [-o result.json] [--rules cuda-agent] [--device cuda|cpu]`

The third kind of candidate: a KernelBench-style `ModelNew` file, as LLM agents write them (usually with
`torch.utils.cpp_extension.load_inline`). It must have the same constructor and the same parameters as the
problem's Model (state_dict compatible). It is checked on every hidden set of the bundle in both tiers, its
inputs must come back unchanged, it is timed side by side with eager and torch.compile (kb protocol), and it is
checked again after timing. With `--rules cuda-agent`, no torch operator may run inside its forward (CUDA-Agent's
rule: the work must be the candidate's own kernels; allocation and tensor metadata stay allowed).

The code is untrusted: the service runs this inside its sandbox, like every other candidate."""
import argparse
import contextlib
import fcntl
import importlib.util
import json
import sys
from pathlib import Path

import torch
from torch.overrides import TorchFunctionMode

from kforge import timing
from kforge.bridge import TOLERANCE, as_list, set_tolerance
from kforge.bundle import read_inputs, read_outputs, read_strict_tolerance, read_task
from kforge.kbtime import compare
from kforge.problem import load_problem

# What a forward may still call under the CUDA-Agent rules: allocation, metadata and views of its own
# buffers. Everything else (torch.relu, F.softmax, a + b on tensors, matmul) is a torch operator.
ALLOWED = {"empty", "empty_like", "empty_strided", "zeros", "zeros_like", "size", "dim", "numel", "stride",
           "data_ptr", "is_contiguous", "contiguous", "view", "reshape", "flatten", "unsqueeze", "squeeze",
           "__get__", "device", "dtype", "shape", "is_cuda", "element_size", "__len__", "__getitem__",
           "storage_offset", "cuda", "to", "new_empty", "get_device", "__format__", "__repr__"}


class TorchOpInForward(Exception):
    pass


class ForbidTorchOps(TorchFunctionMode):
    """Raises on any torch function outside ALLOWED while active."""

    def __torch_function__(self, func, types, args=(), kwargs=None):
        name = getattr(func, "__name__", str(func))
        if name not in ALLOWED:
            raise TorchOpInForward(f"forward calls torch operator '{name}' (not allowed under --rules cuda-agent)")
        return func(*args, **(kwargs or {}))


class Rejected(Exception):
    """A hack of the catalogue, caught: the message names it."""


# Hack catalogue, patching timers (and checks): the candidate's code runs in this interpreter and could replace
# what the kb timer and the comparison call. Every name here must still be the object it was before the
# candidate was loaded, and the tolerances their values. (Code in the same process can always go deeper, through
# ctypes; the service runs each ModelNew in its own sandboxed process, so what it spoils is its own answer.)
def _trusted_objects() -> dict:
    import statistics
    import time
    this = sys.modules[__name__]
    return {"torch.cuda.Event": torch.cuda.Event, "torch.cuda.Event.record": torch.cuda.Event.record,
            "torch.cuda.Event.elapsed_time": torch.cuda.Event.elapsed_time,
            "torch.cuda.Event.synchronize": torch.cuda.Event.synchronize, "torch.cuda.synchronize": torch.cuda.synchronize,
            "torch.cuda.current_stream": torch.cuda.current_stream, "time.perf_counter": time.perf_counter,
            "torch.Tensor.zero_": torch.Tensor.zero_, "torch.equal": torch.equal,
            "statistics.median": statistics.median, "statistics.fmean": statistics.fmean,
            "kforge.timing.time_interleaved": timing.time_interleaved, "kforge.timing.stats": timing.stats,
            "kforge.modelnew_eval.compare": this.compare, "kforge.modelnew_eval.read_inputs": this.read_inputs,
            "kforge.modelnew_eval.read_outputs": this.read_outputs,
            "tolerances": tuple(sorted(TOLERANCE.items()))}


def check_trusted(before: dict) -> None:
    now = _trusted_objects()
    changed = [name for name, obj in now.items() if obj is not before[name] and obj != before[name]]
    if changed:
        raise Rejected(f"the candidate replaced {', '.join(changed)} (rejected: timer patching)")


def check_outputs(out: list) -> None:
    """Hack catalogue, lazy outputs: a tensor subclass can compute (or fetch) its values when read rather than
    in forward, outside the timer. Outputs must be plain tensors."""
    for i, t in enumerate(out):
        if type(t) not in (torch.Tensor, torch.nn.Parameter):  # a forward may return one of its parameters
            raise Rejected(f"output {i} is a {type(t).__module__}.{type(t).__qualname__}, not a plain torch.Tensor "
                           "(rejected: lazy or custom output)")


def escaped_stream_ms(call, events_ms: float, rounds: int = 3) -> float | None:
    """Hack catalogue, work on another stream: the kb timer's events sit on the current stream only. The
    fastest fully synchronized run must not take much longer than the events say, in each of `rounds` rounds
    (other processes only ever add time to a run). Returns that synchronized time where it escaped, else None.
    The rule of env/evaluator.cpp's escapes_timed_stream, which times kforge's own executables; a ModelNew is a
    Python callable, so it is timed here."""
    import time
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


def load_candidate(path):
    spec = importlib.util.spec_from_file_location(f"kforge_candidate_{abs(hash(str(path)))}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    if not hasattr(module, "ModelNew"):
        raise ValueError(f"{path} defines no ModelNew")
    return module.ModelNew


def evaluate_modelnew(bundle, candidate_path, rules: str = "none", device: str = "cuda") -> dict:
    task = read_task(bundle)
    graph = task["graph"]
    # Each set's own tolerance (the strict tier widened to float32's own error where that is larger), read before
    # the candidate's code runs.
    tolerances = [set_tolerance(strict) for strict in read_strict_tolerance(task)]
    problem = load_problem(task["source"])
    reference = problem.build_model().to(device)
    result = {"kind": "modelnew", "compiled": False, "strict": False, "relaxed": False, "tier": "failed", "log": "",
              "rules": rules, "reward": -1.0}
    trusted = _trusted_objects()
    try:
        model_new_cls = load_candidate(candidate_path)
        torch.manual_seed(0)
        candidate = model_new_cls(*problem.module.get_init_inputs()).to(device)
        candidate.load_state_dict(reference.state_dict(), strict=True)  # same parameters, same names
    except Exception as e:  # noqa: BLE001 -- a broken candidate is an answer, not a crash
        result["log"] = f"candidate does not build: {type(e).__name__}: {e}"
        return result
    result["compiled"] = True
    candidate.train(reference.training)

    def run(inputs):
        kept = [t.clone() for t in inputs]
        with torch.no_grad():
            if rules == "cuda-agent":
                with ForbidTorchOps():
                    out = as_list(candidate(*inputs))
            else:
                out = as_list(candidate(*inputs))
        if device == "cuda":
            torch.cuda.synchronize()
        if any(not torch.equal(a, b) for a, b in zip(inputs, kept)):
            raise Rejected("the candidate wrote into its inputs (rejected: in-place edit)")
        check_outputs(out)
        return out

    strict = True
    last = task["num_sets"] - 1
    try:
        for k in range(task["num_sets"]):
            check = compare(run(read_inputs(bundle, k, graph, device)), read_outputs(bundle, k, graph, device),
                            tolerances[k])
            strict = strict and check["strict"]
            if not check["relaxed"]:
                result["log"] += f"set {k}: outside the relaxed tier (max abs err {check['max_abs_err']})\n"
                return result
        check_trusted(trusted)
        inputs0 = read_inputs(bundle, 0, graph, device)
        if device == "cuda":
            compiled = torch.compile(reference)
            with torch.no_grad():
                kb = timing.time_interleaved({"eager": lambda: reference(*inputs0), "compile": lambda: compiled(*inputs0),
                                              "candidate": lambda: candidate(*inputs0)})
                check_trusted(trusted)
                escaped = escaped_stream_ms(lambda: candidate(*inputs0), kb["candidate"]["median_ms"])
            if escaped is not None:
                raise Rejected(f"work escaped the timed stream: events say {kb['candidate']['median_ms']:.4f} ms, the "
                               f"fastest synchronized run {escaped:.4f} ms, in each of 3 rounds")
            result["kb"] = kb
        else:
            with torch.no_grad():
                candidate(*inputs0)  # no timer on the CPU; the timed tensors are still used once, as the timer would
        # After timing: the timed tensors, holding the last set's values (results cached by address would be
        # stale), and the candidate checked again (correct while checked, wrong afterwards).
        for t, v in zip(inputs0, read_inputs(bundle, last, graph, device)):
            t.copy_(v)
        check = compare(run(inputs0), read_outputs(bundle, last, graph, device), tolerances[last])
        if not check["relaxed"]:
            result["log"] += ("wrong after timing (the timed tensors holding set " + str(last) + "'s inputs: results "
                              "must be right once nobody is checking, and follow their inputs)\n")
            return result
        strict = strict and check["strict"]
        check_trusted(trusted)
    except (TorchOpInForward, Rejected) as e:
        result["log"] += str(e) + "\n"
        return result
    except Exception as e:  # noqa: BLE001
        result["log"] += f"candidate failed: {type(e).__name__}: {e}\n"
        return result
    result.update(relaxed=True, strict=strict, tier="strict" if strict else "relaxed")
    if "kb" in result:  # the environment's own reward rule (env/reward.h), not a second copy of it
        import kforge._core as core
        kb = result["kb"]
        result.update(core.reward(True, kb["candidate"]["median_ms"], kb["eager"]["median_ms"],
                                  kb["compile"]["median_ms"], 0.0))
    return result


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m kforge.modelnew_eval")
    parser.add_argument("bundle")
    parser.add_argument("candidate", help="a Python file defining ModelNew")
    parser.add_argument("-o", "--out", default=None)
    parser.add_argument("--rules", choices=("none", "cuda-agent"), default="none")
    parser.add_argument("--device", choices=("cuda", "cpu"), default="cuda")
    parser.add_argument("--gpu-lock", default=None, help="take turns on the GPU with other evaluations (flock on this file)")
    args = parser.parse_args(argv)
    with open(args.gpu_lock) if args.gpu_lock else contextlib.nullcontext() as lock:
        if lock:
            fcntl.flock(lock, fcntl.LOCK_EX)  # released when the file closes
        result = evaluate_modelnew(args.bundle, args.candidate, args.rules, args.device)
    text = json.dumps(result, indent=1)
    if args.out:
        Path(args.out).write_text(text)
    else:
        print(text)
    return 0 if result["relaxed"] else 1


if __name__ == "__main__":
    sys.exit(main())
