"""Evaluation at scale on Ray: one `kforge serve` per GPU of every node (a Ray actor holding its process, Ray
choosing the node and the GPU), and one endpoint in front of them all. A job goes to the live slot with the fewest
jobs outstanding; a task is registered on a slot when its first job goes there; a job whose slot dies (its node, its
process) is submitted again to another, so that a caller sees at most a longer wait, never a lost job.

    python -m kforge.pool --slots 8 --port 8080 [-- kforge serve arguments]

speaks the service's own API (POST /tasks with a bundle path every node can read, or the problem's text; POST /jobs;
GET /jobs/ID; GET /health). Without GPUs (`--cpu`) each slot takes a CPU instead: the path tests run on."""
import argparse
import ctypes
import http.server
import json
import secrets
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import ray

from kforge.modelnew_eval import kforge_binary
from kforge.service_http import http_json

DONE = ("done", "failed", "cancelled")


@ray.remote
class ServiceSlot:
    """One `kforge serve` on this actor's node, on the GPU Ray gave it (CUDA_VISIBLE_DEVICES, set by Ray)."""

    def __init__(self, kforge: str, args: list[str], token: str):
        with socket.socket() as s:
            s.bind(("", 0))
            self.port = s.getsockname()[1]
        self.dir = Path(tempfile.mkdtemp(prefix="kforge-slot-"))
        self.dir.chmod(0o755)  # the sandbox user reads the jobs' folders
        (self.dir / "tokens").write_text(f"pool {token}\n")  # beyond loopback the service asks for a token
        self.log = open(self.dir / "serve.log", "w")
        self.host = ray.util.get_node_ip_address()
        # The service dies with this actor (PR_SET_PDEATHSIG): a slot Ray lost must not go on taking jobs.
        self.proc = subprocess.Popen([kforge, "serve", "--port", str(self.port), "--host", self.host, "--tokens",
                                      str(self.dir / "tokens"), "--dir", str(self.dir / "service"), *args],
                                     stdout=self.log, stderr=subprocess.STDOUT,
                                     preexec_fn=lambda: ctypes.CDLL("libc.so.6").prctl(1, signal.SIGKILL))
        for _ in range(600):
            if self.proc.poll() is not None:
                raise RuntimeError(f"kforge serve exited ({self.proc.returncode}); see {self.dir / 'serve.log'}")
            try:
                if http_json("GET", f"{self.url()}/health", timeout=5)[0] == 200:
                    return
            except OSError:
                time.sleep(0.1)
        raise RuntimeError("kforge serve did not answer")

    def url(self) -> str:
        return f"http://{self.host}:{self.port}"


class Pool:
    def __init__(self, slots: int, kforge: str, serve_args: list[str], gpus: bool = True,
                 slot_args: list[list[str]] | None = None):
        """`slot_args`: each slot's own `kforge serve` arguments (a machine whose slots differ), else `serve_args`."""
        options = {"num_gpus": 1} if gpus else {"num_cpus": 1}
        self.token = secrets.token_hex(16)
        self.actors = [ServiceSlot.options(**options).remote(kforge, slot_args[i] if slot_args else serve_args, self.token)
                       for i in range(slots)]
        self.urls = ray.get([a.url.remote() for a in self.actors])
        self.alive = [True] * slots
        self.tasks: dict[int, dict] = {}           # pool task -> {"spec": POST /tasks body, "on": {slot: task id}}
        self.jobs: dict[int, dict] = {}            # pool job -> {"task", "body", "slot", "id", "tries"}
        self.lock = threading.Lock()

    # The service's API, in front of the slots.
    def add_task(self, spec: dict) -> int:
        slot = self._live()[0]
        status, body = self._call("POST", slot, "/tasks", spec)  # checks the spec once
        if status != 201:
            raise ValueError(body.get("error", f"HTTP {status}"))
        with self.lock:
            tid = len(self.tasks) + 1
            self.tasks[tid] = {"spec": spec, "on": {slot: body["task_id"]}, "name": body.get("name")}
        return tid

    def submit(self, task: int, body: dict) -> int:
        if task not in self.tasks:
            raise KeyError(f"no task {task}")
        with self.lock:
            jid = len(self.jobs) + 1
            self.jobs[jid] = {"task": task, "body": body, "slot": None, "id": None, "tries": 0}  # + "answer" once done
        self._place(jid)
        return jid

    def job(self, jid: int) -> dict:
        j = self.jobs[jid]
        if "answer" in j:  # answered once: its slot may be gone since
            return j["answer"]
        for _ in range(len(self.urls) + 1):
            try:
                status, body = self._call("GET", j["slot"], f"/jobs/{j['id']}")
            except OSError:
                self._slot_died(j["slot"])  # its jobs go elsewhere, this one again: ask where it went
                continue
            answer = {**body, "id": jid, "task_id": j["task"], "slot": j["slot"], "tries": j["tries"]}
            if status == 200 and body.get("status") in DONE:
                j["answer"] = answer
            return answer
        raise RuntimeError(f"job {jid}: no live slot answers")

    def health(self) -> dict:
        live = self._live(check=True)
        return {"slots": len(self.urls), "live": len(live), "jobs": len(self.jobs), "tasks": len(self.tasks)}

    def _call(self, method: str, slot: int, path: str, body=None):
        return http_json(method, self.urls[slot] + path, body, timeout=30, token=self.token)

    # Placement.
    def _live(self, check: bool = False) -> list[int]:
        if check:
            for s, url in enumerate(self.urls):
                if self.alive[s]:
                    try:
                        self._call("GET", s, "/health")
                    except OSError:
                        self._slot_died(s)
        live = [s for s, a in enumerate(self.alive) if a]
        if not live:
            raise RuntimeError("every slot of the pool is gone")
        return live

    def _outstanding(self, slot: int) -> int:
        return sum(1 for j in self.jobs.values() if j["slot"] == slot and "answer" not in j)

    def _place(self, jid: int) -> None:
        j = self.jobs[jid]
        while True:
            with self.lock:
                slot = min(self._live(), key=self._outstanding)
            try:
                task = self._task_on(j["task"], slot)
                status, body = self._call("POST", slot, "/jobs", {**j["body"], "task_id": task})
            except OSError:
                self._slot_died(slot)
                continue
            if status != 202:
                raise ValueError(body.get("error", f"HTTP {status}"))
            with self.lock:  # the slot and its job id change together: a reader never pairs one with the other's
                j["slot"], j["id"], j["tries"] = slot, body["job_id"], j["tries"] + 1
            return

    def _task_on(self, task: int, slot: int) -> int:
        on = self.tasks[task]["on"]
        if slot not in on:
            status, body = self._call("POST", slot, "/tasks", self.tasks[task]["spec"])
            if status != 201:
                raise ValueError(body.get("error", f"HTTP {status}"))
            on[slot] = body["task_id"]
        return on[slot]

    def _slot_died(self, slot: int) -> None:
        """Marks the slot gone and submits its unfinished jobs again elsewhere."""
        with self.lock:
            if not self.alive[slot]:
                return
            self.alive[slot] = False
            orphans = [jid for jid, j in self.jobs.items() if j["slot"] == slot and "answer" not in j]
        for jid in orphans:
            self._place(jid)


def serve(pool: Pool, port: int, host: str = "127.0.0.1") -> None:
    """The pool's one endpoint. It has no tokens of its own: keep it on loopback (the default) or behind a proxy
    that authenticates; its slots already listen beyond loopback with the pool's token."""
    class Handler(http.server.BaseHTTPRequestHandler):
        def reply(self, status, body):
            data = json.dumps(body).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def do_GET(self):  # noqa: N802
            try:
                if self.path == "/health":
                    return self.reply(200, pool.health())
                if self.path.startswith("/jobs/") and self.path[6:].isdigit() and int(self.path[6:]) in pool.jobs:
                    return self.reply(200, pool.job(int(self.path[6:])))
                self.reply(404, {"error": "no such endpoint or job"})
            except RuntimeError as e:
                self.reply(503, {"error": str(e)})

        def do_POST(self):  # noqa: N802
            try:
                body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))) or b"{}")
                if self.path == "/tasks":
                    return self.reply(201, {"task_id": pool.add_task(body)})
                if self.path == "/jobs":
                    return self.reply(202, {"job_id": pool.submit(int(body.pop("task_id", -1)), body), "status": "queued"})
                self.reply(404, {"error": "no such endpoint"})
            except (ValueError, KeyError, TypeError) as e:
                self.reply(400, {"error": str(e)})
            except RuntimeError as e:  # no slot left: the pool cannot take work
                self.reply(503, {"error": str(e)})

        def log_message(self, *args):
            pass

    http.server.ThreadingHTTPServer((host, port), Handler).serve_forever()


def main(argv=None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    serve_args = argv[argv.index("--") + 1:] if "--" in argv else []
    ap = argparse.ArgumentParser(prog="python -m kforge.pool", description=__doc__.splitlines()[0])
    ap.add_argument("--slots", type=int, required=True)
    ap.add_argument("--port", type=int, default=8080)
    ap.add_argument("--host", default="127.0.0.1", help="the endpoint's address (it has no authentication of its own)")
    ap.add_argument("--kforge", default=kforge_binary())
    ap.add_argument("--address", default=None, help="a Ray cluster's address (default: start a local one)")
    ap.add_argument("--cpu", action="store_true", help="slots take a CPU each, not a GPU")
    args = ap.parse_args(argv[:argv.index("--")] if "--" in argv else argv)
    ray.init(address=args.address, include_dashboard=False, log_to_driver=False)
    pool = Pool(args.slots, args.kforge, serve_args, gpus=not args.cpu)
    print(f"kforge pool: {args.slots} slots behind http://{args.host}:{args.port}", flush=True)
    serve(pool, args.port, args.host)
    return 0


if __name__ == "__main__":
    sys.exit(main())
