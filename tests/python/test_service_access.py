"""Who may call `kforge serve` and what a request may name on its disk (server/access.h): with tokens, no request
without a valid one reaches a task or job and no caller sees, uses or cancels another's; a service listening beyond
loopback needs tokens; bundle and problem paths must lie inside the data root (traversal and symlinks out of it
refused), and a problem can be uploaded as text instead. No GPU needed."""
import os
import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest
from test_service import KFORGE, PROBLEM, Server, free_port

ALICE, BOB = "alice-token-0123456789", "bob-token-0123456789ab"


@pytest.fixture(scope="module")
def root():
    """A data root the sandbox user can reach, with one bundle in it."""
    d = Path(tempfile.mkdtemp(prefix="kforge-root-"))
    d.chmod(0o755)
    (d / "p.py").write_text(PROBLEM)
    r = subprocess.run([str(KFORGE), "import", str(d / "p.py"), "-o", str(d / "softmax"), "--device", "cpu", "--no-baselines"],
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    yield d
    shutil.rmtree(d)


@pytest.fixture()
def service(root):
    work = Path(tempfile.mkdtemp(prefix="kforge-access-"))
    work.chmod(0o755)
    tokens = work / "tokens"
    tokens.write_text(f"# name token\nalice {ALICE}\nbob {BOB}\n")
    s = Server(work / "service", "--workers", "0", "--tokens", str(tokens), "--data-root", str(root))
    yield s
    s.kill()
    shutil.rmtree(work)


def test_no_request_without_a_valid_token_reaches_a_task_or_job(service, root):
    for token in (None, "wrong-token-0123456789", ALICE[:-1]):
        service.token = token
        assert service.post("/tasks", {"bundle": str(root / "softmax")})[0] == 401
        assert service.post("/jobs", {"task_id": 1, "kind": "schedule", "schedule": {}})[0] == 401
        assert service.get("/jobs/1")[0] == 401
        assert service.get("/jobs")[0] == 401
        assert service.request("DELETE", "/jobs/1")[0] == 401
    service.token = None
    assert service.get("/health")[0] == 200


def test_a_caller_sees_uses_and_cancels_only_its_own(service, root):
    service.token = ALICE
    got, body = service.post("/tasks", {"bundle": str(root / "softmax")})
    assert got == 201, body
    task = body["task_id"]
    got, body = service.post("/jobs", {"task_id": task, "kind": "schedule", "schedule": {}})
    assert got == 202, body
    job = body["job_id"]
    service.token = BOB
    assert service.get(f"/jobs/{job}")[0] == 404
    assert service.get("/jobs")[1]["jobs"] == []
    got, body = service.post("/jobs", {"task_id": task, "kind": "schedule", "schedule": {}})
    assert got == 404 and f"no task {task}" in body["error"], body
    assert service.request("DELETE", f"/jobs/{job}")[0] == 404
    service.token = ALICE
    assert [j["id"] for j in service.get("/jobs")[1]["jobs"]] == [job]
    got, body = service.request("DELETE", f"/jobs/{job}")
    assert got == 200 and body["status"] == "cancelled", body
    assert service.get(f"/jobs/{job}")[1]["status"] == "cancelled"
    got, body = service.request("DELETE", f"/jobs/{job}")
    assert got == 409 and "only a job not yet running" in body["error"], body


def test_paths_must_lie_inside_the_data_root(service, root, tmp_path):
    service.token = ALICE
    outside = Path(tempfile.mkdtemp(prefix="kforge-outside-"))
    try:
        shutil.copytree(root / "softmax", outside / "softmax")
        (root / "link").unlink(missing_ok=True)
        (root / "link").symlink_to(outside / "softmax")
        for path in (outside / "softmax", f"{root}/../{outside.name}/softmax", root / "link"):
            got, body = service.post("/tasks", {"bundle": str(path)})
            assert got == 400 and "outside the data root" in body["error"], (path, body)
        got, body = service.post("/tasks", {"problem": str(outside / "p.py")})
        assert got == 400 and "outside the data root" in body["error"], body
        got, body = service.post("/tasks", {"bundle": str(root)})
        assert got == 400 and "is not a task bundle" in body["error"], body
    finally:
        (root / "link").unlink(missing_ok=True)
        shutil.rmtree(outside)


def test_a_problem_is_uploaded_as_text(service):
    service.token = ALICE
    got, body = service.post("/tasks", {"problem_source": PROBLEM, "name": "../evil"})
    assert got == 400 and "\"name\" must be" in body["error"], body
    got, body = service.post("/tasks", {"problem_source": PROBLEM, "name": "softmax_upload"})
    if got == 201:  # a machine where the sandbox user can import (torch readable, a GPU for the baselines)
        assert body["name"] == "softmax_upload", body
    else:  # imported from the service's own uploads folder, never from a path the client named
        assert got == 400 and "/uploads/upload-" in body["error"] and "softmax_upload.py" in body["error"], body


def test_without_tokens_a_service_beyond_loopback_does_not_start(tmp_path):
    work = Path(tempfile.mkdtemp(prefix="kforge-open-"))
    work.chmod(0o755)
    try:
        r = subprocess.run([str(KFORGE), "serve", "--host", "0.0.0.0", "--port", str(free_port()), "--dir", str(work / "s"),
                            "--workers", "0"], capture_output=True, text=True, timeout=60)
        assert r.returncode == 2 and "give --tokens FILE" in r.stderr, r.stderr
        bad = work / "tokens"
        bad.write_text("alice short\n")
        r = subprocess.run([str(KFORGE), "serve", "--port", str(free_port()), "--dir", str(work / "s"), "--tokens", str(bad)],
                           capture_output=True, text=True, timeout=60)
        assert r.returncode == 2 and "at least 16 characters" in r.stderr, r.stderr
    finally:
        shutil.rmtree(work)


def test_without_tokens_or_a_data_root_a_local_service_takes_any_path(tmp_path, root):
    work = Path(tempfile.mkdtemp(prefix="kforge-local-"))
    work.chmod(0o755)
    s = Server(work / "service", "--workers", "0")
    try:
        got, body = s.post("/tasks", {"bundle": str(root / "softmax")})
        assert got == 201, body
    finally:
        s.kill()
        shutil.rmtree(work)


def test_a_caller_over_its_request_rate_waits_and_others_do_not(root):
    work = Path(tempfile.mkdtemp(prefix="kforge-rate-"))
    work.chmod(0o755)
    tokens = work / "tokens"
    tokens.write_text(f"alice {ALICE}\nbob {BOB}\n")
    s = Server(work / "service", "--workers", "0", "--tokens", str(tokens), "--rate-per-token", "1")
    try:
        s.token = ALICE
        statuses = [s.get("/jobs")[0] for _ in range(4)]  # a burst of two, then one a second
        assert statuses[:2] == [200, 200] and 429 in statuses[2:], statuses
        s.token = BOB
        assert s.get("/jobs")[0] == 200, "another caller's bucket is its own"
    finally:
        s.kill()
        shutil.rmtree(work)
