"""What a limit costs: the plan re-solved with one more MW of facility power, one more rack of floor space, or
one more rack of each system at its supply cap, for each limit that binds (``planner.report.summary``). Re-solves,
not duals: the MILP's integer racks make duals meaningless, and each re-solve is checked like any plan."""

from __future__ import annotations

from planner.errors import PlannerError
from planner.report.summary import BINDING_SHARE


def limit_changes(plan) -> list[tuple[str, dict]]:
    """(what, settings) for each binding limit of ``plan``: the scenario paths to loosen by one unit."""
    sc = plan.built.scenario
    totals = plan.totals
    out = []
    budget = sc.site.power_budget_mw
    if budget and totals["facility_power_mw"] >= BINDING_SHARE * budget:
        out.append(("one more MW of facility power", {"site.power_budget_mw": budget + 1.0}))
    if sc.site.max_racks and totals["racks"] >= BINDING_SHARE * sc.site.max_racks:
        out.append(("one more rack of floor space", {"site.max_racks": sc.site.max_racks + 1}))
    for f in plan.fleet.to_dicts():
        cap = sc.hardware.max_racks.get(f["hardware"])
        if cap is not None and f["racks"] >= cap:
            out.append((f"one more {f['hardware']} rack (supply cap {cap})",
                        {f"hardware.max_racks.{f['hardware']}": cap + 1}))
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
