"""Problems the bridge cannot express in kforge's IR: kept whole as tasks (candidates are judged against PyTorch's
references; kforge's generator refuses them, naming the node, op and reason), or, where no task can be made (the
model does not run, is random, or uses a dtype tasks do not carry, or the file is no problem), refused with a
message naming the file, node and op, non-zero exit, and no bundle (nor a temporary folder) left behind."""
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from kforge import bridge
from op_cases import IMAGE, Case
from conftest import REPO


def refuse(tmp_path, source):
    """Import `source` in-process; return (exit code, stderr) and check nothing was left in tmp_path."""
    path = tmp_path / "bad.py"
    path.write_text(source)
    return path, tmp_path / "bundle"


def assert_nothing_written(folder):
    assert sorted(p.name for p in folder.iterdir()) == ["bad.py"]


KEPT_WHOLE = [
    ("untraceable", Case("x", "return x.relu() if x.sum() > 0 else x", []).source(),
     ["cannot trace", "control flow"]),
    ("fft", Case("x", "torch.fft.fft(x).real", []).source(), ["node 'fft_fft'", "fft", "not an op of kforge's IR"]),
    ("avg_pool_divisor_override", Case("x", "F.avg_pool2d(x, 2, divisor_override=3)", [], inputs="torch.randn(1, 2, 5, 5)").source(),
     ["avg_pool2d", "divisor_override is not supported"]),
    ("large_tensor_constant", Case("x", "x + torch.tensor([[float(i + j) for i in range(8)] for j in range(12)])", [],
                                   inputs="torch.randn(12, 8)").source(),
     ["a tensor of 96 elements made in forward", "supported up to 64 elements"]),
    ("batchnorm_eval", Case("x", "self.bn(x)", [], init="self.bn = nn.BatchNorm1d(8)\nself.eval()").source(),
     ["BatchNorm1d module 'bn'", "eval mode with running statistics"]),
    ("advanced_indexing", Case("x", "x[:, [0, 2]]", []).source(), ["getitem", "advanced indexing) is not supported"]),
    ("inplace_read_elsewhere", Case("x", "return F.relu(x, inplace=True) + x", []).source(),
     ["node 'relu'", "in-place op on a value that is read elsewhere"]),
    ("inplace_through_view", Case("x", "y = x.view(-1)\nreturn torch.relu_(y), x", []).source(),
     ["relu_", "not an op of kforge's IR"]),
    ("inplace_on_buffer", Case("x", "x + F.relu(self.w, inplace=True)", [],
                                  init="self.register_buffer('w', torch.randn(8))").source(),
     ["in-place op on a parameter or buffer"]),
    ("einsum_diagonal", Case("x", "torch.einsum('ii->i', x)", [], inputs="torch.randn(4, 4)").source(),
     ["einsum term 'ii' repeats an index (a diagonal): not supported"]),
    ("matmul_int64", Case("x", "x.long() @ x.long().T", []).source(),
     ["matmul", "matrix products are supported in float32, float16 and bfloat16, got torch.int64"]),
    ("diag_off_the_diagonal", Case("x", "torch.diag(x, 1) + 1", []).source(),
     ["node 'diag'", "torch.diag of a 2-D tensor with diagonal 1 is not supported"]),
    ("conv_transpose_output_size", Case("x", "self.c(x, output_size=[18, 18])", [], inputs=IMAGE,
                                        init="self.c = nn.ConvTranspose2d(3, 4, 3, stride=2)").source(),
     ["ConvTranspose2d called with output_size is unsupported"]),
    ("conv_transpose_unbatched", Case("x, w", "F.conv_transpose1d(x, w)", [], args="x, w",
                                      inputs="torch.randn(3, 8), torch.randn(3, 4, 3)").source(),
     ["conv_transpose1d input must be [N, C, 1 spatial dims]"]),
    ("tuple_slice", Case("x", "torch.cat(x.chunk(4, 1)[1:], 1)", []).source(),
     ["slicing a tuple of results is not supported"]),
    ("norm_inf", Case("x", "torch.linalg.vector_norm(x, ord=float('inf'))", []).source(),
     ["norm of order inf is not supported"]),
    ("antialiased_resize", Case("x", "F.interpolate(x, size=(5, 5), mode='bilinear', antialias=True)", [],
                                inputs=IMAGE).source(), ["bilinear resizing with antialias is not supported"]),
    ("matrix_inverse_power", Case("x", "torch.matrix_power(x, -2)", [], inputs="torch.randn(4, 4)").source(),
     ["matrix_power with exponent -2 is not supported"]),
    ("cummax_indices", Case("x", "torch.cummax(x, 1).indices.float()", []).source(),
     ["torch.cummax's indices are not supported (its values are)"]),
    ("data_dependent_item", Case("x", "x * x.sum().item()", []).source(), ["node 'item' (Tensor.item)"]),
    # Through dynamo's capture (control flow on a shape) an in-place method is kept, not dropped as unread: y is
    # returned after it changed, so it is no out-of-place op either.
    ("in_place_method_after_control_flow", Case("x", "if x.shape[1] > 4:\n    y = x * 2\n    y.add_(1)\n    return y\n"
                                                    "return x", []).source(),
     ["Tensor.add_", "in-place op on a value that is read elsewhere"]),
]

REFUSED = [
    ("dropout_functional", Case("x", "F.dropout(x, 0.1)", []).source(),
     ["node 'dropout'", "dropout is random: kforge cannot verify it yet", "a random op?"]),
    ("matmul_0d", Case("x", "x.sum() @ x", []).source(),
     ["node 'matmul'", "running Model.forward on example inputs failed", "the model does not run on get_inputs()"]),
    ("float64", Case("x", "x.relu()", [], inputs="torch.randn(4, 8, dtype=torch.float64)").source(),
     ["node 'x'", "dtype torch.float64 is not supported", "input 0 is torch.float64"]),
    ("no_model", "import torch\ndef get_inputs(): return []\ndef get_init_inputs(): return []\n",
     ["defines no Model"]),
    ("syntax_error", "class Model(:\n", ["syntax error at line 1"]),
]


@pytest.mark.parametrize("name, source, expected", REFUSED, ids=[r[0] for r in REFUSED])
def test_refused_in_process(tmp_path, capsys, name, source, expected):
    path, out = refuse(tmp_path, source)
    assert bridge.main(["import", str(path), "-o", str(out), "--device", "cpu", "--no-baselines"]) == 1
    err = capsys.readouterr().err
    assert str(path) in err
    for text in expected:
        assert text in err, err
    assert_nothing_written(tmp_path)


@pytest.mark.parametrize("name, source, expected", KEPT_WHOLE, ids=[r[0] for r in KEPT_WHOLE])
def test_kept_whole_in_process(tmp_path, capsys, name, source, expected):
    path, out = refuse(tmp_path, source)
    assert bridge.main(["import", str(path), "-o", str(out), "--device", "cpu", "--no-baselines"]) == 0
    err = capsys.readouterr().err
    assert "kept whole (kforge's generator will refuse it)" in err, err
    importer = json.loads((out / "task.json").read_text())["importer"]
    assert importer["opaque"]
    for text in expected:
        assert text in err and text in importer["why"], (err, importer)


def test_inplace_through_a_view_is_not_followed(tmp_path, capsys):
    """Writing into a view writes the tensor it views: x is returned too, so relu must not run in place."""
    path, out = refuse(tmp_path, Case("x", "y = x.view(-1)\nreturn F.relu(y, inplace=True), x * 1", []).source())
    assert bridge.main(["import", str(path), "-o", str(out), "--device", "cpu", "--no-baselines"]) == 0
    assert "in-place op on a value that is read elsewhere" in capsys.readouterr().err


def test_kforges_generator_refuses_a_task_kept_whole_naming_why(tmp_path):
    path, out = refuse(tmp_path, KEPT_WHOLE[1][1])  # torch.fft
    assert bridge.main(["import", str(path), "-o", str(out), "--device", "cpu", "--no-baselines"]) == 0
    kforge = Path(os.environ.get("KFORGE_BIN", REPO / "build" / "kforge"))
    if not kforge.exists():
        pytest.skip("the kforge binary is not built")
    r = subprocess.run([str(kforge), "lower", str(out)], capture_output=True, text=True, timeout=60)
    assert r.returncode == 2 and "kept whole" in r.stderr and "not an op of kforge's IR" in r.stderr, r.stderr


@pytest.mark.parametrize("name, source, expected", [REFUSED[0], REFUSED[-1]], ids=["dropout_functional", "syntax_error"])
def test_refused_on_the_command_line(tmp_path, name, source, expected):
    path, out = refuse(tmp_path, source)
    result = subprocess.run(
        [sys.executable, "-m", "kforge.bridge", "import", str(path), "-o", str(out), "--device", "cpu",
         "--no-baselines"], capture_output=True, text=True, cwd=REPO,
        env={**os.environ, "PYTHONPATH": str(REPO / "python")})
    assert result.returncode != 0
    assert str(path) in result.stderr and all(text in result.stderr for text in expected), result.stderr
    assert "Traceback" not in result.stderr  # a user error is a message, not a crash
    assert_nothing_written(tmp_path)
