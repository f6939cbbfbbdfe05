"""`kforge train --tasks DIR [--checkpoints DIR] [--db DB] [--samples K] [--batch B] [--seconds S] [--log L.jsonl]`
or, without a GPU, `kforge train --from-db DB [--checkpoints DIR] [--top 4] [--epochs 50]`

The on-policy loop of the learned policy (src/search/learned_policy.h) on the GPU: for each batch of B training
tasks (problem files from `kforge synth`), host every task on the GPU (hidden sets, references, eager baseline), let
the C++ trainer sample K plans from the policy, measure them in the environment and record every measurement in
the database; then one PPO update and a checkpoint. Progress, rewards and losses go to a JSONL log, one line per
update. `--from-db` is the GPU-free warm start instead: behaviour cloning of the `--top` fastest correct plans of
every task the database recorded, continuing the newest checkpoint. Resumable: the checkpoint remembers how many tasks it has seen, and a rerun continues from the next one.
Tasks are visited in a fixed order, cycling when time is left after the last. Problems under bench/ are refused:
the benchmark is for evaluation only.
"""
import argparse
import json
import sys
import time
from pathlib import Path

import torch

from kforge.errors import ImportProblemError
from kforge.session import host_task

REPO = Path(__file__).resolve().parents[2]


def training_tasks(folder: Path) -> list[Path]:
    tasks = sorted(p for p in Path(folder).glob("*.py") if p.name != "__init__.py")
    bench = (REPO / "bench").resolve()
    for t in tasks:
        if bench in t.resolve().parents:
            raise SystemExit(f"kforge train: {t} is a bench/ problem; train on `kforge synth` tasks, never on the benchmark")
    if not tasks:
        raise SystemExit(f"kforge train: no problem files in {folder} (make some with `kforge synth`)")
    return tasks


def log_line(path: Path | None, record: dict) -> None:
    print(json.dumps(record), flush=True)
    if path:
        path.parent.mkdir(parents=True, exist_ok=True)
        with path.open("a") as f:
            f.write(json.dumps(record) + "\n")


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="kforge train", description=__doc__.split("\n\n")[1].split(".")[0])
    p.add_argument("--tasks", type=Path, help="folder of training problems (kforge synth --out)")
    p.add_argument("--from-db", default=None, help="GPU-free: behaviour cloning of this database's fastest plans")
    p.add_argument("--top", type=int, default=4, help="with --from-db: plans per task to imitate")
    p.add_argument("--epochs", type=int, default=50, help="with --from-db: passes over them")
    p.add_argument("--checkpoints", default="kforge_policy", help="checkpoint folder (resumes from its newest)")
    p.add_argument("--db", default="kforge.db", help="measurement database: every sampled plan is recorded")
    p.add_argument("--samples", type=int, default=16, help="plans sampled per task (K)")
    p.add_argument("--batch", type=int, default=4, help="tasks per PPO update")
    p.add_argument("--seconds", type=float, default=300, help="stop starting new batches after this long")
    p.add_argument("--max-tasks", type=int, default=0, help="stop after this many tasks in total (0: no limit)")
    p.add_argument("--sets", type=int, default=5, help="hidden input sets per task")
    p.add_argument("--compile-baseline", action="store_true",
                   help="also time torch.compile per task for the reward (seconds of inductor per task)")
    p.add_argument("--compile-threads", type=int, default=16, help="parallel NVRTC compiles")
    p.add_argument("--learning-rate", type=float, default=3e-3)
    p.add_argument("--entropy-bonus", type=float, default=0.01)
    p.add_argument("--seed", type=int, default=1, help="initialisation and sampling seed of a fresh policy")
    p.add_argument("--log", type=Path, default=None, help="JSONL log (default CHECKPOINTS/train_log.jsonl)")
    args = p.parse_args(argv)
    import kforge._core as core

    if args.from_db:
        try:
            stats = json.loads(core.warm_start_from_db(args.from_db, args.checkpoints, args.top, args.epochs, args.seed))
        except ValueError as e:  # kforge's UserError: no usable measurement, a foreign checkpoint, no libtorch
            print(f"kforge train: error: {e}", file=sys.stderr)
            return 2
        print(f"behaviour cloning on {stats['episodes']} plans of {stats['tasks']} tasks ({stats['skipped']} skipped): "
              f"loss {stats['policy_loss']:.3f}, critic loss {stats['value_loss']:.3f} -> {stats['checkpoint']}")
        return 0
    if args.tasks is None:
        p.error("--tasks is required (or --from-db for the GPU-free warm start)")
    if not torch.cuda.is_available():
        print("kforge train: error: on-policy training measures plans on a CUDA GPU (none is visible); "
              "without one, `kforge train --from-db DB` learns from recorded measurements", file=sys.stderr)
        return 2
    tasks = training_tasks(args.tasks)
    log = args.log or Path(args.checkpoints) / "train_log.jsonl"
    trainer = core.Trainer(args.checkpoints, args.samples, args.compile_threads, args.seed, args.learning_rate,
                           args.entropy_bonus, f"torch {torch.__version__}")
    done = json.loads(trainer.progress()).get("tasks_done", 0)
    print(f"kforge train: {len(tasks)} tasks, {'resuming at task ' + str(done) if trainer.resumed() else 'fresh policy'}, "
          f"K={args.samples}, batch {args.batch}, {args.seconds:.0f} s", file=sys.stderr, flush=True)
    t0 = time.time()
    started = done
    while time.time() - t0 < args.seconds and not (args.max_tasks and done - started >= args.max_tasks):
        batch = []
        for _ in range(args.batch):
            path = tasks[done % len(tasks)]
            t_task, hosted = time.time(), None
            try:
                hosted = host_task(path, args.sets, args.compile_baseline)
                sets, refs, params = hosted.pointers()
                summary = json.loads(trainer.collect(json.dumps(hosted.graph), path.stem, sets, refs, params, args.db,
                                                     hosted.baseline_ms("eager"), hosted.baseline_ms("compile"),
                                                     strict_tolerance=hosted.resident_tolerance()))
            except (ImportProblemError, RuntimeError, ValueError) as e:  # one bad task must not end training
                summary = {"task": path.stem, "error": f"{type(e).__name__}: {e}"[:500]}
            summary["seconds"] = round(time.time() - t_task, 1)
            batch.append(summary)
            done += 1
            del hosted
            torch.cuda.empty_cache()
        if not any("error" not in b for b in batch):
            continue
        stats = json.loads(trainer.update(done))
        rewards = [b["mean_reward"] for b in batch if "mean_reward" in b]
        log_line(log, {"step": stats["step"], "tasks_done": stats["tasks_done"], "elapsed_s": round(time.time() - t0, 1),
                       "mean_reward": sum(rewards) / len(rewards), "policy_loss": stats["policy_loss"],
                       "value_loss": stats["value_loss"], "entropy": stats["entropy"], "approx_kl": stats["approx_kl"],
                       "checkpoint": stats["checkpoint"], "tasks": batch})
    return 0


if __name__ == "__main__":
    sys.exit(main())
