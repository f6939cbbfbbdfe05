"""The library's stages depend downward only (ir <- codegen <- runtime <- env <- search <- server; the front ends
cli and python_module use any): an #include of a stage above its own fails here, naming the file and the line."""
import re
from pathlib import Path

SRC = Path(__file__).resolve().parents[2] / "src"
ORDER = ["ir", "codegen", "runtime", "env", "search", "server"]
INCLUDE = re.compile(r'^\s*#include\s+"([a-z_]+)/', re.MULTILINE)


def test_every_stage_includes_only_itself_and_the_stages_below():
    upward = []
    for level, stage in enumerate(ORDER):
        allowed = set(ORDER[:level + 1])
        for path in sorted((SRC / stage).glob("*.[ch]*")):
            text = path.read_text()
            for m in INCLUDE.finditer(text):
                if m.group(1) in ORDER and m.group(1) not in allowed:
                    line = text.count("\n", 0, m.start()) + 1
                    upward.append(f"{path.relative_to(SRC)}:{line} includes {m.group(1)}/ ({stage} is below it)")
    assert not upward, "\n".join(upward)
