"""The Ray evaluation pool (kforge.pool) on a local Ray cluster on the CPU path: one `kforge serve` per slot behind
one endpoint, jobs spread over the slots, and a slot that dies loses no job (its unfinished jobs go to another).
Without a GPU every job is answered as failed for want of a driver, which is still an answer."""
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import pytest

ray = pytest.importorskip("ray")  # scripts/setup.sh installs it
from kforge.pool import DONE, Pool, serve  # noqa: E402
from kforge.service_http import http_json  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))
from service_client import free_port  # noqa: E402

KFORGE = Path(os.environ.get("KFORGE_BIN", Path(__file__).resolve().parents[2] / "build" / "kforge"))
PROBLEM = """import torch
class Model(torch.nn.Module):
    def forward(self, x):
        return torch.relu(x)
def get_inputs():
    return [torch.randn(4, 64)]
def get_init_inputs():
    return []
"""


def serve_args(bundle, workers):
    # Beyond loopback a service reads bundle paths only inside --data-root.
    return ["--workers", str(workers), "--unsafe-shared", "--fresh-every", "0", "--data-root", str(bundle.parent)]

pytestmark = pytest.mark.skipif(not KFORGE.exists(), reason="the kforge binary is not built")


@pytest.fixture(scope="module")
def cluster():
    ray.init(num_cpus=3, include_dashboard=False, log_to_driver=False)
    yield
    ray.shutdown()


@pytest.fixture(scope="module")
def bundle():
    d = Path(tempfile.mkdtemp(prefix="kforge-pool-"))  # not pytest's private folder: the slots' sandboxes read it
    d.chmod(0o755)
    (d / "p.py").write_text(PROBLEM)
    r = subprocess.run([str(KFORGE), "import", str(d / "p.py"), "-o", str(d / "bundle"), "--device", "cpu",
                        "--no-baselines"], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    yield d / "bundle"
    shutil.rmtree(d)


def answered(pool, jid, seconds=120):
    for _ in range(seconds * 10):
        j = pool.job(jid)
        if j["status"] in DONE:
            return j
        time.sleep(0.1)
    raise AssertionError(f"job {jid} unanswered: {j}")


def test_jobs_spread_over_the_slots_behind_one_endpoint(cluster, bundle):
    pool = Pool(2, str(KFORGE), serve_args(bundle, 1), gpus=False)
    try:
        port = free_port()
        threading.Thread(target=serve, args=(pool, port), daemon=True).start()
        front = f"http://127.0.0.1:{port}"
        for _ in range(100):
            try:
                if http_json("GET", f"{front}/health")[0] == 200:
                    break
            except OSError:
                time.sleep(0.1)
        status, body = http_json("POST", f"{front}/tasks", {"bundle": str(bundle)})
        assert status == 201, body
        task = body["task_id"]
        jobs = [http_json("POST", f"{front}/jobs", {"task_id": task, "kind": "schedule", "schedule": {}})[1]["job_id"]
                for _ in range(6)]
        results = [answered(pool, j) for j in jobs]
        assert {r["slot"] for r in results} == {0, 1}, "both slots took jobs"
        assert http_json("GET", f"{front}/jobs/{jobs[0]}")[1]["status"] in DONE
        assert http_json("POST", f"{front}/jobs", {"task_id": 99, "kind": "schedule", "schedule": {}})[0] == 400
        assert http_json("GET", f"{front}/health")[1] == {"slots": 2, "live": 2, "jobs": 6, "tasks": 1}
    finally:
        for a in pool.actors:
            ray.kill(a)


def test_a_slot_that_dies_loses_no_job(cluster, bundle):
    # Slot 0 only queues (no worker): its jobs are unfinished when it dies, and must be answered by slot 1.
    pool = Pool(2, str(KFORGE), [], gpus=False, slot_args=[serve_args(bundle, 0), serve_args(bundle, 1)])
    try:
        task = pool.add_task({"bundle": str(bundle)})
        jobs = [pool.submit(task, {"kind": "schedule", "schedule": {}}) for _ in range(4)]
        assert {pool.jobs[j]["slot"] for j in jobs} == {0, 1}
        stranded = [j for j in jobs if pool.jobs[j]["slot"] == 0]
        ray.kill(pool.actors[0])
        results = {j: answered(pool, j) for j in jobs}
        assert all(r["status"] in DONE for r in results.values())
        assert all(results[j]["slot"] == 1 and results[j]["tries"] == 2 for j in stranded), results
        assert pool.health()["live"] == 1
    finally:
        for a in pool.actors:
            ray.kill(a)
