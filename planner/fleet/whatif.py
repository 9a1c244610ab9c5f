"""What a limit costs: the plan re-solved with one more MW of facility power, one more rack of floor space, or
one more rack of each system at its supply cap, for each limit that binds (``planner.fleet.assumptions.binding``);
for a plan that buys nothing, what one more rack of each system would add (``one_more_rack``); and what a system
bought for under 2% of the fleet's cost saves against the plan without it (``minor_platforms``). Re-solves, not
duals: the MILP's integer racks make duals meaningless, and each re-solve is checked like any plan."""

from __future__ import annotations

import dataclasses
import functools
from concurrent.futures import ThreadPoolExecutor, as_completed

import numpy as np

from planner.errors import PlannerError
from planner.fleet.assumptions import binding
from planner.fleet.options import systems_of
from planner.fleet.plan import Plan
from planner.fleet.problem import system_of
from solvers.jit import thread_count
from solvers.milp import optimize
from solvers.vocabulary import HAS_PLAN


def limit_changes(plan) -> list[tuple[str, dict]]:
    """(what, settings) for each binding limit of ``plan`` (``planner.report.summary.binding``) that one more unit
    can loosen: the scenario paths to set."""
    out = []
    names = plan.built.scenario.site_names() if plan.built is not None else []
    for b in binding(plan.to_dict()):
        # a site's own limit of several (OPTIMIZER.md 21) is its entry's in sites:, by index
        where, at = (f"sites.{names.index(b['site'])}.", f" at {b['site']}") if b.get("site") else ("site.", "")
        if b["kind"] == "power":
            out.append((f"one more MW of facility power{at}", {f"{where}power_budget_mw": b["limit"] + 1.0}))
        elif b["kind"] == "floor_space":
            out.append((f"one more rack of floor space{at}", {f"{where}max_racks": b["limit"] + 1}))
        elif b["kind"] == "supply":
            out.append((f"one more {b['hardware']} rack (supply cap {b['limit']})",
                        {f"hardware.max_racks.{b['hardware']}": b["limit"] + 1}))
    return out


def marginal_values(plan) -> list[dict]:
    """For each binding limit: the plan's objective with that limit one unit looser, what the unit is worth a
    year (the saving, never below 0), and whether that saving is within the solvers' gap (then it is noise, not
    a value). Empty when nothing binds or the plan is not in memory."""
    return run_jobs(limit_jobs(plan))


def limit_jobs(plan) -> list:
    """One re-solve per binding limit (``limit_row``), on the plan's scored options."""
    if not solved_in_memory(plan):
        return []
    return [functools.partial(limit_row, plan, what, settings) for what, settings in limit_changes(plan)]


def solved_in_memory(plan) -> bool:
    return plan is not None and plan.built is not None and plan.status in ("optimal", "feasible", "time_limit")


def solve_again(plan, settings: dict, options_from) -> Plan:
    """``plan``'s scenario with ``settings`` set, solved on the scored options ``options_from`` (the plan's, or some
    of them). The plan is a single-period one (its ``built`` a ``Built``), and so is the answer."""
    from planner.fleet.solve import solve

    again = solve(plan.built.scenario.with_(settings), options_from=options_from)
    assert isinstance(again, Plan)  # a build-out's plan only from a scenario with periods
    return again


def limit_row(plan, what: str, settings: dict) -> dict:
    try:
        looser = solve_again(plan, settings, plan.built)
    except PlannerError as exc:
        return {"limit": what, "objective": None, "unit": plan.objective_unit, "worth": None,
                "objective_usd_per_year": None, "worth_usd_per_year": None, "within_gap": None,
                "status": f"not solved: {exc}"}
    # the objective's own value (issue 44: the annual cost whatever the objective, before): under min_power a
    # looser budget is worth the watts it saves, and its annual cost may rise
    value = plan.objective_value - looser.objective_value
    # a looser limit never does worse: a smaller gain than both solves' gaps allow is solver noise
    return {"limit": what, "objective": looser.objective_value, "unit": plan.objective_unit, "worth": max(value, 0.0),
            "objective_usd_per_year": looser.objective_usd_per_year,
            "worth_usd_per_year": plan.objective_usd_per_year - looser.objective_usd_per_year,
            "within_gap": value <= gap_noise(plan, looser), "status": looser.status}


def gap_noise(plan, other) -> float:
    """The difference in ``plan``'s objective that two solves' gaps allow: the larger gap times its value."""
    gaps = [g for g in (plan.solver.get("relative_gap"), other.solver.get("relative_gap")) if g is not None]
    return max(gaps, default=0.0) * abs(plan.objective_value)


def run_jobs(jobs: list, progress=None) -> list:
    """The re-solves ``jobs`` (callables) on a pool of threads, one per core (a MILP solve and the kernels run
    without the GIL), in order; ``progress(done, total, text)`` hears as each ends."""
    if not jobs:
        return []
    out = [None] * len(jobs)
    with ThreadPoolExecutor(max_workers=max(1, min(len(jobs), thread_count()))) as ex:
        futures = {ex.submit(job): k for k, job in enumerate(jobs)}
        for n, fut in enumerate(as_completed(futures), start=1):
            out[futures[fut]] = fut.result()
            if progress:
                progress(n, len(jobs), f"what-ifs: {n} of {len(jobs)} re-solved")
    return out


def whatif_tables(plan, progress=None) -> dict:
    """What the report sets beside a plan (``planner.report.html.render_plan_html``'s ``whatifs``): ``limits``
    (``marginal_values``) and ``families`` (``single_family_fleets``), all re-solves on one pool, each on the
    plan's scored options (a family's are the plan's on its systems: nothing is scored again)."""
    limits, families = limit_jobs(plan), family_jobs(plan)
    if progress and (limits or families):
        progress(0, len(limits) + len(families), f"what-ifs: {len(limits) + len(families)} re-solves")
    rows = run_jobs(limits + families, progress)
    return {"limits": rows[:len(limits)], "families": family_order(rows[len(limits):])}


MINOR_SHARE = 0.02  # a system bought for less than this share of the fleet's annual cost is named in the answer


def minor_hardware(plan) -> list[tuple[str, int, float]]:
    """(hardware, racks bought, share of the annual cost) of each system the plan buys (none of it installed)
    for less than ``MINOR_SHARE`` of the fleet's annual cost, beside at least one other system."""
    if not solved_in_memory(plan) or not len(plan.fleet):
        return []
    total = float(plan.totals.get("annual_cost_usd") or 0.0)
    rows: dict[str, dict] = {}  # by system: at several sites (OPTIMIZER.md 21) its types summed
    for f in plan.fleet.to_dicts():
        r = rows.setdefault(system_of(f["hardware"]), {"racks_new": 0, "racks_installed": 0, "annual_cost_usd": 0.0})
        for k in r:
            r[k] += f.get(k) or 0
    if total <= 0 or len(rows) < 2:
        return []
    return [(h, int(f["racks_new"]), float(f["annual_cost_usd"]) / total) for h, f in rows.items()
            if f["racks_new"] > 0 and not f["racks_installed"] and f["annual_cost_usd"] < MINOR_SHARE * total]


def minor_platform_jobs(plan) -> list:
    """One re-solve per system the plan buys for under ``MINOR_SHARE`` of its cost (``minor_row``); none when
    there is no such system."""
    return [functools.partial(minor_row, plan, hw, racks, share) for hw, racks, share in minor_hardware(plan)]


def minor_platforms(plan, progress=None) -> list[dict]:
    """What each system bought for under 2% of the fleet's annual cost saves (``minor_row``), stored on the plan
    (``plan.minor_platforms``, the plan JSON's ``minor_platforms``): computed before anything is shown, so that
    the answer only reads it. Cheap: one re-solve per such system, on the plan's scored options."""
    plan.minor_platforms = run_jobs(minor_platform_jobs(plan), progress)
    return plan.minor_platforms


def without_hardware(built, hw_id: str):
    """``built`` with every option that runs on ``hw_id`` (either side of a pair) left out; its hardware list kept,
    so that ``solve(..., options_from=...)`` reuses the rest."""
    cols = built.options
    mask = np.array([all(system_of(h) != hw_id for h, *_ in systems_of(cols, j)) for j in range(len(cols["workload"]))],
                    dtype=bool)
    return dataclasses.replace(built, options={c: v[mask] for c, v in cols.items()})


def minor_row(plan, hw_id: str, racks: int, share: float) -> dict:
    """The plan re-solved without ``hw_id`` (its supply cap set to 0 and its options left out, the other options
    as scored): ``saves_usd_per_year`` is what that plan costs more a year (the saving of buying the system;
    ``within_gap`` when smaller than the solvers' gap), ``saves_facility_power_mw`` the facility power it draws
    more, ``without`` what it buys instead; a plan that cannot be had without the system says why (``status``)."""
    row = {"hardware": hw_id, "racks": racks, "share_of_cost": share, "saves_usd_per_year": None, "saves": None,
           "unit": plan.objective_unit, "saves_facility_power_mw": None, "within_gap": None, "without": None,
           "status": None}
    try:
        alone = solve_again(plan, {f"hardware.max_racks.{hw_id}": 0}, without_hardware(plan.built, hw_id))
    except PlannerError as exc:
        row["status"] = f"no plan without it: {str(exc).splitlines()[0]}"
        return row
    value = alone.objective_value - plan.objective_value  # in the objective's own unit
    row.update(saves_usd_per_year=alone.objective_usd_per_year - plan.objective_usd_per_year,
               saves=value, unit=plan.objective_unit,
               saves_facility_power_mw=alone.totals["facility_power_mw"] - plan.totals["facility_power_mw"],
               within_gap=abs(value) <= gap_noise(plan, alone),
               without=", ".join(f"{r['racks']:,} x {r['hardware']}" for r in alone.fleet.to_dicts()),
               status=alone.status)
    return row


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
    return family_order(run_jobs(family_jobs(plan)))


def family_jobs(plan) -> list:
    if not solved_in_memory(plan):
        return []
    return [functools.partial(family_row, plan, label, ids) for label, ids in fleet_families(plan.built.scenario)]


def family_order(rows: list[dict]) -> list[dict]:
    return sorted(rows, key=lambda r: (r["annual_cost_usd"] is None, r["annual_cost_usd"] or 0.0))


def family_options(built, ids: list[str]):
    """``built`` narrowed to the systems ``ids``: its hardware and the options that run on them alone (an
    attention/FFN option needs both sides among them), for ``solve(..., options_from=...)``."""
    keep = set(ids)
    cols = built.options
    mask = np.array([all(system_of(h) in keep for h, *_ in systems_of(cols, j)) for j in range(len(cols["workload"]))],
                    dtype=bool)
    types = [i for i, h in enumerate(built.hardware) if h.id in keep]  # at several sites, each type of the system
    return dataclasses.replace(built, hardware=[built.hardware[i] for i in types],
                               rack_ids=None if built.rack_ids is None else [built.rack_ids[i] for i in types],
                               options={c: v[mask] for c, v in cols.items()})


def family_row(plan, label: str, ids: list[str]) -> dict:
    row = {"fleet": label, "systems": ", ".join(ids), "buys": None, "annual_cost_usd": None, "capex_usd": None,
           "facility_power_mw": None, "vs_plan_pct": None, "status": None}
    try:
        alone = solve_again(plan, {"hardware.allow": ids}, family_options(plan.built, ids))
    except PlannerError as exc:
        row["status"] = f"cannot serve it: {str(exc).splitlines()[0]}"
        return row
    t = alone.totals
    row.update(buys=", ".join(f"{r['racks']:,} x {r['hardware']}" for r in alone.fleet.to_dicts()),
               annual_cost_usd=t["annual_cost_usd"], capex_usd=t["capex_usd"],
               facility_power_mw=t["facility_power_mw"], status=alone.status,
               # against the plan by the objective's own value (a plan that buys nothing, or earns, has no base)
               vs_plan_pct=100.0 * (alone.objective_value / plan.objective_value - 1.0)
               if plan.objective_value > 0 else None)
    return row


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
    for k, (name, hw) in enumerate(zip(built.type_ids, built.hardware)):  # at several sites, a system at each
        if built.view_of(name).purchase_exclusion(hw.id, hw) is not None or p.max_racks[k] < 1:
            continue
        caps = np.where(np.arange(p.n_hardware) == k, 1.0, 0.0)
        one = dataclasses.replace(p, max_racks=caps, max_new_racks=1.0)
        more = optimize(one, sc.solver.name, time_limit_s, sc.solver.relative_gap, fewest_platforms=False)
        if more.status not in HAS_PLAN or more.violations:
            continue
        gain = float(output_rows @ _shares(more, len(output_rows))) - base_served
        if gain <= 1e-6 * max(base_served, 1.0):
            continue
        rows.append({"hardware": name, "served_output_tokens_per_s": gain,
                     "annual_cost_usd": float(more.objective - sol.objective) if p.objective == "max_served"
                     else None, "objective": float(more.objective)})
    return sorted(rows, key=lambda r: -r["served_output_tokens_per_s"])


def _shares(sol, n: int) -> np.ndarray:
    return np.asarray(sol.shares, dtype=float) if len(sol.shares) else np.ones(n)
