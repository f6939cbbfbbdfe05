"""`python -m kforge.modelnew_eval BUNDLE CANDIDATE.py [-o result.json] [--rules cuda-agent] [--device cuda|cpu]`

The third kind of candidate: a KernelBench-style `ModelNew` file, as LLM agents write them (usually with
`torch.utils.cpp_extension.load_inline`). It must have the same constructor and the same parameters as the
problem's Model (state_dict compatible). A front end of `kforge evaluate --modelnew`: the candidate runs in a
sandboxed process of its own (kforge.modelnew_candidate) that never sees a reference; the trusted judge compares
every output set, stored and freshly drawn, times nothing itself and pays from the kb-protocol time it bounded by
its own clock (env/judge.h). With `--rules cuda-agent`, no torch operator may run inside its forward (CUDA-Agent's
rule: the work must be the candidate's own kernels; allocation and tensor metadata stay allowed). On the CPU
(`--device cpu`) it is checked only, never timed."""
import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from kforge._launcher import installed_binary


def kforge_binary() -> str:
    """$KFORGE_BIN, else the command installed inside this package, else `kforge` on PATH, else the repository's
    build/kforge."""
    found = os.environ.get("KFORGE_BIN") or installed_binary() or shutil.which("kforge")
    return str(found or Path(__file__).resolve().parents[2] / "build" / "kforge")


def evaluate_modelnew(bundle, candidate_path, rules: str = "none", device: str = "cuda", drawn=None,
                      sandbox_user: str | None = None, timeout_s: float = 600) -> dict:
    """The result JSON of `kforge evaluate BUNDLE --modelnew CANDIDATE`; `drawn`: sets drawn before for a batch
    (`kforge draw-sets`), else fresh ones are drawn for this call. Raises RuntimeError where it was not evaluated
    (the environment failed, not the candidate)."""
    options = ["--rules", rules, "--device", device] + (["--drawn", str(drawn)] if drawn is not None else [])
    return evaluate_candidate(bundle, "--modelnew", candidate_path, options, sandbox_user, timeout_s)


def evaluate_candidate(bundle, kind: str, candidate_path, options: list[str] = (), sandbox_user: str | None = None,
                       timeout_s: float = 600) -> dict:
    """The result JSON of `kforge evaluate BUNDLE KIND CANDIDATE OPTIONS...` (KIND: --modelnew, --cuda, --plan, --so);
    RuntimeError where it was not evaluated (the environment failed, not the candidate)."""
    with tempfile.TemporaryDirectory(prefix="kforge-evaluate-") as tmp:
        out = Path(tmp) / "result.json"
        cmd = [kforge_binary(), "evaluate", str(bundle), kind, str(candidate_path), *options, "-o", str(out),
               "--timeout", str(int(timeout_s))]
        if sandbox_user:
            cmd += ["--sandbox-user", sandbox_user]
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout_s + 120)
        if not out.exists():
            raise RuntimeError(f"kforge evaluate did not evaluate {candidate_path} (exit {r.returncode}):\n"
                               f"{r.stderr[-3000:]}")
        return json.loads(out.read_text())


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m kforge.modelnew_eval")
    parser.add_argument("bundle")
    parser.add_argument("candidate", help="a Python file defining ModelNew")
    parser.add_argument("-o", "--out", default=None)
    parser.add_argument("--rules", choices=("none", "cuda-agent"), default="none")
    parser.add_argument("--device", choices=("cuda", "cpu"), default="cuda")
    parser.add_argument("--drawn", default=None, help="sets drawn before by `kforge draw-sets`")
    args = parser.parse_args(argv)
    try:
        result = evaluate_modelnew(args.bundle, args.candidate, args.rules, args.device, args.drawn)
    except RuntimeError as e:
        print(f"kforge.modelnew_eval: {e}", file=sys.stderr)
        return 2
    text = json.dumps(result, indent=1)
    if args.out:
        Path(args.out).write_text(text)
    else:
        print(text)
    return 0 if result["relaxed"] else 1


if __name__ == "__main__":
    sys.exit(main())
