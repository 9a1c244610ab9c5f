"""Wall seconds and MILP solves of ``planner.fleet.solve.solve`` (no simulation) per scenario: how many rounds of
sizing pools again a plan takes (docs/OPTIMIZER.md 14, 18). Usage: python benchmarks/bench_rounds.py SOLVER NAME...
(NAME: a shipped scenario's file stem). Recorded in docs/PERFORMANCE.md."""

from __future__ import annotations

import sys
import time

from planner.fleet import solve as S
from planner.scenario import load_scenario

SOLVES = [0]
optimize_by = S.optimize_by


def counted(built, *args, **kwargs):
    """The MILP solve, counted."""
    SOLVES[0] += 1
    return optimize_by(built, *args, **kwargs)


def main(solver: str, names: list[str]) -> None:
    S.optimize_by = counted
    for name in names:
        SOLVES[0], started = 0, time.perf_counter()
        plan = S.solve(load_scenario(f"scenarios/{name}.yaml"), solver=solver)
        print(f"{name} {solver} {plan.status} {time.perf_counter() - started:.1f} s {SOLVES[0]} solves", flush=True)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2:])
