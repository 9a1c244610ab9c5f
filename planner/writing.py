"""Writing a user's file atomically: a crash, a full disk or Ctrl-C never leaves a partial file behind. Below
every layer that writes files (measurements, sweeps, exports, reports: docs/ARCHITECTURE.md "Layers")."""

from __future__ import annotations

import contextlib
import os
import tempfile

from planner.interrupts import writing


def atomic_write(path, data: bytes) -> None:
    """Write ``data`` to a temporary file beside ``path``, then rename it over ``path``. The file gets the
    permissions a plain ``open`` would give it (0666 less the umask), not mkstemp's 0600."""
    path = os.fspath(path)
    directory = os.path.dirname(os.path.abspath(path))
    with writing():  # an interrupt's watchdog waits for this file to be whole (planner/interrupts.py)
        try:
            fd, tmp = tempfile.mkstemp(dir=directory, prefix=".tmp-", suffix=os.path.basename(path))
        except OSError as exc:
            raise _naming(exc, path) from None
        try:
            with os.fdopen(fd, "wb") as fh:
                fh.write(data)
            umask = os.umask(0)
            os.umask(umask)
            os.chmod(tmp, 0o666 & ~umask)
            os.replace(tmp, path)
        except BaseException as exc:
            if os.path.exists(tmp):
                os.unlink(tmp)
            if isinstance(exc, OSError):  # a full disk (ENOSPC, EFBIG): the old file stays, no partial one
                raise _naming(exc, path) from None
            raise


def _naming(exc: OSError, path: str) -> OSError:
    """The error naming the file the user asked for, not the temporary one (an fdopen'd write names none)."""
    if exc.filename == path:
        return exc
    return type(exc)(exc.errno, exc.strerror, path) if exc.errno is not None else exc


@contextlib.contextmanager
def locked(path):
    """Hold an exclusive lock on ``path``'s sibling ``.PATH.lock`` for a read-modify-write of ``path``: two writers
    (two refits of data/efficiency.yaml) take turns, each merging into what the other wrote, instead of the later
    one writing back a copy it read before the earlier one wrote."""
    path = os.fspath(path)
    with _held(os.path.join(os.path.dirname(os.path.abspath(path)), f".{os.path.basename(path)}.lock")):
        yield


FOLDER_LOCK = ".planner.lock"  # the lock file of a folder the commands write (solve --out, export --out)


@contextlib.contextmanager
def folder_locked(out):
    """Hold an exclusive lock on the folder ``out``'s lock file while its files are written: two commands writing
    one folder at once take turns, so that each writes all its files, its manifest last, before the other starts
    (issue 43: two ``export --out`` into one folder left a manifest describing the other engine's files)."""
    with _held(os.path.join(os.fspath(out), FOLDER_LOCK)):
        yield


@contextlib.contextmanager
def _held(lock_path: str):
    """An exclusive flock on ``lock_path`` (made if missing) for the body's time."""
    import fcntl

    with open(lock_path, "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)
