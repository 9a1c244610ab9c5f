"""What a plan assumes and where it runs into its limits, in words: the plan JSON's ``assumptions`` and the
binding limits the what-ifs loosen (``planner.report.summary`` draws the answer from them). Analysis, not
rendering: it sits with the plan (docs/ARCHITECTURE.md, Layers)."""

from __future__ import annotations

import math

from planner.measurements.physics import plan_warnings
from planner.perf.speculative import acceptance_words, auto_words
from planner.fleet.problem import system_of
from planner.vocabulary import AUTO_SPECULATIVE

BINDING_SHARE = 0.995  # a limit used to this share or more is reported as binding


def people(value: float, unit: str = "") -> str:
    """3-4 significant figures with k, M, G for people: 45.9 M, 2.06, 1,607 k."""
    if value is None or not math.isfinite(value):
        return "-"
    mag = abs(value)
    for scale, suffix in ((1e12, " T"), (1e9, " G"), (1e6, " M"), (1e3, " k")):
        if mag >= max(scale, 1e4):  # below 10 k, plain digits read better
            text = f"{value / scale:.3g}{suffix}"
            break
    else:
        text = f"{value:,.0f}" if mag >= 100 else f"{value:.3g}"
    return text + (f" {unit}" if unit and not text.endswith(" ") else unit)


def site_uses(d: dict) -> list[tuple]:
    """(site or None, facility MW, its budget, racks, its floor space) of each site: a plan over several sites'
    ``totals.sites`` (OPTIMIZER.md 21), else the one site's totals and limits (site None)."""
    totals, sc = d["totals"], d["inputs"]["scenario"]
    if totals.get("sites") is not None:
        return [(e["name"], e["facility_power_mw"], e["power_budget_mw"], e["racks"], e["max_racks"])
                for e in totals["sites"]]
    return [(None, totals["facility_power_mw"], sc["site"].get("power_budget_mw"), totals["racks"],
             sc["site"].get("max_racks"))]


def system_purchases(d: dict) -> dict[str, int]:
    """System -> racks bought, over its sites (a type of a plan over several sites is system@site)."""
    out: dict[str, int] = {}
    for f in d["fleet"]:
        system = system_of(f["hardware"])
        out[system] = out.get(system, 0) + f.get("racks_new", f["racks"])
    return out


def binding(d: dict) -> list[dict]:
    """The limits the plan runs into, one dict each: ``kind`` (power, floor_space, platforms, supply, new_racks),
    ``hardware`` (supply only), ``site`` (a site's power or floor space in a plan over several), ``limit`` (its
    value) and ``text``. The one place a limit is judged binding."""
    sc = d["inputs"]["scenario"]
    out = []
    for site, facility, budget, racks, max_racks in site_uses(d):
        at = f" at {site}" if site else ""
        if budget and facility >= BINDING_SHARE * budget:
            out.append({"kind": "power", "hardware": None, "site": site, "limit": budget,
                        "text": f"power{at}: {people(facility)} of {people(budget)} MW"})
        if max_racks and racks >= BINDING_SHARE * max_racks:
            out.append({"kind": "floor_space", "hardware": None, "site": site, "limit": max_racks,
                        "text": f"floor space{at}: {racks:,} of {max_racks:,} racks"})
    bought = system_purchases(d)
    most = sc.get("max_platforms")
    if most and len(bought) >= most:
        out.append({"kind": "platforms", "hardware": None, "site": None, "limit": most,
                    "text": f"platforms: {len(bought)} of at most {most} hardware types"})
    caps = sc.get("max_racks") or {}
    for hw, n in bought.items():
        cap = caps.get(hw)
        if cap is not None and cap > 0 and n >= cap:  # a system that cannot be bought binds no supply
            out.append({"kind": "supply", "hardware": hw, "site": None, "limit": cap,
                        "text": f"supply of {hw}: {n:,} of {cap:,} racks bought"})
    most_new = sc.get("max_new_racks")
    if most_new is not None and sum(bought.values()) >= most_new:
        out.append({"kind": "new_racks", "hardware": None, "site": None, "limit": most_new,
                    "text": f"new racks: {most_new:,} at most (hardware.max_new_racks)"})
    return out


NEAR_SHARE = 0.95  # a limit used to this share or more, short of binding, is "near" (issue 41: 97% read "no limit")


def near_limits(d: dict) -> list[str]:
    """The site's limits the plan uses to NEAR_SHARE or more without binding (power budget, floor space, a supply
    cap), in words with the share used: what a little more demand, or a slightly worse figure, would hit."""
    sc = d["inputs"]["scenario"]
    bound = {(b["kind"], b["hardware"], b.get("site")) for b in binding(d)}
    used: list[tuple] = []
    for site, facility, budget, racks, max_racks in site_uses(d):
        at = f" at {site}" if site else ""
        if budget:
            used.append(("power", None, site, facility, budget, f"power{at} {people(facility)} of {people(budget)} MW"))
        if max_racks:
            used.append(("floor_space", None, site, racks, max_racks, f"floor space{at} {racks:,} of "
                         f"{max_racks:,} racks"))
    caps = sc.get("max_racks") or {}
    for hw, bought in system_purchases(d).items():
        cap = caps.get(hw)
        if cap:
            used.append(("supply", hw, None, bought, cap, f"supply of {hw} {bought:,} of {cap:,} racks"))
    return [f"{text} ({100 * value / limit:.3g}%)" for kind, hw, site, value, limit, text in used
            if value >= NEAR_SHARE * limit and (kind, hw, site) not in bound]


def row_system(row: dict) -> str:
    """An allocation row's system as the alternatives name it: ``A+F`` for a split replica."""
    return row["hardware"] + (f"+{row['ffn_hardware']}" if row.get("ffn_hardware") else "")


def chips_by_use(d: dict, hw: str) -> dict:
    """(workload, role, system) -> chips of ``hw`` the plan's own rows (not a hosted API's) give it, roles and
    systems as the alternatives name them: a split replica is its ``attention`` row's, ``attention+ffn`` on
    ``A+F``, each side's chips on its own system (the ``ffn`` row repeats the FFN side: not counted again)."""
    out: dict = {}
    for r in d.get("allocation") or []:
        if r.get("acquisition") == "api" or r["role"] == "ffn":
            continue
        n = float(r["replicas"] or 0.0)
        sides = [(r["hardware"], r["chips_per_replica"]), (r.get("ffn_hardware"), r.get("ffn_chips"))]
        chips = sum(n * float(c or 0.0) for h, c in sides if h == hw)
        if chips > 0:
            role = "attention+ffn" if r["role"] == "attention" else r["role"]
            key = (r["workload"], role, row_system(r))
            out[key] = out.get(key, 0.0) + chips
    return out


# Roles whose options serve the same tokens and so compete in the why line: a split replica decodes, as a decode
# replica does (both per output token/s; colocated and prefill options price other work and stand apart).
COMPETES_AS = {"attention+ffn": "decode"}


def why_bought(d: dict) -> list[str]:
    """For each system the plan runs, what it serves most (by chips) and why it wins there: its option's cost per
    token/s of capacity (the replica's chips' annual cost, the plan's ``alternatives``) against the best option
    on any other system for the same workload and role (a split replica's against decode replicas too,
    ``COMPETES_AS``; the runner-up, and by how much), or that no other system
    reaches the tier. Where the runner-up is cheaper per token/s alone, the reason the fleet still chose this
    system, where the plan shows one: racks already installed (capex sunk), the runner-up's supply cap binding,
    or less power per token/s under a binding budget; else that the fleet as a whole is cheaper this way (whole
    racks, decode queues at their usable share, shared pools and power price what a column's cost alone does not)."""
    costs: dict = {}
    for a in d.get("alternatives") or []:
        key = (a["workload"], COMPETES_AS.get(a["role"], a["role"]))
        costs.setdefault(key, {})[a["hardware"]] = (a["usd_per_year_per_1k_tokens_per_s"],
                                                    a["kw_per_1k_tokens_per_s"])
    bound = binding(d)
    capped = {b["hardware"] for b in bound if b["kind"] == "supply"}
    power_binds = any(b["kind"] == "power" for b in bound)
    out = []
    for f in d.get("fleet") or []:
        uses = chips_by_use(d, f["hardware"])
        if not uses:
            continue
        (workload, role, system), _ = max(uses.items(), key=lambda kv: (kv[1], kv[0]))
        more = len({(w, r) for w, r, _ in uses}) - 1
        serves = f"{workload} {role}" + (f" (and {more} more)" if more else "")
        options = costs.get((workload, COMPETES_AS.get(role, role)), {})
        others = {k: v for k, v in options.items() if k != system}
        if system not in options:
            why = "its option is not among the scored alternatives"
        elif not others:
            why = "no other system reaches its tier and TTFT"
        else:
            (mine, my_kw) = options[system]
            runner, (theirs, their_kw) = min(others.items(), key=lambda kv: (kv[1][0], kv[0]))
            if mine <= theirs:
                ratio = theirs / mine
                why = (f"{ratio:.2g}x" if ratio >= 2 else f"{100 * (1 - mine / theirs):.2g}%") + \
                    f" cheaper per token/s than {runner}, the runner-up"
            else:
                alone = f"{runner} is {100 * (1 - theirs / mine):.2g}% cheaper per token/s alone"
                if f.get("racks_installed") and not f.get("racks_new"):
                    why = f"installed (its capex sunk); {alone} as a new purchase"
                elif set(runner.split("+")) & capped:
                    why = f"{alone}, but its supply cap binds"
                elif power_binds and my_kw < their_kw:
                    why = f"{alone}, but draws {their_kw / my_kw:.2g}x the power per token/s and the budget binds"
                else:
                    why = (f"{alone}; the fleet as a whole is cheaper this way (whole racks, decode queues, shared "
                           f"pools, power)")
        out.append(f"{f['hardware']} for {serves}: {why}")
    return out


def binding_limits(d: dict) -> list[str]:
    """The binding limits in words (``binding``)."""
    return [b["text"] for b in binding(d)]


def layout_words(d: dict) -> str:
    """Which layouts the plan may use, and any row no public engine runs (MODEL.md 2.9)."""
    sc = d["inputs"]["scenario"]
    if sc.get("layouts", "supported") != "any":
        return ("layouts: only those a public engine of the serving stack runs (each allocation row's engines; "
                "data/engines.yaml)")
    alone = sorted({f"{r['workload']} on {r['hardware']} (tp{r['tensor_parallel']} pp{r['pipeline_parallel']}"
                    f"{' ep' if r['expert_parallel'] else ''})" for r in d.get("allocation", [])
                    if not r.get("engines") and r.get("role") != "api"})
    return ("layouts: any the model can cost (layouts: any); "
            + (f"no public engine runs {', '.join(alone)}" if alone else "every row's layout runs on a public engine"))


def installed_words(d: dict) -> list[str]:
    """The installed fleet (OPTIMIZER.md 9): what is kept, what retires and why, what retired before the plan."""
    installed = d["inputs"].get("installed") or {}
    lines = []
    for f in d["fleet"]:
        have = installed.get(f["hardware"])
        if not have:
            continue
        keep = sum(have["kept_costs"].values())
        text = (f"installed {f['hardware']}: {have['racks']:,} racks in service at the start (capex sunk; "
                f"{people(keep, 'USD')} a year each to keep: maintenance and energy), the first retiring "
                f"{have['retire_by']}; the plan keeps {f['racks_installed']:,}")
        if f["racks_retired"]:
            text += (f" and retires {f['racks_retired']:,} now: the demand is served without them, and keeping "
                     f"them would cost {people(f['racks_retired'] * keep, 'USD')} a year")
        lines.append(text)
    past = d["inputs"]["scenario"].get("installed_past_life") or {}
    for hw_id, n in sorted(past.items()):
        lines.append(f"installed {hw_id}: {n:,} racks past their service life at the start, retired before the "
                     f"plan")
    return lines


def carbon_words(sc: dict) -> list[str]:
    """How the plan's emissions are counted (OPTIMIZER.md 15), where the site gives its grid's."""
    grid = sc["site"].get("grid_kg_co2_per_mwh")
    if grid is None:
        return []
    return [f"emissions: the grid at {grid:g} kg CO2e/MWh of facility energy (site.grid_kg_co2_per_mwh, "
            f"location-based), each rack's making (the catalog's rack.embodied_kg_co2e, estimates) spread over "
            f"{sc['horizon_years']:g} years, an installed rack's making sunk, rented chips as if on this grid; "
            f"hosted API tokens not counted"]


def cross_site_words(rows: list[dict], when: str = "") -> list[str]:
    """A plan over several sites whose workload decodes at one place (a site, or a hosted API) requests whose
    prompts another prefills (OPTIMIZER.md 21, not yet a row of the MILP): the share of its requests that must
    move their KV cache between places, sum_n min(decode share_n, prompt share_n) short of all of them."""
    by: dict[str, dict] = {}
    for r in rows:
        place = by.setdefault(r["workload"], {}).setdefault(r.get("site"), [0.0, 0.0])
        place[0] += float(r.get("output_tokens_per_s") or 0.0)
        place[1] += float(r.get("prefill_tokens_per_s") or 0.0)
    out = []
    for w, places in by.items():
        decode, prompt = (sum(v[k] for v in places.values()) for k in (0, 1))
        if len(places) < 2 or decode <= 0 or prompt <= 0:
            continue
        moved = 1.0 - sum(min(v[0] / decode, v[1] / prompt) for v in places.values())
        if moved > 1e-3:
            out.append(f"{w}: {100 * moved:.2g}% of its requests{when} are decoded at another site than the one that "
                       f"prefills them: their KV cache moves between sites, which the plan does not price (docs/"
                       f"OPTIMIZER.md 21)")
    return out


def assumptions(d: dict) -> list[str]:
    """What decides the cost and is easy to miss: load, peaks, drafters, prices, what $/Mtok includes."""
    sc = d["inputs"]["scenario"]
    fin = sc["finance"]
    sites = d["inputs"].get("sites")
    energy = (f"{fin['electricity_usd_per_mwh']:g} USD/MWh x PUE {fin['pue']:g}" if not sites else
              "each site's own: " + ", ".join(f"{e['name']} {e['finance']['electricity_usd_per_mwh']:g} USD/MWh x PUE "
                                              f"{e['finance']['pue']:g}" for e in sites))
    lines = [
        f"$/Mtok = annual cost (capex annuity at {100 * fin['wacc']:.3g}% over {sc['horizon_years']:g} years, "
        f"maintenance {100 * fin['maintenance_share_of_capex_per_year']:.3g}% of capex a year, energy at "
        f"{energy}) / tokens generated a year at the mean rate (peak / peak_to_mean); no software, staff or network",
        (f"racks draw {100 * fin['average_load_share']:.3g}% of their rated power on average and the budget holds "
         f"design power (finance.average_load_share)" if fin.get("average_load_share") is not None else
         "racks draw by their power curves (docs/MODEL.md 14): the budget holds the peak draw, energy is billed at "
         "the mean draw (replicas working 1 / peak_to_mean of the time, resting at their idle floor otherwise)")
        + "; every pool is sized for "
        "the peak" + (f" plus {100 * sc['site']['capacity_headroom']:.3g}% headroom (site.capacity_headroom)"
                       if sc["site"].get("capacity_headroom") else " with no headroom (site.capacity_headroom)")
        + ", a decode pool as a queue of batch slots busy at most the share that keeps the workload's percentile "
          "stream at its tier, other pools at 100% of their modelled throughput (docs/OPTIMIZER.md 18)"
        + own_headroom(d),
        ("curtailment: at the peak every pool runs at 1 / (1 + headroom) of its capacity, packed onto as few racks "
         "as its chips need, the emptied racks powered off; workloads are then shed whole, "
         + ("the slowest tier first" if sc["site"].get("curtailment_order", "tier") == "tier" else
            "the least revenue lost per MW first") + " (site.curtailment_order); shed traffic can wait only for "
         "the hours its own pools' spare capacity at the mean rate works it off the same day (docs/OPTIMIZER.md 13)"
         if not sites else
         f"sites: {len(sites)} in one plan (docs/OPTIMIZER.md 21), each within its own power budget and floor "
         f"space; a workload's replicas may stand at any of its sites, each pool at one; no curtailment table (it "
         f"sheds at one site's peak)"),
        f"serving stack: {sc.get('serving_stack', 'vendor-best')} (efficiencies fitted to "
        + ("the vendors' best published figures" if sc.get("serving_stack", "vendor-best") == "vendor-best"
           else f"{sc['serving_stack']}'s published figures where the corpus has them, vendor-best's elsewhere")
        + "; docs/MODEL.md 5.3)",
        layout_words(d),
        *cross_site_words(d.get("allocation") or []),
        *installed_words(d),
        *carbon_words(sc),
    ]
    for w in d["inputs"]["demands"]:
        spec = ("no speculative decoding" if w["speculative"] == "none" else
                auto_words(w.get("auto_methods") or (), w["model"]) if w["speculative"] == AUTO_SPECULATIVE else
                acceptance_words(w["speculative"], w["model"], w["acceptance"], w.get("acceptance_by_k")))
        lines.append(f"{w['name']}: peak {w['peak_to_mean']:g}x the mean rate; {spec}"
                     + (f"; precision pinned to {w['precision']}" if w.get("precision") else ""))
        if w.get("api"):
            stated = [f"{o[0]} {o[5]:g} s" for o in w["api"] if len(o) > 5]
            unstated = [o[0] for o in w["api"] if len(o) <= 5]
            ttft = "; TTFT " + "; ".join(
                ([f"as stated ({', '.join(stated)}), an offer above the workload's target left out"] if stated else [])
                + ([f"unstated for {', '.join(unstated)}, taken to meet the target"] if unstated else []))
            lines.append(f"{w['name']}: hosted api offers ({', '.join(o[0] for o in w['api'])}) taken at their stated "
                         f"speed (max_tps_per_user) with no rate limit, priced on the tokens they serve at the mean "
                         f"rate; an offer below the tier is left out" + ttft)
    if d["objective"] == "max_revenue":
        prices = sc.get("prices_usd_per_mtok") or {}
        lines.append("prices: " + (", ".join(f"{k} {v:g} USD/Mtok" for k, v in prices.items()) or "per workload"))
    excluded = sc.get("excluded_hardware") or {}
    if sc.get("acquisition") is not None:
        left = sorted(k for k, why in excluded.items() if "acquisition" in why)
        lines.append(f"buying policy: {', '.join(sc['acquisition'])} systems only (hardware.acquisition)"
                     + (f"; left out: {', '.join(left)}" if left else ""))
    else:
        lines.append(f"buying policy: the systems named in hardware.allow ({len(excluded)} others left out)")
    measured = [r for r in d.get("allocation", []) if r.get("source") == "measured"]
    if d["inputs"].get("measurements"):
        lines.append(f"measurements: {len(d['inputs']['measurements'])} measured rows; {len(measured)} allocation "
                     f"rows planned from them (source: measured), at their measured throughput less "
                     f"{100 * (d['inputs'].get('measurement_headroom') or 0):.3g}% headroom; a (workload, system, "
                     f"precision) with measurements takes no option from the model")
        lines.extend(plan_warnings(d["inputs"]))  # rows beyond physics, planned under --trust-measurements
    how = d.get("solver", {}).get("heuristic")
    if how:
        lines.append(f"search: {how} (docs/OPTIMIZER.md 20)")
    start = d.get("solver", {}).get("start")
    if start:
        lines.append(f"start: a rounded LP plan was made before the search; it closed on {start} (docs/OPTIMIZER.md 22)")
    tie = d.get("solver", {}).get("tie_break")
    if tie:
        lines.append(f"ties: among plans no worse than the first found, the one on the fewest hardware types "
                     f"(solver.fewest_platforms): {tie}")
    if d.get("minor_platforms"):
        lines.append("minor platforms: a system bought for under 2% of the fleet's annual cost is named with what "
                     "it saves: the plan re-solved without it (its supply cap 0, the other options as scored), "
                     "against this one (minor_platforms)")
    lines.append("fractional replicas: a row's replicas may be fractional (a share of a replica's time); racks "
                 "are whole (docs/OPTIMIZER.md)")
    return lines


def own_headroom(d: dict) -> str:
    """The workloads whose headroom differs from the site's (workloads[].capacity_headroom, or solve --verify's
    repair), as a clause; empty when none does."""
    site = float(d["inputs"]["scenario"]["site"].get("capacity_headroom") or 0.0)
    own = [f"{x['name']} {100 * x['headroom']:.3g}%" for x in d["inputs"]["demands"]
           if abs(float(x.get("headroom") or 0.0) - site) > 1e-12]
    return f", except {', '.join(own)} (workloads' capacity_headroom)" if own else ""
