"""Reading a user's input file safely: the size is checked before anything is read, at most the limit plus one
byte is read, and only regular files are opened (a FIFO with no writer would block, ``/dev/zero`` never ends)."""

from __future__ import annotations

import os
import stat
from pathlib import Path

from planner.errors import InputError


def read_bytes_limited(path: Path, limit: int, expected: str) -> bytes:
    """The bytes of ``path``, or InputError naming the file and what was expected (``expected``: "a scenario YAML
    file", say)."""
    name = str(path)
    try:
        info = os.stat(path)
    except FileNotFoundError:
        raise InputError(f"no such file; expected {expected}", file=name) from None
    except OSError as exc:
        raise InputError(f"cannot be read ({exc.strerror or exc}); expected {expected}", file=name) from None
    if stat.S_ISDIR(info.st_mode):
        raise InputError(f"is a directory; expected {expected}", file=name)
    if not stat.S_ISREG(info.st_mode):
        raise InputError(f"is not a regular file (a device, pipe or socket); expected {expected}", file=name)
    if info.st_size > limit:
        raise InputError(f"is larger than {limit} bytes; expected {expected}", file=name)
    try:
        with open(path, "rb") as fh:
            raw = fh.read(limit + 1)
    except OSError as exc:
        raise InputError(f"cannot be read ({exc.strerror or exc}); expected {expected}", file=name) from None
    if len(raw) > limit:  # it grew while we looked
        raise InputError(f"is larger than {limit} bytes; expected {expected}", file=name)
    return raw
