"""User-facing errors of the Python bridge."""


class ImportProblemError(Exception):
    """A problem file kforge cannot import. The message names the file, the FX node and op when the fault
    lies in one, and the reason, so a user can find the line to change without reading a traceback."""

    def __init__(self, file, reason: str, node: str | None = None, op: str | None = None):
        self.file, self.reason, self.node, self.op = str(file), reason, node, op
        place = " ".join(p for p in (node and f"node '{node}'", op and f"({op})") if p)
        super().__init__(f"{file}: {place}: {reason}" if place else f"{file}: {reason}")
