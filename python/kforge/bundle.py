"""The task bundle folder of docs/interfaces.md: writing it atomically, reading its tensors back."""
import json
import os
import shutil
import tempfile
from pathlib import Path

import numpy as np
import torch

from kforge.dtypes import IR_TO_TORCH


class BundleWriter:
    """Writes into BUNDLE.tmp-XXXX beside the final folder and renames it into place on commit(), so a reader
    never sees half a bundle; leaving the `with` block without commit() (an error) removes the temporary."""

    def __init__(self, final):
        self.final = Path(final).resolve()
        self.final.parent.mkdir(parents=True, exist_ok=True)
        self.tmp = Path(tempfile.mkdtemp(prefix=f"{self.final.name}.tmp-", dir=self.final.parent))
        # mkdtemp makes the folder private (0700); a bundle is read by sandboxed workers running as another
        # user, so it gets the permissions a plain mkdir would give under the current umask.
        umask = os.umask(0)
        os.umask(umask)
        self.tmp.chmod(0o777 & ~umask)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        if self.tmp.exists():
            shutil.rmtree(self.tmp)

    def write_tensor(self, relpath: str, t: torch.Tensor) -> None:
        path = self.tmp / relpath
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(tensor_bytes(t))

    def write_json(self, relpath: str, obj) -> None:
        (self.tmp / relpath).write_text(json.dumps(obj, indent=1, allow_nan=False))

    def commit(self) -> None:
        """Replace any older bundle of the same name: moved aside first, so the rename itself is atomic."""
        old = None
        if self.final.exists():
            old = Path(tempfile.mkdtemp(prefix=f"{self.final.name}.old-", dir=self.final.parent))
            os.replace(self.final, old / "bundle")
        os.replace(self.tmp, self.final)
        if old is not None:
            shutil.rmtree(old)


def tensor_bytes(t: torch.Tensor) -> bytes:
    """A tensor's raw C-order bytes (x86 and CUDA hosts are little-endian), as bundles and the judge's frames hold
    them; a bfloat16 one as its bits (numpy has no bfloat16)."""
    t = t.detach().contiguous().cpu()
    return (t.view(torch.int16) if t.dtype == torch.bfloat16 else t).numpy().tobytes()


def read_task(bundle) -> dict:
    return json.loads((Path(bundle) / "task.json").read_text())


def read_tensor(path, spec: dict, device) -> torch.Tensor:
    """A tensor written by BundleWriter.write_tensor; `spec` is an IR input/param entry (dtype, shape)."""
    dtype = IR_TO_TORCH[spec["dtype"]]
    stored = torch.int16 if dtype == torch.bfloat16 else dtype  # written as its bits (write_tensor)
    array = np.fromfile(path, dtype=torch.empty(0, dtype=stored).numpy().dtype)
    return torch.from_numpy(array).view(dtype).reshape(spec["shape"]).to(device)


def read_params(bundle, graph: dict, device) -> list[torch.Tensor]:
    return [read_tensor(Path(bundle) / "params" / f"{i}.bin", p, device) for i, p in enumerate(graph["params"])]


def read_inputs(bundle, set_index: int, graph: dict, device) -> list[torch.Tensor]:
    folder = Path(bundle) / "sets" / str(set_index)
    return [read_tensor(folder / f"in{i}.bin", s, device) for i, s in enumerate(graph["inputs"])]


def output_specs(graph: dict) -> list[dict]:
    """dtype and shape of each graph output (an output may name an input or param as well as a node). A node
    carries them itself (the bridge's graph) or under "type" (the C++ side's graph_to_json)."""
    specs = {v["name"]: v.get("type", v) for v in graph["inputs"] + graph["params"] + graph["nodes"]}
    return [specs[name] for name in graph["outputs"]]


def read_outputs(bundle, set_index: int, graph: dict, device) -> list[torch.Tensor]:
    folder = Path(bundle) / "sets" / str(set_index)
    return [read_tensor(folder / f"out{j}.bin", s, device) for j, s in enumerate(output_specs(graph))]


def read_strict_tolerance(task: dict) -> list[list[float]]:
    """The strict tier's tolerance per hidden set and output (task.json "strict_tolerance", bridge.strict_tolerance);
    a bundle written before it gives every set the global strict tolerance."""
    stored = task.get("strict_tolerance")
    if stored is not None:
        return stored
    strict = task.get("tolerance", {}).get("strict", 1e-4)
    return [[strict] * len(task["graph"]["outputs"]) for _ in range(task["num_sets"])]
