"""Spare replicas (issue 41 item 3; docs/OPTIMIZER.md 19): a pool that must survive a failure holds replicas beyond
what its load needs.

A workload's rule (``Demand.redundancy``, from its ``spare_replicas`` or the site's ``redundancy``) gives each of its
pools K spares at most: ``n+K`` K of them, ``rack`` as many of the pool's replicas as one rack holds (a pipeline
stage of s chips lives in one rack of R chips, so a rack holds floor(R / s) stages, each of its own replica at
worst; a stage wider than a rack is one replica a rack). A pool of x replicas needs min(K, x) spares: losing K
replicas of a pool smaller than K loses all x of them, and x more (of the same fractional size) carry its load.

The MILP charges a column's spares through its chips, (1 + f) per replica with f = min(K, x0) / x0 at the pool
x0 the column is assumed to have (``assumed_pool``: its workload's sized demand on it alone); where the plan
deploys a smaller pool, f is too small and the column is taken again at the pool it deploys
(``planner.fleet.solve.size_spares``), as the decode queues are (OPTIMIZER.md 18). A row's ``spare_replicas``
is f x its replicas, at least min(K, x) in a plan that holds (``check``: ``spares W/ROLE/HW``).
"""

from __future__ import annotations

import math
import re

import numpy as np

REDUNDANCY = ("none", "n+1", "rack")  # site.redundancy; a workload's spare_replicas k reads as n+k


def spare_rule(text: str) -> tuple[str, int]:
    """("none" | "n+" | "rack", K of n+K): ValueError for anything else."""
    if text in ("none", "rack"):
        return text, 0
    m = re.fullmatch(r"n\+(\d+)", str(text))
    if m and 1 <= int(m.group(1)) <= 10_000:
        return "n+", int(m.group(1))
    raise ValueError(f"redundancy is {text!r}, not none, rack or n+K (1 <= K <= 10,000)")


def stages_a_rack_holds(stage_chips: float, chips_per_rack: float) -> float:
    """Replicas of a pool one rack can hold at worst, one stage of each: floor(R / s), one for a stage wider
    than a rack."""
    if stage_chips <= 0:
        return 0.0
    return float(max(1, math.floor(chips_per_rack / stage_chips + 1e-9)))


def spare_count(redundancy: str, sides) -> float:
    """K: the most spares a pool needs under ``redundancy``; ``sides``: (chips, pipeline stages, chips per rack)
    of each system a replica spans (a split replica's two), for ``rack``."""
    kind, k = spare_rule(redundancy)
    if kind == "none":
        return 0.0
    if kind == "n+":
        return float(k)
    return max((stages_a_rack_holds(chips / max(stages, 1), per_rack) for chips, stages, per_rack in sides
                if chips > 0), default=0.0)


def spares_needed(count: float, replicas: float) -> float:
    """min(K, x): the spares a pool of x replicas needs (a pool smaller than K is held twice)."""
    return min(float(count), max(float(replicas), 0.0))


def spare_share(count: np.ndarray, pool: np.ndarray) -> np.ndarray:
    """[J] f = min(K, x0) / x0: spares per replica a column is charged at its assumed pool x0 (0 where K = 0)."""
    count, pool = np.asarray(count, float), np.asarray(pool, float)
    with np.errstate(divide="ignore", invalid="ignore"):
        out = np.where((count > 0) & (pool > 0), np.minimum(count, pool) / pool, 0.0)
    return np.where((count > 0) & (pool <= 0), 1.0, out)
