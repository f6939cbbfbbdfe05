"""`python3 bench/merge_suites.py SUITE.json[::GLOB] [SUITE.json[::GLOB] ...] [-o OUT.md]`

One table and one summary for a suite that ran as several consecutive device_check.sh slices (the whole suite
takes longer than one device command may run): rows in the order given, the summary recomputed over all of
them. The slices should come from one tree on one machine, back to back; the table says which files it merged.
`::GLOB` keeps only that slice's problems whose names match (fnmatch; several globs separated by commas): for a
slice that also ran problems whose code changed after it, measured again elsewhere."""
import argparse
import fnmatch
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from run_suite import summarise, table  # noqa: E402


def merge(paths: list[str]) -> str:
    rows = []
    for spec in paths:
        p, _, globs = spec.partition("::")
        data = json.loads(Path(p).read_text())
        if not data.get("complete", False):
            raise SystemExit(f"merge_suites: {p} is not a complete suite run")
        keep = [g for g in globs.split(",") if g]
        rows += [r for r in data["rows"] if not keep or any(fnmatch.fnmatch(r["problem"], g) for g in keep)]
    names = [r["problem"] for r in rows]
    if len(set(names)) != len(names):
        raise SystemExit("merge_suites: a problem appears in more than one slice")
    return table(rows, summarise(rows)) + f"\n- merged from: {', '.join(paths)}\n"


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="merge_suites.py")
    parser.add_argument("suites", nargs="+")
    parser.add_argument("-o", "--out")
    args = parser.parse_args(argv)
    text = merge(args.suites)
    if args.out:
        Path(args.out).write_text(text)
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
