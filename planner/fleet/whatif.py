"""What a limit costs: the plan re-solved with one more MW of facility power, one more rack of floor space, or
one more rack of each system at its supply cap, for each limit that binds (``planner.report.summary``). Re-solves,
not duals: the MILP's integer racks make duals meaningless, and each re-solve is checked like any plan."""

from __future__ import annotations

from planner.errors import PlannerError
from planner.report.summary import binding


def limit_changes(plan) -> list[tuple[str, dict]]:
    """(what, settings) for each binding limit of ``plan`` (``planner.report.summary.binding``) that one more unit
    can loosen: the scenario paths to set."""
    out = []
    for b in binding(plan.to_dict()):
        if b["kind"] == "power":
            out.append(("one more MW of facility power", {"site.power_budget_mw": b["limit"] + 1.0}))
        elif b["kind"] == "floor_space":
            out.append(("one more rack of floor space", {"site.max_racks": b["limit"] + 1}))
        elif b["kind"] == "supply":
            out.append((f"one more {b['hardware']} rack (supply cap {b['limit']})",
                        {f"hardware.max_racks.{b['hardware']}": b["limit"] + 1}))
    return out


def marginal_values(plan) -> list[dict]:
    """For each binding limit: the plan's objective with that limit one unit looser, what the unit is worth a
    year (the saving, never below 0), and whether that saving is within the solvers' gap (then it is noise, not
    a value). Empty when nothing binds or the plan is not in memory."""
    from planner.fleet.solve import solve

    if plan is None or plan.built is None or plan.status not in ("optimal", "feasible", "time_limit"):
        return []
    rows = []
    for what, settings in limit_changes(plan):
        try:
            looser = solve(plan.built.scenario.with_(settings))
            value = plan.objective_usd_per_year - looser.objective_usd_per_year
            # a looser limit never costs more: a smaller saving than both solves' gaps allow is solver noise
            gaps = [g for g in (plan.solver.get("relative_gap"), looser.solver.get("relative_gap")) if g is not None]
            noise = max(gaps, default=0.0) * abs(plan.objective_usd_per_year)
            rows.append({"limit": what, "objective_usd_per_year": looser.objective_usd_per_year,
                         "worth_usd_per_year": max(value, 0.0), "within_gap": value <= noise,
                         "status": looser.status})
        except PlannerError as exc:
            rows.append({"limit": what, "objective_usd_per_year": None, "worth_usd_per_year": None,
                         "within_gap": None, "status": f"not solved: {exc}"})
    return rows
