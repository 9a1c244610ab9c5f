"""A counter-based random generator that the jitted engine and its plain-Python twin compute alike: the draw
``j`` of request ``i`` is ``splitmix64(seed, 8 i + j)`` mapped to (0, 1). Stateless, so the order in which events
are handled never changes which request gets which numbers."""

from __future__ import annotations

import math

import numpy as np

from solvers.jit import njit

MASK = (1 << 64) - 1
DRAWS_PER_REQUEST = 8  # slots of one request's draws (solvers.sim.engine.U_*)
INV_2_53 = 1.0 / 9007199254740992.0


@njit
def uniform(seed, index):
    """splitmix64 of ``seed`` and ``index``, its top 53 bits as a float in (0, 1)."""
    z = np.uint64(seed) + np.uint64(index + 1) * np.uint64(0x9E3779B97F4A7C15)
    z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    z = z ^ (z >> np.uint64(31))
    return (float(z >> np.uint64(11)) + 0.5) * INV_2_53


def uniform_py(seed: int, index: int) -> float:
    """The twin of ``uniform``: the same integer arithmetic, wrapped to 64 bits by hand."""
    z = (seed + (index + 1) * 0x9E3779B97F4A7C15) & MASK
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & MASK
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & MASK
    z = z ^ (z >> 31)
    return ((z >> 11) + 0.5) * INV_2_53


@njit
def from_quantiles(quantiles, u):
    """A draw from the distribution whose inverse CDF at (k + 0.5) / K is ``quantiles[k]``: linear between
    the points, flat beyond the outer two."""
    k = quantiles.shape[0]
    if k == 1:
        return quantiles[0]
    x = u * k - 0.5
    if x <= 0.0:
        return quantiles[0]
    if x >= k - 1:
        return quantiles[k - 1]
    i = int(x)
    return quantiles[i] + (x - i) * (quantiles[i + 1] - quantiles[i])


def from_quantiles_py(quantiles, u: float) -> float:
    k = len(quantiles)
    if k == 1:
        return float(quantiles[0])
    x = u * k - 0.5
    if x <= 0.0:
        return float(quantiles[0])
    if x >= k - 1:
        return float(quantiles[k - 1])
    i = int(x)
    return float(quantiles[i] + (x - i) * (quantiles[i + 1] - quantiles[i]))


def exponential_py(u: float) -> float:
    return -math.log(u)
