"""Tests of the Python bridge (CPU only). Run from the repo root: `python -m pytest tests/python`."""
import os
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "python"))


def pytest_configure(config):
    config.addinivalue_line("markers", "slow: tens of seconds or more on two cores (builds of torch extensions, "
                                       "services with sandboxed ModelNew jobs); run with KFORGE_SLOW_TESTS=1, as CI does")


def pytest_collection_modifyitems(config, items):
    """The README's test command stays within minutes on two cores: tests marked slow run where KFORGE_SLOW_TESTS=1."""
    if os.environ.get("KFORGE_SLOW_TESTS") == "1":
        return
    skip = pytest.mark.skip(reason="slow (tens of seconds or more on two cores): KFORGE_SLOW_TESTS=1 runs it")
    for item in items:
        if "slow" in item.keywords:
            item.add_marker(skip)


@pytest.fixture
def write_problem(tmp_path):
    """write_problem(source, name="problem") -> path of a problem file in a fresh folder."""
    def write(source: str, name: str = "problem"):
        path = tmp_path / f"{name}.py"
        path.write_text(source)
        return path
    return write


@pytest.fixture(scope="session")
def imported(tmp_path_factory):
    """imported(case) -> bundle folder of an op_cases.Case, imported once per session on the CPU."""
    from kforge import bridge

    root = tmp_path_factory.mktemp("cases")
    bundles = {}

    def get(case):
        if case.name not in bundles:
            source = root / f"{case.name}.py"
            source.write_text(case.source())
            out = root / f"{case.name}.bundle"
            assert bridge.main(["import", str(source), "-o", str(out), "--device", "cpu", "--no-baselines"]) == 0
            bundles[case.name] = out
        return bundles[case.name]
    return get
