"""``planner.solve``: a scenario in, the cheapest fleet that serves it out (docs/OPTIMIZER.md).

Build -> solve -> extract, each step callable alone:

* ``build_problem(scenario)``: demands and candidate options (planner.candidates) become a ``FleetProblem`` of
  arrays: two demand rows per workload (decode output tokens/s, prefill prompt tokens/s), one column per option.
* ``solvers.fleet_milp.optimize``: the MILP.
* ``extract_plan``: the solution becomes a ``Plan`` of Polars tables (fleet, allocation, workloads, totals).

``evaluate(plan)`` re-checks a plan without the solver, re-scoring every allocation with the full performance
model; ``solve`` runs it on every plan and refuses to return one that fails.
"""

from __future__ import annotations

import datetime as _dt
import functools
import math
import time
from dataclasses import dataclass, field

import numpy as np

from planner import __version__, candidates, catalog, performance
from planner.errors import InfeasibleError, PlannerError
from solvers import layout as L

SECONDS_PER_YEAR = 365.0 * 86400.0
ROLE_OF_KIND = {"decode": "decode", "prefill": "prefill", "colocated": "colocated", "split": "attention"}
DECODE_ROLES = ["decode", "colocated", "attention"]  # roles whose rows carry a workload's output tokens


@dataclass
class Built:
    """What ``build_problem`` returns: the MILP's arrays and the tables needed to read its answer."""

    scenario: object
    problem: object  # solvers.fleet_milp.FleetProblem
    demands: list  # [W] candidates.Demand
    hardware: list  # [H] catalog.Hardware
    options: dict  # column tables (candidates.COLUMNS), one entry per MILP column
    candidates_scored: int
    engine_seconds: float
    unserved: dict = field(default_factory=dict)  # workload -> why no option exists

    @functools.cached_property
    def hardware_by_id(self) -> dict:
        return {h.id: h for h in self.hardware}

    @functools.cached_property
    def demand_by_name(self) -> dict:
        return {d.name: d for d in self.demands}


def rack_cost_parts(scenario, hw) -> dict:
    """USD per year of one rack of ``hw`` under the scenario's finance: capex annuity, maintenance, energy."""
    from solvers.fleet_milp import annual_rack_cost_parts

    f = scenario.finance
    parts = annual_rack_cost_parts(hw.rack.capex_usd.value, hw.rack_power_w, f.wacc, scenario.horizon_years,
                                   f.maintenance_share_of_capex_per_year, f.electricity_usd_per_mwh, f.pue,
                                   f.average_load_share)
    return {k: float(v) for k, v in parts.items()}


def annual_costs(scenario, hardware: list) -> np.ndarray:
    """USD per year of one rack of each system (the MILP's cost coefficients)."""
    from solvers.fleet_milp import annual_rack_cost

    f = scenario.finance
    return np.array([
        annual_rack_cost(hw.rack.capex_usd.value, hw.rack_power_w, f.wacc, scenario.horizon_years,
                         f.maintenance_share_of_capex_per_year, f.electricity_usd_per_mwh, f.pue,
                         f.average_load_share)
        for hw in hardware
    ])


def build_problem(scenario, progress=None) -> Built:
    """Score every candidate deployment and assemble the MILP (rows: 2 per workload; columns: options)."""
    from solvers.fleet_milp import FleetProblem

    hardware = dict(sorted(scenario.resolved_hardware().items()))
    models = scenario.resolved_models()
    demands = [candidates.demand_of(w, scenario.model_for(w)) for w in scenario.workloads]
    t0 = time.perf_counter()
    opts = candidates.options_for(demands, models, hardware, progress)
    engine_s = time.perf_counter() - t0
    cols = opts.arrays()
    hw_list = list(hardware.values())
    hw_index = {h.id: i for i, h in enumerate(hw_list)}
    wl_index = {d.name: i for i, d in enumerate(demands)}
    n = len(opts)
    coverage = np.zeros((n, 2 * len(demands)))
    chips = np.zeros((n, len(hw_list)))
    for j in range(n):
        w = wl_index[cols["workload"][j]]
        coverage[j, 2 * w] = cols["output_tokens_per_s"][j]
        coverage[j, 2 * w + 1] = cols["prefill_tokens_per_s"][j]
        chips[j, hw_index[cols["hardware"][j]]] = cols["chips"][j]
        if cols["ffn_hardware"][j]:
            chips[j, hw_index[cols["ffn_hardware"][j]]] = cols["ffn_chips"][j]
    demand = np.array([x for d in demands for x in (d.output_tokens_per_s, d.prefill_tokens_per_s)])
    revenue = np.array([annual_revenue(scenario, w, d) for w, d in zip(scenario.workloads, demands)])
    caps = scenario.hardware.max_racks
    problem = FleetProblem(
        chips_per_rack=np.array([h.chips_per_rack for h in hw_list], dtype=float),
        rack_power_w=np.array([h.rack_power_w for h in hw_list]),
        annual_cost_usd_per_rack=annual_costs(scenario, hw_list),
        max_racks=np.array([caps.get(h.id, math.inf) for h in hw_list], dtype=float),
        workload=coverage.argmax(axis=1) if n else np.zeros(0, dtype=int),
        capacity=coverage.max(axis=1) if n else np.zeros(0),
        chips=chips, integer_replicas=integer_replicas(chips, hw_list), demand=demand, coverage=coverage,
        pue=scenario.finance.pue,
        power_budget_w=(scenario.site.power_budget_mw or math.inf) * 1e6,
        max_total_racks=scenario.site.max_racks or math.inf,
        objective=scenario.objective,
        row_group=np.repeat(np.arange(len(demands)), 2),
        group_value=revenue if scenario.objective == "max_revenue" else None,
    )
    return Built(scenario, problem, demands, hw_list, cols, opts.candidates_scored, engine_s,
                 unserved_workloads(demands, cols))


# A replica of at least this share of a rack is an integer in the MILP, so that packing is real; smaller ones are
# continuous (fast), and rounded up after the solve where the racks bought have room (``round_up_small``).
INTEGER_REPLICA_RACK_SHARE = 1.0 / 8.0


def integer_replicas(chips: np.ndarray, hw_list: list) -> np.ndarray:
    per_rack = np.array([h.chips_per_rack for h in hw_list], dtype=float)
    share = (chips / per_rack).max(axis=1) if len(chips) else np.zeros(0)
    return share >= INTEGER_REPLICA_RACK_SHARE


def round_up_small(problem, racks: np.ndarray, replicas: np.ndarray) -> np.ndarray:
    """Continuous replica counts rounded up to whole replicas where the racks bought hold the extra chips (the
    smallest fractions first); the rest stay fractional (a share of one replica's capacity). Rounding up only
    adds capacity, so demand stays covered and racks, power and cost do not change."""
    x = replicas.copy()
    frac = np.flatnonzero(~problem.integer_replicas & (np.abs(x - np.rint(x)) > 1e-9))
    room = problem.chips_per_rack * racks - problem.chips.T @ x
    for j in frac[np.argsort(np.ceil(x[frac]) - x[frac])]:
        extra = (np.ceil(x[j]) - x[j]) * problem.chips[j]
        if np.all(extra <= room + 1e-9):
            room -= extra
            x[j] = np.ceil(x[j])
    return x


def annual_revenue(scenario, workload, demand) -> float:
    """USD/year if the whole demand is served: mean output tokens/s x a year x price per million (0 unpriced)."""
    price = scenario.price_of(workload) or 0.0
    return demand.output_tokens_per_s / workload.peak_to_mean * SECONDS_PER_YEAR / 1e6 * price


def unserved_workloads(demands, cols) -> dict[str, str]:
    """Workloads that lack decode or prefill options entirely, and why (the first screen of infeasibility)."""
    out = {}
    for d in demands:
        mine = cols["workload"] == d.name if len(cols["workload"]) else np.zeros(0, dtype=bool)
        kinds = set(cols["kind"][mine].tolist()) if mine.any() else set()
        decodes = kinds & {"decode", "colocated", "split"}
        prefills = kinds & {"prefill", "colocated"}
        if not decodes:
            out[d.name] = (f"no available hardware reaches {d.min_tps_per_user:g} tok/s per user on {d.model} "
                           f"(with its {d.context_max:g}-token context fitting in memory)")
        elif not prefills:
            out[d.name] = f"no available hardware prefills {d.input_tokens:g}-token prompts within {d.ttft_s:g} s"
    return out


# ---- the plan ---------------------------------------------------------------------------------------------------
@dataclass
class Plan:
    """A solved fleet: Polars tables plus what the solver said. ``to_dict()`` is the interface's JSON."""

    scenario: str
    status: str
    objective: str
    objective_usd_per_year: float
    solver: dict
    fleet: object  # polars.DataFrame
    allocation: object
    workloads: object
    totals: dict
    provenance: dict
    unserved: dict = field(default_factory=dict)
    checks: list = field(default_factory=list)
    alternatives: object = None  # polars.DataFrame: the cheapest option per system, workload and role
    tiers: object = None  # polars.DataFrame: served tokens, power, tokens/s per MW and revenue per MW by tier
    built: Built | None = field(default=None, repr=False)  # the inputs, for evaluate(); not serialized
    timings: dict = field(default_factory=dict)  # seconds spent; shown, never serialized (plans are reproducible)

    def to_dict(self) -> dict:
        return {
            "scenario": self.scenario,
            "status": self.status,
            "objective": self.objective,
            "objective_usd_per_year": self.objective_usd_per_year,
            "solver": self.solver,
            "fleet": self.fleet.to_dicts(),
            "allocation": self.allocation.to_dicts(),
            "workloads": self.workloads.to_dicts(),
            "totals": self.totals,
            "unserved": self.unserved,
            "checks": self.checks,
            "alternatives": self.alternatives.to_dicts() if self.alternatives is not None else [],
            "tiers": self.tiers.to_dicts() if self.tiers is not None else [],
            "provenance": self.provenance,
        }


def extract_plan(built: Built, sol) -> Plan:
    import polars as pl

    sc = built.scenario
    racks = np.asarray(sol.racks, dtype=float) if sol.status in ("optimal", "feasible", "time_limit") else None
    solver = {"name": sol.solver, "status": sol.status, "relative_gap": _finite(sol.relative_gap),
              "best_bound": _finite(sol.best_bound), "candidates_scored": built.candidates_scored,
              "columns": built.problem.n_columns}
    provenance = {"planner_version": __version__, "catalog_version": catalog.CATALOG_VERSION,
                  "performance_model": "docs/MODEL.md", "efficiencies": "planner/data/efficiency.yaml"}
    if racks is None:
        empty = pl.DataFrame()
        return Plan(sc.name, sol.status, sc.objective, float("nan"), solver, empty, empty, empty, {}, provenance,
                    built.unserved, built=built, timings=timings_of(built, sol))
    replicas = round_up_small(built.problem, racks, np.asarray(sol.replicas, dtype=float))
    alloc = allocation_table(built, replicas)
    shares = np.asarray(sol.shares) if len(sol.shares) else np.ones(len(built.demands))
    alternatives = alternatives_table(built, set(int(j) for j in np.flatnonzero(replicas > 1e-9)))
    fleet = fleet_table(built, racks, alloc)
    wl = workload_table(built, alloc, fleet, shares)
    totals = totals_of(built, fleet, wl)
    return Plan(sc.name, sol.status, sc.objective, totals["annual_cost_usd"], solver, fleet, alloc, wl, totals,
                provenance, built.unserved, alternatives=alternatives, tiers=tier_table(wl), built=built,
                timings=timings_of(built, sol))


def timings_of(built: Built, sol) -> dict:
    return {"engine_s": built.engine_seconds, "solve_s": sol.solve_seconds}


def _finite(x):
    return float(x) if x is not None and math.isfinite(x) else None


def allocation_table(built: Built, replicas: np.ndarray):
    import polars as pl

    cols = built.options
    used = np.flatnonzero(replicas > 1e-9)
    rows = []
    for j in used:
        kind = str(cols["kind"][j])
        n = float(round(replicas[j], 9))
        rows.append({
            "workload": str(cols["workload"][j]), "role": ROLE_OF_KIND[kind], "hardware": str(cols["hardware"][j]),
            "replicas": int(round(n)) if abs(n - round(n)) < 1e-9 else n,
            "chips_per_replica": int(cols["chips"][j]), "tensor_parallel": int(cols["tensor_parallel"][j]),
            "pipeline_parallel": int(cols["pipeline_parallel"][j]),
            "expert_parallel": bool(cols["expert_parallel"][j]), "batch": int(cols["batch"][j]),
            "precision": str(cols["precision"][j]), "draft_tokens": int(cols["draft_tokens"][j]),
            "tps_per_user": _finite(float(cols["tps_per_user"][j])), "ttft_s": _finite(float(cols["ttft_s"][j])),
            "output_tokens_per_s": n * float(cols["output_tokens_per_s"][j]),
            "prefill_tokens_per_s": n * float(cols["prefill_tokens_per_s"][j]),
            "utilization": float(cols["prefill_share"][j]) if kind == "prefill" else None,
            "prefill_share": float(cols["prefill_share"][j]) if kind == "colocated" else None,
            "power_mw": n * float(cols["power_w"][j]) / 1e6,
            "column": int(j),
            **ttft_percentiles(cols, j),
        })
        if kind == "split":
            rows.append(_ffn_row(built, rows[-1], j))
    schema_order = ["workload", "role", "hardware", "replicas", "chips_per_replica", "tensor_parallel",
                    "pipeline_parallel", "expert_parallel", "batch", "precision", "draft_tokens", "tps_per_user",
                    "ttft_s", "ttft_p50_s", "ttft_p90_s", "ttft_p99_s", "output_tokens_per_s",
                    "prefill_tokens_per_s", "utilization", "prefill_share", "power_mw", "column"]
    if not rows:
        text = {"workload", "role", "hardware", "precision"}
        ints = {"chips_per_replica", "tensor_parallel", "pipeline_parallel", "batch", "draft_tokens", "column"}
        return pl.DataFrame(schema={c: pl.Utf8 if c in text else pl.Int64 if c in ints else
                                    pl.Boolean if c == "expert_parallel" else pl.Float64 for c in schema_order})
    return pl.DataFrame(rows, infer_schema_length=None).select(schema_order).sort(["workload", "role", "hardware"])


TTFT_PERCENTILES = (50, 90, 99)


def ttft_percentiles(cols, j: int) -> dict:
    """TTFT at p50, p90 and p99 of a prefill or colocated allocation at its utilization (MODEL.md 9.2); None
    for roles whose prompts are prefilled elsewhere."""
    from solvers.engine import wait_quantile_s

    fixed, service = float(cols["ttft_fixed_s"][j]), float(cols["prefill_service_s"][j])
    if not math.isfinite(fixed):
        return {f"ttft_p{p}_s": None for p in TTFT_PERCENTILES}
    return {f"ttft_p{p}_s": fixed + wait_quantile_s(float(cols["prefill_share"][j]), service, p / 100.0)
            for p in TTFT_PERCENTILES}


def _ffn_row(built: Built, attention: dict, j: int) -> dict:
    """The FFN half of an attention/FFN split replica: same replicas, batch and speed; its chips, power and
    precision; the output tokens are counted once, on the attention row."""
    cols = built.options
    hw_a = built.hardware_by_id[attention["hardware"]]
    hw_f = built.hardware_by_id[cols["ffn_hardware"][j]]
    ffn_chips = int(cols["ffn_chips"][j])
    attn_power = attention["replicas"] * attention["chips_per_replica"] * hw_a.rack_power_w / hw_a.chips_per_rack
    ffn_power = attention["replicas"] * ffn_chips * hw_f.rack_power_w / hw_f.chips_per_rack
    attention["power_mw"] = attn_power / 1e6
    return {**attention, "role": "ffn", "hardware": hw_f.id, "chips_per_replica": ffn_chips,
            "tensor_parallel": ffn_chips, "expert_parallel": True, "precision": str(cols["ffn_precision"][j]),
            "output_tokens_per_s": 0.0, "power_mw": ffn_power / 1e6}


def fleet_table(built: Built, racks: np.ndarray, alloc):
    import polars as pl

    p = built.problem
    costs = p.annual_cost_usd_per_rack
    rows = []
    for h, hw in enumerate(built.hardware):
        if racks[h] <= 0:
            continue
        mine = alloc.filter(pl.col("hardware") == hw.id)
        used = float((mine["replicas"] * mine["chips_per_replica"]).sum()) if len(mine) else 0.0
        n = int(round(racks[h]))
        rows.append({
            "hardware": hw.id, "racks": n, "chips": n * hw.chips_per_rack, "chips_used": used,
            "chip_utilization": used / (n * hw.chips_per_rack),
            "power_mw": n * hw.rack_power_w / 1e6,
            "facility_power_mw": n * hw.rack_power_w * p.pue / 1e6,
            "capex_usd": n * hw.rack.capex_usd.value,
            "annual_cost_usd": n * float(costs[h]),
            "capex_confidence": hw.rack.capex_usd.confidence,
        })
    return pl.DataFrame(rows) if rows else pl.DataFrame()


def workload_table(built: Built, alloc, fleet, shares: np.ndarray):
    """Per workload: demand and what is served, the speeds, and its share of the fleet's cost and power
    (each system's cost and power split by the chips each workload uses on it)."""
    import polars as pl

    share_cost, share_power = _chip_shares(built, alloc, fleet)
    rows = []
    for w, d in enumerate(built.demands):
        mine = alloc.filter(pl.col("workload") == d.name)
        decode = mine.filter(pl.col("role").is_in(DECODE_ROLES))
        tokens_per_year = (d.output_tokens_per_s / built.scenario.workloads[w].peak_to_mean) * SECONDS_PER_YEAR
        cost = share_cost.get(d.name, 0.0)
        power_mw = share_power.get(d.name, 0.0)
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
            "cost_usd_per_mtok": cost / (tokens_per_year / 1e6) if tokens_per_year > 0 else None,
            "output_tokens_per_s_per_mw": d.output_tokens_per_s / power_mw if power_mw > 0 else None,
            "tier": built.scenario.workloads[w].tier,
            "served_share": float(shares[w]),
            "price_usd_per_mtok": built.scenario.price_of(built.scenario.workloads[w]),
            "revenue_usd_per_year": float(shares[w]) * annual_revenue(built.scenario, built.scenario.workloads[w], d),
        })
    return pl.DataFrame(rows)


def _chip_shares(built: Built, alloc, fleet) -> tuple[dict, dict]:
    import polars as pl

    cost, power = {}, {}
    if not len(fleet):
        return cost, power
    for f in fleet.iter_rows(named=True):
        mine = alloc.filter(pl.col("hardware") == f["hardware"])
        for r in mine.iter_rows(named=True):
            share = r["replicas"] * r["chips_per_replica"] / f["chips_used"]
            cost[r["workload"]] = cost.get(r["workload"], 0.0) + share * f["annual_cost_usd"]
            power[r["workload"]] = power.get(r["workload"], 0.0) + share * f["power_mw"]
    return cost, power


def tier_table(workloads):
    """Per speed tier: output tokens/s served, power share, tokens/s per MW, revenue per MW (issue 4 item 5)."""
    import polars as pl

    if not len(workloads):
        return pl.DataFrame()
    wl = workloads.with_columns(
        (pl.col("demand_output_tokens_per_s") * pl.col("served_share")).alias("output_tokens_per_s"),
        pl.col("tier").fill_null("custom"))
    return (wl.group_by("tier", maintain_order=True)
              .agg(pl.col("min_tps_per_user").min(), pl.col("output_tokens_per_s").sum(), pl.col("power_mw").sum(),
                   pl.col("revenue_usd_per_year").sum())
              .with_columns((pl.col("output_tokens_per_s") / pl.col("power_mw")).alias("output_tokens_per_s_per_mw"),
                            (pl.col("revenue_usd_per_year") / pl.col("power_mw")).alias("revenue_usd_per_year_per_mw"))
              .sort("min_tps_per_user"))


def totals_of(built: Built, fleet, workloads) -> dict:
    demand = float((workloads["demand_output_tokens_per_s"] * workloads["served_share"]).sum())
    revenue = float(workloads["revenue_usd_per_year"].sum())
    power = float(fleet["power_mw"].sum()) if len(fleet) else 0.0
    return {
        "racks": int(fleet["racks"].sum()) if len(fleet) else 0,
        "chips": int(fleet["chips"].sum()) if len(fleet) else 0,
        "power_mw": power,
        "facility_power_mw": power * built.problem.pue,
        "power_budget_mw": _finite(built.problem.power_budget_w / 1e6),
        "capex_usd": float(fleet["capex_usd"].sum()) if len(fleet) else 0.0,
        "annual_cost_usd": float(fleet["annual_cost_usd"].sum()) if len(fleet) else 0.0,
        "output_tokens_per_s": demand,
        "output_tokens_per_s_per_mw": demand / power if power > 0 else None,
        "revenue_usd_per_year": revenue,
        "profit_usd_per_year": revenue - (float(fleet["annual_cost_usd"].sum()) if len(fleet) else 0.0),
        "revenue_usd_per_year_per_mw": revenue / power if power > 0 else None,
    }


# ---- the whole job ----------------------------------------------------------------------------------------------
def solve(scenario, solver: str | None = None, time_limit_s: float | None = None, progress=None) -> Plan:
    """The cheapest fleet for ``scenario`` (a ``planner.scenario.Scenario`` or a path), verified by ``evaluate``.
    Raises ``InfeasibleError`` (exit 3) with the plan attached when no fleet can serve it. ``progress(done,
    total, text)`` hears about the engine's workloads and the MILP, if given."""
    from solvers.fleet_milp import optimize

    if not hasattr(scenario, "workloads"):
        from planner.scenario import load_scenario

        scenario = load_scenario(scenario)
    settings = scenario.solver
    built = build_problem(scenario, progress)
    limit = time_limit_s or settings.time_limit_s
    if progress:
        progress(0, 1, f"solving the MILP ({built.problem.n_columns} columns, {settings.name if solver is None else solver})")
    sol = optimize(built.problem, solver=solver or settings.name, time_limit_s=limit,
                   relative_gap=settings.relative_gap)
    if sol.status == "time_limit":  # the solver stopped at the limit without any plan
        raise PlannerError(f"the {sol.solver} solver found no plan within the time limit of {limit:g} s; raise "
                           f"--time-limit (or solver.time_limit_s) or try another solver (scip, highs, cp-sat)")
    if sol.status == "feasible" and ("TIME" in sol.detail or "UNDETERMINED" in sol.detail):
        import dataclasses

        sol = dataclasses.replace(sol, status="time_limit")  # a plan, stopped by the limit: the interface's name
    plan = extract_plan(built, sol)
    if plan.status == "infeasible":
        raise InfeasibleError(infeasibility_message(built), plan=plan)
    plan.checks = evaluate(plan)
    failed = [c for c in plan.checks if not c["ok"]]
    if failed:
        raise PlannerError("bug: the plan fails its own check: " + "; ".join(c["check"] + ": " + c["detail"]
                                                                             for c in failed[:5]))
    return plan


def infeasibility_message(built: Built) -> str:
    """Why no fleet exists: workloads with no option at all, else the least power the demand needs against the
    budget (the same MILP minimising power with no budget), else the rack limits."""
    import dataclasses

    from solvers.fleet_milp import optimize

    if built.unserved:
        return "no feasible fleet: " + "; ".join(f"{w}: {why}" for w, why in what_would_serve(built).items())
    p = built.problem
    relaxed = dataclasses.replace(p, power_budget_w=math.inf, objective="min_power")
    least = optimize(relaxed, solver="highs", time_limit_s=30.0, relative_gap=1e-3)
    if least.status in ("optimal", "feasible", "time_limit"):
        need_mw = least.objective * p.pue / 1e6
        return (f"no feasible fleet: serving every workload at its tier needs at least {need_mw:.4g} MW of facility "
                f"power (the least-power fleet), but the site's budget is {p.power_budget_w / 1e6:.4g} MW: short by "
                f"{need_mw - p.power_budget_w / 1e6:.4g} MW (the smallest change: raise the budget or lower demand)")
    free = dataclasses.replace(relaxed, max_racks=np.full(p.n_hardware, math.inf), max_total_racks=math.inf)
    needed = optimize(free, solver="highs", time_limit_s=30.0, relative_gap=1e-3)
    if needed.status in ("optimal", "feasible", "time_limit"):
        over = [f"{h.id}: {int(n)} racks needed, cap {int(c)}" for h, n, c in
                zip(built.hardware, needed.racks, p.max_racks) if n > c]
        total = int(np.sum(needed.racks))
        if total > p.max_total_racks:
            over.append(f"all systems: {total} racks needed, site max_racks {int(p.max_total_racks)}")
        return ("no feasible fleet: the rack limits bind even with unlimited power; the least-power fleet needs "
                + "; ".join(over))
    return "no feasible fleet: no combination of the options covers the demand"


def fastest_reachable(loose, sc, hardware, asked: float) -> tuple[float, str]:
    """The highest per-user speed (within 5%) that some option reaches, by bisection on the tier the engine asks
    for (speculative decoding included, as in solve), and the system that reaches it."""
    import dataclasses

    lo, hi, where = 0.0, asked, ""
    for _ in range(12):
        mid = (lo + hi) / 2 if lo > 0 else hi / 32
        opts = candidates.options_for([dataclasses.replace(loose, min_tps_per_user=mid)], sc.resolved_models(),
                                      hardware).arrays()
        found = np.isin(opts["kind"], ["decode", "colocated", "split"])
        if found.any():
            i = int(np.argmax(np.where(found, opts["tps_per_user"], -1.0)))
            lo, where = max(mid, float(opts["tps_per_user"][i])), str(opts["hardware"][i])
        else:
            hi = mid
        if lo > 0 and hi / lo < 1.05:
            break
    return lo, where


def what_would_serve(built: Built) -> dict[str, str]:
    """For each workload without options, why, and the smallest change that would give it one: the best speed any
    allowed system reaches (lower the tier to it), or the shortest TTFT (raise the target to it), or that the
    model fits no allowed system at all."""
    import dataclasses

    sc = built.scenario
    hardware = built.hardware_by_id
    out = {}
    for d in built.demands:
        if d.name not in built.unserved:
            continue
        loose = dataclasses.replace(d, min_tps_per_user=1e-9, ttft_s=1e9)
        opts = candidates.options_for([loose], sc.resolved_models(), hardware).arrays()
        decode = np.isin(opts["kind"], ["decode", "colocated", "split"])
        prefill = np.isin(opts["kind"], ["prefill", "colocated"])
        if not decode.any():
            out[d.name] = f"{d.model} with a {d.context_max:g}-token context fits no allowed system"
        elif "reaches" in built.unserved[d.name]:
            speed, where = fastest_reachable(loose, sc, hardware, d.min_tps_per_user)
            out[d.name] = (f"{built.unserved[d.name]}; the fastest reachable is about {speed:.3g} tok/s per user "
                           f"on {where} (smallest change: a tier at or below that speed)")
        elif prefill.any():
            fastest = float(np.nanmin(np.where(prefill, opts["ttft_fixed_s"], np.nan)))
            out[d.name] = (f"{built.unserved[d.name]}; an idle replica needs {fastest:.3g} s "
                           f"(smallest change: a TTFT target above that)")
        else:
            out[d.name] = built.unserved[d.name]
    return out


def alternatives_table(built: Built, chosen_columns: set[int]):
    """Why each system was or was not chosen: per workload and role, the cheapest option on every system, as
    annual cost and IT power per 1,000 tokens/s of capacity (rack share of the replica / its capacity)."""
    import polars as pl

    cols = built.options
    if not len(cols["workload"]):
        return pl.DataFrame()
    cost_per_chip = {h.id: c / h.chips_per_rack for h, c in zip(built.hardware, built.problem.annual_cost_usd_per_rack)}
    capacity = np.where(cols["kind"] == "prefill", cols["prefill_tokens_per_s"], cols["output_tokens_per_s"])
    cost = [(cost_per_chip[h] * c + (cost_per_chip[fh] * fc if fh else 0.0)) / cap * 1e3
            for h, c, fh, fc, cap in zip(cols["hardware"], cols["chips"], cols["ffn_hardware"], cols["ffn_chips"],
                                         capacity)]
    df = pl.DataFrame({
        "workload": cols["workload"], "role": [{"split": "attention+ffn"}.get(k, k) for k in cols["kind"]],
        "hardware": [f"{h}+{fh}" if fh else h for h, fh in zip(cols["hardware"], cols["ffn_hardware"])],
        "precision": cols["precision"], "chips_per_replica": cols["chips"] + cols["ffn_chips"], "capacity": capacity,
        "usd_per_year_per_1k_tokens_per_s": cost,
        "kw_per_1k_tokens_per_s": cols["power_w"] / capacity,
        "chosen": [j in chosen_columns for j in range(len(capacity))],
    })
    best = (df.sort("usd_per_year_per_1k_tokens_per_s")
              .group_by(["workload", "role", "hardware"], maintain_order=True)
              .agg(pl.all().first(), pl.col("chosen").any().alias("used")))
    return best.drop("chosen", "capacity").sort(["workload", "role", "usd_per_year_per_1k_tokens_per_s"])


# ---- checking a plan without the solver ----------------------------------------------------------------------
def evaluate(plan: Plan) -> list[dict]:
    """Re-check every constraint and the cost from the plan's tables and the scenario alone, without the solver:
    each allocation re-scored with the full performance model (not the engine), demand covered, chips within
    racks, power within budget, caps kept, cost recomputed from the catalog. Returns one dict per check."""
    import polars as pl

    built = plan.built
    checks = []
    sc = built.scenario
    hw = built.hardware_by_id
    for r in plan.allocation.iter_rows(named=True):
        checks.extend(_rescore(r, built, hw[r["hardware"]]))
    shares = dict(zip(plan.workloads["workload"].to_list(), plan.workloads["served_share"].to_list()))
    for d in built.demands:
        share = shares[d.name]
        mine = plan.allocation.filter(pl.col("workload") == d.name)
        served = float(mine.filter(pl.col("role").is_in(DECODE_ROLES))["output_tokens_per_s"].sum())
        prefilled = float(mine["prefill_tokens_per_s"].sum())
        checks.append(_check(f"demand {d.name} decode", served >= share * d.output_tokens_per_s * (1 - 1e-6),
                             f"served {served:.6g} of {share:.4g} x {d.output_tokens_per_s:.6g} output tokens/s"))
        checks.append(_check(f"demand {d.name} prefill", prefilled >= share * d.prefill_tokens_per_s * (1 - 1e-6),
                             f"prefilled {prefilled:.6g} of {share:.4g} x {d.prefill_tokens_per_s:.6g} prompt tokens/s"))
    racks = {f["hardware"]: f["racks"] for f in plan.fleet.iter_rows(named=True)}
    for hw_id in sorted(set(racks) | set(plan.allocation["hardware"].to_list())):
        h = hw[hw_id]
        mine = plan.allocation.filter(pl.col("hardware") == hw_id)
        used = float((mine["replicas"] * mine["chips_per_replica"]).sum())
        have = racks.get(hw_id, 0) * h.chips_per_rack
        checks.append(_check(f"chips {h.id}", used <= have * (1 + 1e-6) + 1e-9,
                             f"{used:.9g} used of {have} in {racks.get(hw_id, 0)} racks"))
    for f in plan.fleet.iter_rows(named=True):
        h = hw[f["hardware"]]
        cap = sc.hardware.max_racks.get(h.id)
        if cap is not None:
            checks.append(_check(f"supply cap {h.id}", f["racks"] <= cap, f"{f['racks']} racks, cap {cap}"))
        if h.rack.available.value > sc.start_date:
            checks.append(_check(f"available {h.id}", False, f"available {h.rack.available.value}"))
    facility = plan.totals["facility_power_mw"]
    if sc.site.power_budget_mw:
        checks.append(_check("power budget", facility <= sc.site.power_budget_mw * (1 + 1e-9),
                             f"{facility:.6g} MW facility of {sc.site.power_budget_mw:g} MW"))
    if sc.site.max_racks:
        checks.append(_check("site racks", plan.totals["racks"] <= sc.site.max_racks,
                             f"{plan.totals['racks']} of {sc.site.max_racks}"))
    cost = sum(f["racks"] * c for f, c in _fleet_costs(plan, built))
    checks.append(_check("annual cost", math.isclose(cost, plan.totals["annual_cost_usd"], rel_tol=1e-9),
                         f"recomputed {cost:.6g} USD/year"))
    return checks


def _fleet_costs(plan, built):
    costs = dict(zip([h.id for h in built.hardware], annual_costs(built.scenario, built.hardware)))
    return [(f, costs[f["hardware"]]) for f in plan.fleet.iter_rows(named=True)]


def _check(name: str, ok: bool, detail: str) -> dict:
    return {"check": name, "ok": bool(ok), "detail": detail}


def _rescore_split(r: dict, d, model, built: Built, hw_a) -> list[dict]:
    """An attention/FFN split replica re-scored with the split kernel (MODEL.md 10)."""
    from solvers import split_kernels as S

    cols = built.options
    j = r["column"]
    hw_f = built.hardware_by_id[cols["ffn_hardware"][j]]
    attn, ffn = performance.split_model_vectors(model)
    q, a = performance.spec_tokens(*next(s for s in candidates.SPECULATIVE if s[0] == r["draft_tokens"]))
    out = np.zeros(S.N_SPLIT)
    S.split_decode_breakdown(attn, ffn, performance.hardware_vector(hw_a, r["precision"]),
                             performance.hardware_vector(hw_f, str(cols["ffn_precision"][j])),
                             float(r["chips_per_replica"]), float(cols["ffn_chips"][j]), float(int(r["expert_parallel"])),
                             float(r["batch"]), d.context_avg, d.context_max, q, a, performance.MICRO_BATCHES, out)
    name = f"allocation {d.name}/attention+ffn/{hw_a.id}+{hw_f.id}"
    return [
        _check(name + " fits", out[S.S_FITS_ATTENTION] > 0.5 and out[S.S_FITS_FFN] > 0.5, "both sides hold their part"),
        _check(name + " speed", out[S.S_TPS_PER_USER] >= d.min_tps_per_user * (1 - 1e-9),
               f"{out[S.S_TPS_PER_USER]:.4g} tok/s/user, tier {d.min_tps_per_user:g}"),
        _check(name + " capacity", out[S.S_TOKENS_PER_S] * r["replicas"] >= r["output_tokens_per_s"] * (1 - 1e-6),
               f"re-scored {out[S.S_TOKENS_PER_S]:.6g} output tokens/s per replica"),
    ]


def _rescore(r: dict, built: Built, hw) -> list[dict]:
    """One allocation re-scored with the full breakdown kernels (not the engine) and the queueing formula."""
    from solvers.engine import wait_quantile_s
    from solvers.perf_kernels import decode_breakdown, prefill_breakdown

    d = built.demand_by_name[r["workload"]]
    model = built.scenario.resolved_models()[d.model]
    if r["role"] == "ffn":
        return []  # checked with its attention half
    if r["role"] == "attention":
        return _rescore_split(r, d, model, built, hw)
    mv, hv = performance.model_vector(model), performance.hardware_vector(hw, r["precision"])
    layout = (float(r["tensor_parallel"]), float(r["pipeline_parallel"]), float(int(r["expert_parallel"])))
    name = f"allocation {d.name}/{r['role']}/{hw.id}/{r['chips_per_replica']} chips"
    out = []
    pre = np.zeros(L.N_BREAKDOWN)
    prefill_breakdown(mv, hv, *layout, d.prefill_tokens, pre)
    rate = float(pre[L.B_TOKENS_PER_S])
    if r["role"] == "prefill":
        transfer = float(candidates.kv_transfer_s(model, hw, r["precision"], np.array([r["chips_per_replica"]]),
                                                  d.input_tokens)[0])
        util = r["utilization"]
        ttft = float(pre[L.B_TIME_S]) + transfer + wait_quantile_s(util, d.prefill_tokens / rate, d.ttft_quantile)
        out.append(_check(name + " fits", pre[L.B_FITS] > 0.5, "weights and one prompt's KV fit"))
        out.append(_check(name + " ttft", ttft <= d.ttft_s * (1 + 1e-9), f"{ttft:.4g} s at p{d.ttft_quantile * 100:g}"))
        out.append(_check(name + " capacity", rate * util * r["replicas"] >= r["prefill_tokens_per_s"] * (1 - 1e-6),
                          f"re-scored {rate * util:.6g} prompt tokens/s per replica"))
        return out
    q, a = performance.spec_tokens(*next(s for s in candidates.SPECULATIVE if s[0] == r["draft_tokens"]))
    dec = np.zeros(L.N_BREAKDOWN)
    decode_breakdown(mv, hv, *layout, float(r["batch"]), d.context_avg, d.context_max, q, a, dec)
    served, tps = float(dec[L.B_TOKENS_PER_S]), float(dec[L.B_TPS_PER_USER])
    if r["role"] == "colocated":
        colocated = performance.colocated_tokens_per_s(served, rate, d.prefill_tokens, d.output_tokens)
        tps *= colocated / served  # prefill chunks slow every stream by the same share
        served = colocated
        share = d.prefill_tokens / rate * served / d.output_tokens
        ttft = float(pre[L.B_TIME_S]) + wait_quantile_s(share, d.prefill_tokens / rate, d.ttft_quantile)
        out.append(_check(name + " ttft", ttft <= d.ttft_s * (1 + 1e-9), f"{ttft:.4g} s at p{d.ttft_quantile * 100:g}"))
    resident = 1.0 + d.resident_s_per_token * tps
    held = dec[L.B_WEIGHT_BYTES_PER_CHIP] + dec[L.B_KV_BYTES_PER_CHIP] * resident
    out.append(_check(name + " fits", held <= dec[L.B_USABLE_BYTES_PER_CHIP] * (1 + 1e-9),
                      f"weights and KV ({resident:.3g}x for sessions waiting on tools) fit the replica"))
    out.append(_check(name + " speed", tps >= d.min_tps_per_user * (1 - 1e-9),
                      f"{tps:.4g} tok/s/user, tier {d.min_tps_per_user:g}"))
    out.append(_check(name + " capacity", served * r["replicas"] >= r["output_tokens_per_s"] * (1 - 1e-6),
                      f"re-scored {served:.6g} output tokens/s per replica"))
    return out
