"""A build-out plan (``planner.fleet.buildout``) on the terminal and as tables: the first order first, then per
demand scenario the periods (what is bought, installed and retired, power, cost), then the assumptions."""

from __future__ import annotations

import click

from planner.report import render
from planner.report.summary import people, site_words, verified_words

TABLES = ("buildout", "period_totals", "period_workloads", "period_sites")


def frames(plan) -> dict:
    """The plan's tables as Polars frames, one row per (demand scenario, period[, hardware type | workload | site]);
    ``period_sites`` only over several sites (OPTIMIZER.md 21): each site's racks and power against its limits."""
    import polars as pl

    fleet, totals, workloads, sites = [], [], [], []
    for name, periods in zip(plan.scenario_names, plan.periods):
        for k, per in enumerate(periods):
            key = {"demand_scenario": name, "period": k, "start_date": per["start_date"]}
            fleet += [{**key, **r} for r in per["fleet"]]
            totals.append({**key, **{c: v for c, v in per["totals"].items() if c != "sites"}})
            workloads += [{**key, **w} for w in per["workloads"]]
            sites += [{**key, "site": e["name"], **{c: v for c, v in e.items() if c != "name"}}
                      for e in per["totals"].get("sites") or ()]
    out = {"buildout": pl.DataFrame(fleet, infer_schema_length=None),
           "period_totals": pl.DataFrame(totals, infer_schema_length=None),
           "period_workloads": pl.DataFrame(workloads, infer_schema_length=None)}
    if sites:
        out["period_sites"] = pl.DataFrame(sites, infer_schema_length=None)
    return out


def summary_lines(d: dict) -> list[str]:
    s = d["solver"]
    gap = f"gap {100 * s['relative_gap']:.2g}%" if s.get("relative_gap") is not None else "no gap"
    many = d.get("scenarios")
    lines = [f"{d['scenario']}: {d['status']} ({d['objective']}, {s['name']}, {gap}); build-out over "
             f"{s['periods']} periods" + (f", {s['demand_scenarios']} demand scenarios" if many else "")]
    first = (many[0]["periods"] if many else d["periods"])[0]
    order = ", ".join(f"{r['racks']:,} x {r['hardware']}" for r in d["first_period_order"]) or "nothing"
    lines.append(f"order now ({first['start_date']}): {order}")
    if first["totals"].get("sites"):  # several sites: where the first order stands, against each site's limits
        lines.append("sites now: " + "; ".join(site_words(e) for e in first["totals"]["sites"]))
    what = "expected net present cost" if many else "net present cost"
    lines.append(f"{what}: {people(d['net_present_cost_usd'], 'USD')}"
                 + (f" (objective {people(d['objective_value'])} {d['objective_unit']})"
                    if d["objective"] != "min_cost" else ""))
    noise = (s.get("relative_gap") or 0.0) * abs(d.get("objective_value") or 0.0)
    if d.get("myopic_net_present_cost_usd") is not None:
        lines.append(f"myopic plan (each period alone): {people(d['myopic_net_present_cost_usd'], 'USD')}; "
                     + _saving("planning ahead", d.get("value_of_planning_ahead_usd"), noise))
    if many and d.get("mean_demand_net_present_cost_usd") is not None:
        lines.append(f"plan for the mean demand, evaluated on the scenarios: "
                     f"{people(d['mean_demand_net_present_cost_usd'], 'USD')}; "
                     + _saving("planning for the spread", d.get("value_of_stochastic_solution_usd"), noise))
    lines.append("verified: " + verified_words(d))  # every period of every demand scenario simulated (MODEL.md 16.6)
    return lines


def _saving(what: str, value, noise: float) -> str:
    """What a way of planning saves, or that it is within the solver's gap (then the two plans are as good)."""
    if value is None:
        return f"{what}: compared in the objective's own unit above"
    if abs(value) <= noise:
        return f"{what} saves nothing measurable ({people(value, 'USD')}, within the solver's gap)"
    return f"{what} saves {people(value, 'USD')}"


def period_rows(periods: list[dict]) -> list[dict]:
    rows = []
    for per in periods:
        t = per["totals"]
        budget = t.get("power_budget_mw")
        rows.append({
            "start": per["start_date"],
            "bought": ", ".join(f"{r['racks_bought']} {r['hardware']}" for r in per["fleet"] if r["racks_bought"])
            or "-",
            "retired": ", ".join(f"{r['racks_retired']} {r['hardware']}" for r in per["fleet"] if r["racks_retired"])
            or "-",
            "racks": t["racks"],
            "facility MW": ("; ".join(_site_power(e) for e in t["sites"]) if t.get("sites")
                            else t["facility_power_mw"] if budget is None
                            else f"{people(t['facility_power_mw'])} of {people(budget)}"),
            "capex paid USD": t["capex_paid_usd"], "USD/year": t["annual_cost_usd"],
            "USD/Mtok": t["cost_usd_per_mtok"]})
    return rows


def _site_power(e: dict) -> str:
    """One site's facility power in a period of a build-out over several sites, against its budget there."""
    budget = e.get("power_budget_mw")
    return f"{e['name']} {people(e['facility_power_mw'])}" + (f" of {people(budget)}" if budget is not None else "")


def show(plan) -> None:
    d = plan.to_dict()
    for line in summary_lines(d):
        click.echo(line)
    many = d.get("scenarios")
    for name, periods in ([(s["name"] + f" ({100 * s['probability']:.3g}%)", s["periods"]) for s in many] if many
                          else [("", d["periods"])]):
        render.table(period_rows(periods), title="periods" + (f": demand scenario {name}" if name else ""))
    click.echo("assumptions:")
    for line in d["assumptions"]:
        click.echo(f"  - {line}")
    click.echo("(per-workload USD/Mtok and every figure: --format json or --out DIR)")
