"""``planner.orchestration``: the one place that decides what runs around the MILP, for ``planner solve`` and the
library's ``planner.solve`` and ``planner.answer`` alike (issue 41 item 6), each thing once, in this order:

1. the plan: the robust fleet over a sweep's samples (``planner.sweep.robust``), or the MILP of the scenario
   (``planner.fleet.solve``: a single period, or a build-out's periods);
2. its verification: the plan simulated at its peak (``planner.sim.run``) and, where a workload misses a target,
   solved again with more headroom for it (``planner.sim.verify``): the quick run by default, ``planner
   simulate``'s windows with ``verify="thorough"``, none with ``"off"`` (a robust fleet serves many samples at
   once and is not simulated);
3. what each system bought for under 2% of the cost saves (``planner.fleet.whatif.minor_platforms``), of the plan
   shown, not of the rounds before it;
4. where a report asks: the what-ifs (a limit one unit looser, each family alone) and each model's frontier.

Nothing here prints: the CLI shows what this returns.
"""

from __future__ import annotations

from dataclasses import dataclass

from planner.errors import InputError
from planner.fleet.frontiers import frontier_points_for_plan
from planner.fleet.solve import solve
from planner.fleet.whatif import minor_platforms, whatif_tables
from planner.scenario import Scenario, load_scenario
from planner.sim.run import check_duration, check_seed, trace_of
from planner.sim.verify import Verified, verify as verify_plan
from planner.sweep.robust import solve_robust

VERIFY_MODES = ("quick", "thorough", "off")


@dataclass
class Answer:
    plan: object  # a Plan or a BuildOutPlan
    verified: Verified | None = None  # None: not simulated
    whatifs: dict | None = None  # planner.fleet.whatif.whatif_tables, where asked
    frontiers: dict | None = None  # planner.fleet.frontiers.frontier_points_for_plan, where asked


def verify_mode(verify) -> str:
    """``verify`` as one of VERIFY_MODES (True: thorough, False: off), else an InputError naming it."""
    if isinstance(verify, str):
        mode = verify.strip().lower()
    else:
        mode = {True: "thorough", False: "off", None: "quick"}.get(verify, verify)
    if mode not in VERIFY_MODES:
        raise InputError(f"expected one of {', '.join(VERIFY_MODES)} (or true/false), got {verify!r}",
                         field="verify")
    return mode


def answer(scenario, verify="quick", robust: str | None = None, samples=None, seed: int = 0,
           duration_s: float | None = None, trace=None, whatifs: bool = False, frontiers: bool = False,
           progress=None, solver: str | None = None, time_limit_s: float | None = None) -> Answer:
    """The plan for ``scenario`` (a Scenario or a path) and what goes with it (the module's steps 1-4).
    ``verify``: quick (default), thorough or off; ``seed``, ``duration_s`` and ``trace`` go to the simulation.
    ``robust`` (mean or pNN) with ``samples`` (a sweep file): the robust fleet, not simulated. ``solver`` and
    ``time_limit_s`` override the scenario's (each solve's limit). Raises what
    ``planner.fleet.solve.solve`` raises (InfeasibleError with the plan attached: ``report_extras`` gives its
    frontiers for a report)."""
    if not isinstance(scenario, Scenario):
        scenario = load_scenario(scenario)
    scenario = scenario.with_solver(solver, time_limit_s)  # validated like the file's fields
    mode = verify_mode(verify)
    if mode != "off":
        check_seed(seed)  # before the solve, not after it
        check_duration(duration_s, "--sim-duration")
        trace = trace_of(trace)
    verified = None
    if robust is not None:
        if mode == "thorough":
            raise InputError("--verify simulates the plan of one scenario: not with --robust", field="--verify")
        plan = solve_robust(scenario, samples, robust, progress=progress)
    elif mode == "off":
        plan = solve(scenario, progress=progress)
    else:
        verified = verify_plan(scenario, solve, seed=seed, duration_s=duration_s, trace=trace,
                               quick=mode == "quick", progress=progress)
        plan = verified.plan
        plan.verification = verified.to_dict()
    if not getattr(plan, "is_buildout", False):
        minor_platforms(plan)
    tables, points = report_extras(plan, whatifs, frontiers, progress)
    return Answer(plan, verified, tables, points)


def report_extras(plan, whatifs: bool, frontiers: bool, progress=None) -> tuple[dict | None, dict | None]:
    """(what-ifs, frontier points) of a single-period plan, each where asked (a build-out's report has neither;
    an infeasible plan has frontiers only)."""
    if plan is None or getattr(plan, "is_buildout", False):
        return None, None
    solved = plan.status != "infeasible"
    return (whatif_tables(plan, progress) if whatifs and solved else None,
            frontier_points_for_plan(plan) if frontiers else None)
