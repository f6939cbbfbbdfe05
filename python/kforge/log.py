"""How much kforge's Python front ends say: messages through the `kforge` logger at three levels, and progress bars
(tqdm) over the problems of a long run.

The level comes from `--quiet` / `--verbose` on a front end's command line, else from $KFORGE_LOG_LEVEL (quiet,
info, verbose), which the C++ command sets from its own `--quiet` / `--verbose` for the Python it starts. Quiet:
warnings and errors only, no bars. Verbose: every problem's details as well. Results (tables, JSON) go to stdout
at every level; messages and bars go to stderr."""
import argparse
import logging
import os
import sys

from tqdm import tqdm

LEVEL_ENV = "KFORGE_LOG_LEVEL"
LEVELS = {"quiet": logging.WARNING, "info": logging.INFO, "verbose": logging.DEBUG}
logger = logging.getLogger("kforge")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    group = parser.add_mutually_exclusive_group()
    group.add_argument("-q", "--quiet", action="store_true", help="warnings and errors only, no progress bars")
    group.add_argument("-v", "--verbose", action="store_true", help="details of every problem as well")


def configure(args: argparse.Namespace | None = None) -> str:
    """Sets the `kforge` logger's level (from args, else $KFORGE_LOG_LEVEL, else info) and passes it on to the
    processes started from here; returns the level's name."""
    name = os.environ.get(LEVEL_ENV, "info")
    if args is not None and getattr(args, "quiet", False):
        name = "quiet"
    elif args is not None and getattr(args, "verbose", False):
        name = "verbose"
    if name not in LEVELS:
        raise SystemExit(f"kforge: ${LEVEL_ENV} must be one of {', '.join(LEVELS)}, not {name!r}")
    os.environ[LEVEL_ENV] = name
    logger.setLevel(LEVELS[name])
    if not logger.handlers:
        handler = logging.StreamHandler(sys.stderr)
        handler.setFormatter(logging.Formatter("kforge: %(message)s"))
        logger.addHandler(handler)
        logger.propagate = False
    return name


def quiet() -> bool:
    return logger.getEffectiveLevel() > logging.INFO


def progress(items, what: str):
    """A bar over `items` on stderr, off when quiet and where stderr is not a terminal (a log file gets the
    messages, not a bar's redraws)."""
    return tqdm(items, desc=what, unit=what.split()[-1] if what else "it", file=sys.stderr,
                disable=True if quiet() else None, dynamic_ncols=True, leave=False)


def say(line: str) -> None:
    """A result line on stdout that leaves an open bar where it is."""
    tqdm.write(line, file=sys.stdout)
    sys.stdout.flush()
