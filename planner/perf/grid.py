"""The search space, defined once: the batch grid and the parallel layouts (tensor x pipeline x expert) of a
replica, and the (attention chips, FFN chips) layouts of an attention/FFN pair. The engine, the frontier,
``estimate`` and calibration all search these."""

from __future__ import annotations

import functools

import numpy as np

from planner.catalog import Hardware, Model

# The one batch grid (concurrent streams per replica) that the engine, the frontier and calibration search:
# geometric from 1 to 8192, 160 points before rounding.
BATCHES = np.unique(np.round(np.geomspace(1, 8192, 160))).astype(np.float64)


# ---- the parallelism grid -----------------------------------------------------------------------------------
def tp_options(hw: Hardware, model: Model) -> list[int]:
    """Tensor-parallel degrees: powers of two up to the scale-up domain (and the domain itself), never more
    than the model has attention heads."""
    domain = int(hw.chip.scale_up.domain_chips.value)
    limit = min(domain, model.heads)
    opts = {1 << i for i in range(16) if (1 << i) <= limit}
    if domain <= model.heads:
        opts.add(domain)
    return sorted(opts)


def parallel_grid(hw: Hardware, model: Model, chips: int | None = None) -> np.ndarray:
    """Rows of (tp, pp, ep) a replica may use; with ``chips`` given, only tp * pp == chips."""
    grid = _grid(tuple(tp_options(hw, model)), model.layers, model.is_moe)
    if chips is not None:
        grid = grid[grid[:, 0] * grid[:, 1] == chips]
    return grid.copy()


@functools.lru_cache(maxsize=256)
def _grid(tps: tuple[int, ...], layers: int, moe: bool) -> np.ndarray:
    rows = [(tp, pp, ep) for tp in tps for pp in range(1, layers + 1)
            for ep in ((0, 1) if (moe and tp > 1) else (0,))]
    return np.array(rows, dtype=np.float64).reshape(-1, 3)


# ---- attention/FFN pairs (MODEL.md 10) -----------------------------------------------------------------------
MICRO_BATCHES = 2.0  # micro-batches ping-ponging between the attention and FFN pools


# FFN pool sizes tried, in racks of the FFN system
FFN_RACKS = (0.25, 0.5, 1.0, 2.0, 3.0, 4.0, 6.0, 8.0, 12.0, 16.0)


def split_grid(hw_a: Hardware, hw_f: Hardware, model: Model) -> np.ndarray:
    """Rows of (attention chips, FFN chips, attention mode) an attention/FFN pair may use: A's tensor-parallel
    options, 1/4 to 16 racks of F, data-parallel attention as well for MoE models."""
    rows = [(ta, max(1.0, round(r * hw_f.chips_per_rack)), ep) for ta in tp_options(hw_a, model)
            for r in FFN_RACKS for ep in ((0.0, 1.0) if model.is_moe and ta > 1 else (0.0,))]
    return np.array(rows, dtype=np.float64)
