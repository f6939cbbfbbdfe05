"""bench/merge_suites.py: slices of one suite run become one table whose summary counts every row; a slice that did
not finish (unless asked to keep it, named), or a problem in two slices, is refused rather than counted twice or half."""
import importlib.util
import json

import pytest

from conftest import REPO


def merger():
    spec = importlib.util.spec_from_file_location("merge_suites", REPO / "bench" / "merge_suites.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def slice_file(tmp_path, name, problems, complete=True):
    """A suite.json of failed stand-in rows (make_row's shape), as one device_check slice writes it."""
    merger()  # puts bench/ on the path, where run_suite lives
    import run_suite
    rows = [run_suite.make_row(p, tmp_path / f"{p}.py", None, 1, False, 1.0, "stand-in", tmp_path / "log", 10)
            for p in problems]
    path = tmp_path / f"{name}.json"
    path.write_text(json.dumps({"meta": {}, "rows": rows, "summary": {}, "complete": complete}))
    return str(path)


def test_slices_merge_into_one_summary(tmp_path):
    m = merger()
    text = m.merge([slice_file(tmp_path, "a", ["p1", "p2"]), slice_file(tmp_path, "b", ["p3"])])
    assert "- problems: 3" in text
    assert text.index("| p1 |") < text.index("| p3 |")
    rows, _ = m.collect([slice_file(tmp_path, "c", ["p3", "p1"]), slice_file(tmp_path, "d", ["p2"])], by_source=True)
    assert [r["problem"] for r in rows] == ["p1", "p2", "p3"]  # dealt round-robin to GPUs, listed by file
    assert "merged from:" in text


def test_an_unfinished_slice_or_a_repeated_problem_is_refused(tmp_path):
    m = merger()
    with pytest.raises(SystemExit, match="not a complete"):
        m.merge([slice_file(tmp_path, "a", ["p1"]), slice_file(tmp_path, "b", ["p2"], complete=False)])
    text = m.merge([slice_file(tmp_path, "a", ["p1"]), slice_file(tmp_path, "b", ["p2"], complete=False)], partial=True)
    assert "- problems: 2" in text and "cut by a time limit" in text and "b.json" in text
    with pytest.raises(SystemExit, match="more than one slice"):
        m.merge([slice_file(tmp_path, "a", ["p1"]), slice_file(tmp_path, "b", ["p1"])])


def test_a_glob_keeps_part_of_a_slice(tmp_path):
    m = merger()
    a = slice_file(tmp_path, "a", ["01_x", "02_y", "13_z"])
    text = m.merge([a + "::0*", slice_file(tmp_path, "b", ["13_z"])])
    assert "- problems: 3" in text and "| 02_y |" in text
    text = m.merge([a + "::02_*,13_*"])
    assert "- problems: 2" in text and "| 01_x |" not in text
