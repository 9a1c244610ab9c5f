"""What a limit costs: the plan re-solved with one more MW of facility power, one more rack of floor space, or
one more rack of each system at its supply cap, for each limit that binds (``planner.report.summary``); and for a
plan that buys nothing, what one more rack of each system would add (``one_more_rack``). Re-solves, not duals: the MILP's integer racks make duals meaningless, and each re-solve is checked like any plan."""

from __future__ import annotations

import dataclasses

import numpy as np

from planner.errors import PlannerError
from planner.report.summary import binding
from solvers.milp import optimize
from solvers.vocabulary import HAS_PLAN


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


def fleet_families(scenario) -> list[tuple[str, list[str]]]:
    """(label, hardware ids) of each single-family fleet a plan can be set beside: every family whose fastest
    memory is not SRAM alone (the GPUs of each vendor, TPUs, Trainium), and every SRAM family (decode machines)
    with the allowed non-SRAM systems that prefill beside it. Only the systems the scenario allows, so the buying
    policy holds here too."""
    allowed = scenario.resolved_hardware()
    by_family: dict[str, list[str]] = {}
    for hw_id, hw in sorted(allowed.items()):
        by_family.setdefault(hw.family, []).append(hw_id)

    def sram(family: str) -> bool:
        return allowed[by_family[family][0]].chip.memory[0].tier == "sram"

    prefill = sorted(i for f, ids in by_family.items() if not sram(f) for i in ids if "prefill" in allowed[i].roles)
    groups = [(f"{f} only", ids) for f, ids in by_family.items() if not sram(f)]
    groups += [(f"{f}, prefill on the others", sorted(ids + prefill)) if prefill else (f"{f} only", ids)
               for f, ids in by_family.items() if sram(f)]
    return groups


def single_family_fleets(plan) -> list[dict]:
    """The best fleet of each family alone (``fleet_families``), solved like the plan with hardware.allow set to
    the family's systems: what it buys, its cost and power, and how much dearer it is than the plan. A family that
    cannot serve the demand says why. Empty when the plan is not in memory or has no fleet."""
    from planner.fleet.solve import solve

    if plan is None or plan.built is None or plan.status not in ("optimal", "feasible", "time_limit"):
        return []
    scenario = plan.built.scenario
    rows = []
    for label, ids in fleet_families(scenario):
        row = {"fleet": label, "systems": ", ".join(ids), "buys": None, "annual_cost_usd": None, "capex_usd": None, "facility_power_mw": None,
               "vs_plan_pct": None, "status": None}
        try:
            alone = solve(scenario.with_({"hardware.allow": ids}))
        except PlannerError as exc:
            row["status"] = f"cannot serve it: {str(exc).splitlines()[0]}"
            rows.append(row)
            continue
        t = alone.totals
        row.update(buys=", ".join(f"{r['racks']:,} x {r['hardware']}" for r in alone.fleet.to_dicts()),
                   annual_cost_usd=t["annual_cost_usd"], capex_usd=t["capex_usd"],
                   facility_power_mw=t["facility_power_mw"], status=alone.status,
                   vs_plan_pct=100.0 * (alone.objective_usd_per_year / plan.objective_usd_per_year - 1.0))
        rows.append(row)
    return sorted(rows, key=lambda r: (r["annual_cost_usd"] is None, r["annual_cost_usd"] or 0.0))


def one_more_rack(plan, time_limit_s: float = 60.0) -> list[dict]:
    """For a plan that buys nothing (``hardware.max_new_racks: 0``, ``solve --fleet-only``): what one more rack of
    each system that may be bought adds, re-solved with the same objective and the racks in service free to change.
    One row per system: ``served_output_tokens_per_s`` more than the plan serves at peak, the ``annual_cost_usd``
    more, and ``objective`` of the re-solve; the largest gain first, systems that add nothing left out."""
    built, sol = plan.built, plan.solution
    if built is None or sol is None:
        return []
    p, sc = built.problem, built.scenario
    output_rows = np.array([d.output_tokens_per_s for d in built.demands])  # each workload's at peak
    base_served = float(output_rows @ _shares(sol, len(output_rows)))
    rows = []
    for k, hw in enumerate(built.hardware):
        if sc.purchase_exclusion(hw.id, hw) is not None or p.max_racks[k] < 1:
            continue
        caps = np.where(np.arange(p.n_hardware) == k, 1.0, 0.0)
        one = dataclasses.replace(p, max_racks=caps, max_new_racks=1.0)
        more = optimize(one, sc.solver.name, time_limit_s, sc.solver.relative_gap, fewest_platforms=False)
        if more.status not in HAS_PLAN or more.violations:
            continue
        gain = float(output_rows @ _shares(more, len(output_rows))) - base_served
        if gain <= 1e-6 * max(base_served, 1.0):
            continue
        rows.append({"hardware": hw.id, "served_output_tokens_per_s": gain,
                     "annual_cost_usd": float(more.objective - sol.objective) if p.objective == "max_served"
                     else None, "objective": float(more.objective)})
    return sorted(rows, key=lambda r: -r["served_output_tokens_per_s"])


def _shares(sol, n: int) -> np.ndarray:
    return np.asarray(sol.shares, dtype=float) if len(sol.shares) else np.ones(n)
