"""What the site can shed at its peak (docs/OPTIMIZER.md 13): the curtailment table of a solved fleet.

At the peak every pool runs at 1 / (1 + headroom) of the capacity it holds. Step 0 sheds what no workload needs
then: the headroom's draw above the floor, and the floor of every rack left without work once the running
replicas are packed onto as few racks as their chips need (spare racks included). Each later step sheds one more
workload whole (its rows at this site; a share it sends to a hosted API is not the site's to shed), in the order
``site.curtailment_order`` names: ``tier`` (the slowest tier first, ties by the revenue lost per MW) or
``revenue`` (the least revenue lost per MW shed first). Every workload still served keeps its tier.

Each row says how long a day the step can be held: 24 hours for step 0 (nothing is lost), and for a step that
sheds traffic the hours for which it could be deferred and served later that day by the same pools, whose spare
capacity once demand falls to its mean is s = (1 + headroom) - 1 / peak_to_mean of the peak: T = 24 s / (1 + s)
(the backlog of T hours at the peak worked off in the other 24 - T). Traffic that cannot wait is lost for as long
as the step lasts, at the revenue per hour the row gives.

Plain rows and catalog entries in, so that ``solve`` and ``check`` build the same table.
"""

from __future__ import annotations

import math
from typing import Callable

from planner.fleet.draw import peak_draw_mw
from planner.vocabulary import API_KIND, CURTAILMENT_ORDERS as ORDER_NAMES, DEFAULT_CURTAILMENT_ORDER

HOURS_PER_DAY = 24.0
CURTAILMENT_COLUMNS = ["step", "workload", "tier", "min_tps_per_user", "step_power_mw", "shed_power_mw",
                       "shed_facility_power_mw", "shed_share_of_peak", "racks_powered_off",
                       "shed_output_tokens_per_s", "forgone_revenue_usd_per_hour", "deferrable_hours_per_day"]


def _by_tier(w: dict) -> tuple:
    return (w["min_tps_per_user"], w["usd_per_hour_per_mw"], w["workload"])


def _by_revenue(w: dict) -> tuple:
    return (w["usd_per_hour_per_mw"], w["min_tps_per_user"], w["workload"])


# site.curtailment_order -> the key that sorts the workloads to shed (first shed first)
CURTAILMENT_ORDERS: dict[str, Callable[[dict], tuple]] = {"tier": _by_tier, "revenue": _by_revenue}
assert tuple(CURTAILMENT_ORDERS) == ORDER_NAMES


def deferrable_hours(peak_to_mean: float, headroom: float) -> float:
    """Hours a day a workload's traffic at its peak can wait for its own pools' spare capacity later that day."""
    spare = (1.0 + headroom) - 1.0 / peak_to_mean
    return HOURS_PER_DAY * spare / (1.0 + spare) if spare > 0 else 0.0


def tier_label(tier, min_tps_per_user: float) -> str:
    """A workload's tier by name, or ``custom-<speed>`` for one given by its own speed (as the tiers table)."""
    return tier if tier is not None else f"custom-{min_tps_per_user:g}"


class SiteAtPeak:
    """A fleet's draw at its peak with some rows' loads changed: per system its racks, rows (the allocation's dicts
    at the site) and each row's load (1: the capacity it holds)."""

    def __init__(self, fleet_rows: list[dict], alloc_rows: list[dict], hardware: dict, finance):
        self.hardware, self.finance = hardware, finance
        self.racks = {f["hardware"]: int(f["racks"]) for f in fleet_rows}
        self.rows = [r for r in alloc_rows if r["role"] != API_KIND and r["hardware"] in self.racks]

    def draw_mw(self, loads: list[float] | None = None) -> tuple[float, int]:
        """IT MW and racks powered: every rack at the plan's ``loads`` None; else each row at its load, packed onto
        ceil(chips working / chips per rack) racks of its system."""
        total, powered = 0.0, 0
        for hw_id, racks in self.racks.items():
            hw = self.hardware[hw_id]
            mine = [(r, 1.0 if loads is None else loads[i]) for i, r in enumerate(self.rows) if r["hardware"] == hw_id]
            if loads is not None:
                chips = sum(float(r["replicas"]) * r["chips_per_replica"] * x for r, x in mine)
                racks = min(racks, math.ceil(chips / hw.chips_per_rack - 1e-9)) if chips > 0 else 0
            total += peak_draw_mw(hw, racks, [r for r, _ in mine], [x for _, x in mine], self.finance)
            powered += racks
        return total, powered


def curtailment_rows(fleet_rows: list[dict], alloc_rows: list[dict], workload_rows: list[dict], demands: list,
                     hardware: dict, finance, pue: float, order: str = DEFAULT_CURTAILMENT_ORDER,
                     plan_rows: list[dict] | None = None) -> list[dict]:
    """The curtailment table (module docstring): one row per step, cumulative but for ``step_power_mw``.
    ``plan_rows``: every allocation row of a plan over several sites, ``alloc_rows`` one site's (OPTIMIZER.md 21):
    a workload served at several sites sheds at this one the share of its tokens this site's replicas serve."""
    if not fleet_rows:
        return []
    site = SiteAtPeak(fleet_rows, alloc_rows, hardware, finance)
    whole_plan = alloc_rows if plan_rows is None else plan_rows  # what a workload's tokens and API rows are read from
    peak_mw, racks = site.draw_mw()
    demand_of = {d.name: d for d in demands}
    at_peak = [1.0 / (1.0 + demand_of[r["workload"]].headroom) for r in site.rows]

    def without(names: set) -> list[float]:
        return [0.0 if r["workload"] in names else x for r, x in zip(site.rows, at_peak)]

    base_mw, base_racks = site.draw_mw(at_peak)
    sheddable = []
    for w in workload_rows:
        d = demand_of.get(w["workload"])
        if d is None or not any(r["workload"] == d.name for r in site.rows):
            continue
        alone = base_mw - site.draw_mw(without({d.name}))[0]
        share = 1.0 if plan_rows is None else site_share(d.name, alloc_rows, plan_rows)
        usd = peak_revenue_usd_per_hour(d, w, whole_plan) * share
        tokens = peak_site_tokens(d, w, whole_plan) * share
        sheddable.append({"workload": d.name, "min_tps_per_user": d.min_tps_per_user,
                          "tier": tier_label(d.tier, d.min_tps_per_user), "tokens": tokens,
                          "usd_per_hour": usd, "usd_per_hour_per_mw": usd / alone if alone > 0 else math.inf,
                          "hours": deferrable_hours(d.peak_to_mean, d.headroom)})
    sheddable.sort(key=CURTAILMENT_ORDERS[order])

    def row(step, w, mw, powered, shed_mw, tokens, usd, hours) -> dict:
        return {"step": step, "workload": w and w["workload"], "tier": w and w["tier"],
                "min_tps_per_user": w and w["min_tps_per_user"], "step_power_mw": shed_mw,
                "shed_power_mw": peak_mw - mw, "shed_facility_power_mw": (peak_mw - mw) * pue,
                "shed_share_of_peak": (peak_mw - mw) / peak_mw if peak_mw > 0 else 0.0,
                "racks_powered_off": racks - powered, "shed_output_tokens_per_s": tokens,
                "forgone_revenue_usd_per_hour": usd, "deferrable_hours_per_day": hours}

    out = [row(0, None, base_mw, base_racks, peak_mw - base_mw, 0.0, 0.0, HOURS_PER_DAY)]
    shed, last, tokens, usd, hours = set(), base_mw, 0.0, 0.0, HOURS_PER_DAY
    for w in sheddable:
        shed.add(w["workload"])
        mw, powered = site.draw_mw(without(shed))
        tokens, usd, hours = tokens + w["tokens"], usd + w["usd_per_hour"], min(hours, w["hours"])
        out.append(row(len(out), w, mw, powered, last - mw, tokens, usd, hours))
        last = mw
    return out


def site_share(workload: str, site_rows: list[dict], plan_rows: list[dict]) -> float:
    """The share of a workload's output capacity on racks that one site's rows hold (of its rows at every site)."""
    def capacity(rows):
        return sum(float(r["output_tokens_per_s"]) for r in rows if r["workload"] == workload and r["role"] != API_KIND)

    whole = capacity(plan_rows)
    return capacity(site_rows) / whole if whole > 0 else 0.0


def peak_site_tokens(demand, workload_row: dict, alloc_rows: list[dict]) -> float:
    """Output tokens/s the site serves the workload at its peak: what the plan serves of it less what its hosted
    API rows take (their capacity is the sized demand's share: the peak's share times 1 + headroom)."""
    api = sum(float(r["output_tokens_per_s"]) for r in alloc_rows
              if r["workload"] == demand.name and r["role"] == API_KIND)
    served = float(workload_row["served_share"]) * demand.output_tokens_per_s
    return max(served - api / (1.0 + demand.headroom), 0.0)


def peak_revenue_usd_per_hour(demand, workload_row: dict, alloc_rows: list[dict]) -> float:
    """USD an hour the site's share of the workload earns at its peak (0 without a price)."""
    price = demand.price_usd_per_mtok or 0.0
    return peak_site_tokens(demand, workload_row, alloc_rows) * 3600.0 * price / 1e6


def curtailment_table(fleet, alloc, workloads, demands: list, hardware: dict, finance, pue: float,
                      order: str = DEFAULT_CURTAILMENT_ORDER):
    """``curtailment_rows`` of a plan's Polars tables, as a Polars table."""
    import polars as pl

    rows = curtailment_rows(fleet.to_dicts() if len(fleet) else [], alloc.to_dicts() if len(alloc) else [],
                            workloads.to_dicts() if len(workloads) else [], demands, hardware, finance, pue, order)
    if not rows:
        return pl.DataFrame()
    return pl.DataFrame(rows, infer_schema_length=None).select(CURTAILMENT_COLUMNS)


def sites_curtailment_table(fleet, alloc, workloads, demands: list, hardware: dict, sites: list,
                            order: str = DEFAULT_CURTAILMENT_ORDER):
    """The curtailment table of a plan over several sites (OPTIMIZER.md 21): each site's steps at its own peak,
    ``sites`` [(name, finance, pue)] in the plan's order, its racks and rows alone under its finance and PUE (a
    workload served at two sites sheds at each the share its replicas there serve), with ``site`` after ``step``."""
    import polars as pl

    plan_rows = alloc.to_dicts() if len(alloc) else []
    parts = []
    for name, finance, pue in sites:
        mine = fleet.filter(pl.col("site") == name).to_dicts() if len(fleet) else []
        rows = curtailment_rows(mine, [r for r in plan_rows if r.get("site") == name],
                                workloads.to_dicts() if len(workloads) else [], demands, hardware, finance, pue, order,
                                plan_rows)
        parts += [{"step": r["step"], "site": name, **{k: r[k] for k in CURTAILMENT_COLUMNS[1:]}} for r in rows]
    if not parts:
        return pl.DataFrame()
    return pl.DataFrame(parts, infer_schema_length=None).select(["step", "site", *CURTAILMENT_COLUMNS[1:]])
