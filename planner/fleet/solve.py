"""``planner.solve``: a scenario in, the cheapest fleet that serves it out (docs/OPTIMIZER.md), in four steps each
callable alone: options and problem (``problem.build_problem``) -> MILP (``solvers.milp.optimize``) -> plan
(``plan.extract_plan``) -> check (``check.check``, which refuses a plan that fails it)."""

from __future__ import annotations

import time

from planner.errors import InfeasibleError, PlannerError
from planner.fleet.check import check
from planner.fleet.diagnose import infeasibility_message
from planner.fleet.plan import Plan, extract_plan
from planner.fleet.problem import build_problem
from planner.fleet.whatif import one_more_rack
from planner.vocabulary import SOLVERS
from solvers.vocabulary import NO_PLAN


def solve(scenario, solver: str | None = None, time_limit_s: float | None = None, progress=None,
          options_from=None) -> Plan:
    """The cheapest fleet for ``scenario`` (a ``planner.scenario.Scenario`` or a path), verified by ``check``.
    Raises ``InfeasibleError`` (exit 3) with the plan attached when no fleet can serve it. ``progress(done,
    total, text)`` hears about the engine's workloads and the MILP, if given. ``options_from``: a Built whose
    scored options this scenario may reuse (``planner.fleet.problem.build_problem``)."""
    from planner.scenario import Scenario, load_scenario
    from solvers.milp import optimize

    if not isinstance(scenario, Scenario):
        scenario = load_scenario(scenario)
    scenario = scenario.with_solver(solver, time_limit_s)  # validates the overrides like the file's fields
    if scenario.periods:
        from planner.fleet.buildout import solve_buildout

        return solve_buildout(scenario, progress)
    settings = scenario.solver
    started = time.monotonic()
    deadline = started + settings.time_limit_s  # the limit covers the whole run: the engine, then the MILP
    built = build_problem(scenario, progress, deadline, options_from)
    if progress:
        progress(0, 1, f"solving the MILP ({built.problem.n_columns} columns, {settings.name})")
    left = deadline - time.monotonic()
    if left <= 0:
        raise PlannerError(f"the time limit of {settings.time_limit_s:g} s ran out while scoring candidates; raise "
                           f"--time-limit (or solver.time_limit_s)")
    sol = optimize(built.problem, solver=settings.name, time_limit_s=left, relative_gap=settings.relative_gap,
                   fewest_platforms=settings.fewest_platforms)
    if sol.status == NO_PLAN:
        raise PlannerError(f"the {sol.solver} solver found no plan within the time limit of "
                           f"{settings.time_limit_s:g} s; raise --time-limit (or solver.time_limit_s) or try another "
                           f"solver ({', '.join(SOLVERS)})")
    plan = extract_plan(built, sol)
    if plan.status == "infeasible":
        raise InfeasibleError(infeasibility_message(built), plan=plan)
    plan.checks = check(plan)
    failed = [c for c in plan.checks if not c["ok"]]
    if failed:
        raise PlannerError("bug: the plan fails its own check: " + "; ".join(c["check"] + ": " + c["detail"]
                                                                             for c in failed[:5]))
    if scenario.hardware.max_new_racks == 0 and scenario.installed_in_service():
        plan.one_more_rack = one_more_rack(plan, max(1.0, deadline - time.monotonic()))
    return plan
