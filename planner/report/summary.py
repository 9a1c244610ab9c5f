"""The answer at a glance: what to buy, what it costs, what limits it, what it leaves unserved, and the
assumptions that decide the cost. Plain lines from a plan's interface JSON (``Plan.to_dict()``), so the terminal,
the JSON (``assumptions``) and the HTML report say the same."""

from __future__ import annotations

from planner.fleet.assumptions import (  # noqa: F401 - the plan's words, re-exported for the report's callers
    BINDING_SHARE, assumptions, binding, binding_limits, installed_words, layout_words, near_limits, own_headroom,
    people, why_bought)


def summary_lines(d: dict, reason: str | None = None) -> list[str]:
    """The one-screen answer, from a plan's interface JSON."""
    totals, sc = d["totals"], d["inputs"]["scenario"]
    gap = d["solver"].get("relative_gap")
    gap_text = f"gap {100 * gap:.2g}%" if gap is not None else "no gap"
    own = "; pools sized on the plan's own columns" if d["solver"].get("heuristic") else ""
    lines = [f"{d['scenario']}: {d['status']} ({d['objective']}, {d['solver']['name']}, {gap_text}{own})"]
    if d["status"] == "infeasible":
        return lines + ([f"why: {reason}"] if reason else [])
    bought = [f for f in d["fleet"] if f.get("racks_new", f["racks"]) > 0]
    buy = ", ".join(f"{f.get('racks_new', f['racks']):,} x {f['hardware']}" for f in bought) or "nothing"
    lines.append(f"buy:      {buy} ({totals['racks']:,} racks in service, {totals['chips']:,} chips)")
    owned = [f for f in d["fleet"] if f.get("racks_installed", 0) or f.get("racks_retired", 0)]
    if owned:
        lines.append("keep:     " + ", ".join(f"{f['racks_installed']:,} x {f['hardware']}" for f in owned)
                     + " (installed)" + "".join(f"; retire {f['racks_retired']:,} x {f['hardware']}" for f in owned
                                                 if f["racks_retired"]))
    lines.append(f"cost:     capex {people(totals['capex_usd'], 'USD')}; {people(totals['annual_cost_usd'], 'USD')} "
                 f"a year")
    budget = sc["site"].get("power_budget_mw")
    against = (f" of a {people(budget)} MW budget ({100 * totals['facility_power_mw'] / budget:.3g}%)"
               if budget else " (no budget)")
    if totals.get("sites") is not None:  # several sites (OPTIMIZER.md 21): each within its own budget
        against = f" over {len(totals['sites'])} sites"
    shed = curtailment_words(d)
    lines.append(f"power:    {people(totals['facility_power_mw'])} MW at the facility{against}; "
                 f"{people(totals['power_mw'])} MW IT" + (f"; {shed}" if shed else ""))
    if totals.get("sites") is not None:
        lines.append("sites:    " + "; ".join(site_words(e) for e in totals["sites"]))
    lines.append(f"serves:   {people(totals['output_tokens_per_s'])} output tok/s at peak; "
                 f"{people(totals['output_tokens_per_s_per_mw'])} tok/s per MW (IT)")
    per = "; ".join(f"{w['workload']} {people(w['cost_usd_per_mtok'])}" for w in d["workloads"]
                    if w.get("cost_usd_per_mtok") is not None)
    lines.append(f"USD/Mtok: {per}")
    limits, near = binding_limits(d), near_limits(d)
    lines.append("binding:  " + ("; ".join(limits) if limits else "no limit binds: demand sets the size"
                                 if not near else "no limit binds, but the plan is near one"))
    if near:
        lines.append("near:     " + "; ".join(near))
    lines += [f"why:      {text}" for text in why_bought(d)]
    lines += [f"minor:    {minor_words(m)}" for m in d.get("minor_platforms") or []]
    short = [f"{w['workload']} ({100 * w['served_share']:.3g}% served)" for w in d["workloads"]
             if w.get("served_share") is not None and w["served_share"] < 1.0 - 1e-6]
    short += [f"{name} ({why})" for name, why in (d.get("unserved") or {}).items()]
    lines.append("unserved: " + (", ".join(short) if short else "none: every workload is served whole"))
    spares = spare_words(d)
    if spares:
        lines.append("spares:   " + spares)
    lines.append("verified: " + verified_words(d))
    if d["objective"] == "max_revenue":
        lines.append(f"revenue:  {people(totals['revenue_usd_per_year'], 'USD')} a year; profit "
                     f"{people(totals['profit_usd_per_year'], 'USD')}")
    if d.get("rentals"):
        lines.append("rent:     " + "; ".join(f"{r['chips']:,.4g} x {r['hardware']} chips ({r['offer']}, "
                                             f"{people(r['usd_per_year'], 'USD')} a year)" for r in d["rentals"]))
    hosted = [r for r in d.get("allocation", []) if r.get("acquisition") == "api"]
    if hosted:
        lines.append("api:      " + "; ".join(f"{r['workload']} {100 * r['replicas']:.3g}% to {r['measurement']} "
                                             f"({people(r['api_cost_usd'], 'USD')} a year)" for r in hosted))
    more = d.get("one_more_rack")
    if more is not None:
        lines.append("add one:  " + ("; ".join(
            f"{r['hardware']} +{people(r['served_output_tokens_per_s'])} tok/s"
            + (f" for {people(r['annual_cost_usd'], 'USD')} a year" if r.get("annual_cost_usd") is not None else "")
            for r in more[:3]) if more else "no single rack serves more")
            + " (one more rack of a system, the fleet re-planned around it)")
    return lines


def site_words(e: dict) -> str:
    """One site of a plan over several: its racks, facility power against its budget, and annual cost."""
    budget = e.get("power_budget_mw")
    power = f"{people(e['facility_power_mw'])} MW" + (f" of {people(budget)}" if budget else "")
    return (f"{e['name']} {e['racks']:,} racks" + (f" of {e['max_racks']:,}" if e.get("max_racks") else "")
            + f", {power}, {people(e['annual_cost_usd'], 'USD')} a year")


def spare_words(d: dict) -> str | None:
    """The spare replicas the plan holds (``site.redundancy``, a workload's ``spare_replicas``; OPTIMIZER.md 19):
    how many, on how many pools, and their share of the chips the plan runs on; None when it holds none."""
    rows = [r for r in d.get("allocation") or [] if (r.get("spare_replicas") or 0) > 0 and r["role"] != "ffn"]
    if not rows:
        return None
    chips = sum(r["spare_replicas"] * (r["chips_per_replica"] + (r.get("ffn_chips") or 0)) for r in rows)
    used = sum(f.get("chips_used") or 0.0 for f in d["fleet"])
    rules = sorted({w.get("redundancy", "none") for w in d["inputs"]["demands"]} - {"none"})
    return (f"{people(sum(r['spare_replicas'] for r in rows))} spare replicas on {len(rows)} pools ("
            f"{', '.join(rules)}): {people(chips)} chips, {100 * chips / used:.2g}% of those the plan runs on"
            if used else "")


def verified_words(d: dict) -> str:
    """Whether the plan holds in its own simulation (the plan's ``verification``, ``planner.sim.verify``): at each
    workload's percentile, or what the repair raised and what it cost, or what still fails."""
    v = d.get("verification")
    if v is None:
        if d.get("robust"):
            return ("not simulated: a robust fleet is chosen over many samples (planner simulate PLAN.json checks "
                    "it here)")
        return "not simulated (--no-verify; planner simulate PLAN.json checks it)"
    if v.get("mode") is None:  # a plan written before verification had a mode: its rounds alone
        return "holds in simulation" if v.get("holds") else "fails in simulation: " + "; ".join(v.get("failures")
                                                                                                 or [])
    run = (f"{v['mode']} run, seed {v['seed']}, {people(v['duration_s'])} s of arrivals"
           + (f", {v['solves']} solves" if v["solves"] > 1 else ""))
    first, last = v["rounds"][0], v["rounds"][-1]
    raised = ", ".join(f"{w} +{100 * (h - first['headroom'].get(w, 0.0)):.2g}%" for w, h in last["headroom"].items()
                       if h > first["headroom"].get(w, 0.0) + 1e-12)
    extra = v.get("extra_cost_usd_per_year")
    cost = (f"{people(extra, 'USD')} a year more" if extra is not None else
            f"{people(v['extra_net_present_cost_usd'], 'USD')} more net present cost"
            if v.get("extra_net_present_cost_usd") is not None else "")
    if v["holds"] and v["solves"] == 1:
        return f"holds at every workload's percentile in simulation ({run})"
    if v["holds"]:
        return (f"repaired: the first plan missed ({'; '.join(first['failures'])}); headroom {raised} holds, "
                f"{cost} ({run})")
    return (f"FAILS in simulation: {'; '.join(v['failures'])}" + (f" after headroom {raised}" if raised else "")
            + f" ({run}); {v.get('unrepaired') or 'not repaired'}")


def minor_words(m: dict) -> str:
    """A system bought for under 2% of the fleet's annual cost (the plan's ``minor_platforms``), and what it saves
    against the plan re-solved without it."""
    text = (f"{m['racks']:,} x {m['hardware']} is {100 * m['share_of_cost']:.2g}% of the annual cost; ")
    if m.get("saves_usd_per_year") is None:
        return text + (m.get("status") or "not re-solved")
    instead = f" ({m['without']})" if m.get("without") else ""
    saves, unit = m.get("saves", m["saves_usd_per_year"]), m.get("unit") or "USD/year"
    if m["within_gap"] or saves <= 0:  # judged by the objective's own value (issue 44)
        return text + (f"the plan without it{instead} does about as well (within the solvers' gap): the "
                       f"system saves nothing a buyer should count on")
    power = m.get("saves_facility_power_mw") or 0.0
    what = (f"{people(m['saves_usd_per_year'], 'USD')} a year" if unit == "USD/year" else
            f"{people(saves / 1e3)} kW of IT power" if unit == "W" else f"{people(saves)} {unit}")
    return text + (f"it saves {what} against the plan without it{instead}"
                   + (f", which also draws {people(power)} MW more" if power >= 1 else
                      f", which also draws {people(1e3 * power)} kW more" if power > 1e-6 else ""))


def curtailment_words(d: dict) -> str | None:
    """What the site can shed at its peak (the plan's ``curtailment`` table, OPTIMIZER.md 13), as a clause of the
    power line: what comes off with every workload kept (headroom, spare racks), and with the first workload the
    order sheds. Every step and the hours shed traffic could wait are in ``--detail``."""
    rows = d.get("curtailment") or []
    if not rows:
        return None
    sites = list(dict.fromkeys(r.get("site") for r in rows))
    if sites != [None]:  # several sites (OPTIMIZER.md 21): each sheds at its own peak
        return "; ".join(f"at {s} " + shed_words([r for r in rows if r.get("site") == s]) for s in sites)
    return shed_words(rows)


def shed_words(rows: list[dict]) -> str:
    """One site's curtailment steps as a clause: with every tier kept, then without the first workload shed."""
    parts = []
    kept = rows[0]
    if kept["shed_facility_power_mw"] > 0:
        parts.append(f"{people(kept['shed_facility_power_mw'])} MW with every tier kept")
    if len(rows) > 1:
        first = rows[1]
        parts.append(f"{people(first['shed_facility_power_mw'])} MW ({100 * first['shed_share_of_peak']:.3g}%) "
                     f"without {first['workload']}")
    return "sheds " + ", ".join(parts) if parts else "nothing to shed at the peak"


OBJECTIVE_WORDS = {"min_cost": "the cheapest fleet a year", "min_power": "the fleet that draws the least power",
                   "max_revenue": "the fleet that earns the most over its cost",
                   "max_served": "the most of the demand served, then the cheapest such fleet",
                   "min_carbon": "the fleet that emits the least CO2e a year"}


def headline(d: dict) -> str:
    """"Buy X, because ..." in plain words, for the report's first line."""
    if d["status"] == "infeasible" or not d["fleet"]:
        return "No fleet can serve this scenario as it stands; the reason and the smallest change are below."
    buy = ", ".join(f"{f['racks']:,} {f['hardware']}" for f in d["fleet"])
    served = ("every workload at its speed tier and TTFT target"
              if all((w.get("served_share") or 0) >= 1 - 1e-9 for w in d["workloads"]) else "the demand shown below")
    limits = binding_limits(d)
    within = f", held by {'; '.join(limits)}" if limits else ", with no site limit binding"
    return (f"Buy {buy} racks, because that is {OBJECTIVE_WORDS.get(d['objective'], 'the best fleet')} that "
            f"serves {served} ({people(d['totals']['annual_cost_usd'], 'USD')} a year, "
            f"{people(d['totals']['facility_power_mw'])} MW at the facility{within}).")
