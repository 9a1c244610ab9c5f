"""The objectives as a registry: what each one minimises, used alike by the MILP (``solvers.milp``), its
``evaluate``, the brute force (``solvers.bruteforce``) and ``planner check`` (docs/OPTIMIZER.md 1, (O) and (6)).

Each objective prices a rack of every type (its primary coefficient p_h), breaks ties between racks of equal p_h
with a secondary measure q_h, and says whether it sells shares of demand (max_revenue, max_served). ``value`` is the
number it minimises for a plan: annual cost (USD/year), IT power (W), or annual cost less revenue (USD/year); for
max_served, the annual cost of the most-served plan (its first stage maximises what is served, (10)).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from solvers.vocabulary import OBJECTIVES


@dataclass(frozen=True)
class Objective:
    name: str
    unit: str
    prices_by_power: bool  # p_h = rack power (W) instead of annual cost (USD/year)
    sells_shares: bool  # share variables s_g in [0, 1]: demand is a ceiling, not a floor (OPTIMIZER.md 1.2)
    description: str
    credits_revenue: bool = False  # the objective subtracts the served shares' value (max_revenue)
    serves_most: bool = False  # (10): first the most demand served (by group_value's weights), then the least cost
    needs_prices: bool = False  # every workload needs a price (its group_value is USD/year)

    def primary(self, annual_cost_usd_per_rack: np.ndarray, rack_power_w: np.ndarray) -> np.ndarray:
        """p_h of (O)."""
        return rack_power_w if self.prices_by_power else annual_cost_usd_per_rack

    def secondary(self, annual_cost_usd_per_rack: np.ndarray, rack_power_w: np.ndarray) -> np.ndarray:
        """q_h of (O): the tie-break measure between racks of equal primary value."""
        return annual_cost_usd_per_rack if self.prices_by_power else rack_power_w

    def value(self, annual_cost_usd: float, rack_power_w: float, revenue_usd: float = 0.0) -> float:
        """What the objective minimises for a plan of this cost, IT power and (max_revenue) revenue."""
        if self.prices_by_power:
            return float(rack_power_w)
        return float(annual_cost_usd) - (float(revenue_usd) if self.credits_revenue else 0.0)


REGISTRY: dict[str, Objective] = {o.name: o for o in (
    Objective("min_cost", "USD/year", False, False, "annual cost: capex annuity + maintenance + energy"),
    Objective("min_power", "W", True, False, "IT power of the racks bought"),
    Objective("max_revenue", "USD/year", False, True,
              "annual cost less the revenue of the demand served (each workload served up to its demand)",
              credits_revenue=True, needs_prices=True),
    Objective("max_served", "USD/year", False, True,
              "the most demand served (output tokens, each workload up to its demand), then the least annual cost",
              serves_most=True),
)}
assert tuple(REGISTRY) == OBJECTIVES


def objective(name: str) -> Objective:
    if name not in REGISTRY:
        raise ValueError(f"objective = {name!r}, expected one of {', '.join(REGISTRY)}")
    return REGISTRY[name]
