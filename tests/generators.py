"""Generators shared by tests and benchmarks: random but plausible fleet problems."""

from __future__ import annotations

import math

import numpy as np

from planner.fleet.finance import annual_rack_cost
from solvers.milp import FleetProblem


def random_problem(seed: int, n_workloads: int, n_hardware: int, options_per_workload: int = 4,
                   disaggregated_share: float = 0.2, budget_share: float = 1.5, cap_share: float = 0.3,
                   objective: str = "min_cost") -> FleetProblem:
    """A random but plausible problem: rack systems of 1-72 chips and 15-150 kW, replicas of 1-72 chips whose
    throughput grows with their chips, demand log-uniform over 1e3-1e6 units; ``disaggregated_share`` of the
    columns use two hardware types; supply caps of 1-49 racks on ``cap_share`` of the types; the power budget is
    ``budget_share`` times the facility power of the fractional least-power fleet (0 or less: no budget)."""
    rng = np.random.default_rng(seed)
    H, W = n_hardware, n_workloads
    cpr = rng.choice([1, 4, 8, 16, 32, 64, 72], H).astype(float)
    chip_kw = rng.uniform(0.5, 2.0, H) * np.where(cpr == 1, 20.0, 1.5)
    power = np.minimum(cpr * chip_kw * 1e3, 150e3)
    capex = power * rng.uniform(20.0, 60.0, H)
    cost = annual_rack_cost(capex, power, 0.08, 4, 0.05, 70.0, 1.25)
    speed = rng.uniform(0.5, 2.0, H) * power / cpr  # demand units per chip
    demand = np.exp(rng.uniform(np.log(1e3), np.log(1e6), W))
    wl, caps, chips = [], [], []
    for w in range(W):
        for _ in range(options_per_workload):
            use = rng.choice(H, 2 if (H > 1 and rng.random() < disaggregated_share) else 1, replace=False)
            row = np.zeros(H)
            for h in use:
                row[h] = min(cpr[h], rng.choice([1, 2, 4, 8, 16, 32, 64, 72]))
            wl.append(w)
            chips.append(row)
            caps.append(float(row @ speed) * rng.uniform(0.3, 1.0) / len(use))
    chips = np.array(chips).reshape(-1, H)
    integer = (chips / cpr).max(axis=1) >= 0.25
    max_racks = np.where(rng.random(H) < cap_share, rng.integers(1, 50, H), np.inf)
    per_unit_power = np.array([(chips[j] / cpr) @ power / caps[j] for j in range(len(wl))])
    greedy_w = sum(demand[w] * per_unit_power[np.array(wl) == w].min() for w in range(W)) * 1.25
    budget = budget_share * greedy_w if budget_share > 0 else math.inf
    return FleetProblem(cpr, power, cost, max_racks, np.array(wl), np.array(caps), chips, integer, demand,
                        pue=1.25, power_budget_w=budget, objective=objective)
