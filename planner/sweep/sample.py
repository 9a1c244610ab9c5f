"""The variants of a sweep: each axis's values, drawn as a full grid, a Latin hypercube or Monte Carlo with a seed
(numpy's default generator), so the same file and seed give the same variants on any engine."""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass
from statistics import NormalDist

import numpy as np

from planner.errors import InputError


@dataclass(frozen=True)
class ResolvedAxis:
    """An axis with its values' source made concrete: a list, a [lo, hi] range, or a distribution."""

    name: str
    values: tuple | None
    low: float | None
    high: float | None
    steps: int
    normal: tuple[float, float] | None


def grid_values(axis: ResolvedAxis) -> list:
    if axis.values is not None:
        return list(axis.values)
    if axis.normal is not None:
        raise InputError("a grid takes values or a range; a normal distribution needs lhs or monte_carlo",
                         field=f"axes.{axis.name}")
    return np.linspace(axis.low, axis.high, axis.steps).tolist()


def from_unit(axis: ResolvedAxis, u: float):
    """The axis's value at quantile ``u`` in (0, 1)."""
    if axis.values is not None:
        return axis.values[min(int(u * len(axis.values)), len(axis.values) - 1)]
    if axis.normal is not None:
        return float(NormalDist(*axis.normal).inv_cdf(min(max(u, 1e-12), 1 - 1e-12)))
    return float(axis.low + u * (axis.high - axis.low))


def variants(axes: list[ResolvedAxis], method: str, n: int | None, seed: int) -> list[dict]:
    """One mapping axis name -> value per variant, in a fixed order."""
    if method == "grid":
        grids = [grid_values(a) for a in axes]
        total = math.prod(len(g) for g in grids)
        if total > 1_000_000:
            raise InputError(f"the grid has {total:,} variants; at most 1,000,000 (use lhs or monte_carlo)",
                             field="samples")
        return [dict(zip((a.name for a in axes), combo)) for combo in itertools.product(*grids)]
    rng = np.random.default_rng(seed)
    if method == "lhs":  # one sample in each of n strata per axis, the strata paired at random
        u = np.stack([(rng.permutation(n) + rng.random(n)) / n for _ in axes], axis=1)
    else:
        u = rng.random((n, len(axes)))
    return [{a.name: from_unit(a, float(u[i, k])) for k, a in enumerate(axes)} for i in range(n)]
