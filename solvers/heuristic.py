"""A plan made before the MILP's search (docs/OPTIMIZER.md 22): the rounded LP relaxation.

The built model (``solvers.milp.build``) is solved once with every variable continuous (GLOP), and its plan rounded
up to one the fleet can hold:

  x_j   integer replicas (outside pools) rounded up; continuous ones kept (a share under ZERO_REPLICAS of a replica
        dropped, as no rack is bought for it); a pool's members keep their shares, its whole replicas rounded up by
        (15) itself (``pool_chip_replicas``)
  rent  each offer's chips as the LP rents them (continuous in the MILP too)
  racks each type's racks rounded up to hold the chips its replicas occupy beyond the rented ones ((2), (2c)), at
        least the racks kept (8); a system bought below its minimum purchase (7) topped up on its largest type

Rounding up only adds capacity, so the demand rows hold; the power budget, floor space, supply caps and the platform
limit may not, and ``evaluate`` says so (``RoundedPlan.violations``). The LP's optimum is a lower bound on the
MILP's (its tie terms taken out as ``extract`` does). The rounded plan is the one returned when the time limit ends
a search that found none, and the yardstick the search's plan is measured against; it is not handed to the search
as a hint, which slowed SCIP (``solvers.milp.optimize``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from solvers.backends import solver_output_to_stderr
from solvers.formulation import TIE_FACTOR, occupied_chips, pool_chip_replicas, rented_chips

ZERO_REPLICAS = 1e-7  # a continuous column's replicas below this are none (a rack for 1e-9 of a replica is waste)
ROUND_SLACK = 1e-9  # an LP value within this of a whole number is that number (2.0000000001 replicas are 2)


@dataclass(frozen=True, eq=False)
class RoundedPlan:
    """The rounded LP plan: racks [H], replicas [J], rented chips [R]; the LP's lower bound on the objective's
    primary; its value and what ``evaluate`` finds wrong with it (empty: a plan the fleet can hold)."""

    racks: np.ndarray
    replicas: np.ndarray
    rented: np.ndarray
    lp_bound: float
    objective: float
    violations: tuple

    @property
    def feasible(self) -> bool:
        return not self.violations


def lp_values(built) -> tuple | None:
    """(replicas [J], rented [R], the LP's optimum in the problem's units with its tie terms out) of the built
    model with every variable continuous, or None where GLOP finds no optimum. The model's integrality is put back
    before returning, whatever happens."""
    from ortools.math_opt.python import mathopt

    integer = [v for v in built.model.variables() if v.integer]
    for v in integer:
        v.integer = False
    try:
        with solver_output_to_stderr():
            result = mathopt.solve(built.model, mathopt.SolverType.GLOP)
    finally:
        for v in integer:
            v.integer = True
    if result.termination.reason != mathopt.TerminationReason.OPTIMAL:
        return None
    x = np.asarray(result.variable_values(built.replicas), dtype=float).reshape(-1)
    rent = np.asarray(result.variable_values(built.rented), dtype=float) if built.rented else np.zeros(0)
    return x, rent, float(result.objective_value()) * built.objective_scale / TIE_FACTOR


def rounded_racks(problem, x: np.ndarray, rented: np.ndarray) -> np.ndarray:
    """[H] the fewest racks that hold replicas ``x`` beyond the chips ``rented`` ((2), (2c), (8)), each system
    bought below its minimum purchase (7) topped up on its type with the most racks."""
    held = pool_chip_replicas(problem, x)
    need = np.maximum(occupied_chips(problem, held) - rented_chips(problem, rented), 0.0) / problem.chips_per_rack
    racks = np.maximum(np.ceil(need - ROUND_SLACK), problem.racks_at_least)
    system = problem.rack_systems
    for k in np.unique(system):
        members = np.flatnonzero(system == k)
        have, least = racks[members].sum(), problem.min_racks[members[0]]
        if 0 < have < least:
            racks[members[np.argmax(racks[members])]] += least - have
    return racks.astype(np.int64)


def rounded_values(problem, built) -> tuple | None:
    """(racks [H], replicas [J], rented [R], the LP's bound) of the rounded LP plan of ``built``
    (``solvers.milp.build`` of ``problem``), before ``evaluate`` judges it; None where the LP has no optimum (an
    infeasible problem)."""
    values = lp_values(built)
    if values is None:
        return None
    x_lp, rent_lp, bound = values
    x = np.maximum(x_lp, 0.0)
    x = np.where(problem.integer_columns, np.ceil(x - ROUND_SLACK), np.where(x < ZERO_REPLICAS, 0.0, x))
    rented = np.clip(rent_lp, 0.0, problem.rent_max_chips) if problem.n_rentals else np.zeros(0)
    return rounded_racks(problem, x, rented), x, rented, bound if math.isfinite(bound) else -math.inf
