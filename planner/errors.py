"""Errors that reach the user as one clear message and an exit code (see the interface's exit codes)."""

from __future__ import annotations


class PlannerError(Exception):
    """Base class: the CLI prints the message (no traceback) and exits with ``exit_code``."""

    exit_code = 1


class InputError(PlannerError):
    """Bad input: a scenario, a catalog id or a command-line value. Exit code 2.

    The message names the file, the line where known, the field path and what was expected.
    """

    exit_code = 2

    def __init__(self, message: str, *, file: str | None = None, line: int | None = None, field: str | None = None):
        self.file, self.line, self.field, self.message = file, line, field, message
        where = ""
        if file:
            where = f"{file}:{line}: " if line else f"{file}: "
        what = f"{field}: " if field else ""
        super().__init__(f"{where}{what}{message}")


    def in_file(self, file: str) -> "InputError":
        """The same error naming ``file``, for one raised where the file was not known (a scenario's field found
        wanting only while it is planned)."""
        return self if self.file else InputError(self.message, file=file, line=self.line, field=self.field)


class InfeasibleError(PlannerError):
    """No feasible plan exists. Exit code 3. ``plan`` carries the report of what was tried, where there is one."""

    exit_code = 3

    def __init__(self, message: str, plan=None):
        self.plan = plan
        super().__init__(message)


class CheckFailed(PlannerError):
    """A plan failed ``planner check``: one or more constraints or reported figures do not hold. Exit code 4."""

    exit_code = 4

    def __init__(self, message: str, checks=None):
        self.checks = checks or []
        super().__init__(message)



def output_error(exc: BaseException) -> str | None:
    """One line for an OSError of a write that could not be completed (ENOSPC, EFBIG, EDQUOT, EPIPE), naming what
    was being written; None for any other exception. The file being written is whole or absent (an ``--out`` file
    is renamed into place only once it is whole, see planner/writing.py)."""
    import errno

    codes = {errno.ENOSPC: "disk full", errno.EFBIG: "file too large", errno.EPIPE: "the reader has gone"}
    if hasattr(errno, "EDQUOT"):
        codes[errno.EDQUOT] = "disk quota exceeded"
    if not isinstance(exc, OSError) or exc.errno not in codes:
        return None
    where = exc.filename if exc.filename is not None else "standard output"  # files are named (atomic_write)
    return f"cannot write {where}: {exc.strerror or exc} ({codes[exc.errno]})"
