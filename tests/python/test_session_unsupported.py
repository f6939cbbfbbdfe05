"""`kforge optimize` on a problem with an op kforge lacks: one failed row naming the op and where it is, with eager's
and torch.compile's times beside it (kb protocol), and the next problem still optimized. Needs a GPU (the device
machine's PY_GPU_TESTS); skipped without one."""
import json

import pytest
import torch

from kforge import session

pytestmark = pytest.mark.skipif(not torch.cuda.is_available(), reason="kb timing needs a CUDA GPU")

LACKING = """import torch
class Model(torch.nn.Module):
    def forward(self, x):
        return torch.relu(x[:, [0, 2, 5]])
def get_inputs():
    return [torch.randn(64, 4096)]
def get_init_inputs():
    return []
"""
TAKEN = LACKING.replace("x[:, [0, 2, 5]]", "x")


def test_a_lacking_op_is_named_and_the_baselines_still_timed(tmp_path, capsys):
    (tmp_path / "lacking.py").write_text(LACKING)
    (tmp_path / "taken.py").write_text(TAKEN)
    rc = session.main([str(tmp_path / "lacking.py"), str(tmp_path / "taken.py"), "--budget", "2", "--db",
                       str(tmp_path / "k.db"), "--workdir", str(tmp_path / "w"), "--reports", str(tmp_path / "r"),
                       "--no-progress", "--policy", "local"])
    assert rc == 1  # one problem failed
    lacking = json.loads((tmp_path / "r" / "lacking.json").read_text())
    assert lacking["tier"] == "failed" and "getitem" in lacking["error"], lacking
    assert lacking["eager_ms"] > 0 and lacking["compile_ms"] > 0, lacking
    taken = json.loads((tmp_path / "r" / "taken.json").read_text())
    assert taken["tier"] in ("strict", "relaxed") and taken["kforge_ms"] > 0, taken
    assert "| lacking |" in capsys.readouterr().out
