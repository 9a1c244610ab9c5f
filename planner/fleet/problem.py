"""Problem assembly: a scenario's demands and the engine's options become a ``solvers.milp.FleetProblem`` of
arrays (two demand rows per workload: decode output tokens/s and prefill prompt tokens/s; one column per option),
with everything needed to read the answer back and to check it later without the scenario (``Built.inputs``)."""

from __future__ import annotations

import functools
import math
import time
from dataclasses import dataclass, field

import numpy as np

from planner import catalog
from planner.errors import InputError
from planner.fleet.demand import Demand, demand_of
from planner.fleet.finance import (annual_costs, annual_revenue, idle_power_w, installed_rack_cost_parts,
                                   rack_carbon_kg, rack_cost_parts, replica_carbon_kg, replica_energy_usd,
                                   rental_cost, uses_power_curves)
from planner.fleet.options import DECODE_KINDS, NOT_SPLIT, PREFILL_KINDS, options_for, systems_of
from planner.fleet.packing import chip_rows, held_chips
from planner.fleet.queues import assumed_slots, column_bounds
from planner.fleet.spares import spare_count, spare_share
from planner.scenario import Scenario
from planner.vocabulary import API_KIND, API_PREFIX, SITE_SEP
from solvers.components import (COLUMNS, COVERS, GROUPS, RACKS, RENTALS, ROWS, SITES, USES, Components, compiled,
                                concatenated, long_table, table)
from solvers.milp import FleetProblem
from solvers.objectives import Prices
from solvers.objectives import objective as objective_named

# A replica of at least this share of a rack is an integer in the MILP, so that packing is real; smaller ones are
# continuous (fast), and rounded up after the solve where the racks bought have room (``plan.round_up_small``).
INTEGER_REPLICA_RACK_SHARE = 1.0 / 8.0


@dataclass
class Built:
    """What ``build_problem`` returns: the MILP's arrays and the tables needed to read its answer."""

    scenario: Scenario
    problem: FleetProblem
    demands: list  # [W] Demand
    hardware: list  # [H] catalog.Hardware
    options: dict  # column tables (options.COLUMNS), one entry per MILP column
    candidates_scored: int
    engine_seconds: float
    unserved: dict = field(default_factory=dict)  # workload -> why no option exists
    # several sites (OPTIMIZER.md 21): each hardware type's name, system@site (None: each system's id), and each
    # site's one-site scenario by name (None: one site, the scenario itself)
    rack_ids: list | None = None  # [H]
    site_views: dict | None = None

    @functools.cached_property
    def type_ids(self) -> list[str]:
        """[H] the name of each hardware type: the system's id, or system@site in a plan over several sites."""
        return self.rack_ids if self.rack_ids is not None else [h.id for h in self.hardware]

    @functools.cached_property
    def hardware_by_id(self) -> dict:
        """Each hardware type's catalog entry by its name (``type_ids``; the entry keeps its system's id)."""
        return dict(zip(self.type_ids, self.hardware))

    @functools.cached_property
    def models(self) -> dict:
        """The scenario's models by id (overrides applied)."""
        return self.scenario.resolved_models()

    @functools.cached_property
    def demand_by_name(self) -> dict:
        return {d.name: d for d in self.demands}

    @functools.cached_property
    def inputs(self) -> dict:
        """Everything ``check`` needs to re-check a plan without the scenario file or the solver (plan.json's
        ``inputs``): the scenario's limits and finance, the demands, the catalog and model figures used (overrides
        applied), the efficiencies and each system's annual cost parts."""
        sc = self.scenario
        models = sc.resolved_models()
        caps = sc.new_rack_caps() if self.site_views is None else system_caps(self.site_views.values())
        used_models = sorted({d.model for d in self.demands} | {d.draft_model for d in self.demands if d.draft_model})
        out = {
            "scenario": {
                "name": sc.name, "start_date": sc.start_date.isoformat(), "horizon_years": sc.horizon_years,
                "objective": sc.objective, "finance": sc.finance.model_dump(mode="json"),
                "site": sc.site.model_dump(mode="json"),
                "max_racks": {h: int(caps[h]) for h in sorted({h.id for h in self.hardware})
                              if math.isfinite(caps.get(h, math.inf))},
                "max_new_racks": sc.hardware.max_new_racks, "installed_past_life": self.installed_past_life,
                "prices_usd_per_mtok": dict(sc.prices_usd_per_mtok),
                "solver": sc.solver.model_dump(mode="json"),
                "acquisition": list(sc.hardware.acquisition) if sc.hardware.allow is None else None,
                "max_platforms": sc.hardware.max_platforms, "min_racks": dict(sc.hardware.min_racks),
                "excluded_hardware": sc.excluded_hardware(), "serving_stack": sc.serving_stack,
                "layouts": sc.layouts,
            },
            "demands": [d.to_dict() for d in self.demands],
            "hardware": {k: h.model_dump(mode="json") for k, h in self.hardware_by_id.items()},
            "models": {m: models[m].model_dump(mode="json") for m in used_models},
            "efficiency": sc.efficiencies({h.id: h for h in self.hardware}),
            "rack_costs": {k: rack_cost_parts(self.view_of(k), h) for k, h in self.hardware_by_id.items()},
            "installed": self.installed,
            "measurements": [m.to_row() for m in sc.measurements if m.model in used_models],
            "measurement_headroom": sc.measurement_headroom,
            "catalog_version": catalog.CATALOG_VERSION,
        }
        if self.site_views is not None:  # OPTIMIZER.md 21: what check needs of each site
            out["sites"] = [site_inputs(name, view) for name, view in self.site_views.items()]
        return out

    @functools.cached_property
    def installed(self) -> dict:
        """``installed_inputs`` of every site, by hardware type name."""
        if self.site_views is None:
            return installed_inputs(self.scenario, self.hardware_by_id)
        return {rack_id(h, name): d for name, view in self.site_views.items()
                for h, d in installed_inputs(view, {h.id: h for h in self.hardware}).items()}

    @functools.cached_property
    def installed_past_life(self) -> dict:
        """Installed racks already past their service life at the start, by system (several sites: system@site)."""
        if self.site_views is None:
            return self.scenario.installed_past_life()
        return {rack_id(h, name): n for name, view in self.site_views.items()
                for h, n in view.installed_past_life().items()}

    def view_of(self, type_id: str):
        """The one-site scenario a hardware type stands in (the scenario itself with one site)."""
        if self.site_views is None:
            return self.scenario
        return self.site_views[site_of(type_id)]


def rack_id(system: str, site: str) -> str:
    """A hardware type's name in a plan over several sites: system@site."""
    return f"{system}{SITE_SEP}{site}"


def site_of(type_id: str) -> str | None:
    """The site a hardware type's name carries (system@site), None for a system's id."""
    return type_id.rsplit(SITE_SEP, 1)[1] if SITE_SEP in type_id else None


def system_of(type_id: str) -> str:
    """The system a hardware type's name names (system@site, or the id itself)."""
    return type_id.rsplit(SITE_SEP, 1)[0]


def site_inputs(name: str, view) -> dict:
    """One site's entry of a plan's inputs (OPTIMIZER.md 21): its finance, limits and grid, as check reads them."""
    return {"name": name, "finance": view.finance.model_dump(mode="json"), "site": view.site.model_dump(mode="json")}


def system_caps(views) -> dict:
    """System id -> most racks that may be bought over every site: its supply cap, where any site may buy it."""
    out: dict = {}
    for view in views:
        for h, cap in view.new_rack_caps().items():
            out[h] = max(out.get(h, 0.0), cap)
    return out


def installed_inputs(scenario, hardware: dict) -> dict:
    """hardware id -> the installed racks in service at the start (racks, capex_usd per rack, retire_by, and the
    yearly cost parts of keeping one: maintenance and energy, its capex sunk), for the MILP's (9) and for check."""
    out = {}
    for hw_id, d in scenario.installed_in_service().items():
        out[hw_id] = {"racks": int(d["racks"]), "capex_usd": float(d["capex_usd"]),
                      "retire_by": d["retire_by"].isoformat(),
                      "kept_costs": installed_rack_cost_parts(scenario, hardware[hw_id], d["capex_usd"])}
    return out


def kept_annual_costs(installed: dict, ids: list, annual: np.ndarray) -> np.ndarray:
    """[H] c'_h of (9): USD/year of keeping an installed rack (a new rack's where none is installed), at most a new
    rack's (an installed rack dearer to run than a new one bought is priced as the new one: no plan keeps it)."""
    kept = np.array([sum(installed[k]["kept_costs"].values()) if k in installed else annual[i]
                     for i, k in enumerate(ids)])
    return np.minimum(kept, annual)


def demands_of(scenario) -> list[Demand]:
    """Each workload at its peak (a build-out: in its first period)."""
    if scenario.periods:
        scenario = scenario.at_period(0)
    return [demand_of(w, scenario.model_for(w), scenario.price_of(w), headroom_of(scenario, w),
                      redundancy_of(scenario, w)) for w in scenario.workloads]


def redundancy_of(scenario, workload) -> str:
    """The spare replicas a workload's pools hold (``planner.fleet.spares``): its own spare_replicas as n+K (0:
    none), else the site's redundancy."""
    own = workload.spare_replicas
    if own is None:
        return scenario.site.redundancy
    return f"n+{int(own)}" if own > 0 else "none"


def refuse_spares(scenario, what: str) -> None:
    """InputError naming the field where a scenario asks for spares (OPTIMIZER.md 19) in a solve that cannot hold
    them yet (``what``: a build-out, a robust fleet)."""
    for w in scenario.workloads:
        if redundancy_of(scenario, w) != "none":
            field = ("site.redundancy" if w.spare_replicas is None else f"workloads.{w.name}.spare_replicas")
            raise InputError(f"spare replicas are not supported for {what} yet: set {field} to "
                             + ("none" if field == "site.redundancy" else "0"), field=field)


def headroom_of(scenario, workload) -> float:
    """The capacity headroom a workload's pools are sized with: its own, else the site's."""
    own = workload.capacity_headroom
    return float(own if own is not None else scenario.site.capacity_headroom)


def demand_rows(demands: list[Demand]) -> np.ndarray:
    """[2W] the MILP's demand rows: per workload its decode output tokens/s, then its prefill prompt tokens/s."""
    return np.array([x for d in demands for x in (d.sized_output_tokens_per_s, d.sized_prefill_tokens_per_s)])


def scenario_options(scenario, demands: list[Demand], hardware: dict, progress=None, deadline: float = math.inf):
    """``options_for`` with what the scenario says of performance: its measurements, their headroom and its own
    efficiencies (the one call the plan and its diagnosis share)."""
    efficiency = scenario.efficiencies(hardware)
    return options_for(demands, scenario.resolved_models(), hardware, progress, deadline, scenario.measurements,
                       scenario.measurement_headroom, efficiency, scenario.layout_rule())


def build_problem(scenario, progress=None, deadline: float = math.inf, options_from: Built | None = None) -> Built:
    """Score every candidate deployment and assemble the MILP (rows: 2 per workload; columns: options). Past
    ``deadline`` (``time.monotonic()``) the engine stops with PlannerError. ``options_from``: a Built of a
    scenario that differs from this one only where options do not change (prices, budgets, caps, rates:
    ``planner.sweep.reuses_options``), whose scored options are reused instead of scoring again. A scenario of
    several sites (OPTIMIZER.md 21) is scored once and assembled site by site (``sites_problem``)."""
    if scenario.sites:
        return sites_problem(scenario, progress, deadline, options_from)
    hardware = dict(sorted(scenario.resolved_hardware().items()))
    demands = demands_of(scenario)
    t0 = time.perf_counter()
    if (options_from is not None and options_from.rack_ids is None
            and [h.id for h in options_from.hardware] == list(hardware)):
        cols, candidates = without_api(options_from.options), 0
    else:
        opts = scenario_options(scenario, demands, hardware, progress, deadline)
        cols, candidates = opts.arrays(), opts.candidates_scored
    engine_s = time.perf_counter() - t0
    tables, cols = assemble(scenario, demands, hardware, with_api(cols, demands))
    problem = compiled(tables)
    check_resolvable(problem, demands)
    return Built(scenario, problem, demands, list(hardware.values()), cols, candidates, engine_s,
                 unserved_workloads(demands, cols))


def sites_problem(scenario, progress=None, deadline: float = math.inf, options_from: Built | None = None) -> Built:
    """OPTIMIZER.md 21: every system any site may hold scored once for every workload; each site's problem
    assembled on its own scenario (``Scenario.at_site``: its energy, limits and installed racks) from the options
    of the systems it holds and the workloads it may serve, its types named system@site; the sites' tables
    concatenated into one problem (``solvers.components.concatenated``), hosted API columns once."""
    views = {name: scenario.at_site(name) for name in scenario.site_names()}
    hardware, by_site = site_types(views)
    # (12, 16): an offer is numbered once over the sites, so that its chips rented at each share its limit
    offer_ids = {(h, o.name): i for i, (h, o) in enumerate((h, o) for h, hw in hardware.items() for o in hw.rental)}
    demands = demands_of(scenario)
    t0 = time.perf_counter()
    reuse = (options_from is not None and options_from.site_views is not None
             and list(options_from.site_views) == list(views))
    if reuse:  # its columns, named system@site already (hosted ones among the first site's), assembled again
        assert options_from is not None
        cols, candidates = options_from.options, 0
    else:
        opts = scenario_options(scenario, demands, hardware, progress, deadline)
        cols, candidates = opts.arrays(), opts.candidates_scored
    engine_s = time.perf_counter() - t0
    parts, ids, hw_list = [], [], []
    for i, (name, view) in enumerate(views.items()):
        types = by_site[name]
        serves = {w.name for w in scenario.workloads if scenario.serves_at(w, name)}
        # scored options named for this site first; a reused Built's are named already, its hosted ones at site 0
        site_cols = of_site(cols if reuse else named_at(cols, name), set(types), serves, hosted=i == 0)
        if not reuse and i == 0:
            site_cols = with_api(site_cols, demands)
        tables, site_cols = assemble(view, demands, types, site_cols, list(hardware), offer_ids)
        parts.append((tables, site_cols))
        ids += list(types)
        hw_list += list(types.values())
    problem = compiled(concatenated([t for t, _ in parts]))  # each site's tables after the last's (OPTIMIZER.md 23)
    cols = {c: np.concatenate([part[c] for _, part in parts]) for c in parts[0][1]}
    check_resolvable(problem, demands)
    return Built(scenario, problem, demands, hw_list, cols, candidates, engine_s, unserved_workloads(demands, cols),
                 rack_ids=ids, site_views=views)


def site_types(views: dict) -> tuple[dict, dict]:
    """(every system any site may hold, id -> catalog entry, sorted; per site, its hardware types, system@site ->
    entry, in that order): the types of a problem over several sites, site after site (``sites_problem``)."""
    hardware: dict = {}
    for view in views.values():
        hardware.update(view.resolved_hardware())
    hardware = dict(sorted(hardware.items()))
    by_site = {}
    for name, view in views.items():
        mine = view.resolved_hardware()
        by_site[name] = {rack_id(h, name): hw for h, hw in hardware.items() if h in mine}
    return hardware, by_site


def type_ids_of(scenario) -> list[str]:
    """The names of a scenario's hardware types in its problem's order (``Built.type_ids``): its systems sorted, or
    over several sites each site's (``site_types``)."""
    if not scenario.sites:
        return sorted(scenario.resolved_hardware())
    _, by_site = site_types({name: scenario.at_site(name) for name in scenario.site_names()})
    return [t for types in by_site.values() for t in types]


def named_at(cols: dict, site: str) -> dict:
    """Scored options with their systems named system@``site``."""
    return {**cols, **{c: np.array([rack_id(str(h), site) if h else "" for h in cols[c]], dtype=object).astype(str)
                       for c in ("hardware", "ffn_hardware")}}


def of_site(cols: dict, types: set, workloads: set, hosted: bool) -> dict:
    """The columns (named system@site) on a site's ``types`` of workloads it may serve, and the hosted ones where
    ``hosted``."""
    n = len(cols["workload"])
    keep = np.array([str(cols["workload"][j]) in workloads and (
        all(hw in types for hw, *_ in systems_of(cols, j)) if cols["kind"][j] != API_KIND else hosted)
        for j in range(n)], dtype=bool)
    return {c: v[keep] for c, v in cols.items()}


def assemble(scenario, demands: list[Demand], hardware: dict, cols: dict,
             systems: list | None = None, offer_ids: dict | None = None) -> tuple[Components, dict]:
    """The component tables (``solvers.components``) of ``cols`` (scored options, hosted ones included) on
    ``hardware`` (type name -> its catalog entry: the system's id, or system@site in one site of several) under
    ``scenario``'s limits, finance and installed racks; and the columns with what the MILP derived of them (decode
    slots, spare pools and shares). ``systems``: every system's id, to number each type's system by (default: each
    type its own). One site's tables, its indices from 0 (``solvers.components.concatenated`` moves them past the
    sites before it). ``offer_ids``: (system id, offer name) -> the offer's number over every site (default: each
    rental its own)."""
    by_name = {d.name: d for d in demands}
    if "decode_slots" not in cols:  # a queued option's pool before a plan says (OPTIMIZER.md 18)
        cols = {**cols, "decode_slots": assumed_slots(cols, by_name)}
    usable = column_bounds(cols, by_name, cols["decode_slots"])
    if "spare_pool" not in cols:  # a column's pool before a plan says, for its spares (OPTIMIZER.md 19)
        cols = {**cols, "spare_pool": assumed_pool(cols, by_name, usable)}
    cols = {**cols, "spare_share": spare_share(spare_counts(cols, by_name, hardware), cols["spare_pool"])}
    ids, hw_list = list(hardware), list(hardware.values())
    hw_index = {k: i for i, k in enumerate(ids)}
    wl_index = {d.name: i for i, d in enumerate(demands)}
    n = len(cols["workload"])
    coverage = np.zeros((n, 2 * len(demands)))
    chips = np.zeros((n, len(hw_list)))
    rows2, core, held = (np.zeros((n, len(hw_list))) for _ in range(3))  # (2), (2c), whole-domain shares (17)
    for j in range(n):
        w = wl_index[cols["workload"][j]]
        coverage[j, 2 * w] = cols["output_tokens_per_s"][j] * usable[j]  # its batch slots' queue's share (18)
        coverage[j, 2 * w + 1] = cols["prefill_tokens_per_s"][j] * usable[j]  # colocated: its own streams' prompts
        for hw_id, _, n_chips, role in systems_of(cols, j):  # none for a hosted API: capacity without racks
            k, h = hw_index[hw_id], hw_list[hw_index[hw_id]]
            chips[j, k] = n_chips
            shape = (n_chips, replica_stages(cols, j, role), h.chip.scale_up.domain_chips.value, h.chips_per_rack)
            rows2[j, k], core[j, k] = (x * (1.0 + cols["spare_share"][j]) for x in chip_rows(*shape))  # spares (19)
            held[j, k] = held_chips(*shape)
    revenue = np.array([annual_revenue(d.output_tokens_per_s, d.peak_to_mean, d.price_usd_per_mtok)
                        for d in demands])
    caps = scenario.new_rack_caps()
    installed = {k: v for h, v in installed_inputs(scenario, {h.id: h for h in hw_list}).items()
                 for k in ids if hardware[k].id == h}
    new_cap, integer = scenario.hardware.max_new_racks, integer_replicas(held, hw_list)
    number = {h: k for k, h in enumerate(systems)} if systems is not None else None
    pool = replica_pools(cols, demands, integer)
    offers = rental_offers(hw_list)
    return Components(
        racks=table(RACKS, chips_per_rack=np.array([h.chips_per_rack for h in hw_list], dtype=float),
                    rack_power_w=np.array([h.rack_power_w for h in hw_list], dtype=float),
                    max_racks=np.array([caps.get(h.id, math.inf) for h in hw_list], dtype=float),
                    min_racks=np.array([scenario.hardware.min_racks.get(h.id, 0) for h in hw_list], dtype=float),
                    racks_at_least=np.zeros(len(hw_list)),
                    installed_racks=np.array([installed.get(k, {}).get("racks", 0) for k in ids], dtype=float),
                    site=np.zeros(len(hw_list), dtype=np.int64),
                    system=(np.arange(len(hw_list)) if number is None
                            else np.array([number[h.id] for h in hw_list], dtype=np.int64))),
        columns=table(COLUMNS, workload=coverage.argmax(axis=1) if n else np.zeros(0, dtype=int),
                      capacity=coverage.max(axis=1) if n else np.zeros(0), integer_replicas=integer,
                      pool=pool if pool is not None else np.full(n, -1)),
        uses=long_table(rows2, USES[:3], {"core_chips": core}),
        covers=long_table(coverage, COVERS),
        rentals=table(RENTALS, rack=np.array([k for k, _ in offers], dtype=np.int64),
                      max_chips=np.array([math.inf if o.max_chips is None else float(o.max_chips) for _, o in offers]),
                      offer=np.array([k if offer_ids is None else offer_ids[(hw_list[h].id, o.name)]
                                      for k, (h, o) in enumerate(offers)], dtype=np.int64)),
        sites=table(SITES, pue=[scenario.finance.pue],
                    power_budget_w=[(scenario.site.power_budget_mw or math.inf) * 1e6],
                    max_racks=[scenario.site.max_racks or math.inf]),
        rows=table(ROWS, demand=demand_rows(demands), group=np.repeat(np.arange(len(demands)), 2)),
        groups=table(GROUPS, value=group_values(scenario.objective, demands, revenue)),
        limits={"max_platforms": scenario.hardware.max_platforms or math.inf,
                "max_new_racks": math.inf if new_cap is None else float(new_cap)},
        prices=price_tables(scenario, cols, chips, hw_list, demands, installed, ids),
        objective=scenario.objective), cols


def price_tables(scenario, cols: dict, chips: np.ndarray, hw_list: list, demands: list[Demand], installed: dict,
                 ids: list) -> dict:
    """The price table of each measure (``solvers.objectives.PRICE_TABLES``) the scenario gives: the annual cost
    (a rack bought, an installed one kept, a hosted offer's own cost and a replica's energy, a rented chip), the
    IT power (each rack's floor and a replica's draw above it under the power curves; the design power without
    them) and, where the site gives its grid's emissions, the carbon."""
    annual = annual_costs(scenario, hw_list)
    power = power_arrays(scenario, cols, chips, hw_list, demands)
    cost_parts = {"own": api_column_costs(cols, demands)} if np.any(cols["kind"] == API_KIND) else {}
    if power:
        cost_parts["energy"] = power["column_energy_usd"]
    out = {"annual_cost_usd": Prices(annual, kept_annual_costs(installed, ids, annual) if installed else None,
                                     cost_parts, np.array([rental_cost(1.0, o.usd_per_chip_hour)
                                                           for _, o in rental_offers(hw_list)])),
           "rack_power_w": (Prices(power["rack_idle_power_w"], column={"draw": power["column_power_w"]}) if power
                            else Prices(None))}
    carbon = carbon_arrays(scenario, cols, chips, hw_list, demands, installed, ids)
    if carbon:
        out["carbon_kg_per_year"] = Prices(carbon["carbon_kg_per_rack"], carbon["installed_carbon_kg_per_rack"],
                                           {"energy": carbon["column_carbon_kg"]}, carbon["rent_carbon_kg_per_chip"])
    return out


# The smallest share of a demand row one replica may serve: below it the scaled row's coefficients fall under the
# solvers' feasibility tolerances (~1e-9) and a coverable demand looks infeasible.
MIN_ROW_COEFFICIENT = 1e-7


def column_mean_load(cols: dict, demands: list[Demand]) -> np.ndarray:
    """[J] the share of the year each column's replicas work (OPTIMIZER.md 12): its workload's mean over the
    capacity the fleet holds for it, 1 / (peak_to_mean x (1 + headroom)); the rest of the time they rest."""
    by_name = {d.name: d for d in demands}
    return np.array([by_name[str(w)].working_share for w in cols["workload"]], dtype=float)


def power_arrays(scenario, cols: dict, chips: np.ndarray, hw_list: list, demands: list[Demand]) -> dict:
    """(13)'s arrays under the power curves: each rack's idle floor, each replica's peak draw beyond its chips'
    share of it (the engine's ``power_w``) and that draw's energy a year at the mean load; none (design power) where
    the scenario bills a flat ``average_load_share``."""
    if not uses_power_curves(scenario.finance):
        return {}
    idle = np.array([idle_power_w(h) for h in hw_list])
    above, load = draw_above_floor(cols, chips, hw_list, demands)
    energy = np.array([replica_energy_usd(a, m, scenario.finance) for a, m in zip(above, load)])
    return {"rack_idle_power_w": idle, "column_power_w": above, "column_energy_usd": energy}


def draw_above_floor(cols: dict, chips: np.ndarray, hw_list: list, demands: list[Demand]) -> tuple:
    """([J] each replica's peak draw beyond its chips' share of the racks' idle floor (the engine's ``power_w``),
    [J] the share of the year it works): what (13)'s energy and (14)'s emissions of a replica are priced on."""
    if not len(chips):
        return np.zeros(0), np.zeros(0)
    per_chip = np.array([idle_power_w(h) / h.chips_per_rack for h in hw_list], dtype=float)
    return (np.maximum(np.asarray(cols["power_w"], dtype=float) - chips @ per_chip, 0.0),
            column_mean_load(cols, demands))


def carbon_arrays(scenario, cols: dict, chips: np.ndarray, hw_list: list, demands: list[Demand],
                  installed: dict, ids: list) -> dict:
    """(14)'s arrays, kg CO2e a year, where the site gives its grid's emissions (OPTIMIZER.md 15): a rack bought
    (its making over the horizon and its floor's energy), an installed rack kept (its floor's energy: its making
    is sunk), each replica's energy beyond the floor at its mean load, and a rented chip (its share of a rack of
    its system: making and floor, as if it stood on this site's grid)."""
    grid = scenario.site.grid_kg_co2_per_mwh
    if grid is None:
        return {}
    parts = [rack_carbon_kg(h, scenario.finance, scenario.horizon_years, grid) for h in hw_list]
    rack = np.array([p["embodied"] + p["energy"] for p in parts])
    kept = np.array([p["energy"] if k in installed else r for p, k, r in zip(parts, ids, rack)])
    column = np.zeros(len(cols["workload"]))
    if uses_power_curves(scenario.finance) and len(chips):
        above, load = draw_above_floor(cols, chips, hw_list, demands)
        column = np.array([replica_carbon_kg(a, m, scenario.finance, grid) for a, m in zip(above, load)])
    per_chip = rack / np.array([h.chips_per_rack for h in hw_list], dtype=float)
    rent = np.array([per_chip[k] for k, _ in rental_offers(hw_list)], dtype=float)
    return {"carbon_kg_per_rack": rack, "installed_carbon_kg_per_rack": kept if installed else None,
            "column_carbon_kg": column, "rent_carbon_kg_per_chip": rent}


def group_values(objective: str, demands: list[Demand], revenue: np.ndarray) -> np.ndarray:
    """Each workload's value when served whole, for the objectives that sell shares: its revenue a year
    (max_revenue, USD), or the output tokens it generates a year (max_served's weights, OPTIMIZER.md 1.4); zeros
    (FleetProblem's default, one per workload) for the others, which sell none."""
    goal = objective_named(objective)
    if not goal.sells_shares:
        return np.zeros(len(demands))
    if goal.needs_prices:
        return revenue
    return np.array([annual_revenue(d.output_tokens_per_s, d.peak_to_mean, 1e6) for d in demands])


def rental_offers(hw_list: list) -> list[tuple[int, catalog.RentalOffer]]:
    """(hardware index, offer) of every rental offer of the problem's systems, in catalog order (the MILP's r)."""
    return [(k, o) for k, h in enumerate(hw_list) for o in h.rental]


def check_resolvable(problem, demands) -> None:
    """Refuse a demand so large that even its largest option serves under MIN_ROW_COEFFICIENT of it per replica
    (OPTIMIZER.md 2): the MILP could not tell it from zero. Raises InputError naming the workload."""
    if not problem.n_columns:
        return
    top = (problem.coverage / np.where(problem.demand > 0, problem.demand, 1.0)[None, :]).max(axis=0)
    for w in np.flatnonzero((problem.demand > 0) & (top > 0) & (top < MIN_ROW_COEFFICIENT)):
        d = demands[w // 2]
        raise InputError(f"{d.name} needs more than {1 / MIN_ROW_COEFFICIENT:.0e} replicas of its largest option "
                         f"({1 / top[w]:.3g}): beyond what the fleet MILP can resolve; plan a share of this demand "
                         f"(a site of its size) instead", field=f"workloads.{d.name}.requests_per_s")


def without_api(cols: dict) -> dict:
    """The engine's options alone (a reused Built's options carry its API columns, which the demands rebuild)."""
    keep = cols["kind"] != API_KIND if len(cols["kind"]) else np.zeros(0, dtype=bool)
    return {c: v[keep] for c, v in cols.items()}


def with_api(cols: dict, demands: list[Demand]) -> dict:
    """``cols`` with one column per hosted offer that reaches its workload's tier (and TTFT, where it states one:
    its row's ``ttft_s``)."""
    rows = [(d, o) for d in demands for o in d.api_offers()]
    if not rows:
        return cols
    extra: dict[str, list] = {c: [] for c in cols}
    for d, o in rows:
        values = dict(NOT_SPLIT, workload=d.name, kind=API_KIND, hardware=API_PREFIX + o["name"], precision="",
                      tensor_parallel=0, pipeline_parallel=0, expert_parallel=False, speculative="none",
                      draft_tokens=0, acceptance=0.0, batch=0, chips=0, tps_per_user=o["max_tps_per_user"],
                      ttft_s=float("nan") if o["ttft_s"] is None else o["ttft_s"],
                      output_tokens_per_s=d.sized_output_tokens_per_s,
                      prefill_tokens_per_s=d.sized_prefill_tokens_per_s, prefill_share=float("nan"), power_w=0.0,
                      source=API_KIND, measurement=o["name"], decode_slots=0.0, spare_pool=1.0, spare_share=0.0)
        for c in cols:
            extra[c].append(values[c])
    # strings keep their full length (numpy widens the dtype); an empty engine table takes the offers' own types
    return {c: np.concatenate([cols[c], np.asarray(extra[c])]) if len(cols[c]) else np.asarray(extra[c])
            for c in cols}


def api_column_costs(cols: dict, demands: list[Demand]) -> np.ndarray:
    """[J] (11): USD a year of each API column's replica (the whole workload at the offer's prices), 0 elsewhere."""
    by_name = {d.name: d for d in demands}
    out = np.zeros(len(cols["kind"]))
    for j in np.flatnonzero(cols["kind"] == API_KIND):
        d = by_name[str(cols["workload"][j])]
        offer = next(o for o in d.api_offers() if API_PREFIX + o["name"] == cols["hardware"][j])
        out[j] = sum(d.api_cost_parts(offer).values())
    return out


POOLED_KINDS = ("decode", "colocated")  # kinds whose replicas several workloads of one model can share (15)


def spares_at(cols: dict, j: int) -> bool:
    """Whether column ``j`` is charged spares (its ``spare_share``, where the columns carry one)."""
    return "spare_share" in cols and cols["spare_share"][j] > 0


def replica_pools(cols: dict, demands: list[Demand], integer: np.ndarray) -> np.ndarray | None:
    """[J] (15, OPTIMIZER.md 16) the pool each column joins, -1 for none: the whole-replica decode and colocated
    options of different workloads of one model on one system, layout, precision and drafter, at one tier (and,
    colocated, one TTFT target) are time shares of the same replicas, as one engine serves them all. Smaller
    replicas are time shares already (continuous); prefill pools queue per workload. None when no two workloads
    share a key. A column that holds spares joins none."""
    by_name = {d.name: d for d in demands}
    keys: dict[tuple, int] = {}
    pool = np.full(len(cols["workload"]), -1)
    members: dict[int, set] = {}
    for j in np.flatnonzero(integer).tolist() if len(integer) else []:
        kind = str(cols["kind"][j])
        if kind not in POOLED_KINDS or len(systems_of(cols, j)) != 1 or spares_at(cols, j):
            continue  # a column holding spares keeps its own pool (each pool's spares its own, OPTIMIZER.md 19)
        d = by_name[str(cols["workload"][j])]
        key = (d.model, str(cols["hardware"][j]), kind, str(cols["precision"][j]), int(cols["tensor_parallel"][j]),
               int(cols["pipeline_parallel"][j]), bool(cols["expert_parallel"][j]), str(cols["speculative"][j]),
               int(cols["draft_tokens"][j]), round(float(cols["acceptance"][j]), 9), str(cols["source"][j]),
               d.min_tps_per_user, *((d.ttft_s, d.ttft_quantile) if kind == "colocated" else ()))
        g = keys.setdefault(key, len(keys))
        pool[j] = g
        members.setdefault(g, set()).add(d.name)
    shared = {g for g, names in members.items() if len(names) > 1}
    pool = np.where(np.isin(pool, list(shared)), pool, -1)
    return pool if shared else None


def spare_counts(cols: dict, demands: dict, hardware: dict) -> np.ndarray:
    """[J] K of each column (``spares.spare_count``): the most spares its pool needs under its workload's rule; 0 for
    a hosted API's."""
    out = np.zeros(len(cols["workload"]))
    for j in range(len(out)):
        rule = demands[str(cols["workload"][j])].redundancy
        if rule != "none" and cols["kind"][j] != API_KIND:
            out[j] = spare_count(rule, [(n_chips, replica_stages(cols, j, role), hardware[hw_id].chips_per_rack)
                                        for hw_id, _, n_chips, role in systems_of(cols, j)])
    return out


def assumed_pool(cols: dict, demands: dict, usable: np.ndarray) -> np.ndarray:
    """[J] the replicas a column's pool is assumed to have before a plan says: its workload's sized demand (decode
    output at its usable share, or prompts for a prefill option) on it alone."""
    out = np.ones(len(cols["workload"]))
    for j in range(len(out)):
        d = demands[str(cols["workload"][j])]
        prefill = cols["kind"][j] == "prefill"
        cap = float(cols["prefill_tokens_per_s"][j] if prefill else cols["output_tokens_per_s"][j] * usable[j])
        need = d.sized_prefill_tokens_per_s if prefill else d.sized_output_tokens_per_s
        out[j] = need / cap if cap > 0 else 1.0
    return out


def replica_stages(cols: dict, j: int, role: str) -> int:
    """The pipeline stages of option ``j``'s replica on one of its systems (``role``): its own, but one for the
    FFN side of an attention/FFN split (a pool sized in racks of its system, not staged)."""
    return 1 if role == "ffn" else int(cols["pipeline_parallel"][j])


def integer_replicas(chips: np.ndarray, hw_list: list) -> np.ndarray:
    per_rack = np.array([h.chips_per_rack for h in hw_list], dtype=float)
    share = (chips / per_rack).max(axis=1) if len(chips) else np.zeros(0)
    return share >= INTEGER_REPLICA_RACK_SHARE


def unreachable_workloads(scenario, progress=None) -> dict[str, str]:
    """The workloads no option of the scenario's hardware (nor a hosted offer) serves, and why: the engine's options
    scored, no MILP (``planner validate`` says so before ``solve``'s search does)."""
    hardware = dict(sorted(scenario.resolved_hardware().items()))
    demands = demands_of(scenario)
    cols = with_api(scenario_options(scenario, demands, hardware, progress).arrays(), demands)
    return unserved_workloads(demands, cols)


def unserved_workloads(demands, cols) -> dict[str, str]:
    """Workloads that lack decode or prefill options entirely, and why (the first screen of infeasibility)."""
    out = {}
    for d in demands:
        mine = cols["workload"] == d.name if len(cols["workload"]) else np.zeros(0, dtype=bool)
        kinds = set(cols["kind"][mine].tolist()) if mine.any() else set()
        if not kinds & {*DECODE_KINDS, API_KIND}:
            out[d.name] = (f"no available hardware reaches {d.min_tps_per_user:g} tok/s per user on {d.model} "
                           f"(with its {d.context_max:g}-token context fitting in memory)")
        elif not kinds & {*PREFILL_KINDS, API_KIND}:
            out[d.name] = f"no available hardware prefills {d.input_tokens:g}-token prompts within {d.ttft_s:g} s"
    return out
