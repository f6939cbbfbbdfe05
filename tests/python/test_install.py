"""`pip install .` as a user runs it (pyproject.toml, scikit-build-core): a virtual environment that sees the
system's torch, the package built from this clone, then the installed `kforge` command and package used from
outside the clone. Minutes on two cores (the C++ core is built again): runs with KFORGE_SLOW_TESTS=1, as CI does."""
import os
import subprocess
import sys
import venv
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.slow


def run(cmd, cwd, env=None, timeout=1800):
    done = subprocess.run([str(c) for c in cmd], cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)
    assert done.returncode == 0, f"{cmd} failed ({done.returncode}):\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
    return done.stdout


@pytest.fixture(scope="module")
def installed(tmp_path_factory):
    root = tmp_path_factory.mktemp("install")
    venv.EnvBuilder(system_site_packages=True, with_pip=True).create(root / "venv")
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "KFORGE_PYTHON_DIR", "KFORGE_PYTHON", "KFORGE_BIN")}
    env["CMAKE_BUILD_PARALLEL_LEVEL"] = str(os.cpu_count() or 2)
    run([root / "venv" / "bin" / "python", "-m", "pip", "install", "-q", str(REPO)], cwd=root, env=env)
    return root, env


SMALL_PROBLEM = """import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.norm = nn.LayerNorm(64)

    def forward(self, x):
        return torch.softmax(self.norm(x), dim=-1)


def get_inputs():
    return [torch.randn(16, 64)]


def get_init_inputs():
    return []
"""


def test_the_installed_command_imports_and_lowers_a_problem_outside_the_clone(installed):
    root, env = installed
    kforge = root / "venv" / "bin" / "kforge"
    assert "import" in run([kforge, "--help"], cwd=root, env=env)
    problem = root / "norm_softmax.py"
    problem.write_text(SMALL_PROBLEM)
    # `kforge import` runs `python -m kforge.bridge` inside: the installed package, not the clone's
    run([kforge, "--quiet", "import", problem, "-o", root / "task", "--device", "cpu"], cwd=root, env=env)
    out = run([kforge, "lower", root / "task", "--compile", "--arch", "sm_90"], cwd=root, env=env)
    assert ": ok" in out and "fail" not in out.lower(), out[:2000]  # every kernel compiled by NVRTC


def test_the_installed_package_is_the_venvs_with_its_core(installed):
    root, env = installed
    where = run([root / "venv" / "bin" / "python", "-c",
                 "import kforge, kforge._core, kforge.modelnew_eval as m; print(kforge.__file__); print(m.kforge_binary())"],
                cwd=root, env=env).split()
    assert where[0].startswith(str(root / "venv")), where
    assert where[1].endswith("kforge/_bin/kforge") and where[1].startswith(str(root / "venv")), where
    assert not (REPO / "python" / "kforge" / "_bin").exists(), "the wheel's build writes nothing into the clone"


def test_torch_finds_the_installed_backend_without_an_import(installed):
    """The package's torch_dynamo_backends entry point: `backend="kforge"` with no `import kforge` (here without a
    GPU, the backend's answer is PyTorch's own run with a warning naming kforge)."""
    root, env = installed
    script = ("import warnings, torch\n"
              "with warnings.catch_warnings(record=True) as caught:\n"
              "    warnings.simplefilter('always')\n"
              "    x = torch.randn(4, 8)\n"
              "    out = torch.compile(lambda t: torch.relu(t) * 2, backend='kforge')(x)\n"
              "assert torch.equal(out, torch.relu(x) * 2)\n"
              "print([str(w.message) for w in caught if 'kforge' in str(w.message)])\n")
    out = run([root / "venv" / "bin" / "python", "-c", script], cwd=root, env=env)
    assert "kforge: running the model in PyTorch" in out, out
