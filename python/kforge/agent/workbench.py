"""The agent's tools, on one task: read the problem, write a candidate (a KernelBench ModelNew or a raw CUDA file
exporting kforge's ABI), compile it, verify it, profile it. Verification and timing are `kforge evaluate`'s: the
candidate runs sandboxed, the trusted judge compares it on every hidden set, fresh draws and sets beyond
get_inputs' distribution, and the reward is the environment's. A tool call never raises: a bad argument, a
compiler error or a candidate that crashes comes back to the model as the tool's result."""
import ast
import json
import re
import subprocess
from pathlib import Path

from kforge import roofline
from kforge.bundle import read_task
from kforge.footprint import set_bytes, spec_bytes
from kforge.modelnew_eval import evaluate_candidate, evaluate_modelnew, kforge_binary

KINDS = {"modelnew": ".py", "cuda": ".cu"}
# What goes back to the model from a compiler or a judge's log: enough to act on, not a wall of text.
MAX_LOG_CHARS = 2000

RULES = {
    "none": "Any PyTorch operator may appear in ModelNew.forward; custom kernels (torch.utils.cpp_extension.load_inline) "
            "are how it gets faster.",
    "cuda-agent": "CUDA-Agent's rules: no torch operator inside ModelNew.forward (tensors may be allocated); the "
                  "work is done by your own kernels, cuBLAS or cuDNN.",
}

TOOLS = [
    {"type": "function", "function": {
        "name": "read_problem", "description": "The problem: the reference Model's source, its inputs and outputs, the "
        "C ABI a raw CUDA candidate exports, the rules, and the times to beat where known.",
        "parameters": {"type": "object", "properties": {}}}},
    {"type": "function", "function": {
        "name": "write_candidate", "description": "Store a candidate: a Python file defining ModelNew (same constructor "
        "and parameters as Model), or CUDA C++ exporting kforge_forward. Returns its id.",
        "parameters": {"type": "object", "required": ["kind", "source"], "properties": {
            "kind": {"type": "string", "enum": list(KINDS)},
            "source": {"type": "string", "description": "the whole file"}}}}},
    {"type": "function", "function": {
        "name": "compile", "description": "Compile a candidate (default: the last written); compiler errors come back.",
        "parameters": {"type": "object", "properties": {"candidate": {"type": "integer"}}}}},
    {"type": "function", "function": {
        "name": "verify", "description": "Check a candidate against the reference on every hidden input set: its tier "
        "(strict 1e-4, relaxed 1e-2) and the first mismatching elements.",
        "parameters": {"type": "object", "properties": {"candidate": {"type": "integer"}}}}},
    {"type": "function", "function": {
        "name": "profile", "description": "A verified candidate's time on the GPU beside eager PyTorch and "
        "torch.compile, its speed-up and reward, its share of the memory floor (the task's bytes moved once at the "
        "measured copy bandwidth), and kforge's own best time where known.",
        "parameters": {"type": "object", "properties": {"candidate": {"type": "integer"}}}}},
]


def trimmed(text: str) -> str:
    return text if len(text) <= MAX_LOG_CHARS else text[:MAX_LOG_CHARS] + f"\n... ({len(text) - MAX_LOG_CHARS} more characters)"


class ToolError(Exception):
    """A tool call the model got wrong (unknown tool, bad arguments, no such candidate): its message goes back."""


class Workbench:
    def __init__(self, bundle, workdir, device: str = "cuda", rules: str = "none", sandbox_user: str | None = None,
                 timeout_s: float = 300):
        if rules not in RULES:
            raise ValueError(f"unknown rules '{rules}' ({', '.join(RULES)})")
        self.bundle, self.workdir = Path(bundle), Path(workdir)
        self.device, self.rules, self.sandbox_user, self.timeout_s = device, rules, sandbox_user, timeout_s
        self.task = read_task(self.bundle)
        self.candidates: list[dict] = []  # {"id", "kind", "path", "compiled", "result"}
        self.workdir.mkdir(parents=True, exist_ok=True)

    def call(self, name: str, arguments) -> dict:
        """The tool's result as a JSON object; {"error": ...} where the call itself was wrong."""
        try:
            args = json.loads(arguments or "{}") if isinstance(arguments, str) else dict(arguments or {})
            if not isinstance(args, dict):
                raise ToolError("the arguments must be a JSON object")
            tool = {"read_problem": self.read_problem, "write_candidate": self.write_candidate,
                    "compile": self.compile, "verify": self.verify, "profile": self.profile}.get(name)
            if tool is None:
                raise ToolError(f"no tool named '{name}' (there are {', '.join(t['function']['name'] for t in TOOLS)})")
            return tool(**args)
        except json.JSONDecodeError as e:
            return {"error": f"the arguments are not JSON: {e}"}
        except TypeError as e:
            return {"error": f"bad arguments for {name}: {e}"}
        except ToolError as e:
            return {"error": str(e)}
        except (subprocess.TimeoutExpired, OSError, KeyError, ValueError) as e:  # the tool itself failed
            return {"error": f"the {name} tool failed: {type(e).__name__}: {trimmed(str(e))}"}

    # The tools.
    def read_problem(self) -> dict:
        graph = self.task["graph"]
        abi = subprocess.run([kforge_binary(), "abi", str(self.bundle)], capture_output=True, text=True, timeout=60)
        known = {}
        base = self.task.get("baselines") or {}
        for which in ("eager", "compile"):
            if which in base:
                known[f"{which}_ms"] = base[which]["median_ms"]
        kb = self.bundle / "kb.json"
        if kb.exists():
            known["kforge_best_ms"] = json.loads(kb.read_text())["kforge"]["median_ms"]
        return {"source": Path(self.bundle / "problem.py").read_text() if (self.bundle / "problem.py").exists()
                else Path(self.task["source"]).read_text(),
                "inputs": graph["inputs"], "params": [p["name"] for p in graph["params"]],
                "raw_cuda_abi": abi.stdout, "rules": RULES[self.rules], "times_to_beat": known,
                "device": self.device}

    def write_candidate(self, kind: str, source: str) -> dict:
        if kind not in KINDS:
            raise ToolError(f"kind must be one of {', '.join(KINDS)}, not '{kind}'")
        if not isinstance(source, str) or not source.strip():
            raise ToolError("source must be the whole file, as a non-empty string")
        cid = len(self.candidates)
        path = self.workdir / f"candidate_{cid}{KINDS[kind]}"
        path.write_text(source)
        self.candidates.append({"id": cid, "kind": kind, "path": path, "compiled": None, "result": None})
        return {"candidate": cid, "kind": kind, "bytes": len(source)}

    def compile(self, candidate: int | None = None) -> dict:
        c = self._candidate(candidate)
        ok, log = compile_python(c["path"]) if c["kind"] == "modelnew" else compile_cuda(c["path"], self.sandbox_user)
        c["compiled"] = ok
        return {"candidate": c["id"], "compiled": ok, "errors": trimmed(log) if not ok else ""}

    def verify(self, candidate: int | None = None) -> dict:
        c = self._candidate(candidate)
        r = self._evaluate(c)
        if "error" in r:
            return {"candidate": c["id"], **r}
        return {"candidate": c["id"], "compiled": r.get("compiled", False), "tier": r.get("tier", "failed"),
                "strict": r.get("strict", False), "relaxed": r.get("relaxed", False),
                "distribution": (r.get("distribution") or {}).get("verdict", ""), "log": trimmed(r.get("log", ""))}

    def profile(self, candidate: int | None = None) -> dict:
        c = self._candidate(candidate)
        r = self._evaluate(c)
        if "error" in r:
            return {"candidate": c["id"], **r}
        if not r.get("relaxed"):
            return {"candidate": c["id"], "error": "the candidate is not correct: verify it first", "tier": r.get("tier")}
        if self.device != "cuda":
            return {"candidate": c["id"], "error": "profiling needs a CUDA GPU; this workbench checks on the CPU only"}
        ms = r.get("native", {}).get("median_ms")
        out = {"candidate": c["id"], "ms": ms, "protocol": r.get("protocol", "native"),
               "speedup_eager": r.get("speedup_eager"), "speedup_compile": r.get("speedup_compile"),
               "reward": r.get("reward"), **memory_roofline(self.task["graph"], r.get("copy_gbs") or 0, ms)}
        kb = self.bundle / "kb.json"
        if kb.exists():
            out["kforge_best_ms"] = json.loads(kb.read_text())["kforge"]["median_ms"]
        return out

    # Bookkeeping.
    def best(self) -> dict | None:
        """The verified candidate with the highest reward (strict before relaxed at equal reward)."""
        judged = [c for c in self.candidates if c["result"] and c["result"].get("relaxed")]
        return max(judged, key=lambda c: (c["result"].get("reward", 0.0), c["result"].get("strict", False)), default=None)

    def _candidate(self, candidate) -> dict:
        if not self.candidates:
            raise ToolError("no candidate yet: write_candidate first")
        if candidate is None:
            return self.candidates[-1]
        if not isinstance(candidate, int) or not 0 <= candidate < len(self.candidates):
            raise ToolError(f"no candidate {candidate!r} (ids 0 to {len(self.candidates) - 1})")
        return self.candidates[candidate]

    def _evaluate(self, c: dict) -> dict:
        """`kforge evaluate`'s result for candidate `c`, once (verify and profile share it)."""
        if c["result"] is not None:
            return c["result"]
        try:
            if c["kind"] == "modelnew":
                c["result"] = evaluate_modelnew(self.bundle, c["path"], self.rules, self.device, None,
                                                self.sandbox_user, self.timeout_s)
            elif self.device != "cuda":
                return {"error": "raw CUDA candidates run on a CUDA GPU; this workbench checks on the CPU only"}
            else:
                c["result"] = evaluate_candidate(self.bundle, "--cuda", c["path"], [], self.sandbox_user, self.timeout_s)
        except RuntimeError as e:  # the environment failed, not the candidate: say so, do not score it
            return {"error": f"the environment could not evaluate it: {trimmed(str(e))}"}
        return c["result"]


def memory_roofline(graph: dict, copy_gbs: float, ms) -> dict:
    """How near a time is to the memory floor: the task's inputs, params and outputs moved once at the copy
    bandwidth measured in the same evaluation. The floor of arithmetic (a product's FLOPs) is not counted: a
    product-bound task reads low here however good its kernel."""
    bytes_min = set_bytes(graph) + spec_bytes(graph["params"])
    if copy_gbs <= 0 or not ms:
        return {"bytes_min": bytes_min}
    floor_ms = roofline.floor(bytes_min, 0.0, copy_gbs, 0.0)
    return {"bytes_min": bytes_min, "memory_floor_ms": floor_ms, "pct_of_memory_floor": 100 * floor_ms / ms}


def compile_python(path: Path) -> tuple[bool, str]:
    """A ModelNew file parses and defines ModelNew (its load_inline kernels are built when it is verified)."""
    try:
        tree = ast.parse(path.read_text(), str(path))
    except SyntaxError as e:
        return False, f"{path.name}:{e.lineno}: syntax error: {e.msg}"
    if not any(isinstance(n, ast.ClassDef) and n.name == "ModelNew" for n in tree.body):
        return False, f"{path.name} defines no class ModelNew at its top level"
    return True, ""


def compile_cuda(path: Path, sandbox_user: str | None = None) -> tuple[bool, str]:
    """`kforge build-cuda`: nvcc in the sandbox the service builds candidates in (minimal root, the sandbox user), for
    this GPU's architecture (sm_90 where there is none): the model's source cannot include a file of this machine's
    tasks or of the repository and read it back in the errors."""
    cmd = [kforge_binary(), "build-cuda", str(path)]
    try:
        import torch
        if torch.cuda.is_available():
            major, minor = torch.cuda.get_device_capability()
            cmd += ["--arch", f"sm_{major}{minor}"]
    except ImportError:
        pass
    if sandbox_user:
        cmd += ["--sandbox-user", sandbox_user]
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=400)
    try:
        built = json.loads(r.stdout.strip().splitlines()[-1])
    except (ValueError, IndexError):
        return False, f"kforge build-cuda failed (exit {r.returncode}): {r.stderr[-1500:]}"
    log = re.sub(r"/tmp/kforge-candidate-\w+/raw-\w+/candidate\.cu", path.name, built["log"])
    return bool(built["ok"]), log
