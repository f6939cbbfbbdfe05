"""`python3 bench/merge_suites.py SUITE.json[::GLOB] [SUITE.json[::GLOB] ...] [-o OUT.md] [--json OUT.json] [--partial] [--by-source]`

One table and one summary for a suite that ran as several slices: consecutive device_check.sh runs (the whole
suite takes longer than one device command may run), or slices run side by side, one process per GPU of one
machine. Rows in the order given, the summary recomputed over all of them. The slices should come from one tree
on one machine; the table says which files it merged. A slice that a time limit cut is refused unless --partial
(then its problems not reached stay in the table as failed rows, and the table names the slice).
`::GLOB` keeps only that slice's problems whose names match (fnmatch; several globs separated by commas): for a
slice that also ran problems whose code changed after it, measured again elsewhere."""
import argparse
import fnmatch
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from run_suite import summarise, table  # noqa: E402


def collect(paths: list[str], partial: bool = False, by_source: bool = False) -> tuple[list[dict], list[str]]:
    """The slices' rows (in the order given, or by problem file: slices dealt round-robin to GPUs), and the slices a
    time limit cut."""
    rows, cut = [], []
    for spec in paths:
        p, _, globs = spec.partition("::")
        data = json.loads(Path(p).read_text())
        if not data.get("complete", False):
            if not partial:
                raise SystemExit(f"merge_suites: {p} is not a complete suite run")
            cut.append(p)
        keep = [g for g in globs.split(",") if g]
        rows += [r for r in data["rows"] if not keep or any(fnmatch.fnmatch(r["problem"], g) for g in keep)]
    names = [r["problem"] for r in rows]
    if len(set(names)) != len(names):
        raise SystemExit("merge_suites: a problem appears in more than one slice")
    return (sorted(rows, key=lambda r: r.get("source", "")) if by_source else rows), cut


def merge(paths: list[str], partial: bool = False, by_source: bool = False) -> str:
    return render(*collect(paths, partial, by_source), paths)


def render(rows: list[dict], cut: list[str], paths: list[str]) -> str:
    """The merged table of collect's rows, naming the slices merged and those a time limit cut."""
    text = table(rows, summarise(rows)) + f"\n- merged from: {', '.join(paths)}\n"
    if cut:
        text += f"- cut by a time limit (problems not reached are failed rows): {', '.join(cut)}\n"
    return text


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="merge_suites.py")
    parser.add_argument("suites", nargs="+")
    parser.add_argument("-o", "--out")
    parser.add_argument("--json", help="also write the merged rows and summary as a suite.json")
    parser.add_argument("--partial", action="store_true", help="accept slices a time limit cut")
    parser.add_argument("--by-source", action="store_true", help="rows in the order of their problem files' paths")
    args = parser.parse_args(argv)
    rows, cut = collect(args.suites, args.partial, args.by_source)
    text = render(rows, cut, args.suites)
    if args.out:
        Path(args.out).write_text(text)
    if args.json:
        Path(args.json).write_text(json.dumps({"meta": {"merged_from": args.suites}, "rows": rows, "summary": summarise(rows),
                                               "complete": not cut}, indent=2) + "\n")
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
