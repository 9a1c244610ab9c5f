"""Whether numba's cache holds the compiled kernels, answered without importing what compiles them (the simulator,
polars), so that a warm command pays nothing for asking. ``planner.warmup`` fills the cache."""

from __future__ import annotations

import os
from pathlib import Path

from solvers.jit import ROOT

COLD_ESTIMATE = "about a minute on 2 cores"
# A driver of each layer: when these are cached, so is what they call.
SENTINELS = (("perf", "sweep"), ("perf", "kernels"), ("sim", "engine"))


def cache_roots() -> list[Path]:
    """Where numba keeps the cache: beside the sources, or under NUMBA_CACHE_DIR (solvers/jit.py's fallback)."""
    roots = [ROOT]
    if os.environ.get("NUMBA_CACHE_DIR"):
        roots.append(Path(os.environ["NUMBA_CACHE_DIR"]))
    return roots


def kernels_cached() -> bool:
    """True when every sentinel module has cached kernels (numba's ``.nbi`` index files)."""
    return all(any(package in p.parts for root in cache_roots() for p in root.rglob(f"{module}.*.nbi"))
               for package, module in SENTINELS)
