"""Numba flags in one place. ``cache=True`` keeps a new process near 0.15 s instead of seconds of compilation.

Numba keys a cached function on its own file only: a kernel changed in ``kernels.py`` leaves the cached drivers in
``sweep.py`` that call it stale, silently. So the cache is dropped whenever any source of ``solvers/`` changes
(``drop_stale_cache``, run once on import).
"""

from __future__ import annotations

import hashlib
from pathlib import Path

import numba

ROOT = Path(__file__).resolve().parent
STAMP = "numba-sources.sha256"


def drop_stale_cache(root: Path = ROOT) -> bool:
    """Delete numba's cache files under ``root`` when the sources' digest differs from the one recorded beside
    them; returns True if it dropped them. A read-only install is left as it is."""
    digest = hashlib.sha256()
    for path in sorted(root.rglob("*.py")):
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

JIT_FLAGS = dict(cache=True, nogil=True, fastmath=False, error_model="numpy")
PARALLEL_FLAGS = dict(JIT_FLAGS, parallel=True)


def njit(fn=None, **extra):
    """``numba.njit`` with the project's flags."""
    flags = dict(JIT_FLAGS, **extra)
    if fn is None:
        return lambda f: numba.njit(**flags)(f)
    return numba.njit(**flags)(fn)


def njit_parallel(fn):
    return numba.njit(**PARALLEL_FLAGS)(fn)


prange = numba.prange


def thread_count() -> int:
    """Threads the parallel drivers split their work over (numba's setting: NUMBA_NUM_THREADS or the cores)."""
    return int(numba.get_num_threads())
