"""`kforge report` (kforge.report): one self-contained HTML page of a suite run, its plots matplotlib's; rendered by
headless Chromium, the page is not blank."""
import json
import shutil
import sqlite3
import subprocess

import pytest

from conftest import REPO
from kforge import report

SUITE = REPO / "docs" / "results" / "run19" / "run19.2.suite.json"  # a real run's report: 32 problems


@pytest.fixture
def run_dir(tmp_path):
    suite = json.loads(SUITE.read_text())
    suite["rows"][3] = {**suite["rows"][3], "tier": "failed", "error": "no correct candidate among 16: <a wrong sum>"}
    (tmp_path / "suite.json").write_text(json.dumps(suite))
    db = sqlite3.connect(tmp_path / "kforge.db")
    db.execute("CREATE TABLE measurements (id INTEGER PRIMARY KEY AUTOINCREMENT, task TEXT, median_ms REAL, relaxed INTEGER)")
    for task, times in {"a": [3.0, 2.0, 2.5, 1.0], "b": [1.0, 0.0, 0.8]}.items():
        db.executemany("INSERT INTO measurements (task, median_ms, relaxed) VALUES (?, ?, ?)",
                       [(task, t, int(t > 0)) for t in times])
    db.commit()
    return tmp_path


def test_the_page_holds_every_plot_the_problems_and_the_failures(run_dir, tmp_path):
    out = tmp_path / "report.html"
    assert report.main([str(run_dir), "-o", str(out)]) == 0
    page = out.read_text()
    assert page.count("data:image/png;base64,") == 3, "speed-ups, roofline, best so far"
    assert "04_conv2d_batchnorm_relu_residual" in page and "&lt;a wrong sum&gt;" in page, "failures, escaped"
    assert page.count("<tr><td>") >= 32 + 1
    assert 'src="http' not in page and "<link" not in page and "<script" not in page, "self-contained: nothing fetched"


def test_every_kernel_of_the_best_plans_is_on_its_own_roofline(run_dir, tmp_path):
    """Suites since the per-kernel profile carry each best plan's groups timed apart: products by FLOPs, the rest by
    their share of the copy bandwidth, and the slowest listed first."""
    suite = json.loads((run_dir / "suite.json").read_text())
    gemm = {"group": "fc", "op": "matmul", "ms": 0.5, "bytes": 3 << 20, "flops": 4e9,
            "steps": [{"name": "fc", "kind": "cublaslt", "ms": 0.5}]}
    norm = {"group": "norm", "op": "row", "ms": 0.02, "bytes": 8 << 20, "flops": 0.0,
            "steps": [{"name": "kf1_norm", "kind": "nvrtc", "ms": 0.02}]}
    suite["rows"][0]["kernel_profile"] = [gemm, norm]
    suite["rows"][1]["kernel_profile"] = [{**norm, "group": "softmax", "ms": 0.9}]
    (run_dir / "suite.json").write_text(json.dumps(suite))
    out = tmp_path / "report.html"
    assert report.main([str(run_dir), "-o", str(out)]) == 0
    page = out.read_text()
    assert page.count("data:image/png;base64,") == 4, "speed-ups, roofline, every kernel, best so far"
    slowest = page.split("The kernels that take the most time")[1]
    assert slowest.index("softmax") < slowest.index("<td>fc</td>") < slowest.index("<td>norm</td>")
    assert "8.00" in slowest, "the product's TFLOP/s: 4 GFLOP in 0.5 ms"


def test_a_folder_without_a_run_is_refused(tmp_path, capsys):
    assert report.main([str(tmp_path), "-o", str(tmp_path / "r.html")]) == 2
    assert "no suite.json" in capsys.readouterr().err


@pytest.mark.skipif(not shutil.which("chromium"), reason="headless Chromium is not installed (scripts/setup.sh installs it)")
def test_headless_chromium_renders_a_page_that_is_not_blank(run_dir, tmp_path):
    import matplotlib.image
    out = tmp_path / "report.html"
    report.main([str(run_dir), "-o", str(out)])
    shot = tmp_path / "shot.png"
    subprocess.run(["chromium", "--headless", "--no-sandbox", "--disable-gpu", f"--screenshot={shot}",
                    "--window-size=1200,2400", out.as_uri()], capture_output=True, timeout=120)
    pixels = matplotlib.image.imread(shot)
    assert pixels.shape[0] >= 2000 and pixels[..., :3].std() > 0.05, "a blank page has one colour"
