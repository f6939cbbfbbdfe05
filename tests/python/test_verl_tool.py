"""verl's multi-turn tool (kforge.rl.verl_tool) against verl itself: the real package, installed from PyPI into a
virtual environment that sees this machine's torch, loads the tool from python/kforge/rl/verl_tools.yaml with its
own loader, and the tool's create / execute / calc_reward / release run against a real `kforge serve`. A wrong or
malformed submission is answered with its reason and -1; without a GPU the judged kernel's job fails for want of a
driver and is paid -1 too. Minutes (verl's dependencies): runs with KFORGE_SLOW_TESTS=1, as CI does."""
import json
import os
import subprocess
import venv
from pathlib import Path

import pytest

from test_service import Server, bundle, workdir  # noqa: F401 (fixtures)

REPO = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.slow

ROLLOUT = """
import asyncio, json, sys
from verl.tools.base_tool import BaseTool
from verl.tools.tool_registry import initialize_tools_from_config

(tool,) = initialize_tools_from_config(sys.argv[1])
assert isinstance(tool, BaseTool) and tool.name == "submit_kernel", tool
schema = tool.get_openai_tool_schema().model_dump(exclude_none=True)
task, answer = sys.argv[2], sys.argv[3]

async def rollout():
    iid, _ = await tool.create(None, task=task)
    judged = await tool.execute(iid, {"kind": "modelnew", "source": answer})
    malformed = await tool.execute(iid, {"kind": "pascal", "source": ""})
    best = await tool.calc_reward(iid)
    await tool.release(iid)
    other, _ = await tool.create("no-task")
    orphan = await tool.execute(other, {"kind": "modelnew", "source": answer})
    return [(r.text, s, m) for r, s, m in (judged, malformed, orphan)], best

results, best = asyncio.run(rollout())
print(json.dumps({"schema": schema, "results": results, "best": best}))
"""
MODELNEW = ("import torch\nclass ModelNew(torch.nn.Module):\n    def forward(self, x):\n"
            "        return torch.softmax(x, dim=1)\n")


@pytest.fixture(scope="module")
def verl_python(tmp_path_factory):
    root = tmp_path_factory.mktemp("verl")
    venv.EnvBuilder(system_site_packages=True, with_pip=True).create(root / "venv")
    python = root / "venv" / "bin" / "python"
    done = subprocess.run([python, "-m", "pip", "install", "-q", "verl"], capture_output=True, text=True, timeout=1800)
    assert done.returncode == 0, done.stderr[-3000:]
    return python


def test_verl_loads_the_tool_and_rolls_it_out_against_the_service(verl_python, workdir, bundle):  # noqa: F811
    s = Server(workdir, "--workers", "1", "--sandbox-user", "root", "--unsafe-shared",
               *([] if os.path.exists("/dev/nvidia0") else ["--fresh-every", "0"]))
    try:
        task = s.post("/tasks", {"bundle": str(bundle)})[1]["task_id"]
        env = {**os.environ, "PYTHONPATH": str(REPO / "python"), "KFORGE_SERVICE_URL": f"http://127.0.0.1:{s.port}"}
        done = subprocess.run([verl_python, "-c", ROLLOUT, REPO / "python" / "kforge" / "rl" / "verl_tools.yaml",
                               str(task), MODELNEW], capture_output=True, text=True, env=env, timeout=900)
        assert done.returncode == 0, done.stderr[-3000:]
        out = json.loads(done.stdout.strip().splitlines()[-1])
        assert out["schema"]["function"]["parameters"]["required"] == ["kind", "source"]
        (judged_text, judged, _), (malformed_text, malformed, _), (orphan_text, orphan, _) = out["results"]
        verdict = json.loads(judged_text)
        if os.path.exists("/dev/nvidia0"):
            assert verdict["tier"] == "strict" and judged > -1.0 and out["best"] == judged, out
        else:
            assert judged == -1.0 and "NVIDIA driver" in verdict["error"] and out["best"] == -1.0, out
        assert malformed == -1.0 and "kind must be one of modelnew, cuda" in malformed_text
        assert orphan == -1.0 and "no task" in orphan_text
        assert s.get("/health")[0] == 200, "the service stays up"
    finally:
        s.kill()
