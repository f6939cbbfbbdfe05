"""`kforge agent PROBLEM.py --model NAME --base-url URL [--api-key-env VAR] [--turns N] [--budget-s S]`
(python -m kforge.agent): imports the problem (or takes a bundle), runs the agent loop against the chat server,
stores the trajectory in --db, prints one line with its status and reward; `--export OUT.jsonl` writes the stored
trajectories as training data instead."""
import argparse
import os
import sys
import time
from pathlib import Path

from kforge.agent.chat import ChatClient, ChatError
from kforge.agent.loop import run_agent
from kforge.agent.trajectory import TrajectoryStore
from kforge.agent.workbench import RULES, Workbench
from kforge.errors import ImportProblemError


def bundle_of(problem: Path, workdir: Path, device: str) -> Path:
    if problem.is_dir():
        return problem
    from kforge.bridge import import_problem
    bundle = workdir / problem.stem
    if not (bundle / "task.json").exists():
        import_problem(problem, bundle, 5, device, with_baselines=device == "cuda")
    return bundle


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="kforge agent", description=__doc__.splitlines()[0])
    ap.add_argument("problem", nargs="?", help="a KernelBench-format problem file, or a bundle from `kforge import`")
    ap.add_argument("--model", help="the model name the server serves")
    ap.add_argument("--base-url", help="the OpenAI-compatible API's base URL (e.g. http://localhost:8000/v1)")
    ap.add_argument("--api-key-env", default=None, help="the environment variable holding the API key (never stored)")
    ap.add_argument("--turns", type=int, default=12)
    ap.add_argument("--budget-s", type=float, default=1800)
    ap.add_argument("--rules", choices=tuple(RULES), default="none")
    ap.add_argument("--device", choices=("cuda", "cpu"), default=None, help="default: cuda where there is one")
    ap.add_argument("--db", default="kforge.db", help="the measurement database the trajectory goes into")
    ap.add_argument("--workdir", default="kforge_agent", help="where the bundle and the candidates are written")
    ap.add_argument("--sandbox-user", default=None, help="user the candidates run as when kforge runs as root")
    ap.add_argument("--timeout", type=float, default=300, help="seconds a candidate's evaluation may take")
    ap.add_argument("--export", default=None, metavar="OUT.jsonl", help="write the stored trajectories and exit")
    args = ap.parse_args(argv)
    store = TrajectoryStore(args.db)
    if args.export:
        n = store.export_jsonl(args.export)
        print(f"kforge agent: {n} trajectories written to {args.export}")
        return 0
    if not (args.problem and args.model and args.base_url):
        ap.error("PROBLEM, --model and --base-url are required (or --export)")
    device = args.device
    if device is None:
        import torch
        device = "cuda" if torch.cuda.is_available() else "cpu"
    try:
        client = ChatClient(args.base_url, args.model, args.api_key_env)
        workdir = Path(args.workdir)
        bundle = bundle_of(Path(args.problem), workdir, device)
        run_dir = workdir / f"{bundle.name}-{time.strftime('%Y%m%d-%H%M%S')}-{os.getpid()}"  # this run's candidates
        bench = Workbench(bundle, run_dir, device, args.rules, args.sandbox_user, args.timeout)
    except (ChatError, ImportProblemError, ValueError) as e:
        print(f"kforge agent: error: {e}", file=sys.stderr)
        return 2
    outcome = run_agent(bundle.name, client, bench, store, args.turns, args.budget_s, args.base_url)
    print(outcome.line())
    return 0 if outcome.best_candidate is not None else 1


if __name__ == "__main__":
    sys.exit(main())
