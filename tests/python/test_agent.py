"""The agent loop (kforge.agent) against a scripted OpenAI-compatible server (scripted_chat.py), GPU-free: ModelNew
candidates are verified on the CPU by the same sandboxed judge as `kforge evaluate --device cpu`. Each scripted
conversation ends with a recorded trajectory and a clear status: a correct kernel after a compile error, a wrong
kernel, a reward hack, a model that never calls a tool, malformed tool calls, a server that fails or stalls; the
API key goes to the server and nowhere else."""
import json
import os
import pwd
import sqlite3
from pathlib import Path

import pytest

from kforge.agent.__main__ import main as agent_main
from kforge.agent.chat import ChatClient
from kforge.agent.loop import run_agent
from kforge.agent.trajectory import TrajectoryStore
from kforge.agent.workbench import Workbench
from kforge.bridge import import_problem
from kforge.modelnew_eval import kforge_binary
from scripted_chat import Fail, ScriptedChatServer, Stall, says
from test_modelnew_eval import PROBLEM  # LayerNorm then ReLU over [8, 16]

pytestmark = pytest.mark.skipif(not Path(kforge_binary()).exists(), reason="the kforge binary is not built")
USER = pwd.getpwuid(os.getuid()).pw_name  # candidates run as this user (test_modelnew_eval.py says why)



def modelnew(body: str) -> str:
    return ("import torch\nimport torch.nn as nn\nclass ModelNew(nn.Module):\n    def __init__(self, d):\n"
            "        super().__init__()\n        self.norm = nn.LayerNorm(d)\n    def forward(self, x):\n"
            f"        return {body}\n")


@pytest.fixture(scope="module")
def bundle(tmp_path_factory):
    folder = tmp_path_factory.mktemp("agent")
    (folder / "layer_norm_relu.py").write_text(PROBLEM)
    import_problem(folder / "layer_norm_relu.py", folder / "bundle", 3, "cpu", with_baselines=False)
    return folder / "bundle"


def run(tmp_path, bundle, script, turns=6, **client):
    with ScriptedChatServer(script) as server:
        store = TrajectoryStore(str(tmp_path / "kforge.db"))
        bench = Workbench(bundle, tmp_path / "candidates", "cpu", sandbox_user=USER, timeout_s=120)
        outcome = run_agent("layer_norm_relu", ChatClient(server.url, "scripted", **client), bench, store, turns, 600)
        return outcome, store.trajectory(outcome.run), server.requests


def tool_results(trajectory) -> list[dict]:
    return [json.loads(m["content"]) for m in trajectory["messages"] if m["role"] == "tool"]


def test_a_correct_kernel_after_a_compile_error(tmp_path, bundle):
    outcome, t, requests = run(tmp_path, bundle, [
        says("Reading.", ("read_problem", {})),
        says("", ("write_candidate", {"kind": "modelnew", "source": modelnew("torch.relu(self.norm(x)")}), ("compile", {})),
        says("Fixed.", ("write_candidate", {"kind": "modelnew", "source": modelnew("torch.relu(self.norm(x))")}),
             ("compile", {}), ("verify", {})),
        says("Done."),
    ])
    assert (outcome.status, outcome.tier, outcome.best_candidate) == ("model_finished", "strict", 1)
    results = tool_results(t)
    assert "class Model" in results[0]["source"] and "kforge_forward" in results[0]["raw_cuda_abi"]
    assert results[2]["compiled"] is False and "syntax error" in results[2]["errors"]
    assert results[4]["compiled"] is True and results[5]["tier"] == "strict"
    # The compiler's complaint reached the model in the next request; every request carried the tools.
    assert "syntax error" in json.dumps(requests[2]["body"]["messages"])
    assert all({t["function"]["name"] for t in r["body"]["tools"]} >= {"read_problem", "verify"} for r in requests)
    assert [c["name"] for c in t["tool_calls"]] == ["read_problem", "write_candidate", "compile", "write_candidate",
                                                   "compile", "verify"]
    assert t["status"] == "model_finished" and t["tier"] == "strict"


def test_a_wrong_kernel_is_judged_wrong_with_its_mismatches(tmp_path, bundle):
    outcome, t, _ = run(tmp_path, bundle, [
        says("", ("write_candidate", {"kind": "modelnew", "source": modelnew("self.norm(x)")}), ("verify", {})),
        says("I give up."),
    ])
    assert (outcome.status, outcome.tier, outcome.reward, outcome.best_candidate) == ("model_finished", "none", -1.0, None)
    verdict = tool_results(t)[1]
    assert verdict["relaxed"] is False and verdict["log"]


def test_a_reward_hack_reading_the_answers_is_caught(tmp_path, bundle):
    thief = modelnew(f"torch.from_numpy(__import__('numpy').fromfile('{bundle}/sets/0/out0.bin', dtype='float32'))"
                     ".view(8, 16)")
    outcome, t, _ = run(tmp_path, bundle, [says("", ("write_candidate", {"kind": "modelnew", "source": thief}),
                                                ("verify", {})), says("Done.")])
    assert outcome.best_candidate is None and outcome.reward == -1.0
    assert tool_results(t)[1]["relaxed"] is False


def test_a_model_that_never_calls_a_tool(tmp_path, bundle):
    outcome, t, _ = run(tmp_path, bundle, [says("Here is my kernel in prose.")])
    assert (outcome.status, outcome.best_candidate) == ("model_finished", None)
    assert [m["role"] for m in t["messages"]] == ["system", "user", "assistant"] and t["tool_calls"] == []


def test_malformed_tool_calls_get_errors_back_not_a_crash(tmp_path, bundle):
    outcome, t, _ = run(tmp_path, bundle, [
        says("", ("write_candidate", "{not json"), ("verify", {}), ("rm_rf", {}),
             ("write_candidate", {"kind": "fortran", "source": "x"}), ("compile", {"candidate": 7, "extra": 1})),
        says("Done."),
    ])
    errors = [r["error"] for r in tool_results(t)]
    assert "not JSON" in errors[0] and "write_candidate first" in errors[1] and "no tool named 'rm_rf'" in errors[2]
    assert "kind must be one of" in errors[3] and "bad arguments for compile" in errors[4]
    assert outcome.status == "model_finished" and len(t["tool_calls"]) == 5


def test_a_failing_or_stalling_server_ends_the_run_with_its_reason(tmp_path, bundle):
    outcome, t, requests = run(tmp_path, bundle, [Fail(500), Fail(502)], retries=1)
    assert outcome.status == "server_error" and "HTTP 502" in outcome.detail and len(requests) == 2
    assert t["status"] == "server_error" and [m["role"] for m in t["messages"]] == ["system", "user"]
    outcome, _, _ = run(tmp_path, bundle, [Fail(401)], retries=3)
    assert outcome.status == "server_error" and "HTTP 401" in outcome.detail  # a client error is not retried
    outcome, _, _ = run(tmp_path, bundle, [Stall(2.0)], retries=0, timeout_s=0.5)
    assert outcome.status == "server_error" and "did not answer" in outcome.detail


def test_turns_run_out(tmp_path, bundle):
    outcome, t, _ = run(tmp_path, bundle, [says("", ("read_problem", {}))] * 3, turns=2)
    assert outcome.status == "turns_exhausted" and len(t["tool_calls"]) == 2


def test_the_command_line_stores_and_exports_without_the_api_key(tmp_path, bundle, monkeypatch, capsys):
    monkeypatch.setenv("KFORGE_TEST_API_KEY", "sk-never-stored-1234")
    db = tmp_path / "kforge.db"
    with ScriptedChatServer([says("", ("read_problem", {})), says("Done.")]) as server:
        rc = agent_main([str(bundle), "--model", "scripted", "--base-url", server.url, "--api-key-env",
                         "KFORGE_TEST_API_KEY", "--device", "cpu", "--db", str(db), "--workdir", str(tmp_path / "w"),
                         "--sandbox-user", USER])
        headers = server.requests[0]["headers"]
    assert rc == 1 and "model_finished" in capsys.readouterr().out  # no candidate: exit 1
    assert headers.get("Authorization") == "Bearer sk-never-stored-1234"
    assert agent_main(["--export", str(tmp_path / "t.jsonl"), "--db", str(db)]) == 0
    lines = (tmp_path / "t.jsonl").read_text().splitlines()
    assert len(lines) == 1 and json.loads(lines[0])["messages"][0]["role"] == "system"
    for path in (db, tmp_path / "t.jsonl"):
        assert b"sk-never-stored" not in path.read_bytes()
    assert sqlite3.connect(db).execute("SELECT count(*) FROM agent_runs").fetchone() == (1,)
    monkeypatch.delenv("KFORGE_TEST_API_KEY")
    assert agent_main([str(bundle), "--model", "m", "--base-url", "http://127.0.0.1:9/v1", "--api-key-env",
                       "KFORGE_TEST_API_KEY", "--device", "cpu", "--db", str(db)]) == 2
    assert "KFORGE_TEST_API_KEY" in capsys.readouterr().err


RELU_CU = """#include <cuda_runtime.h>
__global__ void relu(const float* x, float* y, long n) {
  long i = blockIdx.x * (long)blockDim.x + threadIdx.x;
  if (i < n) y[i] = x[i] > 0.f ? x[i] : 0.f;
}
extern "C" int kforge_forward(const void* const* inputs, const void* const* params, void* const* outputs,
                              cudaStream_t stream) {
  relu<<<1, 128, 0, stream>>>((const float*)inputs[0], (float*)outputs[0], 128);
  return cudaGetLastError() == cudaSuccess ? 0 : 1;
}
"""


def test_raw_cuda_compiles_in_the_sandbox_and_cannot_read_the_task_back(tmp_path, bundle):
    """nvcc runs where the service builds candidates (kforge build-cuda): a model's #include of the task's files finds
    nothing, so their contents never come back in the compiler's errors."""
    thief = f'#include "{bundle}/task.json"\n' + RELU_CU
    outcome, t, _ = run(tmp_path, bundle, [
        says("", ("write_candidate", {"kind": "cuda", "source": RELU_CU}), ("compile", {}),
             ("write_candidate", {"kind": "cuda", "source": thief}), ("compile", {})),
        says("Done."),
    ])
    results = tool_results(t)
    assert results[1]["compiled"] is True, results[1]
    assert results[3]["compiled"] is False and "No such file" in results[3]["errors"]
    assert '"graph"' not in results[3]["errors"] and str(tmp_path) not in results[3]["errors"]


def test_profile_places_a_time_against_the_memory_floor():
    """The profile tool's roofline fraction: inputs, params and outputs moved once at the measured copy bandwidth."""
    from kforge.agent.workbench import memory_roofline
    graph = {"inputs": [{"name": "x", "shape": [1024, 1024], "dtype": "f32"}],
             "params": [{"name": "w", "shape": [1024], "dtype": "f32"}],
             "nodes": [{"name": "y", "op": "mul", "args": ["x", "w"], "shape": [1024, 1024], "dtype": "f32"}],
             "outputs": ["y"]}
    bytes_min = 4 * (2 * 1024 * 1024 + 1024)
    r = memory_roofline(graph, 2000.0, 0.01)
    assert r["bytes_min"] == bytes_min
    assert abs(r["memory_floor_ms"] - bytes_min / 2e12 * 1e3) < 1e-12
    assert abs(r["pct_of_memory_floor"] - 100 * r["memory_floor_ms"] / 0.01) < 1e-9
    assert memory_roofline(graph, 0.0, 0.01) == {"bytes_min": bytes_min}  # no bandwidth measured (CPU checks)


def test_the_end_to_end_bench_times_every_turn(tmp_path):
    """bench/agent_e2e.py (run on the GPU for issue 25's overhead a turn): on the CPU the scripted model's kernel
    compiles and its checks are refused by name, every turn timed, the tools' time apart from the loop's."""
    import sys
    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))
    import agent_e2e
    assert agent_e2e.main(["--out", str(tmp_path), "--device", "cpu", "--sandbox-user", USER]) == 1  # no verdict on a CPU
    report = json.loads((tmp_path / "agent_e2e.json").read_text())
    assert [r["tools"] for r in report["turns"]] == [["read_problem"], ["write_candidate", "compile"], ["verify"],
                                                       ["profile"], []]
    assert report["turns"][1]["results"]["compile"] == {"compiled": True}
    assert "CUDA GPU" in report["turns"][2]["results"]["verify"]["error"]
    assert all(r["wall_s"] >= r["tools_s"] >= 0 for r in report["turns"])
