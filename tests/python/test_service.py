"""`kforge serve` over HTTP: bad requests get 4xx naming the cause, the queue is bounded, jobs survive a
restart (even one that kills the service mid-job), and a job the worker cannot run is answered with the
cause while the service stays up. No GPU needed: without one, jobs fail with the driver's message."""
import json
import os
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))
from service_client import Service, free_port  # noqa: E402  (the device scripts' client, tested here too)

KFORGE = Path(os.environ.get("KFORGE_BIN", Path(__file__).resolve().parents[2] / "build" / "kforge"))
PROBLEM = """import torch
class Model(torch.nn.Module):
    def forward(self, x):
        return torch.softmax(x, dim=1)
def get_inputs():
    return [torch.rand(4, 50)]
def get_init_inputs():
    return []
"""


def Server(workdir: Path, *args) -> Service:
    """kforge serve on a free port; its output goes to a log beside the service folder."""
    workdir.parent.mkdir(parents=True, exist_ok=True)
    return Service(str(KFORGE), workdir, workdir.parent / f"serve-{time.time_ns()}.log", *args)


@pytest.fixture(scope="module")
def bundle() -> Path:
    # Not under pytest's private (0700) temporary folder: sandboxed jobs read the bundle as another user.
    d = Path(tempfile.mkdtemp(prefix="kforge-svc-"))
    d.chmod(0o755)
    (d / "p.py").write_text(PROBLEM)
    out = d / "bundle"
    r = subprocess.run([str(KFORGE), "import", str(d / "p.py"), "-o", str(out), "--device", "cpu", "--no-baselines"],
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    yield out
    shutil.rmtree(d)


@pytest.fixture()
def workdir():
    """A service folder the sandbox user can reach (pytest's own temporary folders are private)."""
    d = Path(tempfile.mkdtemp(prefix="kforge-service-"))
    d.chmod(0o755)
    yield d / "service"
    shutil.rmtree(d)


@pytest.fixture()
def server(workdir):
    s = Server(workdir, "--workers", "1", "--max-body", "100000", "--unsafe-shared")
    yield s
    s.kill()


def test_unreachable_service_folder_is_refused_at_start(tmp_path):
    r = subprocess.run([str(KFORGE), "serve", "--port", str(free_port()), "--dir", str(tmp_path / "private")],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 2 and "not reachable by the sandbox user" in r.stderr, r.stderr


def test_untrusted_kinds_need_a_cgroup_per_job_or_the_operators_word(workdir, bundle):
    s = Server(workdir, "--workers", "0")
    try:
        task = s.post("/tasks", {"bundle": str(bundle)})[1]["task_id"]
        for kind in ("plan", "cuda", "modelnew"):
            got, body = s.post("/jobs", {"task_id": task, "kind": kind, kind: {"source": "x"}})
            assert got == 403 and "--unsafe-shared" in body["error"], body
        assert s.post("/jobs", {"task_id": task, "kind": "schedule", "schedule": {}})[0] == 202
    finally:
        s.kill()


def test_health(server):
    status, body = server.get("/health")
    assert status == 200 and body["status"] == "ok" and body["workers"] == 1


@pytest.mark.parametrize("raw, status, message", [
    (b"{not json", 400, "not valid JSON"),
    (b"[1, 2]", 400, "must be a JSON object"),
    (b"{}", 400, "\"task_id\" (an integer) is required"),
    (b'{"task_id": 99, "kind": "plan", "plan": {}}', 404, "no task 99"),
])
def test_bad_job_requests(server, raw, status, message):
    got, body = server.post("/jobs", raw=raw)
    assert got == status and message in body["error"], body


def test_bad_task_requests(server, tmp_path, bundle):
    got, body = server.post("/tasks", {"bundle": str(tmp_path)})
    assert got == 400 and "is not a task bundle" in body["error"]
    private = tmp_path / "private"
    shutil.copytree(bundle, private)  # under pytest's 0700 folder: the sandbox user cannot read it
    got, body = server.post("/tasks", {"bundle": str(private)})
    assert got == 400 and "not readable by the sandbox user" in body["error"], body
    got, body = server.post("/tasks", {"nothing": 1})
    assert got == 400 and "give \"problem_source\"" in body["error"]
    got, body = server.post("/tasks", {"problem": str(tmp_path / "missing.py")})
    assert got == 400 and "does not exist" in body["error"]
    got, body = server.post("/tasks", {"problem_source": "x = 1", "name": "p", "precision": "fp8"})
    assert got == 400 and "\"precision\" must be fp32, fp16 or bf16" in body["error"], body
    got, body = server.post("/tasks", {"problem_source": "x = 1", "name": "p", "precision": 16})
    assert got == 400 and "\"precision\" must be a string" in body["error"], body


def test_limits_and_unknown_paths(server, bundle):
    got, body = server.post("/jobs", raw=b"x" * 200000)
    assert got == 413
    assert server.get("/nowhere")[0] == 404
    assert server.get("/jobs/12345")[0] == 404
    task = server.post("/tasks", {"bundle": str(bundle)})[1]["task_id"]
    got, body = server.post("/jobs", {"task_id": task, "kind": "binary", "binary": {}})
    assert got == 400 and "\"kind\" must be" in body["error"]
    for kind in ("cuda", "modelnew"):
        got, body = server.post("/jobs", {"task_id": task, "kind": kind, kind: {"text": "x"}})
        assert got == 400 and "needs \"source\"" in body["error"]


def test_a_job_is_answered_and_the_service_stays_up(server, bundle):
    task = server.post("/tasks", {"bundle": str(bundle)})[1]["task_id"]
    got, body = server.post("/jobs", {"task_id": task, "kind": "schedule", "schedule": {}})
    assert got == 202
    job = body["job_id"]
    for _ in range(600):
        status, j = server.get(f"/jobs/{job}")
        if j["status"] in ("done", "failed"):
            break
        time.sleep(0.1)
    assert j["status"] in ("done", "failed"), j
    if not os.path.exists("/dev/nvidia0"):  # no driver; or, first, no fresh sets drawn where torch has no device
        assert j["status"] == "failed" and ("CUDA driver" in j["error"] or "drawing fresh input sets" in j["error"]), json.dumps(j)
    else:
        assert j["status"] == "done" and j["result"]["tier"] in ("strict", "relaxed", "failed"), j
    assert server.get("/health")[0] == 200
    assert any(x["id"] == job for x in server.get("/jobs?limit=10")[1]["jobs"])


def test_queue_is_bounded(workdir, bundle):
    s = Server(workdir, "--workers", "0", "--max-queue", "2")
    try:
        task = s.post("/tasks", {"bundle": str(bundle)})[1]["task_id"]
        codes = [s.post("/jobs", {"task_id": task, "kind": "schedule", "schedule": {}})[0] for _ in range(3)]
        assert codes == [202, 202, 429]
    finally:
        s.kill()


def test_restart_loses_no_job(workdir, bundle):
    work = workdir
    s = Server(work, "--workers", "0")
    task = s.post("/tasks", {"bundle": str(bundle)})[1]["task_id"]
    ids = [s.post("/jobs", {"task_id": task, "kind": "schedule", "schedule": {}})[1]["job_id"] for _ in range(3)]
    s.kill()
    # As if the service died while a worker ran the first job, the compile pool built the second (a
    # raw CUDA job with its shared object) and was building the third.
    with sqlite3.connect(work / "jobs.db") as db:
        db.execute("UPDATE jobs SET status = 'running' WHERE id = ?", (ids[0],))
        db.execute("UPDATE jobs SET status = 'running', kind = 'cuda', artifact = '/x/candidate.so' WHERE id = ?", (ids[1],))
        db.execute("UPDATE jobs SET status = 'compiling', kind = 'cuda' WHERE id = ?", (ids[2],))
    s = Server(work, "--workers", "0")
    try:
        health = s.get("/health")[1]
        assert health["queued"] == 2 and health["compiled"] == 1 and health["requeued_on_start"] == 3, health
        assert [s.get(f"/jobs/{i}")[1]["status"] for i in ids] == ["queued", "compiled", "queued"]
    finally:
        s.kill()


GOOD_CUDA = r"""
#include <cuda_runtime.h>
__global__ void copy(const float* x, float* y, int n) { int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) y[i] = x[i]; }
extern "C" int kforge_forward(const void* const* in, const void* const* p, void* const* out, cudaStream_t s) {
  copy<<<1, 256, 0, s>>>((const float*)in[0], (float*)out[0], 200);
  return cudaGetLastError() == cudaSuccess ? 0 : 1;
}
"""


def wait_for(server, job, seconds=300):
    for _ in range(seconds * 10):
        j = server.get(f"/jobs/{job}")[1]
        if j["status"] in ("done", "failed"):
            return j
        time.sleep(0.1)
    raise AssertionError(f"job {job} unfinished: {j}")


def test_raw_cuda_jobs_are_built_by_the_compile_pool(server, workdir, bundle):
    task = server.post("/tasks", {"bundle": str(bundle)})[1]["task_id"]
    bad = server.post("/jobs", {"task_id": task, "kind": "cuda", "cuda": {"source": "__global__ void k() { no_such_call(); }"}})[1]
    good = [server.post("/jobs", {"task_id": task, "kind": "cuda", "cuda": {"source": GOOD_CUDA}})[1] for _ in range(2)]
    j = wait_for(server, bad["job_id"])
    assert j["status"] == "done" and not j["result"]["compiled"] and j["result"]["reward"] == -1, j
    assert "no_such_call" in j["result"]["log"], j
    for g in good:
        j = wait_for(server, g["job_id"])
        if not os.path.exists("/dev/nvidia0"):  # no driver; or, first, no fresh sets where torch has no device
            assert j["status"] == "failed" and ("CUDA driver" in j["error"] or "drawing fresh input sets" in j["error"]), json.dumps(j)
        else:
            assert j["status"] == "done" and j["result"]["compiled"], j
    built = list((workdir / "cache" / "raw").glob("raw-*/candidate.so"))
    assert len(built) == 1, built  # the same source twice: built once
    assert server.get("/health")[1]["status"] == "ok"


@pytest.mark.slow
def test_a_modelnew_job_sees_the_problem_it_is_checked_against(workdir, bundle):
    # As root inside the sandbox: the job's Python must import torch, which this machine may keep in a
    # folder the user nobody cannot read. What is tested is the sandbox's view of the problem file.
    # Without a GPU nothing can be drawn for the job (--fresh-every 0), and its process fails for want of a driver.
    s = Server(workdir, "--workers", "1", "--sandbox-user", "root", "--unsafe-shared", *([] if os.path.exists("/dev/nvidia0") else ["--fresh-every", "0"]))
    try:
        task = s.post("/tasks", {"bundle": str(bundle)})[1]["task_id"]
        source = "import torch\nclass ModelNew(torch.nn.Module):\n    def forward(self, x):\n        return torch.softmax(x, dim=1)\n"
        job = s.post("/jobs", {"task_id": task, "kind": "modelnew", "modelnew": {"source": source}})[1]["job_id"]
        j = wait_for(s, job)
        text = json.dumps(j)
        assert "no such file" not in text, text
        if os.path.exists("/dev/nvidia0"):
            assert j["status"] == "done" and j["result"]["tier"] == "strict", text
        else:
            assert j["status"] == "failed" and "NVIDIA driver" in j["error"], text
    finally:
        s.kill()


def test_a_build_in_a_private_folder_is_staged_where_the_sandbox_user_reads_it(workdir, bundle, tmp_path):
    private = tmp_path / "clone" / "build"  # pytest's folders are 0700, as `mktemp -d` and home folders are
    private.mkdir(parents=True)
    os.chmod(tmp_path / "clone", 0o700)
    shutil.copy2(KFORGE, private / "kforge")
    workdir.parent.mkdir(parents=True, exist_ok=True)
    s = Service(str(private / "kforge"), workdir, workdir.parent / "serve-private.log", "--workers", "1", "--fresh-every", "0")
    try:
        assert (workdir / "runtime" / "kforge").exists()
        task = s.post("/tasks", {"bundle": str(bundle)})[1]["task_id"]
        j = wait_for(s, s.post("/jobs", {"task_id": task, "kind": "schedule", "schedule": {}})[1]["job_id"])
        text = json.dumps(j)
        assert str(private) not in text, text
        if not os.path.exists("/dev/nvidia0"):  # the staged binary ran as the sandbox user, and found no driver
            assert j["status"] == "failed" and "kforge: error:" in j["error"] and "CUDA driver" in j["error"], text
        else:
            assert j["status"] == "done", text
    finally:
        s.kill()


@pytest.mark.slow
def test_rewards_for_rl_frameworks(workdir, bundle, monkeypatch):
    """POST /reward answers OpenRLHF's remote reward model contract ({"query", "labels"} -> {"rewards"}), each
    answer's candidate a job of its own; verl's compute_score (python/kforge/rl/verl_reward.py) goes through it.
    An answer without a candidate or on an unknown task gets -1 and the reason; without a GPU the candidate's
    job fails for want of a driver and is paid -1 too."""
    from kforge.rl import verl_reward
    s = Server(workdir, "--workers", "1", "--sandbox-user", "root", "--unsafe-shared",
               *([] if os.path.exists("/dev/nvidia0") else ["--fresh-every", "0"]))
    try:
        task = s.post("/tasks", {"bundle": str(bundle)})[1]["task_id"]
        answer = ("Fused softmax:\n```python\nimport torch\nclass ModelNew(torch.nn.Module):\n    def forward(self, x):\n"
                  "        return torch.softmax(x, dim=1)\n```\n")
        status, body = s.post("/reward", {"query": [answer, "no code here", answer], "labels": [str(task), str(task), "999"],
                                          "prompts": ["", "", ""]})
        assert status == 200 and len(body["rewards"]) == 3 and body["scores"] == body["rewards"], body
        judged, missing, unknown = body["details"]
        assert body["rewards"][1] == -1.0 and "no fenced code block" in missing["error"]
        assert body["rewards"][2] == -1.0 and "no task" in unknown["error"]
        assert judged["kind"] == "modelnew" and s.get(f"/jobs/{judged['job_id']}")[0] == 200
        if os.path.exists("/dev/nvidia0"):
            assert judged["status"] == "done" and judged["tier"] == "strict" and body["rewards"][0] > -1.0, body
        else:
            assert judged["status"] == "failed" and body["rewards"][0] == -1.0 and "NVIDIA driver" in judged["error"], body
        assert s.post("/reward", {"query": ["a"], "labels": []})[0] == 400
        assert s.post("/reward", {"query": ["a"], "labels": ["1"], "timeout_s": "soon"})[0] == 400
        status, huge = s.post("/reward", {"query": [answer], "labels": ["9" * 25]})
        assert status == 200 and huge["rewards"] == [-1.0] and "no task" in huge["details"][0]["error"]
        monkeypatch.setenv("KFORGE_SERVICE_URL", f"http://127.0.0.1:{s.port}")
        assert verl_reward.compute_score("kforge", answer, str(task), {}) == body["rewards"][0]
        assert verl_reward.compute_score("kforge", "no code", task) == -1.0
    finally:
        s.kill()
