"""A small client of `kforge serve` for the device scripts (scripts/service_bench.sh, scripts/fault_injection.sh):
their common arguments, importing the task, starting the service, registering the task, submitting jobs and
waiting for them. Standard library and the repository's kforge package (its requests: kforge.service_http)."""
import argparse
import socket
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "python"))  # the device scripts run without PYTHONPATH
from kforge.service_http import http_json  # noqa: E402


def common_arguments(description: str) -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(description=description)
    ap.add_argument("--kforge", required=True)
    ap.add_argument("--work", required=True, type=Path, help="folder for the bundle and the service (tmpfs)")
    ap.add_argument("--out", required=True, type=Path, help="where the JSON and markdown summaries go")
    ap.add_argument("--sandbox-user", default="nobody")
    ap.add_argument("--import-args", default="", help="extra `kforge import` flags (GPU-free smoke run: '--device cpu --no-baselines')")
    return ap


def import_bundle(args, problem: Path, bundle: Path) -> float:
    """`kforge import`s the problem; returns the seconds it took. Raises with kforge's output when it fails."""
    t0 = time.time()
    r = subprocess.run([args.kforge, "import", str(problem), "-o", str(bundle), *args.import_args.split()],
                       capture_output=True, text=True)
    if r.returncode != 0:
        raise RuntimeError(f"kforge import {problem} failed:\n{r.stdout}{r.stderr}")
    return time.time() - t0


def import_written(args, name: str, source: str) -> Path:
    """Writes `source` as WORK/NAME.py, imports it into WORK/bundles/NAME (saying how long it took) and returns the
    bundle."""
    args.work.mkdir(parents=True, exist_ok=True)
    problem, bundle = args.work / f"{name}.py", args.work / "bundles" / name
    problem.write_text(source)
    print(f"imported in {import_bundle(args, problem, bundle):.0f} s", flush=True)
    return bundle


def slot_users(args) -> list:
    """`kforge serve`'s flag that runs each evaluation slot's untrusted jobs as a user id of its own, where the
    sandbox drops to nobody (an unused id reads what nobody reads): the process limit counts per user, and slots
    sharing one user fail each other's forks once a ModelNew's compilers run in several at once."""
    return ["--sandbox-uid-base", "200000"] if args.sandbox_user == "nobody" else []


def adversarial_service(args, *extra: str) -> "Service":
    """`kforge serve` for the suites that throw faulty and hostile candidates at it, on a machine of its own: one
    GPU, three slots, untrusted kinds without a delegated cgroup (--unsafe-shared), and, where the sandbox drops to
    nobody, each slot's untrusted jobs as a user id of their own (an unused id reads what nobody reads)."""
    return Service(args.kforge, args.work / "service", args.out / "serve.log", "--workers", "1", "--slots-per-gpu", "3",
                   "--memory-limit", "16384", "--compile-workers", "8", "--sandbox-user", args.sandbox_user,
                   "--unsafe-shared", *slot_users(args), *extra)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Service:
    def __init__(self, kforge: str, workdir: Path, log: Path, *args: str):
        self.port = free_port()
        self.log = open(log, "w")
        self.proc = subprocess.Popen([kforge, "serve", "--port", str(self.port), "--dir", str(workdir), *args],
                                     stdout=self.log, stderr=subprocess.STDOUT, text=True)
        for _ in range(600):
            if self.proc.poll() is not None:
                raise RuntimeError(f"kforge serve exited ({self.proc.returncode}): see {log}")
            try:
                if self.get("/health")[0] == 200:
                    return
            except OSError:
                time.sleep(0.1)
        raise RuntimeError(f"kforge serve did not answer: see {log}")

    token: str | None = None  # sent as `Authorization: Bearer` when set (kforge serve --tokens)

    def request(self, method: str, path: str, body=None, raw: bytes | None = None, token: str | None = None):
        # POST /reward holds its connection until its jobs are judged: minutes where a first job builds its extension.
        timeout = 900 if path.startswith("/reward") else 60
        return http_json(method, f"http://127.0.0.1:{self.port}{path}", body, timeout=timeout,
                         token=token or self.token or "", raw=raw)

    def get(self, path: str):
        return self.request("GET", path)

    def post(self, path: str, body=None, raw: bytes | None = None):
        return self.request("POST", path, body, raw)

    def add_task(self, bundle: Path) -> int:
        status, body = self.post("/tasks", {"bundle": str(bundle)})
        if status != 201:
            raise RuntimeError(f"registering {bundle}: {status} {body}")
        return body["task_id"]

    def submit(self, task: int, kind: str, payload: dict) -> int:
        """Submits, waiting while the queue is full (429)."""
        while True:
            status, body = self.post("/jobs", {"task_id": task, "kind": kind, kind: payload})
            if status == 202:
                return body["job_id"]
            if status != 429:
                raise RuntimeError(f"submitting a {kind} job: {status} {body}")
            time.sleep(0.05)

    def wait(self, ids, timeout_s: float) -> dict:
        """Polls until every job is done or failed (or the time is up); returns {id: job}."""
        pending, done = set(ids), {}
        deadline = time.time() + timeout_s
        while pending and time.time() < deadline:
            for job in self.get("/jobs?limit=1000")[1]["jobs"]:
                if job["id"] in pending and job["status"] in ("done", "failed"):
                    done[job["id"]] = job
                    pending.discard(job["id"])
            if pending:
                # Older jobs can fall out of the recent 1000: ask for those one by one.
                for i in sorted(pending)[:20]:
                    job = self.get(f"/jobs/{i}")[1]
                    if job.get("status") in ("done", "failed"):
                        done[i] = job
                        pending.discard(i)
                time.sleep(0.2)
        for i in pending:
            done[i] = self.get(f"/jobs/{i}")[1]
        return done

    def kill(self):
        """As if the machine lost the service: SIGKILL, no shutdown."""
        self.proc.kill()
        self.proc.wait()
        self.log.close()

    def stop(self):
        self.proc.terminate()
        try:
            self.proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            self.proc.kill()
        self.log.close()
