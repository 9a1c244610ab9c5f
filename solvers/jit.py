"""Numba flags in one place. ``cache=True`` keeps a new process near 0.15 s instead of seconds of compilation.

A damaged cache file (truncated, overwritten) is a cache miss, not an error: ``_tolerate_damaged_cache``.

Numba keys a cached function on its own file only: a kernel changed in ``kernels.py`` leaves the cached drivers in
``sweep.py`` that call it stale, silently. So the cache is dropped whenever a jitted source of ``solvers/`` changes
(``drop_stale_cache``, run once on import; ``JITTED`` names them).
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import tempfile
import types
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent
STAMP = "numba-sources.sha256"


def cache_dir_fallback(root: Path = ROOT) -> str | None:
    """Where numba should cache when it cannot beside the sources (a read-only install) and NUMBA_CACHE_DIR is not
    set: a per-user directory under the system's temporary directory (numba would try HOME, which may be read-only
    too, and then fail every command). None when the sources' own __pycache__ is writable."""
    if os.environ.get("NUMBA_CACHE_DIR"):
        return None
    pycache = root / "__pycache__"
    try:
        pycache.mkdir(exist_ok=True)
        if os.access(pycache, os.W_OK):
            return None
    except OSError:
        pass
    return os.path.join(tempfile.gettempdir(), f"planner-numba-cache-{os.getuid()}")


_fallback = cache_dir_fallback()
if _fallback:
    os.environ["NUMBA_CACHE_DIR"] = _fallback  # must be set before numba is imported

import numba  # noqa: E402
from numba.core import caching as _caching  # noqa: E402

# Unpickling a damaged cache file (truncated, overwritten, written by another build) can raise almost anything
# (UnpicklingError, EOFError, OverflowError, ValueError, ...): every exception of loading one is a cache miss.
_DAMAGED = Exception


def _tolerate_damaged_cache(cache_file_cls=_caching.IndexDataCacheFile) -> None:
    """Make a damaged numba cache file a cache miss: numba would raise from unpickling it on every command. The
    file is removed and the function compiled afresh (and cached again), as if it had never been cached."""
    load_index, load_data = cache_file_cls._load_index, cache_file_cls._load_data
    if getattr(load_index, "planner_tolerant", False):
        return

    def _load_index(self):
        try:
            return load_index(self)
        except _DAMAGED:
            _remove(self._index_path)
            return {}

    def _load_data(self, name):
        try:
            return load_data(self, name)
        except _DAMAGED:
            _remove(self._data_path(name))
            raise OSError(f"damaged numba cache file {name}") from None  # numba's load() reads OSError as a miss

    _load_index.planner_tolerant = True  # type: ignore[attr-defined]  # a mark on the function, read by getattr
    cache_file_cls._load_index, cache_file_cls._load_data = _load_index, _load_data


def _remove(path) -> None:
    try:
        os.unlink(path)
    except OSError:
        pass


_tolerate_damaged_cache()


# The sources whose code numba compiles, or that compiled code reads (constants, the slots): a change elsewhere in
# solvers/ (the MILPs, the objectives) leaves every kernel as it was, and must not cost a recompilation.
JITTED = ("jit.py", "bruteforce.py", "perf", "sim")


def drop_stale_cache(root: Path = ROOT) -> bool:
    """Delete numba's cache files under ``root`` when the jitted sources' digest (``JITTED``) differs from the one
    recorded beside them; returns True if it dropped them. A read-only install is left as it is."""
    digest = hashlib.sha256()
    for path in sorted(p for p in root.rglob("*.py") if p.relative_to(root).parts[0] in JITTED):
        digest.update(path.relative_to(root).as_posix().encode())
        digest.update(path.read_bytes())
    stamp = root / "__pycache__" / STAMP
    try:
        if stamp.is_file() and stamp.read_text() == digest.hexdigest():
            return False
        for cached in [*root.rglob("*.nbi"), *root.rglob("*.nbc")]:
            cached.unlink(missing_ok=True)
        stamp.parent.mkdir(exist_ok=True)
        stamp.write_text(digest.hexdigest())
    except OSError:
        return False
    return True


drop_stale_cache()

JIT_FLAGS: dict[str, Any] = dict(cache=True, nogil=True, fastmath=False, error_model="numpy")
PARALLEL_FLAGS: dict[str, Any] = dict(JIT_FLAGS, parallel=True)


def njit(fn=None, **extra):
    """``numba.njit`` with the project's flags."""
    flags = dict(JIT_FLAGS, **extra)
    if fn is None:
        return lambda f: numba.njit(**flags)(f)
    return numba.njit(**flags)(fn)


class Driver:
    """A parallel driver (stumpy's pattern: serial kernel, parallel driver), compiled twice from one source: with
    ``parallel=True``, and as plain serial code (``prange`` runs as ``range``). Its last argument, the threads it
    splits its work over (``threads_for``), picks the build:
    - SERIAL (a call of a point or two, as a frontier's or an estimate's): the serial build, with no parallel region
      and no thread setting to change and restore, which cost more than such a call's work;
    - 1 (below MIN_PARALLEL_CANDIDATES): the parallel build on the calling thread alone. numba compiles a parallel
      loop's body apart (a gufunc) and skips its arrays' reference counts there, so a call of more than a few
      points runs 2-3x faster in it than in the serial build (benchmarks: 128 colocated points 23 against 52 us,
      500 decode rows 48 against 132 us);
    - more: the parallel build on that many threads.
    Each output row is computed by the same code in either build, to the same bits. Called from Python only."""

    def __init__(self, fn):
        self.py_func = fn
        self.parallel = numba.njit(**PARALLEL_FLAGS)(fn)
        self.serial = numba.njit(**JIT_FLAGS)(renamed(fn, "_serial"))  # its own name: its own cache files
        self.__name__, self.__qualname__, self.__doc__ = fn.__name__, fn.__qualname__, fn.__doc__
        self.__module__ = fn.__module__
        DRIVERS.append(self)

    def __call__(self, *args):
        threads = args[-1]
        if threads == SERIAL:
            return self.serial(*args)
        if threads == 1:
            with on_calling_thread():
                return self.parallel(*args)
        return self.parallel(*args)

    @property
    def dispatchers(self):
        return (self.serial, self.parallel)


DRIVERS: list[Driver] = []  # every driver defined, for ``compile_both_builds``


def compile_both_builds() -> int:
    """Compile (or load from the cache) each driver's other build for every signature one build has: a small
    warm-up call reaches only the serial build, and a large solve must not compile the parallel one in its time
    limit. Returns how many builds it compiled or loaded."""
    done = 0
    for driver in DRIVERS:
        signatures = {tuple(sig) for d in driver.dispatchers for sig in d.signatures}
        for d in driver.dispatchers:
            for sig in signatures - {tuple(s) for s in d.signatures}:
                d.compile(sig)
                done += 1
    return done


def renamed(fn, suffix: str):
    """A copy of the function ``fn`` whose name ends in ``suffix``: numba names a function's cache files by its
    qualified name and line, and keys them without its flags, so a second build of one function needs another name."""
    code = fn.__code__.replace(co_name=fn.__name__ + suffix, co_qualname=fn.__qualname__ + suffix)
    twin = types.FunctionType(code, fn.__globals__, fn.__name__ + suffix, fn.__defaults__, fn.__closure__)
    twin.__qualname__, twin.__module__ = fn.__qualname__ + suffix, fn.__module__
    return twin


def njit_parallel(fn) -> Driver:
    return Driver(fn)


prange = numba.prange


def thread_count() -> int:
    """Threads the parallel drivers split their work over (numba's setting: NUMBA_NUM_THREADS or the cores)."""
    return int(numba.get_num_threads())


SERIAL = 0  # ``threads_for``'s answer for work a serial build does faster than any parallel region (``Driver``)
# A call of at most this many candidates runs a driver's serial build: about one decode breakdown's work (a
# colocated point is 1, a decode row 32: solvers.perf.sweep.BREAKDOWN_WORK).
MAX_SERIAL_CANDIDATES = 32
# A parallel region over all threads pays for itself above this many candidates (about 20 ms of one core's
# scoring). Below it the drivers run on the calling thread alone: each region ends at a barrier that waits for its
# slowest thread, and on a machine whose cores are busy with other work a descheduled thread costs a scheduler
# slice per region (a solve of bank-2mw, 81 small regions, took 0.33 s of kernel time on one thread and 1.1-3.8 s
# on two, docs/PERFORMANCE.md).
MIN_PARALLEL_CANDIDATES = 2_000_000


def threads_for(candidates: int) -> int:
    """The threads a parallel driver should split ``candidates`` units of work over: SERIAL (its serial build) up
    to MAX_SERIAL_CANDIDATES, 1 (its parallel build on the calling thread) below MIN_PARALLEL_CANDIDATES, else
    numba's thread count."""
    if candidates <= MAX_SERIAL_CANDIDATES:
        return SERIAL
    return thread_count() if candidates >= MIN_PARALLEL_CANDIDATES else 1


@contextlib.contextmanager
def on_calling_thread():
    """numba's parallel regions launched meanwhile from this thread run on it alone (numba's thread count is per
    calling thread)."""
    previous = numba.get_num_threads()
    if previous != 1:
        numba.set_num_threads(1)
    try:
        yield
    finally:
        if previous != 1:
            numba.set_num_threads(previous)
