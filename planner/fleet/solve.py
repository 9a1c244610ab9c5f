"""``planner.solve``: a scenario in, the cheapest fleet that serves it out (docs/OPTIMIZER.md), in four steps each
callable alone: options and problem (``problem.build_problem``) -> MILP (``solvers.milp.optimize``) -> plan
(``plan.extract_plan``) -> check (``check.check``, which refuses a plan that fails it). Between the MILP and the plan,
``repair_pools`` generates again every option whose queue was sized for a larger pool than the plan deploys, and
solves again (docs/OPTIMIZER.md 14)."""

from __future__ import annotations

import dataclasses
import time
from typing import TYPE_CHECKING

import numpy as np

from planner.errors import InfeasibleError, PlannerError
from planner.fleet.check import check
from planner.fleet.diagnose import infeasibility_message
from planner.fleet.options import option_at_servers
from planner.fleet.plan import Plan, allocation_rows, assumed_servers_above_pools, extract_plan, plan_replicas
from planner.fleet.problem import Built, build_problem
from planner.fleet.whatif import one_more_rack
from planner.scenario import Scenario, load_scenario
from planner.vocabulary import SOLVERS
from solvers.formulation import column_primary_coefficients, primary_coefficients
from solvers.milp import FleetSolution, optimize, same_problem, tie_break
from solvers.objectives import objective as objective_named
from solvers.vocabulary import HAS_PLAN, NO_PLAN

if TYPE_CHECKING:  # buildout imports this module: its plan is named here for the types only
    from planner.fleet.buildout import BuildOutPlan

# Rounds of ``repair_pools`` that generate again only the options whose pools came out smaller than assumed;
# after them, every pooled option is generated for one server (always consistent) and solved once more.
REPAIR_ROUNDS = 4
# Rounds of ``size_decode_queues`` that take again only the decode options whose pools came out smaller than
# assumed; after them, every decode option is taken at one replica's slots and solved once more.
DECODE_QUEUE_ROUNDS = 4
# Rounds of ``size_spares`` that take again the columns whose pools came out smaller than their spares assumed, at
# the pool they deploy; after them, a column still short is taken at SPARE_SHRINK of it (a little more spare than
# it needs, so that it stops moving).
SPARE_ROUNDS = 4
SPARE_SHRINK = 0.8
# The first MILP's share of the time left after scoring: the rounds that size its pools again need the rest.
FIRST_MILP_SHARE = 0.5
# Of the time left after the first MILP, the share kept back from the rounds on every column for the rounds on
# the plan's own columns (``on_own_columns``), should the first run out of time or end unproved.
OWN_COLUMNS_SHARE = 0.25
# Beside the columns a plan uses, each of its workloads keeps this many of its cheapest columns (primary value a
# unit of demand served) in ``on_own_columns``: room for a column that sized again no longer meets its targets.
ALTERNATES = 3
# Each loop of rounds gets this many times its rounds before its last resort (which takes every option at its most
# cautious pool and can cost most of a plan again), on every column and on the plan's own columns (the rounds warm
# start from the plan before: about a second each on a plan's own columns, 1-20 s on every column of 3,000). With
# four rounds a loop, a generated site of 20 workloads (seed 0) moved one or two options a round, took its last
# resort (983 M USD a year) and fell back to its own columns at 1.15% above the first MILP's bound, 34 s with its
# scoring; with sixteen it settled in seven, at 0.074%, 23 s with its scoring.
PATIENCE = 4
# What the rounds on every column did, where the plan comes from the first plan's own columns (``heuristic``).
CAUTIOUS = "the rounds sizing its pools again on every column took an option at its most cautious pool"
OUT_OF_TIME = "the rounds sizing its pools again on every column ran out of time"


def solve(scenario, solver: str | None = None, time_limit_s: float | None = None, progress=None,
          options_from=None) -> Plan | BuildOutPlan:
    """The cheapest fleet for ``scenario`` (a ``planner.scenario.Scenario`` or a path), verified by ``check``.
    Raises ``InfeasibleError`` (exit 3) with the plan attached when no fleet can serve it. ``progress(done,
    total, text)`` hears about the engine's workloads and the MILP, if given. ``options_from``: a Built whose
    scored options this scenario may reuse (``planner.fleet.problem.build_problem``). What runs around it (the
    simulation and its repair, the what-ifs, what a minor system saves) is ``planner.orchestration``'s to decide."""
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
    first = optimize_by(built, settings, share_of_time_left(deadline, FIRST_MILP_SHARE), "scoring candidates")
    if first.status == NO_PLAN:
        raise PlannerError(f"the {first.solver} solver found no plan within the time limit of "
                           f"{settings.time_limit_s:g} s; raise --time-limit (or solver.time_limit_s) or try another "
                           f"solver ({', '.join(SOLVERS)})")
    # Proved (or infeasible): its pools sized again on every column. Stopped unproved: rounds on every column would
    # each stop unproved too, and later, so it goes to its own columns at once.
    proved = first.status == "optimal" or first.status not in HAS_PLAN
    failed: list[dict] = []
    lost = False  # the rounds on every column left no fleet where the first MILP had one
    if proved:
        sized, sol = size_pools(built, first, settings, share_of_time_left(deadline, 1 - OWN_COLUMNS_SHARE), progress,
                                PATIENCE)
        # an option taken at its most cautious pool (one server, one replica's slots) can ask more racks than the
        # site holds: that is the rounds' caution, not the scenario's (mixed-site at gap 0 needed 1,037 of 800)
        lost = sol.status not in HAS_PLAN and first.status in HAS_PLAN
        if not lost:
            plan, failed = checked_plan(sized, sol, first)
            # a plan that holds but took a last resort, or whose last round the time limit cut short (a generated
            # site of 20 workloads, seed 3, fewest_platforms off: 12.4 M USD a year, 16.8% above the bound, where the
            # round before had 10.45 M): the first plan sized again on its own columns too, in the time kept for them
            if not failed and (sol.cautious or sol.status == "time_limit") and deadline > time.monotonic():
                plan = cheaper_on_own_columns(plan, built, first, settings, deadline, progress,
                                              CAUTIOUS if sol.cautious else OUT_OF_TIME)
    if not proved or failed or lost:
        why = (f"the first MILP stopped unproved at gap {100 * first.relative_gap:.2g}%" if not proved else
               "the rounds sizing its pools again on every column left no fleet" if lost else
               OUT_OF_TIME if sol.status == "time_limit" else
               "its plan on every column failed its check (" + "; ".join(c["check"] for c in failed[:3]) + ")")
        if progress:
            progress(0, 1, f"{why}: its pools sized again on its own columns")
        # from the first plan (its columns as scored, none at a last resort: narrowed from the last round's plan,
        # a generated site of 20 workloads kept its most cautious pools and cost 5x more), its rounds again
        plan, failed = checked_plan(*on_own_columns(built, first, settings, deadline, progress, why), first)
    if failed and plan.status == "time_limit":  # stopped before its pools were sized again: not a plan to buy
        raise PlannerError(f"the time limit of {settings.time_limit_s:g} s ran out while sizing prefill pools again, "
                           f"and the plan found so far does not hold with the pools it deploys ("
                           + "; ".join(c["check"] + ": " + c["detail"] for c in failed[:3])
                           + "); raise --time-limit (or solver.time_limit_s)")
    if failed:
        raise PlannerError("bug: the plan fails its own check: " + "; ".join(c["check"] + ": " + c["detail"]
                                                                             for c in failed[:5]))
    if scenario.hardware.max_new_racks == 0 and scenario.installed_in_service():
        plan.one_more_rack = one_more_rack(plan, max(1.0, deadline - time.monotonic()))
    return plan


def share_of_time_left(deadline: float, share: float) -> float:
    """The moment ``share`` of the time left before ``deadline`` has passed."""
    now = time.monotonic()
    return now + share * max(deadline - now, 0.0)


def size_pools(built: Built, sol, settings, deadline: float, progress=None,
               patience: int = 1, tie: bool = True) -> tuple[Built, FleetSolution]:
    """A plan's prefill pools, decode queues and spares sized at what it deploys, solving again until they hold
    (docs/OPTIMIZER.md 14, 18, 19): ``repair_pools``, ``size_decode_queues`` and ``size_spares`` in turn, each with
    ``patience`` times its rounds before its last resort; then (``tie``) the tie-break once on the plan they settle
    on (``tie_broken``). Past the deadline the plan so far comes back with status time_limit."""
    built, sol = repair_pools(built, sol, settings, deadline, progress, patience=patience)
    built, sol = size_decode_queues(built, sol, settings, deadline, progress, patience=patience)
    built, sol = size_spares(built, sol, settings, deadline, progress, patience=patience)
    return tie_broken(built, sol, settings, deadline, progress, patience) if tie else (built, sol)


def tie_broken(built: Built, sol, settings, deadline: float, progress=None,
               patience: int = 1) -> tuple[Built, FleetSolution]:
    """The tie-break (T) (solver.fewest_platforms; docs/OPTIMIZER.md 3) once, on the plan the rounds settled on:
    the rounds solve without it (``optimize_by``'s ``tie``), where it took about half of each round's time on a
    generated site of 20 workloads. A plan straight from the first MILP (no round moved it) had it already. Where
    (T) moves the plan, its pools are sized again from there (``size_pools``, without a second tie-break)."""
    if (not settings.fewest_platforms or sol.tie_break or sol.status not in HAS_PLAN or sol.violations
            or deadline <= time.monotonic()):
        return built, sol
    tied = carried(tie_break(built.problem, sol, settings.name, deadline - time.monotonic(), settings.relative_gap),
                   sol)
    if np.array_equal(tied.racks, sol.racks) and np.allclose(tied.replicas, sol.replicas, rtol=0.0, atol=1e-9):
        return built, tied
    if progress:
        progress(0, 1, "the tie-break moved the plan: its pools sized again")
    built, again = size_pools(built, tied, settings, deadline, progress, patience, tie=False)
    return built, (again if again.tie_break or again.status not in HAS_PLAN else
                   dataclasses.replace(again, tie_break=f"{tied.tie_break}; its pools sized again after it"))


def checked_plan(built: Built, sol, first=None) -> tuple[Plan, list[dict]]:
    """The solution as a plan with its checks, and the checks it fails; raises InfeasibleError (with the plan) when
    no fleet can serve the scenario. ``first``: the run's first MILP, whose rounded LP start (OPTIMIZER.md 22) the
    plan reports where its own last MILP began from the plan before it."""
    if first is not None and first.start and not sol.start:
        sol = dataclasses.replace(sol, start=f"{first.start} (the first MILP's, on every column)")
    plan = extract_plan(built, sol)
    if plan.status == "infeasible":
        raise InfeasibleError(infeasibility_message(built), plan=plan)
    plan.checks = check(plan)
    return plan, [c for c in plan.checks if not c["ok"]]


def cheaper_on_own_columns(plan: Plan, built: Built, first, settings, deadline: float, progress,
                           why: str) -> Plan:
    """``plan`` (which holds, some option of it at its loop's last resort, one server a pool, one slot a queue,
    which can cost most of a plan again; or its last round cut short by the time limit: ``why``) against the first
    MILP's plan sized again on its own columns (``on_own_columns``): the cheaper of the two that holds."""
    if progress:
        progress(0, 1, f"{why}: the first plan's pools sized again on its own columns")
    try:
        other, failed = checked_plan(*on_own_columns(built, first, settings, deadline, progress, why), first)
    except InfeasibleError:  # its own columns, sized again, cannot serve it: the plan on every column stands
        return plan
    if failed or other.objective_usd_per_year >= plan.objective_usd_per_year:
        return plan
    return other


def own_columns(built: Built, sol) -> np.ndarray:
    """[J] bool: the columns ``sol`` deploys, and each of its workloads' ALTERNATES cheapest columns by the primary
    value of a unit served (the rack shares a replica holds, at their racks' primary, plus its own cost, over its
    capacity)."""
    problem = built.problem
    keep = plan_replicas(built, sol) > 1e-9
    unit = ((problem.chips / problem.chips_per_rack) @ primary_coefficients(problem)
            + column_primary_coefficients(problem)) / np.maximum(problem.capacity, 1e-300)
    for w in np.unique(problem.workload[keep]):
        mine = np.flatnonzero(problem.workload == w)
        keep[mine[np.argsort(unit[mine], kind="stable")[:ALTERNATES]]] = True
    return keep


def on_own_columns(built: Built, first, settings, deadline: float, progress=None,
                   why: str = "") -> tuple[Built, FleetSolution]:
    """A plan that holds from the first MILP's (``first``, unproved, or its pools not yet sized): the MILP on its
    ``own_columns`` (a few per workload, so each solve takes about a second), its pools sized again there
    (``size_pools``). Its bound is the first MILP's (on every column at its most optimistic pools: a relaxation of
    any plan sized again), its gap against that bound, and its status optimal only where that gap is within the
    requested one; the solution's ``heuristic`` says how it was found (``why`` first)."""
    if deadline <= time.monotonic():  # no time for it: the plan so far, which solve returns only if it holds
        return built, dataclasses.replace(first, status="time_limit")
    keep = own_columns(built, first)
    narrowed = with_columns(built, {c: v[keep] for c, v in built.options.items()})
    found = optimize_by(narrowed, settings, deadline, "sizing pools again on the plan's own columns",
                        (first.racks, np.asarray(first.replicas)[keep]), tie=False)
    narrowed, found = size_pools(narrowed, found, settings, deadline, progress, PATIENCE)
    if found.status not in HAS_PLAN:
        return narrowed, found
    bound = min(first.best_bound, found.objective)
    gap = max((found.objective - bound) / found.objective, 0.0) if found.objective > 0 else 0.0
    # proved within the requested gap against the first bound: optimal; else stopped by time, or by the narrowing
    status = "optimal" if gap <= settings.relative_gap else "time_limit" if found.status == "time_limit" else "feasible"
    return narrowed, dataclasses.replace(
        found, status=status, best_bound=bound, relative_gap=gap,
        heuristic=f"{why}; its pools were sized again on its own {int(keep.sum())} of {len(keep)} columns "
                  f"(the columns it deploys and each workload's {ALTERNATES} cheapest), the gap against the first "
                  f"MILP's bound")


def carried(found, sol, last_resort: bool = False):
    """``found`` (a round's solution) marked cautious where ``sol`` (the round's start) was or this round took its
    loop's last resort: options once sized at it stay so."""
    return dataclasses.replace(found, cautious=True) if sol.cautious or last_resort else found


def repair_pools(built: Built, sol, settings, deadline: float, progress=None,
                 resolve=None, patience: int = 1) -> tuple[Built, FleetSolution]:
    """The plan's pools against the pools its options were sized for (MODEL.md 9.2, OPTIMIZER.md 14): where a pool
    has fewer servers than its option's ``servers`` (c_assumed), that option is generated again at the pool's
    whole servers and the MILP solved again (unless the figures it reads did not move and its plan was proved
    within the gap: the plan then stands). c_assumed only decreases, so this ends; after REPAIR_ROUNDS rounds,
    every pooled option is generated at one server (which any pool has) and solved once more. Returns the Built
    and solution of the last solve. Where the deadline passes before a round (or a round's solve ends with no plan
    in the time left), the plan so far is the answer, its status time_limit (docs/INTERFACE.md 1.6: a plan, stopped
    by the time limit), if it holds with the pools it deploys; ``solve`` refuses one that does not.
    ``resolve(built)``, where given, solves each round instead of the plain MILP (a robust fleet's racks held:
    ``planner.sweep.robust``)."""
    last = REPAIR_ROUNDS * patience
    for rnd in range(last + 1):
        if sol.status not in HAS_PLAN:
            return built, sol
        caps = assumed_servers_above_pools(built, allocation_rows(built, plan_replicas(built, sol)))
        if not caps:
            return built, sol
        if rnd == last:  # the last resort: one server everywhere
            servers = built.options["servers"]
            caps = {int(j): 1.0 for j in np.flatnonzero(np.nan_to_num(servers, nan=1.0) > 1.0)}
        if progress:
            progress(0, 1, f"pools smaller than assumed: {len(caps)} option(s) sized again, solving again")
        again, kept = with_options_at(built, caps) if deadline > time.monotonic() else (None, None)
        # Sized again, the figures the MILP reads did not move (a pool's TTFT and servers did): the same MILP, whose
        # plan the solver already proved within the requested gap, so the plan stands without a second search.
        if again and sol.status == "optimal" and not sol.violations and same_problem(again.problem, built.problem):
            built = again
            continue
        replicas = carried_replicas(np.asarray(sol.replicas), kept, built.problem.n_columns,
                                    again.problem.n_columns) if again and kept is not None else None
        start = (sol.racks, replicas) if replicas is not None else None
        if not again:
            found = None
        elif resolve is not None:
            found = resolve(again)
        else:
            found = optimize_by(again, settings, deadline, "sizing prefill pools again", start, so_far=sol, tie=False)
        if found is None or found.status == NO_PLAN:  # no time for this round, or its solve found no plan in it
            return built, dataclasses.replace(sol, status="time_limit")  # the best plan found so far stands
        assert again is not None  # found is None without it
        built, sol = again, carried(found, sol, rnd == last)
    return built, sol


def size_decode_queues(built: Built, sol, settings, deadline: float, progress=None,
                       resolve=None, patience: int = 1) -> tuple[Built, FleetSolution]:
    """Decode and colocated pools held at their workload's percentile as queues of batch slots (OPTIMIZER.md 18):
    where a queued option's pool came out with fewer slots than its coverage assumed (``queues.assumed_slots``), its
    rho* is taken again at the slots it deploys and the MILP solved again (``resolve(built)`` instead, where given),
    its prefill pools sized again after it. The assumed slots only fall, so this ends; after DECODE_QUEUE_ROUNDS
    rounds every queued option is taken at one replica's slots at most and solved once more, and if a replica's
    share is still short (a continuous column's fraction holds fewer slots than a replica), at one slot, which every
    deployment holds (a share of a replica holds one stream at least, as the simulator deploys it). Past the deadline, the
    plan so far stands with status time_limit, and ``solve`` refuses it if it does not hold."""
    last = DECODE_QUEUE_ROUNDS * patience
    for rnd in range(last + 2):
        if sol.status not in HAS_PLAN:
            return built, sol
        slots = np.asarray(built.options["decode_slots"], dtype=float)
        batch = np.asarray(built.options["batch"], dtype=float)
        replicas = plan_replicas(built, sol)
        deployed = np.where(replicas > 1e-9, np.maximum(replicas * batch, 1.0), 0.0)  # queues.row_slots
        short = np.flatnonzero((slots > 0) & (deployed > 0) & (deployed < slots * (1 - 1e-9)))
        if not len(short):
            return built, sol
        new = slots.copy()
        new[short] = deployed[short]
        if rnd == last:  # one replica's slots everywhere, and a replica's share its own
            new = np.where(slots > 0, np.minimum(new, batch), 0.0)
        elif rnd > last:  # the last resort: one slot, which every deployment holds
            new = np.where(slots > 0, np.minimum(slots, 1.0), 0.0)
        if progress:
            progress(0, 1, f"decode pools smaller than assumed: {len(short)} option(s) sized again, solving again")
        again = with_columns(built, {**built.options, "decode_slots": new})
        if resolve is not None:
            found = resolve(again)
        elif deadline > time.monotonic():
            found = optimize_by(again, settings, deadline, "sizing decode pools again", (sol.racks, sol.replicas),
                                so_far=sol, tie=False)
        else:
            found = None
        if found is None or found.status == NO_PLAN:
            return built, dataclasses.replace(sol, status="time_limit")
        built, sol = repair_pools(again, carried(found, sol, rnd >= last), settings, deadline, progress, resolve,
                                  patience)
    return built, sol


def size_spares(built: Built, sol, settings, deadline: float, progress=None,
                patience: int = 1) -> tuple[Built, FleetSolution]:
    """Spare replicas at the pools the plan deploys (OPTIMIZER.md 19): a column is charged f = min(K, x0) / x0
    spares a replica at its assumed pool x0 (``options.spare_pool``); where it deploys fewer replicas, f is short
    of min(K, x) / x, so the column is taken again at the pool it deploys and the MILP solved again (its prefill
    pools and decode queues sized again after it). After SPARE_ROUNDS such rounds, a column still short is taken
    at SPARE_SHRINK of the pool it deploys (f then holds for any pool down to that): its x0 falls by that factor
    at least each time, and a column at x0 <= K (f = 1: min(K, x) <= x whatever x is) is never short, so this
    ends. Past the deadline, the plan so far stands with status
    time_limit, and ``solve`` refuses it if it does not hold."""
    rnd = 0
    while sol.status in HAS_PLAN:
        pool = np.asarray(built.options["spare_pool"], dtype=float)
        share = np.asarray(built.options["spare_share"], dtype=float)
        deployed = plan_replicas(built, sol)
        short = np.flatnonzero((share > 0) & (share < 1.0) & (deployed > 1e-9) & (deployed < pool * (1 - 1e-9)))
        if not len(short):
            break
        new = pool.copy()
        new[short] = deployed[short] * (1.0 if rnd < SPARE_ROUNDS * patience else SPARE_SHRINK)
        rnd += 1
        if progress:
            progress(0, 1, f"pools smaller than their spares assumed: {len(short)} option(s) taken again, solving "
                           f"again")
        again = with_columns(built, {**built.options, "spare_pool": new})
        found = (optimize_by(again, settings, deadline, "sizing spare replicas again", (sol.racks, sol.replicas),
                             so_far=sol, tie=False) if deadline > time.monotonic() else None)
        if found is None or found.status == NO_PLAN:
            return built, dataclasses.replace(sol, status="time_limit")
        built, sol = repair_pools(again, carried(found, sol), settings, deadline, progress, patience=patience)
        built, sol = size_decode_queues(built, sol, settings, deadline, progress, patience=patience)
    return built, sol


def with_columns(built: Built, cols: dict, engine_s: float = 0.0) -> Built:
    """``built`` with its option columns replaced by ``cols`` and the MILP assembled again from them, the engine's
    count and time carried (``engine_s`` more for work done on the columns)."""
    rebuilt = build_problem(built.scenario, options_from=dataclasses.replace(built, options=cols))
    return dataclasses.replace(rebuilt, candidates_scored=built.candidates_scored,
                               engine_seconds=built.engine_seconds + engine_s)


def optimize_by(built: Built, settings, deadline: float, doing: str, start: tuple | None = None, so_far=None,
                tie: bool = True):
    """The MILP solved with the time left before ``deadline`` (never less than the solvers' least limit,
    ``solvers.milp.MIN_SOLVE_SECONDS``). ``start``: a nearby plan's (racks, replicas), the solver's hint.
    ``so_far``: the solution of the plan found so far, if any. ``tie``: the tie-break (T) where the scenario asks
    for it; a round of ``size_pools`` solves without it (``tie_broken`` runs it once after them), except under
    max_served, whose (T) is its second stage's. No time left: None where a plan was found so far (the caller keeps
    it), else PlannerError naming what used the time up (no plan at all)."""
    left = deadline - time.monotonic()
    if left <= 0:
        if so_far is not None and so_far.status in HAS_PLAN:
            return None
        raise PlannerError(f"the time limit of {settings.time_limit_s:g} s ran out while {doing}; raise "
                           f"--time-limit (or solver.time_limit_s)")
    tie = settings.fewest_platforms and (tie or objective_named(built.problem.objective).serves_most)
    return optimize(built.problem, solver=settings.name, time_limit_s=left, relative_gap=settings.relative_gap,
                    fewest_platforms=tie, start=start)


def with_options_at(built: Built, caps: dict[int, float]) -> tuple[Built, np.ndarray]:
    """``built`` with each column j of ``caps`` generated again for a pool of at most ``caps[j]`` servers
    (``options.option_at_servers``; a column that no longer meets its targets is dropped), and the MILP assembled
    again from the columns; and [J] bool, the columns of ``built.options`` it kept."""
    sc = built.scenario
    started = time.perf_counter()
    cols = {c: v.copy() for c, v in built.options.items()}
    keep = np.ones(len(cols["workload"]), dtype=bool)
    efficiency, layouts = sc.efficiencies({h.id: h for h in built.hardware}), sc.layout_rule()
    for j, servers in sorted(caps.items()):
        d = built.demand_by_name[str(cols["workload"][j])]
        row = option_at_servers(cols, j, d, built.models, built.hardware_by_id, efficiency, layouts, servers)
        if row is None:
            keep[j] = False
            continue
        for c, v in row.items():
            if c not in ("hardware", "ffn_hardware"):  # the same systems; at several sites, named system@site
                cols[c][j] = v
    return with_columns(built, {c: v[keep] for c, v in cols.items()}, time.perf_counter() - started), keep


def carried_replicas(replicas: np.ndarray, kept: np.ndarray, n_before: int, n_after: int,
                     before=None, after=None) -> np.ndarray | None:
    """A plan's ``replicas`` [..., n_before] on the columns of the problem made again after ``with_options_at``
    kept the options ``kept`` ([options] bool): a dropped column's replicas left out, every other column's carried.
    ``before`` and ``after``: the options each problem's columns are (a build-out's may be a subset:
    ``buildout.relaxed_columns``), all of them where None; a column new to ``after`` starts at 0. The solver's
    start (a hint, which need not be feasible): where a column dropped, the next solve started from nothing, and
    such a cold start took SCIP 105 s on the shipped build-out where a start from a nearby plan closed in 7 s.
    None where the columns do not match the options (a start is then not given)."""
    before = np.arange(len(kept)) if before is None else np.asarray(before, dtype=int)
    after = np.arange(int(kept.sum())) if after is None else np.asarray(after, dtype=int)
    if replicas.ndim == 0 or len(before) != n_before or len(after) != n_after or replicas.shape[-1] != n_before:
        return None
    new_option = np.cumsum(kept) - 1  # each kept option's index among the options made again
    column_of = {int(o): k for k, o in enumerate(after)}
    out = np.zeros(replicas.shape[:-1] + (n_after,))
    for k, o in enumerate(before):
        if kept[o] and int(new_option[o]) in column_of:
            out[..., column_of[int(new_option[o])]] = replicas[..., k]
    return out
