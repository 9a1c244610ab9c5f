"""A sweep's worker processes die with their parent, whatever ends it (issue 28).

* Each worker of the local process pool starts with ``worker_init(parent pid)``: on Linux it asks the kernel for
  SIGKILL when its parent dies (``prctl(PR_SET_PDEATHSIG)``), which holds even while the worker is inside a solver's
  C++ core; everywhere (macOS has no such call) a watchdog thread ends the worker once ``os.getppid()`` is no longer
  the parent (the parent died and the worker was re-parented). It ignores SIGINT: a Ctrl-C reaches the whole process
  group, and the parent, not each worker, answers it.
* The parent ends its pool on any exception (an interrupt, SIGTERM made one by ``sigterm_as_interrupt``): the
  waiting futures are cancelled and the workers killed, not waited for.
"""

from __future__ import annotations

import os
import signal
import sys
import threading
import time

PR_SET_PDEATHSIG = 1  # linux/prctl.h
WATCH_S = 0.25  # how often a worker looks for its parent


def _parent_death_signal() -> bool:
    """PR_SET_PDEATHSIG = SIGKILL for this process (Linux); False where it is not available."""
    if not sys.platform.startswith("linux"):
        return False
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        return libc.prctl(PR_SET_PDEATHSIG, int(signal.SIGKILL), 0, 0, 0) == 0
    except (OSError, AttributeError):
        return False


def _watch(parent_pid: int) -> None:
    while True:
        if os.getppid() != parent_pid:
            os._exit(1)  # the parent is gone: nothing waits for this worker's answer
        time.sleep(WATCH_S)


def worker_init(parent_pid: int) -> None:
    """The process pool's initializer: die with ``parent_pid`` (see the module's words)."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    _parent_death_signal()
    if os.getppid() != parent_pid:  # the parent died before the death signal was asked for
        os._exit(1)
    threading.Thread(target=_watch, args=(parent_pid,), name="planner-parent-watch", daemon=True).start()


def end_pool(pool) -> None:
    """Stop a ProcessPoolExecutor now: cancel what waits, kill the workers (a solve may run for minutes), reap
    them."""
    processes = list((getattr(pool, "_processes", None) or {}).values())
    pool.shutdown(wait=False, cancel_futures=True)
    for p in processes:
        try:
            p.kill()
        except (OSError, ValueError, AttributeError):
            pass
    for p in processes:
        try:
            p.join(timeout=5)
        except (OSError, ValueError, AssertionError, AttributeError):
            pass


def sigterm_as_interrupt() -> None:
    """SIGTERM handled as SIGINT is (the CLI's interrupt path: one ``error: interrupted`` line, exit 130, files
    whole), so that a sweep ended by ``timeout`` or a scheduler ends its pool too. Main thread only."""
    if threading.current_thread() is not threading.main_thread():
        return
    handler = signal.getsignal(signal.SIGINT)
    if not callable(handler):
        handler = signal.default_int_handler
    signal.signal(signal.SIGTERM, handler)
