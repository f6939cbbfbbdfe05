"""The strict tier per hidden set (bridge.strict_tolerance): 1e-4, or 4x PyTorch's own float32 error on that set
where that is larger, never above the relaxed tier. On the set scaled by 4 a large-K product misses 1e-4 with
any float32 arithmetic; the widened tier must still pass float32 summed in another order and fail TF32."""
import json

import pytest
import torch

from kforge import bridge
from kforge.bridge import FP32_ALLOWANCE, TOLERANCE, own_error, reference_outputs, set_tolerance, strict_tolerance
from kforge.bundle import read_inputs, read_outputs, read_strict_tolerance, read_task
from kforge.kbtime import baseline_tiers_on_sets, compare, tier_of

K = 2048


class Product(torch.nn.Module):
    def forward(self, a, b):
        return a @ b


def tf32(x: torch.Tensor) -> torch.Tensor:
    """x rounded to TF32 (10 mantissa bits, to nearest): what a TF32 tensor-core product reads."""
    bits = x.contiguous().view(torch.int32)
    return ((bits + 0x1000) & ~0x1FFF).view(torch.float32)


def other_order(a, b, parts=4):
    """The product in float32, summed in another order: K split in parts, as a split-K kernel or cuBLAS does."""
    step = a.shape[1] // parts
    return sum(a[:, i:i + step] @ b[i:i + step] for i in range(0, a.shape[1], step))


def scaled_by_4():
    g = torch.Generator().manual_seed(11)
    scale, shift = bridge.VARIANTS[2]
    assert (scale, shift) == (4.0, 0.0)  # the hidden set this is about
    return [torch.randn(64, K, generator=g) * scale, torch.randn(K, 64, generator=g) * scale]


def test_a_large_product_on_the_set_scaled_by_4_gets_float32s_own_error_and_tf32_still_fails():
    a, b = scaled_by_4()
    (ref,), (tol,) = reference_outputs(Product(), [a, b])
    with torch.no_grad():
        narrow = a @ b
    e32 = own_error(narrow, ref)
    assert e32 > TOLERANCE["strict"] / FP32_ALLOWANCE, "this set must be one where 1e-4 asks more than float32"
    assert tol == pytest.approx(FP32_ALLOWANCE * e32) and TOLERANCE["strict"] < tol <= TOLERANCE["relaxed"]
    tolerance = set_tolerance([tol])
    # PyTorch's own float32 result misses the old 1e-4 here: the tier asked for better than float32.
    assert not compare([narrow], [ref], TOLERANCE)["strict"]
    assert tier_of(compare([narrow], [ref], tolerance)) == "strict"
    assert tier_of(compare([other_order(a, b)], [ref], tolerance)) == "strict"
    assert tier_of(compare([other_order(a.flip(1), b.flip(0), parts=8)], [ref], tolerance)) == "strict"
    # TF32-rounded inputs, float32 arithmetic: far outside the widened strict tier.
    with torch.no_grad():
        downcast = tf32(a) @ tf32(b)
    assert not compare([downcast], [ref], tolerance)["strict"]
    assert own_error(downcast, ref) > 10 * tol


def test_an_elementwise_model_exact_in_float32_keeps_1e_4_on_every_set(tmp_path):
    source = tmp_path / "scale.py"
    source.write_text("""import torch
import torch.nn as nn
class Model(nn.Module):
    def forward(self, x, y):
        return torch.relu(x) * 2.0 + y, x - y
def get_inputs():
    return [torch.randn(256, 256), torch.randn(256, 256)]
def get_init_inputs():
    return []
""")
    out = tmp_path / "scale.bundle"
    assert bridge.main(["import", str(source), "-o", str(out), "--device", "cpu", "--no-baselines"]) == 0
    assert read_task(out)["strict_tolerance"] == [[1e-4, 1e-4]] * 5


@pytest.fixture(scope="module")
def product_bundle(tmp_path_factory):
    d = tmp_path_factory.mktemp("product")
    (d / "product.py").write_text(f"""import torch
import torch.nn as nn
class Model(nn.Module):
    def forward(self, a, b):
        return a @ b
def get_inputs():
    return [torch.randn(64, {K}), torch.randn({K}, 64)]
def get_init_inputs():
    return []
""")
    assert bridge.main(["import", str(d / "product.py"), "-o", str(d / "b"), "--device", "cpu", "--no-baselines"]) == 0
    return d / "b"


def test_the_bundle_stores_each_sets_tolerance_and_old_bundles_fall_back(product_bundle, tmp_path):
    task = read_task(product_bundle)
    strict = task["strict_tolerance"]
    assert len(strict) == 5 and all(len(s) == 1 for s in strict)
    assert strict[2][0] > TOLERANCE["strict"], "the set scaled by 4 is widened"
    assert strict[1] == [TOLERANCE["strict"]], "the set scaled by 0.1 is not"
    assert all(TOLERANCE["strict"] <= t <= TOLERANCE["relaxed"] for s in strict for t in s)
    del task["strict_tolerance"]  # a bundle written before per-set tolerances
    assert read_strict_tolerance(task) == [[TOLERANCE["strict"]]] * 5


def test_every_hidden_set_is_judged_with_its_own_tolerance(product_bundle):
    task, graph = read_task(product_bundle), read_task(product_bundle)["graph"]
    sets = [read_inputs(product_bundle, k, graph, "cpu") for k in range(5)]
    refs = [read_outputs(product_bundle, k, graph, "cpu") for k in range(5)]
    tolerances = [set_tolerance(s) for s in read_strict_tolerance(task)]
    runs = {"fp32_other_order": lambda a, b: other_order(a, b), "tf32": lambda a, b: tf32(a) @ tf32(b)}
    assert baseline_tiers_on_sets(runs, sets, refs, tolerances) == {"fp32_other_order": "strict", "tf32": "none"}
    # Whether 1e-4 everywhere would fail float32 here depends on the fresh draw (about 1 in 20 draws it passes):
    # the fixed-seed test above pins that float32 misses 1e-4 on the set scaled by 4.


def test_a_modelnew_in_float32_is_strict_and_one_in_tf32_is_not(product_bundle, tmp_path):
    import os
    import pwd

    from kforge.modelnew_eval import evaluate_modelnew
    user = pwd.getpwuid(os.getuid()).pw_name  # the judge is tested here; the sandbox's own tests drop to another user

    def candidate(name, body):
        path = tmp_path / f"{name}.py"
        path.write_text(f"""import torch
import torch.nn as nn
def tf32(x):
    return ((x.contiguous().view(torch.int32) + 0x1000) & ~0x1FFF).view(torch.float32)
class ModelNew(nn.Module):
    def forward(self, a, b):
        return {body}
""")
        return path
    split = "sum(a[:, i:i + 512] @ b[i:i + 512] for i in range(0, a.shape[1], 512))"
    r = evaluate_modelnew(product_bundle, candidate("split", split), device="cpu", sandbox_user=user)
    assert r["tier"] == "strict", r["log"]
    r = evaluate_modelnew(product_bundle, candidate("downcast", "tf32(a) @ tf32(b)"), device="cpu", sandbox_user=user)
    assert r["tier"] != "strict", r["log"]


def test_own_error_leaves_out_nonfinite_elements_and_is_zero_where_the_reference_is_the_float32_run():
    ref = torch.tensor([1.0, float("inf"), float("nan"), 0.0])
    narrow = torch.tensor([1.0 + 1e-6, float("inf"), 5.0, 2e-6])
    assert own_error(narrow, ref) == pytest.approx(2e-6)
    assert own_error(narrow, narrow) == 0.0  # closer_reference fell back to the float32 run
    assert own_error(torch.tensor([3]), torch.tensor([3])) == 0.0
    assert strict_tolerance(0.0) == TOLERANCE["strict"]
    assert strict_tolerance(1e-4) == pytest.approx(4e-4)
    assert strict_tolerance(1.0) == TOLERANCE["relaxed"]


def test_where_the_reference_falls_back_to_the_float32_run_the_tolerance_is_1e_4():
    class Eps(torch.nn.Module):  # float64's eps is another function: the float32 run is the reference
        def forward(self, x):
            return x.clamp(min=torch.finfo(x.dtype).eps).log()
    x = torch.rand(4, 5)
    x[0, 0] = 0.0
    refs, strict = reference_outputs(Eps(), [x])
    assert strict == [TOLERANCE["strict"]]


def test_compare_takes_one_strict_tolerance_per_output():
    x = torch.zeros(4)
    got, expected = [x + 3e-4, x + 3e-4], [x, x]
    assert compare(got, expected, {"strict": [1e-3, 1e-3], "relaxed": 1e-2})["strict"] is True
    assert compare(got, expected, {"strict": [1e-3, 1e-4], "relaxed": 1e-2})["strict"] is False
    assert json.dumps(compare(got, expected, set_tolerance([1e-3, 1e-3])))  # still plain JSON


def test_the_search_refuses_tolerances_that_do_not_fit_the_sets_before_it_needs_a_gpu(tmp_path):
    import kforge._core as core
    graph = {"version": 1, "inputs": [{"name": "x", "dtype": "f32", "shape": [4]}], "params": [],
             "nodes": [{"name": "relu_1", "op": "relu", "args": ["x"], "attrs": {}}], "outputs": ["relu_1"]}

    def search(strict):
        core.optimize(json.dumps(graph), "t", [[1], [2]], [[3], [4]], [], 1, str(tmp_path / "m.db"),
                      strict_tolerance=strict)
    with pytest.raises(ValueError, match="set 1: strict tolerances for 2 outputs; the graph returns 1"):
        search([[1e-4], [1e-4, 2e-4]])
    with pytest.raises(ValueError, match=r"set 0, output 0: strict tolerance 0.5 outside \[1e-4, 0.01\]"):
        search([[0.5], [1e-4]])
