"""``check``: re-check a plan without the solver and without the scenario file (interface: ``planner check``).

A plan carries its inputs (``inputs``: demands, the catalog and model figures it used, efficiencies, finance, site
limits). From those alone every allocation is re-scored with the full kernels (its kind's re-scorer,
``planner.fleet.options.KINDS``), and every constraint and every reported figure is recomputed with the same table
builders ``solve`` used: demand at each workload's tier and TTFT, chips within the racks bought, supply caps,
availability, site racks, the power budget, fleet power, capex and cost, each workload's cost per token, the
totals, the objective and the status. Returns one ``{check, ok, detail}`` per check.
"""

from __future__ import annotations

import datetime as _dt
import json
import math
from pathlib import Path

import numpy as np

from planner import catalog
from planner.catalog import Hardware, Model
from planner.errors import InputError
from planner.fleet.curtail import curtailment_table, sites_curtailment_table
from planner.fleet.demand import Demand
from planner.fleet.draw import mean_power_mw
from planner.fleet.finance import (annual_rack_cost, annual_rack_cost_parts, billed_power_w, finance_args,
                                   finance_value, kept_rack_cost_parts, rack_carbon_kg, rental_cost)
from planner.fleet.options import KIND_OF_ROLE, TTFT_PERCENTILES, pool_key, pools
from planner.fleet.plan import (allocation_table, fleet_table, mark_rented, objective_value, sites_fleet_table,
                                totals_of, workload_table)
from planner.fleet.packing import racks_offered
from planner.fleet.problem import INTEGER_REPLICA_RACK_SHARE, site_of, system_of
from planner.fleet.queues import effective_capacity, queued_rows, routing_share
from planner.fleet.rows import row_problems
from planner.fleet.spares import spare_count, spares_needed
from planner.inputs import read_bytes_limited
from planner.measurements.curves import rescore_measured
from planner.measurements.reading import too_deep
from planner.measurements.table import Measurement
from planner.vocabulary import API_KIND, API_PREFIX, DECODE_ROLES, DEFAULT_CURTAILMENT_ORDER, PREFILL_ROLES, STATUSES
from solvers.objectives import objective as objective_named

REL = 1e-6  # relative tolerance of a recomputed figure against the reported one
PLAN_KEYS = ("status", "objective", "fleet", "allocation", "workloads", "totals", "inputs")
BUILDOUT_KEYS = ("status", "objective", "first_period_order", "net_present_cost_usd", "inputs")
MAX_PLAN_BYTES = 64 * 1024 * 1024
MAX_PLAN_DEPTH = 64  # a plan.json nests about 8 deep; deeper is no plan (and never a RecursionError)


# ---- reading a plan -------------------------------------------------------------------------------------------
def plan_dict(plan) -> dict:
    """A plan as the interface's JSON: a Plan, a dict, or a path to plan.json. Raises InputError (exit 2) for
    anything that is not a plan."""
    if hasattr(plan, "to_dict"):
        return json.loads(json.dumps(plan.to_dict()))  # exactly what plan.json holds
    if isinstance(plan, (str, Path)):
        return read_plan_file(Path(plan))
    if not isinstance(plan, dict):
        raise InputError(f"expected a plan (Plan, dict or path to plan.json), got {type(plan).__name__}")
    keys = BUILDOUT_KEYS if "first_period_order" in plan else PLAN_KEYS
    missing = [k for k in keys if k not in plan]
    if missing:
        raise InputError(f"not a plan: missing {', '.join(missing)} (written by planner solve --out or "
                         f"--format json)")
    return plan


def read_plan_file(path: Path) -> dict:
    raw = read_bytes_limited(path, MAX_PLAN_BYTES, "a plan.json written by planner solve")

    try:
        data = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise InputError(f"not JSON: {exc}", file=str(path)) from None
    except RecursionError:  # nested past the parser's own limit
        data = deep = True
    else:
        deep = too_deep(data, MAX_PLAN_DEPTH)
    if deep:
        raise InputError(f"not a plan: nested more than {MAX_PLAN_DEPTH} levels deep (a plan.json nests fewer "
                         f"than 10)", file=str(path))
    try:
        return plan_dict(data)
    except InputError as exc:
        raise InputError(str(exc), file=str(path)) from None


class Inputs:
    """The plan's ``inputs`` as catalog objects."""

    def __init__(self, d: dict):
        try:
            sc = d["scenario"]
            self.scenario = sc
            self.objective = objective_named(sc["objective"])
            self.start_date = _dt.date.fromisoformat(sc["start_date"])
            self.finance = finance_args(sc["finance"], sc["horizon_years"])
            self.scenario_finance = sc["finance"]
            self.pue = float(sc["finance"]["pue"])
            budget = sc["site"].get("power_budget_mw")
            self.power_budget_w = float(budget) * 1e6 if budget else math.inf
            self.max_total_racks = sc["site"].get("max_racks")
            self.max_racks = dict(sc.get("max_racks", {}))
            self.max_platforms = sc.get("max_platforms")  # (7), absent in plans written before it
            self.min_racks = dict(sc.get("min_racks") or {})
            self.relative_gap = float(sc["solver"]["relative_gap"])
            self.demands = [Demand.from_dict(x) for x in d["demands"]]
            self.hardware = {k: Hardware.model_validate(v) for k, v in d["hardware"].items()}
            self.models = {k: Model.model_validate(v) for k, v in d["models"].items()}
            self.efficiency = {k: dict(v) for k, v in d["efficiency"].items()}
            self.rack_costs = d["rack_costs"]
            self.grid_kg_per_mwh = sc["site"].get("grid_kg_co2_per_mwh")  # (14), absent in plans before it
            self.horizon_years = float(sc["horizon_years"])
            self.installed = dict(d.get("installed") or {})  # (9), absent in plans written before it
            self.max_new_racks = sc.get("max_new_racks")

            # several sites (OPTIMIZER.md 21): each site's finance and limits, by name; None with one site
            self.sites = ({e["name"]: {"finance": e["finance"], "site": e["site"]} for e in d["sites"]}
                          if d.get("sites") is not None else None)
            self.measurements = [Measurement.model_validate(r) for r in d.get("measurements") or []]
            self.measurement_headroom = float(d.get("measurement_headroom") or 0.0)
            stale = sorted(f for f, eff in self.efficiency.items() if "layer_floor_s" in eff)
        except Exception as exc:  # noqa: BLE001 - any malformed part means this is no plan we can check
            raise InputError(f"not a plan: its inputs are incomplete or invalid ({_one_line(exc)})") from None
        if stale:
            raise InputError(f"this plan was written by a planner whose performance model had one fixed cost per "
                             f"layer (layer_floor_s, families {', '.join(stale)}); this one prices kernels and steps "
                             f"(kernel_latency_s, step_overhead_s, docs/MODEL.md 2.8) and cannot re-score it: solve "
                             f"the scenario again")

    def annual_cost_per_rack(self, hw_id: str) -> float:
        hw = self.hardware[hw_id]
        return float(annual_rack_cost(hw.rack.capex_usd.value, billed_power_w(hw, self.finance_of(hw_id)),
                                      **self.finance_args_of(hw_id)))

    def finance_of(self, type_id: str) -> dict:
        """The finance a hardware type is priced under: its site's (OPTIMIZER.md 21), else the scenario's."""
        return self.scenario_finance if self.sites is None else self.sites[site_of(type_id) or ""]["finance"]

    def finance_args_of(self, type_id: str) -> dict:
        return self.finance if self.sites is None else finance_args(self.finance_of(type_id), self.horizon_years)

    def rack_carbon(self, finance: dict | None = None, grid: float | None = None,
                    ids: list | None = None) -> dict | None:
        """hardware type -> kg CO2e a year of one rack by part (OPTIMIZER.md 15), None without the grid's figure
        (a site's ``finance`` and ``grid`` for its types ``ids`` where given)."""
        grid = self.grid_kg_per_mwh if finance is None else grid
        if grid is None:
            return None
        return {h: rack_carbon_kg(hw, finance or self.scenario_finance, self.horizon_years, grid)
                for h, hw in self.hardware.items() if ids is None or h in ids}

    def site_rows(self) -> list:
        """[(name, finance, carbon by type, grid)] of each site, for ``plan.sites_fleet_table``."""
        assert self.sites is not None
        return [(name, e["finance"], self.rack_carbon(e["finance"], e["site"].get("grid_kg_co2_per_mwh"),
                                                      [h for h in self.hardware if site_of(h) == name]),
                 e["site"].get("grid_kg_co2_per_mwh")) for name, e in self.sites.items()]

    def site_limits(self) -> list | None:
        """[(name, budget W, most racks)] of each site, None with one site (``plan.totals_of``)."""
        if self.sites is None:
            return None
        return [(name, float(e["site"].get("power_budget_mw") or math.inf) * 1e6, e["site"].get("max_racks"))
                for name, e in self.sites.items()]


def _one_line(exc: Exception) -> str:
    """An exception as one short line (a pydantic error's first problem and where it is)."""
    errors = getattr(exc, "errors", None)
    if callable(errors):
        try:
            first = errors()[0]
            text = f"{'.'.join(map(str, first['loc']))}: {first['msg']}"
        except Exception:  # noqa: BLE001 - fall back to the text
            text = str(exc)
    else:
        text = f"missing field {exc}" if isinstance(exc, KeyError) else str(exc)
    text = " ".join(f"{type(exc).__name__}: {text}".split())
    return text if len(text) <= 200 else text[:197] + "..."


# ---- the checks -------------------------------------------------------------------------------------------------
def result(name: str, ok: bool, detail: str) -> dict:
    return {"check": name, "ok": bool(ok), "detail": detail}


def close(reported, recomputed, rel: float = REL) -> bool:
    """Reported equals recomputed within ``rel`` (both None, or both numbers)."""
    if reported is None or recomputed is None:
        return reported is None and recomputed is None
    if isinstance(reported, str) or isinstance(recomputed, str):
        return reported == recomputed
    a, b = float(reported), float(recomputed)
    if not (math.isfinite(a) and math.isfinite(b)):
        return a == b
    return math.isclose(a, b, rel_tol=rel, abs_tol=1e-9)


def same(name: str, reported, recomputed) -> dict:
    return result(name, close(reported, recomputed), f"reported {reported!r}, recomputed {recomputed!r}")


def check(plan) -> list[dict]:
    """Every check of a plan (a Plan, its dict, or a path to plan.json); see the module docstring. A plan that
    cannot be checked at all raises InputError (naming the file, where ``plan`` is one)."""
    d = plan_dict(plan)
    try:
        return catalog_checks(d) + _checks(d)
    except InputError as exc:
        raise (exc.in_file(str(plan)) if isinstance(plan, (str, Path)) else exc) from None


def _checks(d: dict) -> list[dict]:
    import polars as pl

    if "first_period_order" in d:  # a build-out over periods
        from planner.fleet.buildout import check_buildout

        order = d["first_period_order"]
        dup = duplicate_checks({"first_period_order": order}) if isinstance(order, list) else []
        try:
            return dup + check_buildout(d)
        except UNREADABLE as exc:
            return [result("build-out", False, f"the plan cannot be read: {_unreadable(exc)}")]
    if d["status"] not in STATUSES:
        return [result("status", False, f"{d['status']!r} is not one of {', '.join(STATUSES)}")]
    inputs = Inputs(d["inputs"])
    if d["status"] == "infeasible":
        return [result("status", not d["fleet"] and not d["allocation"],
                       "an infeasible plan buys nothing and allocates nothing")]
    rows = d["allocation"]
    if not isinstance(rows, list) or not all(isinstance(r, dict) for r in rows):
        return [result("allocation", False, "the allocation is not a list of rows")]
    checks: list[dict] = duplicate_checks(d)
    capacity = {}  # row index -> (output, prefill) tokens/s the re-scored replicas serve
    try:
        queues = pools(rows)  # each pool's servers and utilization, from its rows (MODEL.md 9.2)
    except UNREADABLE:
        queues = None  # a tampered row: each row is then judged as its own pool, and fails its own checks
    for i, row in enumerate(rows):
        try:
            found, cap = allocation_checks(i, row, rows, inputs, queues)
        except UNREADABLE as exc:  # a row with a field removed or of the wrong kind fails; the others are checked
            found, cap = [result(f"allocation[{i}]", False, f"the row cannot be read: {_unreadable(exc)}")], (0.0, 0.0)
        checks.extend(found)
        capacity[i] = cap
    if inputs.sites is not None:  # OPTIMIZER.md 21: a row's site is its hardware type's
        wrong = [i for i, r in enumerate(rows) if r.get("role") != API_KIND and r.get("site") != site_of(
            str(r.get("hardware")))]
        checks.append(result("allocation sites", not wrong, "each row's site is that of its hardware (system@site)"
                             + (f"; rows {wrong} differ" if wrong else "")))
    try:
        shares = {w["workload"]: w.get("served_share") for w in d["workloads"]}
        checks.extend(demand_checks(rows, capacity, shares, inputs))
    except UNREADABLE as exc:
        checks.append(result("demand", False, f"the workloads or allocation cannot be read: {_unreadable(exc)}"))
    try:
        alloc = pl.DataFrame(rows, infer_schema_length=None) if rows else None
        racks = {f["hardware"]: f["racks"] for f in d["fleet"]}
        checks.extend(fleet_checks(d, alloc, racks, inputs))
    except (*UNREADABLE, pl.exceptions.PolarsError) as exc:
        checks.append(result("tables", False, f"the fleet or allocation table cannot be read: {_unreadable(exc)}"))
    return checks


def catalog_checks(d: dict) -> list[dict]:
    """The plan's catalog version against this planner's. A plan made with another catalog is re-checked against
    its own inputs (the hardware, models and efficiencies it carries) all the same, and this check says which
    versions differ: the plan's figures are not what this catalog would give."""
    prov = d.get("provenance")
    version = prov.get("catalog_version") if isinstance(prov, dict) else None
    ok = version == catalog.CATALOG_VERSION
    detail = (f"made with catalog {catalog.CATALOG_VERSION}, this planner's" if ok else
              f"made with catalog {version!r}, this planner's is {catalog.CATALOG_VERSION!r}: every other check "
              f"re-ran against the plan's own inputs (its hardware, models and efficiencies); solve the scenario "
              f"again for this catalog's figures")
    return [result("catalog version", ok, detail)]


# Each table's rows and what identifies one (a second row of the same identity is duplicated, or contradicts the
# first where any figure differs): anyone summing fleet.csv would order every system of a duplicated row twice.
ROW_KEYS = {"fleet": ("hardware",), "workloads": ("workload",), "curtailment": ("site", "step"),
            "allocation": ("workload", "role", "hardware", "ffn_hardware", "column"), "rentals": ("hardware", "offer"),
            "tiers": ("tier",), "first_period_order": ("hardware",)}


def duplicate_checks(d: dict) -> list[dict]:
    """One failed check per identity that more than one row of a table holds."""
    out = []
    for table, key in ROW_KEYS.items():
        rows = d.get(table)
        if not isinstance(rows, list):
            continue
        seen: dict = {}
        for i, row in enumerate(rows):
            if isinstance(row, dict):
                ident = tuple(str(row.get(k)) for k in key)
                seen.setdefault(ident, []).append(i)
        for ident, where in seen.items():
            if len(where) < 2:
                continue
            same_rows = all(rows[i] == rows[where[0]] for i in where)
            name = "/".join(i for i in ident if i != "None")  # a key a one-site plan's rows lack (site) left out
            out.append(result(f"{table} rows {name}", False,
                              f"rows {where} are {'the same row repeated' if same_rows else 'contradictory'}: "
                              f"each {', '.join(key)} is one row of the {table} table"))
    return out


# What reading a tampered table can raise: a key removed, a value of the wrong kind, a number that is not one.
UNREADABLE = (KeyError, TypeError, ValueError, AttributeError, IndexError, OverflowError, ZeroDivisionError)


def _unreadable(exc: Exception) -> str:
    return f"missing field {exc}" if isinstance(exc, KeyError) else f"{type(exc).__name__}: {exc}"


def rack_share(row: dict, inputs: Inputs) -> float:
    """The largest share of a rack one replica of ``row`` takes (either side of a split): the MILP keeps a replica of
    at least INTEGER_REPLICA_RACK_SHARE whole, unless a replica pool shares it."""
    sides = [(row["hardware"], row["chips_per_replica"]), (row.get("ffn_hardware"), row.get("ffn_chips"))]
    return max(float(chips) / inputs.hardware[hw].chips_per_rack for hw, chips in sides
               if hw in inputs.hardware and chips)


def spare_checks(name: str, row: dict, replicas: float, redundancy: str, inputs: Inputs) -> list[dict]:
    """``spares``: a row whose workload holds spares (OPTIMIZER.md 19) holds min(K, replicas) of them at least, K
    from its rule and its replica's stages on each of its systems' racks."""
    spares = float(row.get("spare_replicas") or 0.0)
    sides = [(float(row["chips_per_replica"]), int(row["pipeline_parallel"]), inputs.hardware[row["hardware"]])]
    if row.get("ffn_hardware") in inputs.hardware:
        sides.append((float(row.get("ffn_chips") or 0.0), 1, inputs.hardware[row["ffn_hardware"]]))
    need = spares_needed(spare_count(redundancy, [(c, k, h.chips_per_rack) for c, k, h in sides]), replicas)
    if need <= 0 and spares == 0:
        return []
    return [result(name + " spares", spares >= need * (1 - 1e-9) - 1e-9 and math.isfinite(spares),
                   f"{spares:.6g} spare replicas beside {replicas:g}, at least {need:.6g} under redundancy "
                   f"{redundancy}")]


def allocation_checks(i: int, row: dict, rows: list[dict], inputs: Inputs,
                      queues: dict | None = None) -> tuple[list[dict], tuple]:
    """Checks of one allocation row, and the (output, prefill) tokens/s its replicas serve once re-scored (the
    reported figures where they are within the re-scored capacity, else the capacity). ``queues``: each pool's
    (servers, utilization) (``options.pools`` of every row); the row's TTFT is its pool's. A row the plan's one
    reader (planner.fleet.rows) cannot take fails, naming each field and what was expected."""
    problems = row_problems(row)
    if problems:
        return [result(f"allocation row {i}", False, "; ".join(f"{f or 'row'}: {what}" for f, what in problems))], \
            (0.0, 0.0)
    try:
        role, hw_id, replicas = row["role"], row["hardware"], float(row["replicas"])
        name = (f"allocation {row['workload']}/attention+ffn/{hw_id}+{row.get('ffn_hardware')}" if role == "attention"
                else f"allocation {row['workload']}/{role}/{hw_id}")
    except (KeyError, TypeError, ValueError) as exc:
        return [result(f"allocation row {i}", False, f"unreadable: {exc}")], (0.0, 0.0)
    workload = next((x for x in inputs.demands if x.name == row["workload"]), None)
    out = []
    if workload is None:
        return [result(name, False, f"no workload {row['workload']!r} in the plan's demands")], (0.0, 0.0)
    demand = workload.for_row(row.get("speculative"))  # under speculative auto, the row's drafter's variant
    if role == API_KIND:
        return api_checks(name, row, workload)
    if hw_id not in inputs.hardware:
        return [result(name, False, f"{hw_id!r} is not among the plan's hardware")], (0.0, 0.0)
    if role == "ffn":
        partner = [r for r in rows if r.get("role") == "attention" and r.get("workload") == row["workload"]
                   and r.get("ffn_hardware") == hw_id and r.get("column") == row.get("column")]
        out.append(result(name + " pairing", len(partner) == 1 and close(partner[0]["replicas"], replicas),
                          "the ffn half of exactly one attention row, with its replicas"))
        return out, (0.0, 0.0)
    kind = KIND_OF_ROLE.get(role)
    if kind is None:
        return [result(name, False, f"role {role!r} is not one of {', '.join(KIND_OF_ROLE)}, ffn")], (0.0, 0.0)
    out.extend(eligibility_checks(name, row, demand, kind, inputs, workload.auto_methods))
    if not all(c["ok"] for c in out):
        return out, (0.0, 0.0)
    model = inputs.models[demand.model]
    measured = row.get("source") == "measured"
    if measured:
        r = rescore_measured(row, demand, model, inputs.hardware, inputs.measurements, inputs.measurement_headroom,
                             inputs.efficiency)
        out.append(result(name + " measured", r.fits, "re-read from the plan's measurements at its concurrency"
                          if r.fits else "no measurements of this system, precision, role and layout in the plan"))
    else:
        key = pool_key(row)
        pool = None if key is None else (queues if queues is not None else pools([row])).get(key)
        r = kind.rescore(row, demand, model, inputs.hardware, inputs.efficiency, inputs.models, pool)
        out.append(result(name + " fits", r.fits, "weights and KV (with sessions waiting on tools) fit the replica"))
        if pool is not None:
            out.append(same(name + " servers", row.get("servers"), pool[0]))
    out.append(result(name + " replicas", replicas >= 0 and math.isfinite(replicas), f"{replicas:g} replicas"))
    out.extend(spare_checks(name, row, replicas, workload.redundancy, inputs))
    share = rack_share(row, inputs)
    if share >= INTEGER_REPLICA_RACK_SHARE and row.get("replica_pool") is None:
        out.append(result(name + " whole replicas", abs(replicas - round(replicas)) <= 1e-6,
                          f"{replicas:g} replicas of {share:.3g} of a rack each: a replica this large is whole unless a "
                          f"replica pool shares it (OPTIMIZER.md 16)"))
    if kind.covers_decode:
        out.append(result(name + " speed", r.tps_per_user >= demand.min_tps_per_user * (1 - 1e-9),
                          f"{r.tps_per_user:.4g} tok/s/user, tier {demand.min_tps_per_user:g}"))
        if r.miss_share is not None:
            allowed = 1.0 - demand.ttft_quantile
            out.append(result(name + " speed at percentile", r.miss_share <= allowed * (1 + 1e-6) + 1e-12,
                              f"{100 * r.miss_share:.3g}% of its requests under the tier past the prefill chunks "
                              f"they meet, at most {100 * allowed:.3g}% (p{100 * demand.ttft_quantile:g})"))
        out.append(same(name + " tps_per_user", row.get("tps_per_user"), r.tps_per_user))
    if r.ttft:
        servers = f" in a pool of {row.get('servers'):g} servers" if isinstance(row.get("servers"), (int, float)) else ""
        out.append(result(name + " ttft", r.ttft["ttft_s"] <= demand.ttft_s * (1 + 1e-9),
                          f"{r.ttft['ttft_s']:.4g} s at p{demand.ttft_quantile * 100:g}{servers}, target "
                          f"{demand.ttft_s:g} s"))
        for ttft_key in ["ttft_s"] + [f"ttft_p{p}_s" for p in TTFT_PERCENTILES]:
            if ttft_key in r.ttft:  # a measured row has its measured percentile only
                out.append(same(f"{name} {ttft_key}", row.get(ttft_key), r.ttft[ttft_key]))
    if role == "colocated" and not measured:
        out.append(same(name + " prefill_share", row.get("prefill_share"), r.share))
    served = float(row.get("output_tokens_per_s") or 0.0)
    prefilled = float(row.get("prefill_tokens_per_s") or 0.0)
    out.append(result(name + " capacity", served <= replicas * r.output_tokens_per_s * (1 + REL) + 1e-9
                      and prefilled <= replicas * r.prefill_tokens_per_s * (1 + REL) + 1e-9,
                      f"reports {served:.6g} output and {prefilled:.6g} prompt tokens/s; re-scored {replicas:g} x "
                      f"({r.output_tokens_per_s:.6g}, {r.prefill_tokens_per_s:.6g})"))
    power = row.get("power_mw") or 0.0
    if role == "attention":
        ffn = next((x for x in rows if x.get("role") == "ffn" and x.get("column") == row.get("column")
                    and x.get("workload") == row["workload"]), {})
        power += ffn.get("power_mw") or 0.0
    out.append(same(name + " power_mw", power, replicas * r.power_w / 1e6))
    if row.get("mean_power_mw") is not None:  # its chips' floor and its draw above it for the share of time it works
        out.append(same(name + " mean_power_mw", row["mean_power_mw"],
                        mean_power_mw(row, inputs.hardware[row["hardware"]], demand,
                                      inputs.finance_of(row["hardware"]))))
    capped = (min(served, replicas * r.output_tokens_per_s), min(prefilled, replicas * r.prefill_tokens_per_s))
    return out, capped


def eligibility_checks(name: str, row: dict, demand: Demand, kind, inputs: Inputs, auto: tuple = ()) -> list[dict]:
    """The row's option is one the workload may use: hardware allowed and able to take the role for this model,
    precision supported (and the workload's own, where it pins one), its drafter's setting (``demand`` is the
    variant of the row's drafter where the workload's speculative ``auto`` considers the methods ``auto``), a
    layout whose chips add up."""
    out = []
    sides = [(row["hardware"], row["precision"])]
    if kind.pair:
        sides.append((row.get("ffn_hardware"), row.get("ffn_precision")))
    for side, (hw_id, precision) in enumerate(sides):
        hw = inputs.hardware.get(hw_id)
        if hw is None:
            out.append(result(name + " hardware", False, f"{hw_id!r} is not among the plan's hardware"))
            continue
        roles = kind.needs[side:side + 1] if kind.pair else kind.needs
        ok_role = all(r in hw.roles for r in roles) and hw.model_lock in (None, demand.model)
        out.append(result(f"{name} role {hw_id}", ok_role, f"{hw_id} takes {', '.join(roles)} for {demand.model}"))
        allowed = not demand.allow_hardware or hw_id in demand.allow_hardware
        out.append(result(f"{name} allowed {hw_id}", allowed, f"workload allows {demand.allow_hardware or 'any'}"))
        model = inputs.models.get(demand.model)
        runs = model is not None and catalog.runs_precision(hw, model, precision)
        pinned = demand.precision in (None, precision) or (
            kind.pair and not (model is not None and catalog.runs_precision(hw, model, demand.precision)))
        offered = catalog.runnable_precisions(hw, model) if model is not None else list(hw.precisions)
        out.append(result(f"{name} precision {hw_id}", runs and pinned,
                          f"{precision} on {hw_id} (runs {', '.join(offered)}; workload asks "
                          f"{demand.precision or 'any'})"))
    settings = demand.speculation().settings() if kind.covers_decode else [(0, 0.0)]  # prefill drafts nothing
    k, a = row.get("draft_tokens"), row.get("acceptance")
    ok = any(k == sk and close(a, sa) for sk, sa in settings) and (
        row.get("speculative") == demand.drafter_of(k))
    if row.get("source") == "measured":  # a measured run's drafting is in its figures: only its method is named
        ok = k == 0 and row.get("speculative") == demand.speculative
    out.append(result(name + " speculative", ok, f"{row.get('speculative')} with {k} draft tokens at acceptance {a}; "
                      f"the workload allows {demand.speculative} with {demand.draft_tokens}"
                      + (f" (of speculative auto: {', '.join(auto)})" if auto else "")))
    if not kind.pair:
        chips = int(row["tensor_parallel"]) * int(row["pipeline_parallel"])
        out.append(result(name + " layout", chips == int(row["chips_per_replica"]),
                          f"tp {row['tensor_parallel']} x pp {row['pipeline_parallel']} = {chips} chips, reported "
                          f"{row['chips_per_replica']}"))
    return out


def api_checks(name: str, row: dict, demand) -> tuple[list[dict], tuple]:
    """A hosted API row (OPTIMIZER.md 10): its offer is the workload's and reaches its tier, its share of the
    workload lies in [0, 1], and its tokens and cost are that share of the workload's at the offer's prices."""
    offer = next((o for o in demand.api_offers() if o["name"] == row.get("measurement")), None)
    if offer is None or row["hardware"] != API_PREFIX + str(row.get("measurement")):
        return [result(name, False, f"{row.get('measurement')!r} is not an api offer of {demand.name} that reaches "
                                    f"its {demand.min_tps_per_user:g} tok/s per user and its {demand.ttft_s:g} s "
                                    f"TTFT")], (0.0, 0.0)
    share = float(row["replicas"])
    out = [result(name + " share", 0.0 <= share <= 1.0 + 1e-9, f"{share:.6g} of the workload")]
    output, prefill = share * demand.sized_output_tokens_per_s, share * demand.sized_prefill_tokens_per_s
    out.append(same(name + " output_tokens_per_s", row.get("output_tokens_per_s"), output))
    out.append(same(name + " prefill_tokens_per_s", row.get("prefill_tokens_per_s"), prefill))
    out.append(same(name + " tps_per_user", row.get("tps_per_user"), offer["max_tps_per_user"]))
    if offer["ttft_s"] is not None:  # the offer's stated TTFT, within the workload's target (api_offers)
        out.append(same(name + " ttft_s", row.get("ttft_s"), offer["ttft_s"]))
    out.append(same(name + " api_cost_usd", row.get("api_cost_usd"),
                    share * sum(demand.api_cost_parts(offer).values())))
    return out, (output, prefill)


def rental_checks(rentals: list, inputs: Inputs) -> list[dict]:
    """Each rented row (OPTIMIZER.md 11): an offer of its system, within the offer's chips, at its price."""
    out = []
    for r in rentals:
        offer = rented_offer(r, inputs)
        name = f"rental {r.get('hardware')}/{r.get('offer')}"
        if offer is None:
            out.append(result(name, False, "no such rental offer among the plan's hardware"))
            continue
        chips = float(r["chips"])
        out.append(result(name + " chips", 0.0 <= chips <= (offer.max_chips if offer.max_chips is not None
                                                            else math.inf) * (1 + 1e-9) + 1e-9,
                          f"{chips:.6g} chips, at most {offer.max_chips}"))
        out.append(same(name + " usd_per_chip_hour", r.get("usd_per_chip_hour"), offer.usd_per_chip_hour))
        out.append(same(name + " usd_per_year", r.get("usd_per_year"), rental_cost(chips, offer.usd_per_chip_hour)))
        if "site" in r:
            out.append(result(name + " site", r["site"] == site_of(str(r.get("hardware"))),
                              f"site {r['site']!r} of hardware {r.get('hardware')!r}"))
    return out + offer_checks(rentals, inputs)


def rented_offer(row: dict, inputs: Inputs):
    """The rental offer a plan's ``rentals`` row names, among its system's offers; None where there is none."""
    hw = inputs.hardware.get(row.get("hardware"))
    return next((o for o in hw.rental if o.name == row.get("offer")), None) if hw is not None else None


def offer_checks(rentals: list, inputs: Inputs) -> list[dict]:
    """(OPTIMIZER.md 21) each offer rented at several sites (its system's type at each) within its chips over them
    all: one offer rented at two sites is one provider's capacity, not two."""
    total: dict[tuple[str, str], float] = {}
    limit: dict[tuple[str, str], float] = {}
    for r in rentals:
        offer = rented_offer(r, inputs)
        if offer is None or site_of(str(r.get("hardware"))) is None:
            continue  # no such offer (rental_checks says so), or one site: the row's own check is the offer's
        key = (system_of(str(r["hardware"])), offer.name)
        total[key] = total.get(key, 0.0) + float(r["chips"])
        limit[key] = math.inf if offer.max_chips is None else float(offer.max_chips)
    return [result(f"rental {system}/{name} over the sites", chips <= limit[(system, name)] * (1 + 1e-9) + 1e-9,
                   f"{chips:.6g} chips rented over the sites, at most {limit[(system, name)]:g}")
            for (system, name), chips in total.items()]


def demand_checks(rows: list[dict], capacity: dict, shares: dict, inputs: Inputs) -> list[dict]:
    """Each workload's decode and prefill demand covered by re-scored capacity, at the served share (1 unless the
    objective sells shares of demand)."""
    out = []
    for d in inputs.demands:
        share = shares.get(d.name)
        whole = not inputs.objective.sells_shares
        ok_share = share is not None and 0.0 <= share <= 1.0 + 1e-12 and (not whole or share >= 1.0 - 1e-12)
        out.append(result(f"demand {d.name} share", ok_share,
                          f"served share {share!r}" + (" (the objective serves every workload whole)" if whole else "")))
        share = float(share) if share is not None and ok_share else 1.0
        mine = [i for i, r in enumerate(rows) if r.get("workload") == d.name]
        served = sum(capacity[i][0] for i in mine if rows[i].get("role") in DECODE_ROLES)
        # a colocated row prefills only the streams routed to it, its rho*(c) of its capacity (OPTIMIZER.md 18)
        prefilled = sum(capacity[i][1] * (routing_share(d, rows[i]) if rows[i].get("role") == "colocated" else 1.0)
                        for i in mine if rows[i].get("role") in PREFILL_ROLES)
        out.append(result(f"demand {d.name} decode", served >= share * d.sized_output_tokens_per_s * (1 - REL),
                          f"served {served:.6g} of {share:.4g} x {d.sized_output_tokens_per_s:.6g} output tokens/s"
                          + (f" (the peak + {100 * d.headroom:.3g}% headroom)" if d.headroom else "")))
        out.append(result(f"demand {d.name} prefill", prefilled >= share * d.sized_prefill_tokens_per_s * (1 - REL),
                          f"prefilled {prefilled:.6g} of {share:.4g} x {d.sized_prefill_tokens_per_s:.6g} prompt "
                          f"tokens/s"))
        out.extend(decode_queue_checks(d, share, [rows[i] for i in mine], [capacity[i][0] for i in mine]))
    return out


def decode_queue_checks(d, share: float, rows: list[dict], decode_capacity: list[float]) -> list[dict]:
    """OPTIMIZER.md 18: the workload's peak within its usable decode capacity, each queued row's re-scored capacity
    times its rho*(c) (its batch slots' queue at the workload's percentile), a hosted API's whole."""
    if not queued_rows(rows, d.name) or d.output_tokens_per_s * share <= 0:
        return []
    held, usable = effective_capacity(d, rows, decode_capacity)
    peak = share * d.output_tokens_per_s
    return [result(f"decode queue {d.name}", peak <= usable * (1 + 1e-6),
                   f"its peak of {peak:.6g} output tokens/s against the {usable:.6g} its decode pools' queues leave "
                   f"usable of {held:.6g} held ({100 * peak / held if held else 0.0:.4g}% busy; each queued row's "
                   f"slots hold the p{100 * d.ttft_quantile:g} stream within the {d.min_tps_per_user:g} tok/s tier "
                   f"up to its rho*)")]


def fleet_checks(d: dict, alloc, racks: dict, inputs: Inputs) -> list[dict]:
    """Racks, chips, limits, cost and every figure of the fleet, workload and totals tables, recomputed with the
    builders ``solve`` used."""
    import polars as pl

    out = []
    unknown = [h for h in racks if h not in inputs.hardware]
    if unknown:
        return [result("fleet hardware", False, f"{', '.join(unknown)} not among the plan's hardware")]
    new = {h: max(n - inputs.installed.get(h, {}).get("racks", 0), 0) for h, n in racks.items()}
    bought_of: dict[str, float] = {}  # OPTIMIZER.md 21: a system's supply cap spans its sites
    for h, n in new.items():
        bought_of[system_of(h)] = bought_of.get(system_of(h), 0) + n
    for hw_id, n in racks.items():
        hw = inputs.hardware[hw_id]
        out.append(result(f"racks {hw_id}", float(n).is_integer() and n >= 0, f"{n} racks"))
        cap = inputs.max_racks.get(system_of(hw_id))
        if cap is not None:
            of_system = bought_of[system_of(hw_id)]
            out.append(result(f"supply cap {hw_id}", of_system <= cap, f"{of_system} racks bought"
                              + (f" of {system_of(hw_id)} over the sites" if inputs.sites else "") + f", cap {cap}"))
        out.append(result(f"available {hw_id}", hw.rack.available.value <= inputs.start_date,
                          f"available {hw.rack.available.value}, plan starts {inputs.start_date}"))
        parts = annual_rack_cost_parts(hw.rack.capex_usd.value, billed_power_w(hw, inputs.finance_of(hw_id)),
                                       **inputs.finance_args_of(hw_id))
        for part, value in parts.items():
            out.append(same(f"rack cost {hw_id} {part}", inputs.rack_costs.get(hw_id, {}).get(part), float(value)))
        if hw_id in inputs.installed:
            entry = inputs.installed[hw_id]
            kept = kept_rack_cost_parts(entry["capex_usd"], billed_power_w(hw, inputs.finance_of(hw_id)),
                                        **inputs.finance_args_of(hw_id))
            for part, value in kept.items():
                out.append(same(f"installed rack cost {hw_id} {part}", entry["kept_costs"].get(part), float(value)))
    if inputs.max_new_racks is not None:
        out.append(result("new racks", sum(new.values()) <= inputs.max_new_racks,
                          f"{sum(new.values())} racks bought, at most {inputs.max_new_racks}"))
    alloc = alloc if alloc is not None else allocation_table([])
    order = {h: racks.get(h, 0) for h in inputs.hardware}  # the plan's hardware order
    costs = {h: inputs.annual_cost_per_rack(h) for h in inputs.hardware}
    rentals = d.get("rentals") or []
    out.extend(rental_checks(rentals, inputs))
    if inputs.sites is None:
        fleet = fleet_table(order, inputs.hardware, costs, alloc, inputs.pue, inputs.installed, rentals,
                            inputs.scenario_finance, inputs.rack_carbon(), inputs.grid_kg_per_mwh)
    else:
        fleet = sites_fleet_table(order, inputs.hardware, costs, alloc, inputs.installed, inputs.site_rows(), rentals)
    for f in fleet.iter_rows(named=True):
        held = f["chips"] + f.get("chips_rented", 0.0)
        rented = (f" and {f['chips_rented']:.6g} rented" if f.get("chips_rented") else "")
        out.append(result(f"chips {f['hardware']}", f["chips_used"] <= held * (1 + 1e-6) + 1e-9,
                          f"{f['chips_used']:.9g} used of {f['chips']} in {f['racks']} racks" + rented))
        # OPTIMIZER.md 17: a stage lives in one scale-up domain, so racks hold floor(D / s) stages a domain
        hw = inputs.hardware[f["hardware"]]
        out.append(result(f"rack packing {f['hardware']}",
                          f["racks_for_domains"] <= racks_offered(hw.chip.scale_up.domain_chips.value,
                                                                  hw.chips_per_rack, f["racks"],
                                                                  f.get("chips_rented", 0.0)) + 1e-9,
                          f"its replicas' pipeline stages packed whole into {hw.chip.scale_up.domain_chips.value:g}-"
                          f"chip scale-up domains take {f['racks_for_domains']:.6g} racks' worth; the plan holds "
                          f"{f['racks']} racks" + rented))
    if len(alloc):
        owned = {h: racks.get(h, 0) * inputs.hardware[h].chips_per_rack for h in inputs.hardware}
        marks = mark_rented([dict(r) for r in d["allocation"]], owned)
        wrong = [i for i, (a, b) in enumerate(zip(marks, d["allocation"])) if a.get("acquisition") != b.get("acquisition")]
        out.append(result("allocation acquisition", not wrong, "each row's owned, rented or api as its system's owned "
                          "chips fill in row order" + (f"; rows {wrong} differ" if wrong else "")))
    out.extend(table_checks("fleet", d["fleet"], fleet.to_dicts(), "hardware"))
    on_racks = alloc.filter(pl.col("role") != API_KIND) if len(alloc) else alloc
    for hw_id in sorted(set(on_racks["hardware"].to_list()) - set(racks)) if len(on_racks) else []:
        out.append(result(f"chips {hw_id}", False, "allocated on a system the fleet does not buy"))
    shares = np.array([next((w.get("served_share") for w in d["workloads"] if w.get("workload") == x.name), 0.0)
                       or 0.0 for x in inputs.demands], dtype=float)
    workloads = workload_table(inputs.demands, alloc, fleet, shares)
    out.extend(table_checks("workloads", d["workloads"], workloads.to_dicts(), "workload"))
    totals = totals_of(fleet, workloads, inputs.pue, inputs.power_budget_w, inputs.site_limits())
    for key, value in totals.items():
        if key == "sites":
            out.extend(table_checks("totals sites", d["totals"].get("sites") or [], value, "name"))
        else:
            out.append(same(f"totals {key}", d["totals"].get(key), value))
    order = inputs.scenario["site"].get("curtailment_order", DEFAULT_CURTAILMENT_ORDER)
    if inputs.sites is not None:
        out.extend(site_checks(totals["sites"]))
        shed = sites_curtailment_table(fleet, alloc, workloads, inputs.demands, inputs.hardware,
                                       [(name, e["finance"], finance_value(e["finance"], "pue"))
                                        for name, e in inputs.sites.items()], order)
        out.extend(table_checks("curtailment", site_steps(d.get("curtailment") or []), site_steps(shed.to_dicts()),
                                "at"))
    elif "curtailment" in d:  # (13), absent in plans written before it
        shed = curtailment_table(fleet, alloc, workloads, inputs.demands, inputs.hardware, inputs.scenario_finance,
                                 inputs.pue, order)
        out.extend(table_checks("curtailment", d["curtailment"], shed.to_dicts(), "step"))
    if math.isfinite(inputs.power_budget_w) and inputs.sites is None:
        out.append(result("power budget", totals["facility_power_mw"] <= inputs.power_budget_w / 1e6 * (1 + 1e-9),
                          f"{totals['facility_power_mw']:.6g} MW facility of {inputs.power_budget_w / 1e6:g} MW"))
    if inputs.max_total_racks and inputs.sites is None:
        out.append(result("site racks", totals["racks"] <= inputs.max_total_racks,
                          f"{totals['racks']} of {inputs.max_total_racks}"))
    bought: dict[str, float] = {}  # by system: one system at several sites is one platform (OPTIMIZER.md 21)
    for h, n in racks.items():
        if n > 0:
            bought[system_of(h)] = bought.get(system_of(h), 0) + n
    if inputs.max_platforms:
        out.append(result("platforms", len(bought) <= inputs.max_platforms,
                          f"{len(bought)} types bought, at most {inputs.max_platforms}"))
    for hw_id, least in sorted(inputs.min_racks.items()):
        if hw_id in bought:
            out.append(result(f"minimum purchase {hw_id}", bought[hw_id] >= least,
                              f"{bought[hw_id]} racks, at least {least} if any"))
    out.extend(objective_checks(d, totals, inputs))
    return out


def site_checks(sites: list[dict]) -> list[dict]:
    """Each site of a plan over several sites within its own power budget and floor space (OPTIMIZER.md 21)."""
    out = []
    for e in sites:
        if e["power_budget_mw"] is not None:
            out.append(result(f"power budget {e['name']}", e["facility_power_mw"] <= e["power_budget_mw"] * (1 + 1e-9),
                              f"{e['facility_power_mw']:.6g} MW facility of {e['power_budget_mw']:g} MW"))
        if e["max_racks"]:
            out.append(result(f"site racks {e['name']}", e["racks"] <= e["max_racks"],
                              f"{e['racks']} of {e['max_racks']}"))
    return out


def site_steps(rows: list[dict]) -> list[dict]:
    """Curtailment rows of a plan over several sites keyed ``at`` by their site and step (steps restart per site)."""
    return [{**r, "at": f"{r.get('site')} step {r.get('step')}"} for r in rows]


def table_checks(table: str, reported: list[dict], recomputed: list[dict], key: str) -> list[dict]:
    """Every numeric or text field of a reported table against the recomputed one, row by row (by ``key``)."""
    out = []
    mine = {r[key]: r for r in recomputed}
    theirs = {r.get(key): r for r in reported}
    if set(mine) != set(theirs):
        out.append(result(f"{table} rows", False, f"reported {sorted(map(str, theirs))}, recomputed "
                                                  f"{sorted(map(str, mine))}"))
    for k in sorted(set(mine) & set(theirs), key=str):
        for field, value in mine[k].items():
            out.append(same(f"{table} {k} {field}", theirs[k].get(field), value))
    return out


def objective_checks(d: dict, totals: dict, inputs: Inputs) -> list[dict]:
    """The reported objective and the solver's bound against the objective recomputed from the plan."""
    out = [same("objective_usd_per_year", d.get("objective_usd_per_year"), totals["annual_cost_usd"]),
           result("objective name", d.get("objective") == inputs.objective.name,
                  f"plan says {d.get('objective')!r}, its inputs {inputs.objective.name!r}")]
    value = objective_value(inputs.objective.name, totals)
    solver = d.get("solver") or {}
    bound = solver.get("best_bound")
    if bound is not None:
        out.append(result("objective bound", bound <= value + abs(value) * 1e-6 + 1e-6,
                          f"the solver's bound {bound:.6g} against the plan's {inputs.objective.name} {value:.6g}"))
        if d["status"] == "optimal":
            gap = (value - bound) / max(abs(value), 1.0)
            # the solver's own optimality tolerance (about 1e-6 relative) is what an "optimal" at gap 0 means
            out.append(result("status optimal", gap <= inputs.relative_gap * (1 + 1e-6) + 1e-6,
                              f"gap {gap:.3g} against the requested {inputs.relative_gap:g}"))
    return out
