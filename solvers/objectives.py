"""The objectives as data: what each one minimises, used alike by the MILP (``solvers.milp``), its ``evaluate``,
the brute force (``solvers.bruteforce``), the robust fleet and ``planner check`` (docs/OPTIMIZER.md 1, (O), (6)).

An objective names the problem's arrays it prices a plan with, so that the solvers hold no formula of their own
for it: p_h per rack bought (``rack``), p'_h per installed rack kept (``kept``), c_j per replica beyond its racks
(``columns``, summed), per rented chip (``rent``; none: 0), and q_h, the tie-break between racks of equal p_h
(``tie``). Each is the name of a ``FleetProblem`` attribute (milp.py); ``planner/fleet/problem.py`` fills them from
the scenario. ``measure`` names the plan total it minimises (a key of the measures ``value`` is given). Adding an
objective is an entry here, its word in ``solvers/vocabulary.py``, and its arrays on the problem.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from solvers.vocabulary import OBJECTIVES


@dataclass(frozen=True)
class Objective:
    name: str
    unit: str
    description: str
    measure: str  # the plan total minimised: annual_cost_usd, rack_power_w or carbon_kg_per_year
    rack: str  # FleetProblem attribute: p_h, [H] per rack bought and in service a year
    kept: str  # p'_h, [H] per installed rack kept in service (its making sunk)
    columns: tuple[str, ...]  # c_j, [J] per replica beyond its racks' floor (summed)
    rent: str | None  # [R] per rented chip (None: rentals are free to this objective)
    tie: str  # q_h, [H] the measure that breaks ties between racks of equal p_h
    sells_shares: bool = False  # share variables s_g in [0, 1]: demand is a ceiling, not a floor (OPTIMIZER.md 1.2)
    credits_revenue: bool = False  # the objective subtracts the served shares' value (max_revenue)
    serves_most: bool = False  # (10): first the most demand served (by group_value's weights), then the least cost
    needs_prices: bool = False  # every workload needs a price (its group_value is USD/year)

    @property
    def is_cost(self) -> bool:
        """Whether the objective is in USD (a late premium, a price, a revenue can be weighed against it)."""
        return self.measure == "annual_cost_usd"

    def primary(self, problem) -> np.ndarray:
        """p_h of (O)."""
        return np.asarray(getattr(problem, self.rack), dtype=float)

    def kept_primary(self, problem) -> np.ndarray:
        """p'_h of (9)."""
        return np.asarray(getattr(problem, self.kept), dtype=float)

    def secondary(self, problem) -> np.ndarray:
        """q_h of (O)."""
        return np.asarray(getattr(problem, self.tie), dtype=float)

    def column_primary(self, problem) -> np.ndarray:
        """c_j of (11) and (13)."""
        return sum((np.asarray(getattr(problem, name), dtype=float) for name in self.columns),
                   np.zeros(problem.n_columns))

    def rent_primary(self, problem) -> np.ndarray:
        """(12): a rented chip in the objective's unit."""
        if self.rent is None:
            return np.zeros(problem.n_rentals)
        return np.asarray(getattr(problem, self.rent), dtype=float)

    def value(self, measures: dict) -> float:
        """What the objective minimises for a plan with these totals (``measure``'s, less ``revenue_usd`` under
        max_revenue)."""
        return float(measures[self.measure]) - (float(measures.get("revenue_usd", 0.0)) if self.credits_revenue
                                                else 0.0)


_COST: dict[str, Any] = dict(
    measure="annual_cost_usd", rack="annual_cost_usd_per_rack", kept="kept_annual_cost_usd_per_rack",
    columns=("own_cost_usd", "replica_energy_usd"), rent="rent_cost_usd_per_chip", tie="floor_power_w")

REGISTRY: dict[str, Objective] = {o.name: o for o in (
    Objective("min_cost", "USD/year", "annual cost: capex annuity + maintenance + energy", **_COST),
    Objective("min_power", "W", "IT power of the racks bought", measure="rack_power_w", rack="floor_power_w",
              kept="floor_power_w", columns=("replica_power_w",), rent=None, tie="annual_cost_usd_per_rack"),
    Objective("max_revenue", "USD/year",
              "annual cost less the revenue of the demand served (each workload served up to its demand)",
              **_COST, sells_shares=True, credits_revenue=True, needs_prices=True),
    Objective("max_served", "USD/year",
              "the most demand served (output tokens, each workload up to its demand), then the least annual cost",
              **_COST, sells_shares=True, serves_most=True),
    Objective("min_carbon", "kg CO2e/year",
              "emissions a year: each rack's making spread over its service life, and the grid's emissions of the "
              "energy the fleet draws", measure="carbon_kg_per_year", rack="carbon_kg_per_rack",
              kept="kept_carbon_kg_per_rack", columns=("replica_carbon_kg",), rent="carbon_rented",
              tie="annual_cost_usd_per_rack"),
)}
assert tuple(REGISTRY) == OBJECTIVES


def objective(name: str) -> Objective:
    if name not in REGISTRY:
        raise ValueError(f"objective = {name!r}, expected one of {', '.join(REGISTRY)}")
    return REGISTRY[name]
