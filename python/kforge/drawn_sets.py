"""`python -m kforge.drawn_sets BUNDLE OUT [--fresh 1] [--no-beyond] [--device cuda|cpu]`

Input sets drawn for one batch of evaluations, beside a bundle's stored ones (docs/interfaces.md, "Drawn sets"):
- fresh: get_inputs() under a seed from the OS's CSPRNG (problem.random_seed), used once and written nowhere, so
  no candidate can have met these inputs or their answers before it runs: stored answers, learned or stolen, do
  not help on them;
- beyond: the fresh draw moved past get_inputs' distribution (signs flipped; shifted and scaled with a few zeros),
  each kept only where the reference stays finite and the model accepts it. A candidate right on get_inputs'
  draws and wrong here gets a verdict of its own ("correct only on get_inputs' distribution") beside the
  KernelBench-compatible one: uniform [0, 1) inputs make ReLU the identity, and only these sets tell them apart.

References as at import (bridge.reference_outputs: float64 arithmetic rounded once, each output's strict tier from
PyTorch's own float32 error on that set). The model is rebuilt and given the bundle's stored params, so the
references follow the weights the stored sets were made with.

OUT gets <k>/in<i>.bin, <k>/out<j>.bin and sets.json, written beside it and renamed into place. It is trusted
data: only a judge reads the references; a candidate's sandbox is shown the inputs alone."""
import argparse
import json
import sys
import traceback
from pathlib import Path

import torch

from kforge import bridge
from kforge.bundle import BundleWriter, read_params, read_task
from kforge.errors import ImportProblemError
from kforge.fx_to_ir import lookup
from kforge.problem import load_problem, random_seed

SPARSE_ZEROS = 64  # one element in this many set to zero by "a few zeros"


def signs_flipped(t: torch.Tensor, _g) -> torch.Tensor:
    return -t


def shifted_and_scaled(t: torch.Tensor, _g) -> torch.Tensor:
    # Uniform [0, 1) becomes [-1, 2): both signs, and values past the draw's range.
    return 3.0 * t - 1.0


def a_few_zeros(t: torch.Tensor, g: torch.Generator) -> torch.Tensor:
    keep = torch.rand(t.shape, generator=g, device="cpu").to(t.device) >= 1.0 / SPARSE_ZEROS
    return t * keep


def shifted_scaled_with_zeros(t: torch.Tensor, g: torch.Generator) -> torch.Tensor:
    return a_few_zeros(shifted_and_scaled(t, g), g)


# Two sets, not one per transform: every set is held on the device beside the stored ones, and the largest tasks
# are the ones that come near the GPU's memory.
BEYOND = [("signs flipped", signs_flipped), ("shifted and scaled (3x - 1), a few zeros", shifted_scaled_with_zeros)]


def model_with_bundle_params(problem, task: dict, bundle, device: str) -> torch.nn.Module:
    """The problem's model with the bundle's stored params: whatever build_model's seeding gives on this
    machine, the references must be those of the weights the stored sets were made with."""
    model = problem.build_model().to(device)
    graph = task["graph"]
    with torch.no_grad():
        for spec, value in zip(graph["params"], read_params(bundle, graph, device)):
            lookup(model, spec["name"]).copy_(value)
    return model


def beyond_sets(model, fresh: list[torch.Tensor], seed: int):
    """(how, inputs, references, strict) for each transform of `fresh` the model is defined on, and (how, why)
    for those left out."""
    kept, skipped = [], []
    if not any(t.is_floating_point() for t in fresh):
        return kept, [("every transform", "no floating-point input to move")]
    g = torch.Generator().manual_seed(seed ^ 0x5EED)
    for how, transform in BEYOND:
        inputs = [transform(t, g) if t.is_floating_point() else t for t in fresh]
        try:
            refs, strict = bridge.reference_outputs(model, inputs)
        except Exception as e:  # noqa: BLE001 -- a model that refuses such inputs (BCE outside [0, 1]) is not judged there
            skipped.append((how, f"the model refuses them: {type(e).__name__}: {str(e)[:200]}"))
            continue
        if not bridge.all_finite(refs):
            skipped.append((how, "the reference is not finite there"))
            continue
        kept.append((how, inputs, refs, strict))
    return kept, skipped


def draw(bundle, out, fresh: int = 1, beyond: bool = True, device: str = "cuda") -> dict:
    """Writes the drawn sets into `out` (replacing it) and returns sets.json's contents."""
    if fresh < 1:
        raise ValueError("at least one fresh set is drawn")
    task = read_task(bundle)
    source = Path(bundle) / "problem.py"
    problem = load_problem(source if source.is_file() else task["source"], task.get("precision"))
    model = model_with_bundle_params(problem, task, bundle, device)
    listing = {"sets": [], "skipped": []}
    with BundleWriter(out) as w:
        def write(k, how, is_beyond, inputs, refs, strict):
            bridge.check_outputs(problem, task["graph"], refs)
            for i, t in enumerate(inputs):
                w.write_tensor(f"{k}/in{i}.bin", t)
            for j, t in enumerate(refs):
                w.write_tensor(f"{k}/out{j}.bin", t)
            listing["sets"].append({"dir": str(k), "beyond": is_beyond, "how": how, "strict": strict})

        first_fresh = None
        for k in range(fresh):
            seed = random_seed()
            inputs = problem.draw_inputs(seed, device)
            refs, strict = bridge.reference_outputs(model, inputs)
            write(k, "get_inputs, a seed nobody stored", False, inputs, refs, strict)
            if first_fresh is None:
                first_fresh = (inputs, seed)
        if beyond:
            kept, skipped = beyond_sets(model, *first_fresh)
            for n, (how, inputs, refs, strict) in enumerate(kept):
                write(fresh + n, how, True, inputs, refs, strict)
            listing["skipped"] = [{"how": how, "why": why} for how, why in skipped]
        w.write_json("sets.json", listing)
        hide_references(w.tmp)
        w.commit()
    return listing


def hide_references(folder: Path) -> None:
    """Inputs readable by anyone (a sandboxed candidate's process is given them), references by this user only:
    a candidate's sandbox never shows this folder, and where it runs as another user the files refuse it too."""
    for path in folder.rglob("*"):
        if path.is_dir():
            path.chmod(0o711)
        elif path.name.startswith("out") or path.name == "sets.json":
            path.chmod(0o600)
        else:
            path.chmod(0o644)
    folder.chmod(0o711)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m kforge.drawn_sets", description=__doc__.split("\n\n")[0])
    parser.add_argument("bundle")
    parser.add_argument("out", help="folder to write (replaced)")
    parser.add_argument("--fresh", type=int, default=1, help="fresh draws of get_inputs (default 1)")
    parser.add_argument("--no-beyond", action="store_true", help="no sets beyond get_inputs' distribution")
    parser.add_argument("--device", choices=("cuda", "cpu"), default="cuda")
    parser.add_argument("--quiet", action="store_true", help="no summary on stdout")
    args = parser.parse_args(argv)
    if args.fresh < 1:
        parser.error("--fresh must be at least 1")
    if args.device == "cuda" and not torch.cuda.is_available():
        print("kforge draw-sets: --device cuda but no CUDA device is available (use --device cpu)", file=sys.stderr)
        return 1
    try:
        listing = draw(args.bundle, args.out, args.fresh, not args.no_beyond, args.device)
    except ImportProblemError as e:
        print(f"kforge draw-sets: {e}", file=sys.stderr)
        return 1
    except Exception as e:  # noqa: BLE001
        traceback.print_exc()
        print(f"kforge draw-sets: {args.bundle}: {type(e).__name__}: {e}", file=sys.stderr)
        return 1
    if not args.quiet:
        print(json.dumps({"sets": [{k: s[k] for k in ("dir", "beyond", "how")} for s in listing["sets"]],
                          "skipped": listing["skipped"]}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
