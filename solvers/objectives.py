"""The objectives as data: what each one minimises, used alike by the MILP (``solvers.milp``), its ``evaluate``,
the brute force (``solvers.bruteforce``), the robust fleet and ``planner check`` (docs/OPTIMIZER.md 1, (O), (6)).

An objective picks a price table by its measure (``PRICE_TABLES``; docs/OPTIMIZER.md 23): the USD a year, the IT
watts at the peak or the kg CO2e a year that a rack bought (p_h of (O)), an installed rack kept (p'_h of (9)), a
replica beyond its racks' floor (c_j of (11), (13), (14), its parts summed) and a rented chip (12) add to that
measure. The problem gives its tables (``FleetProblem.prices``, built from ``solvers.components``' tables), so the
solvers hold no formula of their own for any objective; its tie-break q_h between racks of equal p_h is another
table's rack price. Adding an objective is an entry here and its word in ``solvers/vocabulary.py``; adding a
measure, a price table.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from solvers.vocabulary import OBJECTIVES

# The measures a plan is priced in, each a price table: USD a year, IT watts at the peak, kg CO2e a year
PRICE_TABLES = ("annual_cost_usd", "rack_power_w", "carbon_kg_per_year")


@dataclass(frozen=True, eq=False)
class Prices:
    """One measure's price table: per rack bought (``rack`` [H]), per installed rack kept (``kept`` [H]; None: a
    rack bought's), per replica beyond its racks' floor (``column`` [J], in named parts that an objective sums: a
    hosted offer's own cost, the energy of its draw), per rented chip (``rent`` [R]; None: nothing). In the
    component tables (``solvers.components``) a part not given is None, and a table whose ``rack`` is None is the
    measure's default (``rack_power_w``: the racks' design power, no draw above it); ``FleetProblem.prices`` gives
    every part filled in."""

    rack: np.ndarray | None
    kept: np.ndarray | None = None
    column: dict = field(default_factory=dict)
    rent: np.ndarray | None = None

    def column_total(self, n_columns: int) -> np.ndarray:
        """[J] a replica's price, its parts summed."""
        return sum((np.asarray(v, dtype=float) for v in self.column.values()), np.zeros(n_columns))


@dataclass(frozen=True)
class Objective:
    name: str
    unit: str
    description: str
    measure: str  # the price table minimised (PRICE_TABLES), and the plan total of that name
    tie: str  # the price table whose rack prices break ties between racks of equal p_h (q_h)
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
        return np.asarray(problem.prices(self.measure).rack, dtype=float)

    def kept_primary(self, problem) -> np.ndarray:
        """p'_h of (9)."""
        return np.asarray(problem.prices(self.measure).kept, dtype=float)

    def secondary(self, problem) -> np.ndarray:
        """q_h of (O)."""
        return np.asarray(problem.prices(self.tie).rack, dtype=float)

    def column_primary(self, problem) -> np.ndarray:
        """c_j of (11), (13) and (14)."""
        return problem.prices(self.measure).column_total(problem.n_columns)

    def rent_primary(self, problem) -> np.ndarray:
        """(12): a rented chip in the objective's unit."""
        return np.asarray(problem.prices(self.measure).rent, dtype=float)

    def value(self, measures: dict) -> float:
        """What the objective minimises for a plan with these totals (``measure``'s, less ``revenue_usd`` under
        max_revenue)."""
        return float(measures[self.measure]) - (float(measures.get("revenue_usd", 0.0)) if self.credits_revenue
                                                else 0.0)


_COST: dict[str, Any] = dict(measure="annual_cost_usd", tie="rack_power_w")

REGISTRY: dict[str, Objective] = {o.name: o for o in (
    Objective("min_cost", "USD/year", "annual cost: capex annuity + maintenance + energy", **_COST),
    Objective("min_power", "W", "IT power of the racks bought", measure="rack_power_w", tie="annual_cost_usd"),
    Objective("max_revenue", "USD/year",
              "annual cost less the revenue of the demand served (each workload served up to its demand)",
              **_COST, sells_shares=True, credits_revenue=True, needs_prices=True),
    Objective("max_served", "USD/year",
              "the most demand served (output tokens, each workload up to its demand), then the least annual cost",
              **_COST, sells_shares=True, serves_most=True),
    Objective("min_carbon", "kg CO2e/year",
              "emissions a year: each rack's making spread over its service life, and the grid's emissions of the "
              "energy the fleet draws", measure="carbon_kg_per_year", tie="annual_cost_usd"),
)}
assert tuple(REGISTRY) == OBJECTIVES


def objective(name: str) -> Objective:
    if name not in REGISTRY:
        raise ValueError(f"objective = {name!r}, expected one of {', '.join(REGISTRY)}")
    return REGISTRY[name]
