"""Ctrl-C that always stops a command (exit 130, one line, files whole).

Python turns SIGINT into KeyboardInterrupt in the main thread, but an interrupt that lands inside a callback from C
(numba's compiler notifies llvmlite's object cache through ctypes) is printed as "Exception ignored" and swallowed,
and the command then runs to the end and exits 0. So the CLI's handler also starts a watchdog: if the process is
still running a moment after the interrupt, the interrupt was lost, and the watchdog ends the process itself,
once no file is half written (``planner.writing.atomic_write`` counts its writes in progress).
"""

from __future__ import annotations

import os
import signal
import sys
import threading
import time
from typing import NoReturn

GRACE_S = 1.0  # time the KeyboardInterrupt has to end the command before the watchdog does
WRITE_WAIT_S = 10.0  # longest the watchdog waits for a file being written to be renamed into place

state = {"interrupted": False, "reported": False, "writing": 0}
_lock = threading.Lock()
# Called with the exit status just before the process ends itself (a ``planner serve`` child sends it to the
# command's caller, which otherwise hears only that the connection closed).
before_exit: list = []


def _exit(code: int) -> NoReturn:
    for hook in before_exit:
        try:
            hook(code)
        except Exception:  # noqa: BLE001 - the process ends regardless
            pass
    os._exit(code)


def report() -> None:
    """Say so once, on stderr."""
    with _lock:
        if state["reported"]:
            return
        state["reported"] = True
    try:
        sys.stderr.write("error: interrupted\n")
        sys.stderr.flush()
    except (OSError, ValueError):
        pass


def stop(code: int) -> NoReturn:
    """End the command with ``code`` after an interrupt, at once (``os._exit``, after flushing what is buffered),
    never through the interpreter's finalization: a native thread still running then (a solver's worker,
    ``solvers.backends.on_worker``, inside its C++ core, or a library's pool) can abort the process ("terminate
    called without an active exception": exit -6 in place of 130), as Ctrl-C did in a clean clone's CI while the
    build-out's comparisons solved. Files are written whole or not at all (``planner.writing``), so nothing the
    finalization would do is owed."""
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):
            pass
    _exit(code)


def _watchdog() -> None:
    time.sleep(GRACE_S)
    deadline = time.monotonic() + WRITE_WAIT_S
    while state["writing"] > 0 and time.monotonic() < deadline:
        time.sleep(0.01)
    report()
    _exit(130)


def _handler(signum, frame) -> None:
    if state["interrupted"]:  # a second Ctrl-C: stop now
        report()
        _exit(130)
    state["interrupted"] = True
    threading.Thread(target=_watchdog, name="planner-interrupt", daemon=True).start()
    raise KeyboardInterrupt


def _unraisable(hook_args, default=sys.unraisablehook) -> None:
    """Python prints an exception it cannot raise (one from a C callback) as "Exception ignored"; a swallowed
    interrupt is not an error to print: the watchdog reports it."""
    if isinstance(hook_args.exc_value, KeyboardInterrupt):
        state["interrupted"] = True
        return
    default(hook_args)


def install() -> None:
    """Install the handler (CLI only: a library leaves the host's handlers alone). Main thread only."""
    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGINT, _handler)
        sys.unraisablehook = _unraisable


class writing:
    """Context of one file write: the watchdog does not end the process inside one."""

    def __enter__(self):
        with _lock:
            state["writing"] += 1

    def __exit__(self, *exc):
        with _lock:
            state["writing"] -= 1
        return False
