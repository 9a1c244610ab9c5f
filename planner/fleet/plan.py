"""The plan: a solved fleet as Polars tables (fleet, allocation, workloads, totals, tiers, alternatives) and the
JSON of the interface.

The table builders take plain inputs (racks per system, allocation rows, demands, catalog entries), not the
solver's state, so that ``extract_plan`` (from a solve) and ``check`` (from a plan file) derive every reported
figure with the same code.
"""

from __future__ import annotations

import copy

import math
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np

from planner import __version__, catalog
from planner.fleet.assumptions import assumptions
from planner.fleet.curtail import curtailment_table, sites_curtailment_table, tier_label
from planner.fleet.draw import mean_power_mw, site_draw
from planner.fleet.finance import (annual_revenue, finance_value, idle_power_w, mean_tokens_per_year, rack_carbon_kg,
                                   rental_cost,
                                   replica_carbon_kg, usd_per_mtok)
from planner.fleet.options import KINDS, TTFT_PERCENTILES, pool_key, pools, ttft_percentiles
from planner.fleet.packing import WHOLE, domains_needed, domains_per_rack, replicas_per_rack, spans_racks
from planner.fleet.problem import Built, rental_offers, site_of
from planner.perf.grid import engines_running, pair_engines
from planner.vocabulary import API_KIND, DECODE_ROLES
from solvers.formulation import pool_chip_replicas
from solvers.milp import FleetSolution
from solvers.objectives import objective as objective_named
from solvers.vocabulary import HAS_PLAN

if TYPE_CHECKING:  # polars is imported where a table is made: it stays off `planner --help`'s import path
    import polars as pl

ALLOCATION_COLUMNS = ["workload", "role", "hardware", "replicas", "spare_replicas", "chips_per_replica",
                      "tensor_parallel", "pipeline_parallel", "expert_parallel", "batch", "precision", "speculative", "draft_tokens", "acceptance",
                      "tps_per_user", "ttft_s", "ttft_p50_s", "ttft_p90_s", "ttft_p99_s", "output_tokens_per_s",
                      "prefill_tokens_per_s", "utilization", "prefill_share", "servers", "power_mw", "mean_power_mw",
                      "ffn_hardware",
                      "ffn_chips", "ffn_precision", "engines", "source", "measurement", "acquisition",
                      "api_cost_usd", "replica_pool", "column"]
TEXT_COLUMNS = {"workload", "role", "hardware", "precision", "speculative", "ffn_hardware", "ffn_precision", "engines",
                "source", "measurement", "acquisition"}
INT_COLUMNS = {"chips_per_replica", "tensor_parallel", "pipeline_parallel", "batch", "draft_tokens", "ffn_chips",
               "replica_pool", "column"}


def finite(x):
    """A float, or None for None, NaN and infinity (JSON holds neither)."""
    return float(x) if x is not None and math.isfinite(x) else None


@dataclass
class Plan:
    """A solved fleet: Polars tables plus what the solver said. ``to_dict()`` is the interface's JSON, and
    carries (``inputs``) everything ``check`` needs to re-check it from disk."""

    scenario: str
    status: str
    objective: str
    objective_usd_per_year: float
    solver: dict
    fleet: pl.DataFrame
    allocation: pl.DataFrame
    workloads: pl.DataFrame
    totals: dict
    provenance: dict
    unserved: dict = field(default_factory=dict)
    checks: list = field(default_factory=list)
    alternatives: pl.DataFrame | None = None  # the cheapest option per system, workload and role
    tiers: pl.DataFrame | None = None  # served tokens, power, tokens/s per MW and revenue per MW by tier
    curtailment: pl.DataFrame | None = None  # what the site can shed at its peak, step by step (curtail.py)
    inputs: dict = field(default_factory=dict)  # Built.inputs: what check needs without the scenario
    built: Built | None = field(default=None, repr=False)  # the solver's inputs, in memory only
    timings: dict = field(default_factory=dict)  # seconds spent; shown, never serialized (plans are reproducible)
    solution: FleetSolution | None = field(default=None, repr=False)  # in memory only
    robust: dict | None = None  # solve --robust: the robust fleet's summary over the samples (INTERFACE.md 2.9)
    one_more_rack: list | None = None  # a fleet-only plan: what one more rack of each system adds (whatif)
    rentals: list = field(default_factory=list)  # chips rented per offer (OPTIMIZER.md 11)
    verification: dict | None = None  # solve --verify: the simulation and its repair rounds (planner.sim.verify)
    minor_platforms: list | None = None  # systems bought for under 2% of the cost, what each saves (whatif)

    @property
    def objective_value(self) -> float:
        """What the plan's objective minimises, in its own unit (``objective_unit``), from the totals: the annual
        cost (min_cost, max_served), the IT watts at the peak (min_power), kg CO2e a year (min_carbon), cost less
        revenue (max_revenue); what ``check`` holds the solver's bound to."""
        return objective_value(self.objective, self.totals)

    @property
    def objective_unit(self) -> str:
        return objective_named(self.objective).unit

    def to_dict(self) -> dict:
        d = self._as_dict()
        if self.robust is not None:
            d["robust"] = self.robust
        if self.one_more_rack is not None:
            d["one_more_rack"] = self.one_more_rack
        if self.verification is not None:
            d["verification"] = self.verification
        if self.minor_platforms is not None:
            d["minor_platforms"] = self.minor_platforms
        d["rentals"] = self.rentals
        ready = isinstance(d["inputs"], dict) and {"scenario", "demands"} <= set(d["inputs"])
        d["assumptions"] = assumptions(d) if ready else []  # what decides the cost, in words
        # a copy: the caller may edit it without touching the plan (issue 43: editing the result edited the plan's
        # own totals, inputs and verification)
        return copy.deepcopy(d)

    def _as_dict(self) -> dict:
        return {
            "scenario": self.scenario,
            "status": self.status,
            "objective": self.objective,
            "objective_usd_per_year": finite(self.objective_usd_per_year),
            "solver": self.solver,
            "fleet": self.fleet.to_dicts(),
            "allocation": self.allocation.to_dicts(),
            "workloads": self.workloads.to_dicts(),
            "totals": self.totals,
            "unserved": self.unserved,
            "checks": self.checks,
            "alternatives": self.alternatives.to_dicts() if self.alternatives is not None else [],
            "tiers": self.tiers.to_dicts() if self.tiers is not None else [],
            "curtailment": self.curtailment.to_dicts() if self.curtailment is not None else [],
            "provenance": self.provenance,
            "inputs": self.inputs,
        }


def objective_value(name: str, totals: dict) -> float:
    """The objective ``name``'s value of a plan with these ``totals`` (``solvers.objectives``' measure)."""
    return objective_named(name).value({"annual_cost_usd": totals["annual_cost_usd"],
                                        "rack_power_w": totals["power_mw"] * 1e6,
                                        "carbon_kg_per_year": totals.get("carbon_kg_co2e_per_year") or 0.0,
                                        "revenue_usd": totals["revenue_usd_per_year"]})


def provenance() -> dict:
    return {"planner_version": __version__, "catalog_version": catalog.CATALOG_VERSION,
            "performance_model": "docs/MODEL.md", "efficiencies": "planner/data/efficiency.yaml"}


def extract_plan(built: Built, sol) -> Plan:
    """The solution of the MILP as a Plan (build -> solve -> extract)."""
    import polars as pl

    sc = built.scenario
    solver = {"name": sol.solver, "status": sol.status, "relative_gap": finite(sol.relative_gap),
              "best_bound": finite(sol.best_bound), "candidates_scored": built.candidates_scored,
              "columns": built.problem.n_columns, "tie_break": sol.tie_break or None,
              "heuristic": sol.heuristic or None, "start": sol.start or None}
    if sol.status not in HAS_PLAN:
        empty = pl.DataFrame()
        return Plan(sc.name, sol.status, sc.objective, float("nan"), solver, empty, empty, empty, {}, provenance(),
                    built.unserved, inputs=built.inputs, built=built, timings=timings_of(built, sol))
    racks = np.asarray(sol.racks, dtype=float)
    rentals = rentals_of(built, sol)
    replicas = plan_replicas(built, sol)
    ids = built.type_ids
    owned = {k: racks[i] * h.chips_per_rack for i, (k, h) in enumerate(zip(ids, built.hardware))}
    # in the table's own (sorted) order, as check reads it back
    alloc = allocation_table(mark_rented(allocation_table(allocation_rows(built, replicas)).to_dicts(), owned))
    shares = np.asarray(sol.shares) if len(sol.shares) else np.ones(len(built.demands))
    alternatives = alternatives_table(built, set(int(j) for j in np.flatnonzero(replicas > 1e-9)))
    costs = dict(zip(ids, built.problem.annual_cost_usd_per_rack.tolist()))
    in_service = {k: racks[i] for i, k in enumerate(ids)}
    if built.site_views is None:
        fleet = fleet_table(in_service, built.hardware_by_id, costs, alloc, built.problem.pue, built.installed,
                            rentals, sc.finance, rack_carbon(sc, built.hardware), sc.site.grid_kg_co2_per_mwh)
    else:  # OPTIMIZER.md 21: each site's racks under its own energy, PUE and grid
        fleet = sites_fleet_table(in_service, built.hardware_by_id, costs, alloc, built.installed,
                                  [(name, view.finance, rack_carbon(view, built.hardware, ids),
                                    view.site.grid_kg_co2_per_mwh) for name, view in built.site_views.items()],
                                  rentals)
    wl = workload_table(built.demands, alloc, fleet, shares)
    totals = totals_of(fleet, wl, built.problem.pue, built.problem.power_budget_w, site_limits(built))
    curtailment = (curtailment_table(fleet, alloc, wl, built.demands, built.hardware_by_id, sc.finance,
                                     built.problem.pue, sc.site.curtailment_order)
                   if built.site_views is None else  # several sites: each sheds at its own peak (OPTIMIZER.md 21)
                   sites_curtailment_table(fleet, alloc, wl, built.demands, built.hardware_by_id,
                                           [(name, view.finance, view.finance.pue)
                                            for name, view in built.site_views.items()], sc.site.curtailment_order))
    return Plan(sc.name, sol.status, sc.objective, totals["annual_cost_usd"], solver, fleet, alloc, wl, totals,
                provenance(), built.unserved, alternatives=alternatives, tiers=tier_table(wl),
                curtailment=curtailment, inputs=built.inputs, built=built, timings=timings_of(built, sol),
                solution=sol, rentals=rentals)


def plan_replicas(built: Built, sol) -> np.ndarray:
    """[J] the replicas a plan reports: the solution's, small fractions rounded up where the racks have room."""
    rented = rented_by_hardware(rentals_of(built, sol))
    return round_up_small(built.problem, np.asarray(sol.racks, dtype=float), np.asarray(sol.replicas, dtype=float),
                          np.array([rented.get(k, 0.0) for k in built.type_ids]))


def rentals_of(built: Built, sol) -> list[dict]:
    """The chips the plan rents, one row per offer used: hardware, offer, chips, its price and USD a year (every
    hour of the year paid; OPTIMIZER.md 11)."""
    rows = []
    for (k, offer), chips in zip(rental_offers(built.hardware), np.asarray(sol.rented, dtype=float)):
        if chips > 1e-9:
            rows.append({"hardware": built.type_ids[k], "offer": offer.name, "chips": float(chips),
                         **({"site": site_of(built.type_ids[k])} if built.site_views is not None else {}),
                         "usd_per_chip_hour": offer.usd_per_chip_hour, "term_months": offer.term_months,
                         "usd_per_year": rental_cost(chips, offer.usd_per_chip_hour)})
    return rows


def rented_by_hardware(rentals: list[dict]) -> dict[str, float]:
    out: dict[str, float] = {}
    for r in rentals:
        out[r["hardware"]] = out.get(r["hardware"], 0.0) + float(r["chips"])
    return out


def mark_rented(rows: list[dict], owned_chips: dict[str, float]) -> list[dict]:
    """Each allocation row's ``acquisition``: rows of a system fill its owned chips first, in row order; a row
    that needs chips beyond them runs on rented ones (``rented``). API rows stay ``api``."""
    left = dict(owned_chips)
    for r in rows:
        if r["acquisition"] == API_KIND:
            continue
        need = held_replicas(r) * float(r["chips_per_replica"])
        have = left.get(r["hardware"], 0.0)
        r["acquisition"] = "owned" if need <= have + 1e-6 else "rented"
        left[r["hardware"]] = max(have - need, 0.0)
    return rows


def timings_of(built: Built, sol) -> dict:
    return {"engine_s": built.engine_seconds, "solve_s": sol.solve_seconds}


def round_up_small(problem, racks: np.ndarray, replicas: np.ndarray, rented: np.ndarray | None = None) -> np.ndarray:
    """Continuous replica counts rounded up to whole replicas where the racks bought hold the extra chips (the
    smallest fractions first); the rest stay fractional (a share of one replica's capacity). Rounding up only
    adds capacity, so demand stays covered and racks, power and cost do not change (columns that pay per replica
    stay as solved)."""
    x = replicas.copy()
    # a column that pays per replica is never rounded up: a hosted API (priced on what it serves) and, under the
    # power curves, every replica drawing above its racks' floor (its draw and energy, OPTIMIZER.md 12)
    pays = (problem.own_cost_usd + problem.replica_energy_usd + problem.replica_power_w) > 0
    frac = np.flatnonzero(~problem.integer_replicas & (np.abs(x - np.rint(x)) > 1e-9) & ~pays)
    capacity = problem.chips_per_rack * racks + (0.0 if rented is None else rented)
    core = problem.core_chips if problem.core_chips is not None else np.zeros_like(problem.chips)
    # (2) and (2c) as the MILP holds them: a replica pool's (15) chips on its whole replicas, not its members'
    # shares (the room between them is the pool's, and rounding a prefill pool up into it overfilled a system's
    # racks by 6.5 chips on a generated site of 20 workloads: tests/test_fleet_milp.py)
    held = pool_chip_replicas(problem, x)
    room, core_room = capacity - problem.chips.T @ held, capacity - core.T @ held
    for j in frac[np.argsort(np.ceil(x[frac]) - x[frac])]:
        extra, core_extra = ((np.ceil(x[j]) - x[j]) * a[j] for a in (problem.chips, core))
        if np.all(extra <= room + 1e-9) and np.all(core_extra <= core_room + 1e-9):
            room, core_room = room - extra, core_room - core_extra
            x[j] = np.ceil(x[j])
    return x


def allocation_rows(built: Built, replicas: np.ndarray) -> list[dict]:
    """One row per option in use (its replicas and every parameter a re-score needs); a split adds its ffn row."""
    cols = built.options
    rows = []
    for j in np.flatnonzero(replicas > 1e-9).tolist():
        kind = str(cols["kind"][j])
        n = float(round(replicas[j], 9))
        if kind == API_KIND:
            rows.append(api_row(built, j, n))
            continue
        rows.append({
            "workload": str(cols["workload"][j]), "role": KINDS[kind].role, "hardware": str(cols["hardware"][j]),
            "replicas": int(round(n)) if abs(n - round(n)) < 1e-9 else n,
            "spare_replicas": float(round(n * float(cols["spare_share"][j]), 9)),
            "chips_per_replica": int(cols["chips"][j]), "tensor_parallel": int(cols["tensor_parallel"][j]),
            "pipeline_parallel": int(cols["pipeline_parallel"][j]),
            "expert_parallel": bool(cols["expert_parallel"][j]), "batch": int(cols["batch"][j]),
            "precision": str(cols["precision"][j]),
            "speculative": str(cols["speculative"][j]),
            "draft_tokens": int(cols["draft_tokens"][j]),
            "acceptance": float(cols["acceptance"][j]),
            "tps_per_user": finite(float(cols["tps_per_user"][j])), "ttft_s": finite(float(cols["ttft_s"][j])),
            **{f"ttft_p{p}_s": None for p in TTFT_PERCENTILES},
            "output_tokens_per_s": n * float(cols["output_tokens_per_s"][j]),
            "prefill_tokens_per_s": n * float(cols["prefill_tokens_per_s"][j]),
            "utilization": finite(float(cols["prefill_share"][j])) if kind == "prefill" else None,
            "prefill_share": finite(float(cols["prefill_share"][j])) if kind == "colocated" else None,
            "servers": None,
            "power_mw": n * float(cols["power_w"][j]) / 1e6,
            "ffn_hardware": str(cols["ffn_hardware"][j]) or None,
            "ffn_chips": int(cols["ffn_chips"][j]) if cols["ffn_hardware"][j] else None,
            "ffn_precision": str(cols["ffn_precision"][j]) or None,
            "engines": row_engines(built, j),
            "source": str(cols["source"][j]),
            "measurement": str(cols["measurement"][j]) or None,
            "acquisition": "owned", "api_cost_usd": None,
            "replica_pool": replica_pool_of(built.problem, j),
            "column": int(j),
        })
        if kind == "split":
            rows.append(ffn_row(rows[-1], built.hardware_by_id))
        for row in rows[-2 if kind == "split" else -1:]:
            row["mean_power_mw"] = mean_power_mw(row, built.hardware_by_id[row["hardware"]],
                                                 built.demand_by_name[row["workload"]],
                                                 built.view_of(row["hardware"]).finance)
            if built.site_views is not None:
                row["site"] = site_of(row["hardware"])
    return with_pool_ttft(rows, built)


def replica_pool_of(problem, j: int) -> int | None:
    """The replica pool (OPTIMIZER.md 16, the MILP's (15)) column ``j``'s replicas are time shares of, or None."""
    return int(problem.pool[j]) if problem.pooled[j] else None


def held_replicas(row: dict) -> float:
    """The replicas a row holds on its racks: those serving and its spares (OPTIMIZER.md 19)."""
    return float(row["replicas"]) + float(row.get("spare_replicas") or 0.0)


def replica_groups(rows) -> list[tuple[float, int, float]]:
    """One system's allocation rows as (replicas, pipeline stages, chips per replica): each row's own, but the
    rows of one replica pool (15) one group, their shares summed and rounded up to whole replicas, as the pool
    runs them; a row's spares (OPTIMIZER.md 19) beside its replicas (a column with spares joins no pool). An FFN
    row (an attention/FFN split's FFN side) is one stage."""
    import polars as pl

    if not len(rows):
        return []
    stages = pl.when(pl.col("role") == "ffn").then(1).otherwise(pl.col("pipeline_parallel")).alias("stages")
    rows = rows.with_columns(stages)
    out = [(held_replicas(r), int(r["stages"]), float(r["chips_per_replica"]))
           for r in rows.filter(pl.col("replica_pool").is_null()).iter_rows(named=True)]
    pooled = rows.filter(pl.col("replica_pool").is_not_null())
    for (_, chips, stages_), group in pooled.group_by(["replica_pool", "chips_per_replica", "stages"],
                                                      maintain_order=True):
        out.append((float(math.ceil(float(group["replicas"].sum()) - 1e-6)), int(stages_), float(chips)))
    return out


def chips_held(rows) -> float:
    """Chips one system's allocation rows run on: each row's replicas x chips, a replica pool's (15) on its whole
    replicas."""
    return sum(n * chips for n, _, chips in replica_groups(rows))


def racks_for_domains(rows, hw) -> float:
    """Racks of ``hw`` that hold the rows' replicas stage by stage in whole scale-up domains
    (``packing.domains_needed``; whole replicas packed, fractional counts as shared chips), or the rows' chips in
    racks where a domain spans racks."""
    domain, per_rack = hw.chip.scale_up.domain_chips.value, hw.chips_per_rack
    if spans_racks(domain, per_rack):
        return chips_held(rows) / per_rack
    stages: list[tuple[float, float]] = []
    fluid = 0.0
    for n, k, chips in replica_groups(rows):
        whole = math.floor(n + WHOLE)
        stages.append((chips / k, whole * k))
        fluid += max(n - whole, 0.0) * chips
    return domains_needed(stages, fluid, domain) / domains_per_rack(domain, per_rack)


def packing_replicas_per_rack(rows, hw, domain_racks: float | None = None, used: float | None = None) -> float | None:
    """Where packing binds (the rows' stages in whole scale-up domains take more racks than their chips fill), the
    replicas one rack holds of the system's widest replica (``packing.replicas_per_rack``); None elsewhere.
    ``domain_racks`` and ``used``: the rows' ``racks_for_domains`` and ``chips_held``, where the caller has them."""
    groups = [g for g in replica_groups(rows) if g[0] > 0]
    if not groups:
        return None
    per_rack = hw.chips_per_rack
    domain_racks = racks_for_domains(rows, hw) if domain_racks is None else domain_racks
    used = chips_held(rows) if used is None else used
    if domain_racks <= used / per_rack * (1 + 1e-9) + 1e-9:
        return None
    _, stages, chips = max(groups, key=lambda g: (g[2] / g[1], g[2]))
    return replicas_per_rack(chips, stages, hw.chip.scale_up.domain_chips.value, per_rack)


def with_pool_ttft(rows: list[dict], built: Built) -> list[dict]:
    """Each prefill and colocated row's ``servers`` (its pool's c) and TTFT at p50/p90/p99 and at its workload's
    percentile, from its pool's servers and utilization (``options.pools``: what check recomputes); a measured
    row keeps its measured TTFT."""
    cols = built.options
    found = pools(rows)
    for r in rows:
        key = pool_key(r)
        if r["role"] == API_KIND or not math.isfinite(float(cols["ttft_fixed_s"][r["column"]])):
            continue
        j = r["column"]
        d = built.demand_by_name[r["workload"]]
        servers, busy = found[key] if key is not None else (1.0, float(cols["prefill_share"][j]))
        ttft = ttft_percentiles(float(cols["ttft_fixed_s"][j]), float(cols["prefill_service_s"][j]), busy,
                                d.ttft_quantile, servers, d.prefill_scv)
        r.update({k: finite(v) for k, v in ttft.items()})
        if key is not None:
            r["servers"] = servers
    return rows


def assumed_servers_above_pools(built: Built, rows: list[dict]) -> dict[int, float]:
    """Columns in use whose option was sized for more servers than its pool has (MODEL.md 9.2): column -> the
    pool's whole servers (at least 1), for which it must be generated again."""
    cols = built.options
    found = pools(rows)
    out: dict[int, float] = {}
    for r in rows:
        key = pool_key(r)
        if key is None:
            continue
        j = int(r["column"])
        servers = found[key][0]
        if float(cols["servers"][j]) > servers * (1 + 1e-9):
            out[j] = max(1.0, math.floor(servers))
    return out






def api_row(built: Built, j: int, share: float) -> dict:
    """The allocation row of a hosted API column (OPTIMIZER.md 10): ``replicas`` is the share of the workload's
    (sized) demand it serves, ``api_cost_usd`` what that costs a year at the offer's prices."""
    cols = built.options
    demand = built.demand_by_name[str(cols["workload"][j])]
    name = str(cols["measurement"][j])
    offer = next(o for o in demand.api_offers() if o["name"] == name)
    return {
        "workload": demand.name, "role": API_KIND, "hardware": str(cols["hardware"][j]), "replicas": share,
        "spare_replicas": 0.0,
        "chips_per_replica": 0, "tensor_parallel": 0, "pipeline_parallel": 0, "expert_parallel": False, "batch": 0,
        "precision": "", "speculative": "none", "draft_tokens": 0, "acceptance": 0.0,
        "tps_per_user": offer["max_tps_per_user"], "ttft_s": offer["ttft_s"],  # as the offer states it, if it does
        **{f"ttft_p{p}_s": None for p in TTFT_PERCENTILES},
        "output_tokens_per_s": share * demand.sized_output_tokens_per_s,
        "prefill_tokens_per_s": share * demand.sized_prefill_tokens_per_s,
        "utilization": None, "prefill_share": None, "servers": None, "power_mw": 0.0, "mean_power_mw": 0.0, "ffn_hardware": None,
        "ffn_chips": None,
        "ffn_precision": None, "engines": "", "source": API_KIND, "measurement": name, "acquisition": API_KIND,
        "api_cost_usd": share * sum(demand.api_cost_parts(offer).values()), "replica_pool": None, "column": int(j),
    }


def row_engines(built: Built, j: int) -> str:
    """The public engines that run option ``j``'s layout (data/engines.yaml, MODEL.md 2.9), comma-separated;
    empty where none does (possible only under the scenario's ``layouts: any``)."""
    cols = built.options
    hw = built.hardware_by_id[str(cols["hardware"][j])]
    if cols["ffn_hardware"][j]:
        return ",".join(pair_engines(hw.family, built.hardware_by_id[str(cols["ffn_hardware"][j])].family))
    model = built.models[built.demand_by_name[str(cols["workload"][j])].model]
    return ",".join(engines_running(hw.family, model, int(cols["tensor_parallel"][j]),
                                    int(cols["pipeline_parallel"][j]), bool(cols["expert_parallel"][j]),
                                    hw.chip.scale_up.domain_chips.value))


def ffn_row(attention: dict, hardware: dict) -> dict:
    """The FFN half of an attention/FFN split replica: same replicas, batch and speed; its chips, power and
    precision; the output tokens are counted once, on the attention row (whose power becomes its own side's). The
    replica's draw (both sides) is split as each side's floor plus a share of the rest in proportion to the side's
    range above its floor (MODEL.md 14)."""
    hw_a, hw_f = hardware[attention["hardware"]], hardware[attention["ffn_hardware"]]
    n = float(attention["replicas"])
    chips_a, chips_f = float(attention["chips_per_replica"]), float(attention["ffn_chips"])
    idle_a, idle_f = (n * c * idle_power_w(h) / h.chips_per_rack / 1e6 for c, h in ((chips_a, hw_a), (chips_f, hw_f)))
    range_a, range_f = (n * c * h.rack_power_w / h.chips_per_rack / 1e6 - i
                        for c, h, i in ((chips_a, hw_a, idle_a), (chips_f, hw_f, idle_f)))
    above = max(attention["power_mw"] - idle_a - idle_f, 0.0)
    part_a = range_a / (range_a + range_f) if range_a + range_f > 0 else 0.5
    attention["power_mw"] = idle_a + above * part_a
    ffn_power = idle_f + above * (1.0 - part_a)
    return {**attention, "role": "ffn", "hardware": hw_f.id, "chips_per_replica": attention["ffn_chips"],
            "tensor_parallel": attention["ffn_chips"], "expert_parallel": True,
            "precision": attention["ffn_precision"], "output_tokens_per_s": 0.0, "power_mw": ffn_power}


def allocation_table(rows: list[dict]):
    import polars as pl

    if not rows:
        return pl.DataFrame(schema={c: pl.Utf8 if c in TEXT_COLUMNS else pl.Int64 if c in INT_COLUMNS else
                                    pl.Boolean if c == "expert_parallel" else pl.Float64 for c in ALLOCATION_COLUMNS})
    rows = [{"spare_replicas": 0.0, **r} for r in rows]  # a plan written before spares (OPTIMIZER.md 19) has none
    # several sites (OPTIMIZER.md 21): each row's site after its hardware (system@site); an API row's at none
    sited = any(r.get("site") for r in rows)
    columns = ALLOCATION_COLUMNS[:3] + ["site"] + ALLOCATION_COLUMNS[3:] if sited else ALLOCATION_COLUMNS
    rows = [{**r, "site": r.get("site")} for r in rows] if sited else rows
    return (pl.DataFrame(rows, infer_schema_length=None).select(columns)
              .sort(["workload", "role", "hardware"]))


def rack_carbon(scenario, hardware: list, ids: list | None = None) -> dict | None:
    """hardware type -> kg CO2e a year of one rack by part (its making, its floor's energy), where the site gives
    its grid's emissions (OPTIMIZER.md 15); else None. ``ids``: the types' names (default each system's id)."""
    if scenario.site.grid_kg_co2_per_mwh is None:
        return None
    return {k: rack_carbon_kg(h, scenario.finance, scenario.horizon_years, scenario.site.grid_kg_co2_per_mwh)
            for k, h in zip(ids or [h.id for h in hardware], hardware)}


def sites_fleet_table(racks: dict, hardware: dict, costs: dict, alloc, installed: dict, sites: list,
                      rentals: list | None = None):
    """``fleet_table`` of a plan over several sites (OPTIMIZER.md 21): each site's types (system@site) under its
    own finance (PUE, electricity) and grid, ``sites`` [(name, finance, carbon by type or None, grid)], with the
    chips ``rentals`` rents for its types, the rows in the plan's order with the site after the hardware."""
    import polars as pl

    parts = []
    for name, finance, carbon, grid in sites:
        mine = {k: n for k, n in racks.items() if site_of(k) == name}
        part = fleet_table(mine, hardware, costs, alloc, float(finance_value(finance, "pue")), installed,
                           [r for r in rentals or [] if site_of(str(r.get("hardware"))) == name], finance, carbon,
                           grid)
        if len(part):
            parts.append(part.insert_column(1, pl.Series("site", [name] * len(part))))
    table = pl.concat(parts, how="diagonal_relaxed") if parts else pl.DataFrame()
    order = {k: i for i, k in enumerate(racks)}
    return table.sort(pl.col("hardware").replace_strict(order, return_dtype=pl.Int64)) if len(table) else table


def site_limits(built: Built) -> list | None:
    """[(name, power budget W, most racks)] of each site of a plan over several sites; None with one site."""
    if built.site_views is None:
        return None
    return [(name, (view.site.power_budget_mw or math.inf) * 1e6, view.site.max_racks)
            for name, view in built.site_views.items()]


def fleet_carbon_kg(hw, kept: int, new: int, chips_rented: float, draw: dict, carbon: dict, finance,
                    grid_kg_per_mwh: float) -> float:
    """kg CO2e a year of one system's racks in service (OPTIMIZER.md 15, the MILP's (14)): a new rack its making
    and floor, a kept one its floor (its making sunk), the replicas' draw above the floor at the mean load, and a
    rented chip its share of a rack's."""
    whole = carbon["embodied"] + carbon["energy"]
    return (new * whole + kept * carbon["energy"] + chips_rented * whole / hw.chips_per_rack
            + replica_carbon_kg(draw["above_floor_mw"] * 1e6, 1.0, finance, grid_kg_per_mwh))


def fleet_table(racks: dict, hardware: dict, annual_cost_usd_per_rack: dict, alloc, pue: float,
                installed: dict | None = None, rentals: list | None = None, finance=None, carbon: dict | None = None,
                grid_kg_per_mwh: float | None = None):
    """Per system in service, installed or rented (``racks``: id -> racks in service, in the plan's order): the
    racks kept from the installed fleet, bought and retired (OPTIMIZER.md 9; ``installed``: id -> the plan inputs'
    installed entry), the chips rented (11; ``rentals``: the plan's rows), chips, the chips the allocation uses,
    power (rented chips draw none at the site), the capex of the racks bought, the annual cost (a kept rack's capex
    sunk, rented chips at their price) and the utilisation above which owning a chip beats renting it."""
    import polars as pl

    installed = installed or {}
    rented = rented_by_hardware(rentals or [])
    rent_usd: dict[str, float] = {}
    for r in rentals or []:
        rent_usd[r["hardware"]] = rent_usd.get(r["hardware"], 0.0) + float(r["usd_per_year"])
    rows = []
    for hw_id, count in racks.items():
        have = int(installed.get(hw_id, {}).get("racks", 0))
        if count <= 0 and not have and not rented.get(hw_id):
            continue
        hw = hardware[hw_id]
        mine = alloc.filter(pl.col("hardware") == hw_id)
        used = chips_held(mine)
        domain_racks = racks_for_domains(mine, hw)
        n = int(round(count))
        kept, new = min(n, have), max(n - have, 0)
        full = float(annual_cost_usd_per_rack[hw_id])
        keep = min(sum(installed[hw_id]["kept_costs"].values()), full) if have else full
        chips_rented = rented.get(hw_id, 0.0)
        held = n * hw.chips_per_rack + chips_rented
        cheapest = min((o.usd_per_chip_hour for o in hw.rental), default=None)
        draw = site_draw(hw, n, mine, finance)
        rows.append({
            "hardware": hw_id, "racks": n, "racks_installed": kept, "racks_new": new, "racks_retired": have - kept,
            "chips": n * hw.chips_per_rack, "chips_rented": chips_rented, "chips_used": used,
            "racks_for_domains": domain_racks,
            "replicas_per_rack": packing_replicas_per_rack(mine, hw, domain_racks, used),
            "chip_utilization": used / held if held else 0.0,
            "power_mw": draw["peak"],
            "facility_power_mw": draw["peak"] * pue,
            "mean_power_mw": draw["mean"],
            "design_power_mw": n * hw.rack_power_w / 1e6,
            "capex_usd": new * hw.rack.capex_usd.value,
            "rental_usd_per_year": rent_usd.get(hw_id, 0.0),
            "energy_above_floor_usd_per_year": draw["energy_usd"],
            "annual_cost_usd": kept * keep + new * full + rent_usd.get(hw_id, 0.0) + draw["energy_usd"],
            # owning a chip costs full / chips a year whatever it does; renting by the hour costs the offer's price
            # for the hours it is needed: owning is cheaper above this share of hours in use
            "breakeven_utilization": (full / hw.chips_per_rack / rental_cost(1.0, cheapest)
                                      if cheapest is not None else None),
            "capex_confidence": hw.rack.capex_usd.confidence,
            "carbon_kg_co2e_per_year": (fleet_carbon_kg(hw, kept, new, chips_rented, draw, carbon[hw_id], finance,
                                                        grid_kg_per_mwh)
                                        if carbon is not None and grid_kg_per_mwh is not None else None),
        })
    return pl.DataFrame(rows) if rows else pl.DataFrame()




def workload_table(demands: list, alloc, fleet, shares: np.ndarray):
    """Per workload: demand and what is served, the speeds, and its share of the fleet's cost and power
    (each system's cost and power split by the chips each workload uses on it)."""
    import polars as pl

    share_cost, share_power = chip_shares(alloc, fleet)
    prefill_cost = chip_shares(alloc, fleet, prefill_share)[0]
    rows = []
    for w, d in enumerate(demands):
        mine = alloc.filter(pl.col("workload") == d.name)
        decode = mine.filter(pl.col("role").is_in(DECODE_ROLES))
        api = api_costs(d, mine)
        cost = share_cost.get(d.name, 0.0) + sum(api.values())
        power_mw = share_power.get(d.name, 0.0)
        served = float(shares[w]) * d.output_tokens_per_s  # at peak: what a plan that sells shares serves
        calls = float(shares[w]) * d.calls_per_s  # served model calls/s at peak
        prefill = prefill_cost.get(d.name, 0.0) + api["input"]
        decode_cost = cost - prefill - api["cached_input"]
        rows.append({
            "workload": d.name, "model": d.model, "min_tps_per_user": d.min_tps_per_user,
            "demand_output_tokens_per_s": d.output_tokens_per_s,
            "served_output_tokens_per_s": float(decode["output_tokens_per_s"].sum()) if len(decode) else 0.0,
            "demand_prefill_tokens_per_s": d.prefill_tokens_per_s,
            "served_prefill_tokens_per_s": float(mine["prefill_tokens_per_s"].sum()) if len(mine) else 0.0,
            "tps_per_user": float(decode["tps_per_user"].min()) if len(decode) else None,
            "ttft_s": float(mine["ttft_s"].drop_nulls().max()) if len(mine) and mine["ttft_s"].drop_nulls().len() else None,
            "ttft_percentile": d.ttft_quantile * 100.0, "ttft_target_s": d.ttft_s,
            "concurrent_streams": d.concurrent_streams, "resident_sessions": d.resident_sessions,
            "annual_cost_usd": cost, "power_mw": power_mw,
            "cost_usd_per_mtok": usd_per_mtok(cost, mean_tokens_per_year(served, d.peak_to_mean)),
            # split by the resources each kind of token uses (OPTIMIZER.md 1.5): prompt tokens prefilled pay the
            # prefill pools (and colocated replicas' prefill time), cached ones skip that compute, output pays the rest
            "cost_usd_per_mtok_input": usd_per_mtok(prefill, mean_tokens_per_year(calls * d.prefill_tokens,
                                                                                  d.peak_to_mean)),
            "cost_usd_per_mtok_cached_input": usd_per_mtok(api["cached_input"], mean_tokens_per_year(
                calls * (d.input_tokens - d.prefill_tokens), d.peak_to_mean)),
            "cost_usd_per_mtok_output": usd_per_mtok(decode_cost, mean_tokens_per_year(served, d.peak_to_mean)),
            "api_cost_usd": sum(api.values()),
            "output_tokens_per_s_per_mw": served / power_mw if power_mw > 0 else None,
            "tier": d.tier,
            "served_share": float(shares[w]),
            "price_usd_per_mtok": d.price_usd_per_mtok,
            "revenue_usd_per_year": float(shares[w]) * annual_revenue(d.output_tokens_per_s, d.peak_to_mean,
                                                                      d.price_usd_per_mtok),
        })
    return pl.DataFrame(rows)


def api_costs(demand, rows) -> dict:
    """USD a year a workload pays its hosted API offers (its ``api`` allocation rows), by kind of token."""
    import polars as pl

    out = {"input": 0.0, "cached_input": 0.0, "output": 0.0}
    for r in rows.filter(pl.col("role") == API_KIND).iter_rows(named=True):
        offer = next((o for o in demand.api_offers() if o["name"] == r["measurement"]), None)
        if offer is None:  # a row naming no offer of the workload (a tampered plan): check's row check says so
            continue
        for part, usd in demand.api_cost_parts(offer).items():
            out[part] += r["replicas"] * usd
    return out


def prefill_share(row: dict) -> float:
    """The share of an allocation row's chips that prefill: all of a prefill pool's, a colocated replica's time
    in prefill (its ``prefill_share``), none of a decode, attention or FFN row's."""
    if row["role"] == "prefill":
        return 1.0
    if row["role"] == "colocated":
        return float(row.get("prefill_share") or 0.0)
    return 0.0


def chip_shares(alloc, fleet, part=lambda row: 1.0) -> tuple[dict, dict]:
    """Annual cost and power (MW) per workload: each system's split by the chips each workload uses on it (times
    ``part(row)`` of each allocation row: 1, or e.g. the share that prefills)."""
    import polars as pl

    cost: dict[str, float] = {}
    power: dict[str, float] = {}
    if not len(fleet):
        return cost, power
    for f in fleet.iter_rows(named=True):
        mine = alloc.filter(pl.col("hardware") == f["hardware"])
        for r in mine.iter_rows(named=True):
            share = r["replicas"] * r["chips_per_replica"] / f["chips_used"] * part(r)
            cost[r["workload"]] = cost.get(r["workload"], 0.0) + share * f["annual_cost_usd"]
            power[r["workload"]] = power.get(r["workload"], 0.0) + share * f["power_mw"]
    return cost, power


def tier_table(workloads):
    """Per speed tier: output tokens/s served, power share, tokens/s per MW, revenue per MW (issue 4 item 5)."""
    import polars as pl

    if not len(workloads):
        return pl.DataFrame()
    # a workload given by its own speed is its own tier, named by it: two custom speeds are two rows
    labels = [tier_label(t, m) for t, m in zip(workloads["tier"].to_list(), workloads["min_tps_per_user"].to_list())]
    wl = workloads.with_columns(
        (pl.col("demand_output_tokens_per_s") * pl.col("served_share")).alias("output_tokens_per_s"),
        pl.Series("tier", labels, dtype=pl.Utf8))
    return (wl.group_by("tier", maintain_order=True)
              .agg(pl.col("min_tps_per_user").min(), pl.col("output_tokens_per_s").sum(), pl.col("power_mw").sum(),
                   pl.col("revenue_usd_per_year").sum())
              .with_columns(*(pl.when(pl.col("power_mw") > 0).then(pl.col(c) / pl.col("power_mw")).otherwise(None)
                              .alias(f"{c}_per_mw") for c in ("output_tokens_per_s", "revenue_usd_per_year")))
              .sort("min_tps_per_user"))


def totals_of(fleet, workloads, pue: float, power_budget_w: float, sites: list | None = None) -> dict:
    """The plan's totals; over several sites (``sites``: [(name, budget W, most racks)], OPTIMIZER.md 21) the
    facility power is each site's at its own PUE, the budget theirs summed, and ``sites`` sums each site."""
    totals = whole_totals(fleet, workloads, pue, power_budget_w)
    if sites is None:
        return totals
    facility = float(fleet["facility_power_mw"].sum()) if len(fleet) else 0.0
    budgets = [b for _, b, _ in sites]
    totals.update(facility_power_mw=facility, power_budget_mw=finite(sum(budgets) / 1e6))
    totals["sites"] = [site_totals(fleet, name, budget, most) for name, budget, most in sites]
    return totals


def site_totals(fleet, name: str, budget_w: float, most_racks) -> dict:
    """One site's sums of a plan over several sites: racks, facility power and annual cost, and its limits."""
    import polars as pl

    mine = fleet.filter(pl.col("site") == name) if len(fleet) else fleet
    return {"name": name, "racks": int(mine["racks"].sum()) if len(mine) else 0,
            "facility_power_mw": float(mine["facility_power_mw"].sum()) if len(mine) else 0.0,
            "power_budget_mw": finite(budget_w / 1e6), "max_racks": most_racks,
            "annual_cost_usd": float(mine["annual_cost_usd"].sum()) if len(mine) else 0.0}


def whole_totals(fleet, workloads, pue: float, power_budget_w: float) -> dict:
    demand = float((workloads["demand_output_tokens_per_s"] * workloads["served_share"]).sum())
    revenue = float(workloads["revenue_usd_per_year"].sum())
    power = float(fleet["power_mw"].sum()) if len(fleet) else 0.0
    mean = float(fleet["mean_power_mw"].sum()) if len(fleet) else 0.0
    design = float(fleet["design_power_mw"].sum()) if len(fleet) else 0.0
    api = float(workloads["api_cost_usd"].sum()) if len(workloads) else 0.0
    rent = float(fleet["rental_usd_per_year"].sum()) if len(fleet) else 0.0
    cost = (float(fleet["annual_cost_usd"].sum()) if len(fleet) else 0.0) + api
    return {
        "racks": int(fleet["racks"].sum()) if len(fleet) else 0,
        "chips": int(fleet["chips"].sum()) if len(fleet) else 0,
        "power_mw": power,
        "facility_power_mw": power * pue,
        "mean_power_mw": mean,
        "design_power_mw": design,
        "power_budget_mw": finite(power_budget_w / 1e6),
        "capex_usd": float(fleet["capex_usd"].sum()) if len(fleet) else 0.0,
        "annual_cost_usd": cost,
        "api_cost_usd": api,
        "rental_usd_per_year": rent,
        "output_tokens_per_s": demand,
        "output_tokens_per_s_per_mw": demand / power if power > 0 else None,
        "revenue_usd_per_year": revenue,
        "profit_usd_per_year": revenue - cost,
        "revenue_usd_per_year_per_mw": revenue / power if power > 0 else None,
        "carbon_kg_co2e_per_year": (float(fleet["carbon_kg_co2e_per_year"].sum())
                                    if len(fleet) and fleet["carbon_kg_co2e_per_year"].null_count() == 0 else None),
    }


def alternatives_table(built: Built, chosen_columns: set[int]):
    """Why each system was or was not chosen: per workload and role, the cheapest option on every system, as
    annual cost and IT power per 1,000 tokens/s of the capacity the MILP counts (rack share of the replica / its
    capacity, a decode queue's at its usable share)."""
    import polars as pl

    cols = built.options
    if not len(cols["workload"]):
        return pl.DataFrame()
    cost_per_chip = {k: c / h.chips_per_rack for k, h, c in zip(built.type_ids, built.hardware,
                                                                 built.problem.annual_cost_usd_per_rack)}
    # the capacity the MILP counts: a decode queue's output at its usable share rho* (OPTIMIZER.md 18), as covered
    cover = built.problem.coverage
    capacity = np.where(cols["kind"] == "prefill", cover[:, 1::2].sum(axis=1), cover[:, 0::2].sum(axis=1))
    own = built.problem.own_cost_usd  # an API column's cost is its own (no chips)
    spend = np.array([cost_per_chip.get(h, 0.0) * c + (cost_per_chip[fh] * fc if fh else 0.0) + own[j]
                      for j, (h, c, fh, fc) in enumerate(zip(cols["hardware"], cols["chips"], cols["ffn_hardware"],
                                                             cols["ffn_chips"]))])
    usable = np.where(capacity > 0, capacity, np.inf)  # an option with no usable capacity is left out below
    cost = spend / usable * 1e3
    df = pl.DataFrame({
        "workload": cols["workload"], "role": [{"split": "attention+ffn"}.get(k, k) for k in cols["kind"]],
        "hardware": [f"{h}+{fh}" if fh else h for h, fh in zip(cols["hardware"], cols["ffn_hardware"])],
        "precision": cols["precision"], "chips_per_replica": cols["chips"] + cols["ffn_chips"], "capacity": capacity,
        "usd_per_year_per_1k_tokens_per_s": cost,
        "kw_per_1k_tokens_per_s": cols["power_w"] / usable,
        "chosen": [j in chosen_columns for j in range(len(capacity))],
    })
    best = (df.filter(pl.col("capacity") > 0)  # a queue whose steps alone miss the tier at its pool serves nothing
              .sort("usd_per_year_per_1k_tokens_per_s")
              .group_by(["workload", "role", "hardware"], maintain_order=True)
              .agg(pl.all().first(), pl.col("chosen").any().alias("used")))
    return best.drop("chosen", "capacity").sort(["workload", "role", "usd_per_year_per_1k_tokens_per_s"])
