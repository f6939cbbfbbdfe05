"""The `kforge` command of an installed package (`pip install .`): the C++ command built into the package
(`kforge/_bin/kforge`), told where this package and this interpreter are, since the command runs parts of its work
as `python -m kforge.<module>` and would otherwise look for them in the clone it was built from."""
import os
import sys
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent
BINARY = PACKAGE / "_bin" / "kforge"


def installed_binary() -> Path | None:
    """The command inside this package, where the package was installed with it (None in a clone's python/)."""
    return BINARY if BINARY.is_file() and os.access(BINARY, os.X_OK) else None


def tell_the_command() -> None:
    """Where the installed command's `python -m kforge.*` finds this package and its interpreter (a virtual
    environment's, which `python3` on PATH need not be); for the processes started from here on."""
    os.environ.setdefault("KFORGE_PYTHON_DIR", str(PACKAGE.parent))
    os.environ.setdefault("KFORGE_PYTHON", sys.executable)


if installed_binary():  # Python code that runs the command (kforge.modelnew_eval, the agent, the pool) imports this
    tell_the_command()


def main() -> None:
    binary = installed_binary()
    if binary is None:
        sys.exit(f"kforge: no kforge command in {PACKAGE} (a clone's package: run build/kforge, or pip install the "
                 "repository)")
    tell_the_command()
    os.execv(binary, [str(binary), *sys.argv[1:]])


if __name__ == "__main__":
    main()
