"""Build-outs over time (docs/OPTIMIZER.md 7): a scenario with ``periods`` in, what to order in each period out,
under one demand forecast or several (``demand_scenarios``: a two-stage plan whose first order is shared).

build (``build_buildout``: the engine's options scored once, on every system available by the last period, and the
arrays of each period) -> MILP (``solvers.multiperiod``) -> plan (``BuildOutPlan``), with the two plans a
planner compares it with: the myopic one (each period optimised alone, buying only for its own demand) and the
mean-demand one (planned for the expected demand, its first order then evaluated on every scenario).
"""

from __future__ import annotations

import copy
import dataclasses
import datetime as _dt
import math
import time
from dataclasses import dataclass, field

import numpy as np

from planner.errors import InfeasibleError, PlannerError
from planner.fleet.assumptions import cross_site_words
from planner.fleet.diagnose import infeasibility_message
from planner.fleet.finance import (annual_rack_cost_parts, annual_revenue, annuity_factor, finance_args,
                                   mean_tokens_per_year, present_rack_cost)
from planner.fleet.options import systems_of
from planner.fleet.plan import (allocation_rows, allocation_table, assumed_servers_above_pools, finite, provenance,
                                round_up_small)
from planner.fleet.problem import Built, build_problem, demand_rows, demands_of, refuse_spares, site_of
from planner.fleet.solve import REPAIR_ROUNDS, carried_replicas, with_options_at
from planner.scenario import Scenario
from solvers.backends import on_worker
from solvers.jit import thread_count
from solvers.milp import same_problem
from solvers.multiperiod import BuildOutProblem, evaluate, installed_of, optimize, optimize_each_scenario
from solvers.vocabulary import HAS_PLAN


# Above this many integer replica variables (periods x scenarios x integer columns) a build-out's replicas are
# continuous, racks still whole (OPTIMIZER.md 7.2): the shipped 4-period, 3-scenario site has 14,700 and its
# integer MILP ends SCIP's and HiGHS's 300 s at gaps of 1.2% and 0.23%; relaxed, it solves to 1e-3 in 4-6 s.
MAX_INTEGER_REPLICA_VARIABLES = 5000


def relaxed_columns(options: dict, coverage: np.ndarray, chips: np.ndarray) -> list[int]:
    """With continuous replicas, the columns worth keeping: per workload, kind and system the one that serves
    most per chip (any mix of the others is matched by it on no more chips, so dropping them is exact for the
    relaxed problem); every attention/FFN column (two kinds of chip, no single best)."""
    capacity, used = coverage.sum(axis=1), chips.sum(axis=1)
    keep: list[int] = []
    best: dict[tuple, tuple[float, int]] = {}
    for j in range(len(capacity)):
        if len(systems_of(options, j)) > 1:
            keep.append(j)
            continue
        key = (options["workload"][j], options["kind"][j], options["hardware"][j])
        if key not in best or capacity[j] / used[j] > best[key][0]:
            best[key] = (capacity[j] / used[j], j)
    return sorted(keep + [j for _, j in best.values()])


@dataclass
class BuiltOut:
    """What ``build_buildout`` returns: the scenario, the options (a single-period ``Built`` of the last period,
    whose columns every period shares), and the build-out MILP's arrays."""

    scenario: Scenario
    built: Built
    problem: BuildOutProblem
    years: list[float]
    capex: np.ndarray  # [T, H] USD per rack bought in each period
    scenario_names: list[str]
    continuous_replicas: bool
    present_cost: np.ndarray  # [T, H] USD present cost of a rack bought in t (whatever the objective)
    views: list  # [S][T] each period's single-period scenario (Scenario.at_period), made once
    period_demands: list  # [S][T] their Demands
    columns: list  # the problem's columns as columns of ``built.options`` (all, or relaxed_columns)
    finances: list = field(default_factory=list)  # [H] each type's finance_args: its site's energy and PUE

    @property
    def dates(self) -> list[_dt.date]:
        """Each period's start date (the scenario's periods, which a build-out has)."""
        assert self.scenario.periods is not None
        return self.scenario.periods


def capex_by_period(scenario, hardware: list, years: list[float]) -> np.ndarray:
    """[T, H] capex of one rack bought in each period: hardware.capex_usd_by_period where given, else the
    catalog's falling by hardware.price_decline_per_year."""
    decline = scenario.hardware.price_decline_per_year
    rate = np.array([decline.get(h.id, 0.0) if isinstance(decline, dict) else decline for h in hardware])
    base = np.array([h.rack.capex_usd.value for h in hardware])
    capex = base[None, :] * (1.0 - rate[None, :]) ** np.asarray(years)[:, None]
    for k, h in enumerate(hardware):
        given = scenario.hardware.capex_usd_by_period.get(h.id)
        if given is not None:
            capex[:, k] = given
    return capex


def build_buildout(scenario, progress=None, deadline: float = math.inf, built=None) -> BuiltOut:
    """Options once (the last period sees every system available by then; or ``built``'s, a Built of the last
    period whose options were sized again), then per period and demand scenario the demand, the site's limits,
    the prices and which systems can be bought. Over several sites (OPTIMIZER.md 21, 7's (8)) each hardware type
    is a system at a site (system@site) priced, limited and installed as its own site says."""
    T = len(scenario.periods)
    S = max(1, len(scenario.demand_scenarios))
    years = scenario.years_of()
    if built is None:
        built = build_problem(scenario.at_period(T - 1), progress, deadline)
    if built.unserved:
        raise InfeasibleError("no feasible build-out: " + "; ".join(f"{k}: {v}" for k, v in built.unserved.items()))
    fp, hardware = built.problem, built.hardware
    views = [[scenario.at_period(t, s if scenario.demand_scenarios else None) for t in range(T)] for s in range(S)]
    period_demands = [[demands_of(v) for v in row] for row in views]
    demand = np.array([[demand_rows(ds) for ds in row] for row in period_demands])
    probability = np.array([d.probability for d in scenario.demand_scenarios] or [1.0])
    capex = capex_by_period(scenario, hardware, years)
    life = scenario.service_life_years or scenario.horizon_years
    places = site_scenarios(scenario)
    fins = [finance_args(places[n].finance, scenario.horizon_years) for n in fp.rack_sites]  # each type's site's
    buy_cost = np.array([[present_rack_cost(capex[t, k], h.rack_power_w, years[t], life, scenario.horizon_years,
                                            f["wacc"], f["maintenance_share"], f["electricity_usd_per_mwh"],
                                            f["pue"], f["load_share"])
                          for k, (h, f) in enumerate(zip(hardware, fins))] for t in range(T)])
    objective = scenario.objective
    end = [*years[1:], scenario.horizon_years]
    if objective == "min_power":  # W-years of IT power within the horizon
        value = np.array([[h.rack_power_w * (min(years[t] + life, scenario.horizon_years) - years[t])
                           for h in hardware] for t in range(T)])
    else:
        value = buy_cost
    group_value = None
    fin = finance_args(scenario.finance, scenario.horizon_years)
    if objective == "max_revenue":  # a year's revenue of each workload's whole demand, valued over its period
        group_value = np.array([[[annual_revenue(d.output_tokens_per_s, d.peak_to_mean, d.price_usd_per_mtok)
                                  * (annuity_factor(fin["wacc"], end[t]) - annuity_factor(fin["wacc"], years[t]))
                                  for d in period_demands[s][t]] for t in range(T)] for s in range(S)])
    dates = scenario.periods
    at = [places[n] for n in fp.rack_sites]
    buyable = [sv.purchase_exclusion(h.id, h) is None for h, sv in zip(hardware, at)]  # installed-only: never bought
    available = np.array([[ok and h.rack.available.value <= dates[t] for h, ok in zip(hardware, buyable)]
                          for t in range(T)])
    alive = np.array([[tau <= t and years[t] < years[tau] + life - 1e-9 for t in range(T)] for tau in range(T)])
    existing = np.concatenate([installed_by_period(sv, [h for h, n in zip(hardware, fp.rack_sites) if n == i])
                               for i, sv in enumerate(places)], axis=1)  # the types are site after site
    relaxed = T * S * int(fp.integer_replicas.sum()) > MAX_INTEGER_REPLICA_VARIABLES
    columns = relaxed_columns(built.options, fp.coverage, fp.chips) if relaxed else list(range(fp.n_columns))
    problem = BuildOutProblem(
        chips_per_rack=fp.chips_per_rack, rack_power_w=fp.rack_power_w, chips=fp.chips[columns],
        core_chips=fp.core_chips[columns] if fp.core_chips is not None else None,
        coverage=fp.coverage[columns],
        integer_replicas=np.zeros(len(columns), bool) if relaxed else fp.integer_replicas, demand=demand,
        probability=probability, buy_cost=value, group_value=group_value,
        row_group=np.repeat(np.arange(len(built.demands)), 2) if group_value is not None else None,
        available=available, alive=alive, existing=existing, integer_later=False,  # OPTIMIZER.md 7.2
        max_racks=system_caps(hardware, [places[n].new_rack_caps() for n in range(len(places))], fp.rack_sites,
                              existing[0]), rack_system=system_numbers(hardware) if scenario.sites
        else None, **site_limits_by_period(scenario, places, fp.rack_sites, T))
    return BuiltOut(scenario, built, problem, years, capex, scenario.scenario_names(), relaxed, buy_cost, views,
                    period_demands, columns, fins)


def site_scenarios(scenario) -> list:
    """Each site's own build-out scenario (``Scenario.at_site``: its finance, limits per period, installed racks
    and allow list), in the problem's order of sites; the scenario itself with one site."""
    return [scenario.at_site(name) for name in scenario.site_names()]


def system_caps(hardware: list, site_caps: list[dict], rack_site: np.ndarray, installed: np.ndarray) -> np.ndarray:
    """[H] (5, 8) each type's system's cap on installed racks: its supply cap (the largest its types' sites give,
    ``site_caps``: each site's ``new_rack_caps``; a type its site may not buy carries 0) plus the racks of the
    system installed at the start at every site; each type of one system carries it."""
    caps = np.array([site_caps[n].get(h.id, math.inf) for h, n in zip(hardware, rack_site)], dtype=float)
    ids = np.array([h.id for h in hardware])
    out = np.zeros(len(hardware))
    for system in set(ids.tolist()):
        members = ids == system
        out[members] = caps[members].max() + installed[members].sum()
    return out


def system_numbers(hardware: list) -> np.ndarray:
    """[H] each type's system, numbered in the order of the systems' ids (one system at several sites: one)."""
    ids = sorted({h.id for h in hardware})
    return np.array([ids.index(h.id) for h in hardware], dtype=np.int64)


def by_period(value, t: int):
    """A limit given once or one per period (a list), in period ``t``."""
    return value[t] if isinstance(value, list) else value


def site_limits_by_period(scenario, places: list, rack_site: np.ndarray, T: int) -> dict:
    """The BuildOutProblem's site arguments: one site's PUE, power budget [T] and floor space [T]; over several
    sites (8) each site's, [T, N], with each type's site."""
    def limits(sv):
        return ([(by_period(sv.site.power_budget_mw, t) or math.inf) * 1e6 for t in range(T)],
                [float(by_period(sv.site.max_racks, t) or math.inf) for t in range(T)])

    if not scenario.sites:
        budget, most = limits(scenario)
        return {"pue": scenario.finance.pue, "power_budget_w": np.array(budget), "max_total_racks": np.array(most)}
    both = [limits(sv) for sv in places]
    return {"rack_site": rack_site, "site_pue": np.array([sv.finance.pue for sv in places]),
            "site_power_budget_w": np.array([b for b, _ in both]).T, "site_max_racks": np.array([m for _, m in both]).T}


def installed_by_period(scenario, hardware: list) -> np.ndarray:
    """[T, H] the scenario's installed racks still in service at each period's start (OPTIMIZER.md 9): the
    build-out's existing racks, at no cost in its objective (their capex is sunk and their running cost the
    same whatever is bought; a build-out keeps them until they retire)."""
    index = {h.id: k for k, h in enumerate(hardware)}
    out = np.zeros((len(scenario.periods), len(hardware)))
    for t, date in enumerate(scenario.periods):
        for hw_id, d in scenario.installed_in_service(date).items():
            if hw_id in index:
                out[t, index[hw_id]] += d["racks"]
    return out


# ---- the plans beside the optimum ---------------------------------------------------------------------------
def myopic(bo: BuiltOut, solver: str, time_limit_s: float, gap: float):
    """Each period optimised alone, scenario by scenario: buy the cheapest racks (by their present cost) that
    serve that period's demand with what is already installed, never looking ahead. (buys, replicas) [T, S, .]
    or None when a period cannot be served that way (the racks of earlier periods block the site's limits)."""
    p = bo.problem
    T, S, H = p.n_periods, p.n_scenarios, p.n_hardware
    buys, replicas = np.zeros((T, S, H)), np.zeros((T, S, p.n_columns))
    solved: dict = {}
    for s in range(S):
        for t in range(T):
            have = installed_of(dataclasses.replace(p, existing=np.zeros((T, H))), buys)[t, s]
            step = myopic_step(p, s, t, have)
            key = step_key(step, t)
            if key not in solved:  # scenarios that agree so far (the shared first period) make the same step
                solved[key] = optimize(step, solver, time_limit_s, gap)
            sol = solved[key]
            if sol.status not in HAS_PLAN:
                return None
            buys[t, s], replicas[t, s] = sol.buys[0, 0], sol.replicas[0, 0]
    return buys, replicas


def myopic_step(p, s: int, t: int, have: np.ndarray):
    """Period ``t`` of demand scenario ``s`` alone, with the racks ``have`` [H] already installed."""
    return dataclasses.replace(
        p, demand=p.demand[s:s + 1, t:t + 1], probability=np.ones(1), buy_cost=p.buy_cost[t:t + 1],
        available=p.available[t:t + 1], alive=np.ones((1, 1), bool), power_budget_w=p.power_budget_w[t:t + 1],
        max_total_racks=p.max_total_racks[t:t + 1], existing=have[None, :], fixed_first=None,
        group_value=p.group_value[s:s + 1, t:t + 1] if p.sells else None,
        site_power_budget_w=None if p.site_power_budget_w is None else p.site_power_budget_w[t:t + 1],
        site_max_racks=None if p.site_max_racks is None else p.site_max_racks[t:t + 1])


def step_key(step, t: int) -> tuple:
    """What makes one myopic step differ from another of the same period: its demand, the racks it has and what
    it sells (everything else is the period's). Equal keys are the same MILP, so the same plan."""
    sold = step.group_value.tobytes() if step.sells else b""
    return t, step.demand.tobytes(), step.existing.tobytes(), sold


def mean_demand(bo: BuiltOut, solver: str, time_limit_s: float, gap: float):
    """The plan for the expected demand: its first order, then the best later purchases in each scenario given
    it (the expected cost of the mean-value solution; with the first order fixed the scenarios are separate
    MILPs, ``optimize_each_scenario``). None without demand scenarios or when that order cannot be completed in
    some scenario."""
    p = bo.problem
    if p.n_scenarios == 1:
        return None
    mean = np.einsum("s,stw->tw", p.probability, p.demand)[None]
    value = np.einsum("s,stg->tg", p.probability, p.group_value)[None] if p.group_value is not None else None
    plan = optimize(dataclasses.replace(p, demand=mean, probability=np.ones(1), group_value=value), solver,
                    time_limit_s, gap)
    if plan.status not in HAS_PLAN:
        return None
    given = optimize_each_scenario(dataclasses.replace(p, fixed_first=plan.buys[0, 0]), solver, time_limit_s, gap)
    return given if given.status in HAS_PLAN else None


def comparisons(bo: BuiltOut, solver: str, time_limit_s: float, gap: float):
    """(myopic plan, mean-demand plan): independent solves of the same build-out, side by side."""
    return side_by_side(lambda: myopic(bo, solver, time_limit_s, gap),
                        lambda: mean_demand(bo, solver, time_limit_s, gap))


def starting_plan(problem, near, mean):
    """The comparison plan the build-out MILP starts from: the cheaper of the mean-demand plan and the myopic one
    (where it holds in every scenario), as (buys, replicas); None where neither is a plan. Started from the
    mean-demand plan, the shipped build-out (with the slots' join in its coverage) closed its gap of 1e-3 in 6.7 s
    with SCIP and 7.0 s with HiGHS; from nothing, SCIP took 105 s and HiGHS stopped at its 120 s limit 0.2% off."""
    plans = [(mean.objective, mean.buys, mean.replicas)] if mean is not None and not mean.violations else []
    ev = held_myopic(problem, near)
    if ev is not None:
        plans.append((ev.objective, *near))
    if not plans:
        return None
    _, buys, replicas = min(plans, key=lambda p: p[0])
    return buys, replicas


def held_myopic(problem, near):
    """The myopic plan's evaluation where it is a plan of the two-stage problem (it holds in every scenario; under
    max_revenue it carries no served shares, so it is none); None otherwise."""
    if near is None or problem.sells:
        return None
    ev = evaluate(problem, *near)
    return None if ev.violations else ev


def side_by_side(first, second):
    """(first(), second()): ``second`` on a worker thread while this one runs ``first`` where there are two
    threads to give (``solvers.jit.thread_count``; the solvers release the GIL), one after the other otherwise.
    Each solve is the same model either way, so the same plan. The worker is a daemon, so Ctrl-C here is not held
    up by it (``solvers.backends.on_worker``)."""
    if thread_count() < 2:
        return first(), second()
    wait = on_worker(second, "planner-comparison")
    return first(), wait()


# ---- the plan -------------------------------------------------------------------------------------------------
@dataclass
class BuildOutPlan:
    """A solved build-out; ``to_dict()`` is the interface's JSON (docs/INTERFACE.md 4.3, multi-period keys)."""

    scenario: str
    status: str
    objective: str
    solver: dict
    periods: list  # per demand scenario: a list of period dicts
    scenario_names: list
    probabilities: list
    first_period_order: list
    net_present_cost_usd: float
    myopic_net_present_cost_usd: float | None
    mean_demand_net_present_cost_usd: float | None
    checks: list = field(default_factory=list)
    assumptions: list = field(default_factory=list)
    provenance: dict = field(default_factory=dict)
    timings: dict = field(default_factory=dict)
    inputs: dict = field(default_factory=dict)  # the MILP's arrays and the plan's purchases and replicas (check)
    objective_unit: str = "USD"
    objective_value: float | None = None  # what the objective minimised (min_cost: the net present cost)
    myopic_objective_value: float | None = None
    mean_demand_objective_value: float | None = None
    net_present_revenue_usd: float | None = None  # max_revenue: the expected present revenue
    verification: dict | None = None  # solve --verify: every period simulated, and the repair (planner.sim.verify)
    is_buildout: bool = True
    built: BuiltOut | None = field(default=None, repr=False, compare=False)  # the solver's inputs, in memory only

    def to_dict(self) -> dict:
        d = {
            "scenario": self.scenario, "status": self.status, "objective": self.objective, "solver": self.solver,
            "first_period_order": self.first_period_order,
            "net_present_cost_usd": finite(self.net_present_cost_usd),
            "myopic_net_present_cost_usd": finite(self.myopic_net_present_cost_usd),
            "objective_value": finite(self.objective_value), "objective_unit": self.objective_unit,
            "myopic_objective_value": finite(self.myopic_objective_value),
            "value_of_planning_ahead_usd": self._saving(self.myopic_objective_value),
            "periods": self.periods[0] if len(self.periods) == 1 else None,
            "checks": self.checks, "assumptions": self.assumptions, "provenance": self.provenance,
            "inputs": self.inputs,
        }
        if len(self.periods) > 1:
            d["scenarios"] = [{"name": n, "probability": p, "periods": per}
                              for n, p, per in zip(self.scenario_names, self.probabilities, self.periods)]
            d["mean_demand_net_present_cost_usd"] = finite(self.mean_demand_net_present_cost_usd)
            d["mean_demand_objective_value"] = finite(self.mean_demand_objective_value)
            d["value_of_stochastic_solution_usd"] = self._saving(self.mean_demand_objective_value)
        if self.net_present_revenue_usd is not None:
            d["net_present_revenue_usd"] = finite(self.net_present_revenue_usd)
        if self.verification is not None:
            d["verification"] = self.verification
        return copy.deepcopy(d)  # a copy: editing it leaves the plan as it is (issue 43)

    def _saving(self, other):
        """What the optimum saves against another plan, in USD of the objective (None for min_power's W-years)."""
        return _difference(other, self.objective_value) if self.objective_unit == "USD" else None


def _difference(a, b):
    return finite(a - b) if a is not None and b is not None else None


def period_tables(bo: BuiltOut, buys: np.ndarray, replicas: np.ndarray, s: int, shares=None) -> list[dict]:
    """The periods of demand scenario ``s``: per hardware type racks bought, installed and retired (over several
    sites, system@site with its site); totals (racks, power, capex paid, the year's running cost, output tokens/s,
    USD per million tokens; over several sites each site's racks and facility power against its limits); per
    workload its demand and USD per million tokens (the yearly cost of the chips it uses over its tokens)."""
    p, sc = bo.problem, bo.scenario
    hardware, demands, names = bo.built.hardware, bo.built.demands, bo.built.type_ids
    sites, fins = sc.site_names(), bo.finances
    life = sc.service_life_years or sc.horizon_years
    T = p.n_periods
    installed = p.existing[:, None, :] + np.einsum("ut,ush->tsh", p.alive.astype(float), buys)
    out = []
    for t in range(T):
        # the year's cost of the racks installed in t, vintage by vintage (each at the capex it was bought at)
        yearly = np.zeros(len(hardware))
        for tau in range(t + 1):
            if p.alive[tau, t]:
                yearly += buys[tau, s] * yearly_rack_cost(bo.capex[tau], p.rack_power_w, fins, life)
        n = installed[t, s]
        retired = [sum(buys[tau, s, k] for tau in range(t) if p.alive[tau, t - 1] and not p.alive[tau, t])
                   for k in range(len(hardware))] if t else [0.0] * len(hardware)
        fleet = [{"hardware": names[k], **({"site": sites[int(p.rack_sites[k])]} if sc.sites else {}),
                  "racks_bought": int(buys[t, s, k]), "racks_installed": int(n[k]), "racks_retired": int(retired[k])}
                 for k in range(len(hardware)) if buys[t, s, k] or n[k] or retired[k]]
        per_chip = np.where(n > 0, yearly / np.maximum(n * p.chips_per_rack, 1e-12), 0.0)
        chips_w = np.zeros((len(demands), len(hardware)))
        for j in np.flatnonzero(replicas[t, s] > 1e-9):
            w = int(np.argmax(p.coverage[j]) // 2)
            chips_w[w] += replicas[t, s, j] * p.chips[j]
        period_sc = bo.views[s][t]
        workloads = []
        tokens_total = 0.0
        for w, d in enumerate(bo.period_demands[s][t]):
            tokens = mean_tokens_per_year(d.output_tokens_per_s, d.peak_to_mean)
            tokens_total += tokens
            cost = float(chips_w[w] @ per_chip)
            served = float(shares[t, s, w]) if shares is not None and len(shares) else 1.0
            workloads.append({"workload": d.name, "requests_per_s": period_sc.workloads[w].requests_per_s,
                              "demand_output_tokens_per_s": d.output_tokens_per_s, "served_share": served,
                              "annual_cost_usd": cost,
                              "cost_usd_per_mtok": cost / (served * tokens / 1e6) if tokens and served else None})
        power = float(n @ p.rack_power_w) / 1e6
        budget = p.site_budgets_w[t]
        totals = {"racks": int(n.sum()), "power_mw": power,
                  "facility_power_mw": float(n @ (p.rack_power_w * p.type_pue)) / 1e6,
                  "power_budget_mw": finite(float(budget.sum()) / 1e6),
                  "capex_paid_usd": float(buys[t, s] @ bo.capex[t]),
                  "annual_cost_usd": float(yearly.sum()),
                  "output_tokens_per_s": float(sum(w["demand_output_tokens_per_s"] * w["served_share"]
                                                   for w in workloads)),
                  "cost_usd_per_mtok": float(yearly.sum()) / (tokens_total / 1e6) if tokens_total else None}
        if sc.sites:  # (8) each site's racks and facility power against its own limits in this period
            totals["sites"] = [period_site_totals(p, n, yearly, t, k, name) for k, name in enumerate(sites)]
        out.append({"start_date": bo.dates[t].isoformat(), "fleet": fleet, "totals": totals,
                    "workloads": workloads})
    return out


def yearly_rack_cost(capex: np.ndarray, power_w: np.ndarray, fins: list[dict], life: float) -> np.ndarray:
    """[H] USD a year of one rack of each type bought at ``capex``: its capex annuity over its life, maintenance and
    energy at its site's price and PUE (``fins``: each type's finance_args)."""
    parts = annual_rack_cost_parts(capex, power_w, fins[0]["wacc"], life, fins[0]["maintenance_share"],
                                   np.array([f["electricity_usd_per_mwh"] for f in fins]),
                                   np.array([f["pue"] for f in fins]), np.array([f["load_share"] for f in fins]))
    return parts["capex_annuity"] + parts["maintenance"] + parts["energy"]


def period_site_totals(p, installed: np.ndarray, yearly: np.ndarray, t: int, k: int, name: str) -> dict:
    """One site's sums in one period of a build-out over several sites: racks, facility power, the year's cost and
    its limits then (the names of a single-period plan's ``totals.sites``)."""
    at = p.rack_sites == k
    most = p.site_rack_limits[t, k]
    return {"name": name, "racks": int(installed[at].sum()),
            "facility_power_mw": float(installed[at] @ p.rack_power_w[at]) * float(p.site_pues[k]) / 1e6,
            "power_budget_mw": finite(float(p.site_budgets_w[t, k]) / 1e6),
            "max_racks": int(most) if math.isfinite(most) else None,
            "annual_cost_usd": float(yearly[at].sum())}


def period_built(bo: BuiltOut, s: int, t: int):
    """The options' Built with period ``t``'s demands of demand scenario ``s``."""
    return dataclasses.replace(bo.built, demands=bo.period_demands[s][t])


def period_replicas(bo: BuiltOut, replicas: np.ndarray, racks: np.ndarray) -> np.ndarray:
    """[J] of ``bo.built.options``: a period's replicas [columns], small fractions rounded up to whole replicas
    where the period's installed ``racks`` [H] have the chips (``plan.round_up_small``: only capacity added)."""
    full = np.zeros(len(bo.built.options["workload"]))
    full[bo.columns] = replicas
    return round_up_small(bo.built.problem, racks, full)


def period_rows(bo: BuiltOut, replicas: np.ndarray, racks: np.ndarray, s: int, t: int) -> list[dict]:
    """Period ``t`` of demand scenario ``s`` as a single-period plan's allocation rows (INTERFACE.md 4.3): each
    option in use with its replicas in that period and its pools' TTFT at that period's pool sizes, what
    ``planner simulate`` runs period by period."""
    return allocation_rows(period_built(bo, s, t), period_replicas(bo, replicas, racks))


def period_allocation(bo: BuiltOut, replicas: np.ndarray, racks: np.ndarray, s: int, t: int) -> list[dict]:
    return allocation_table(period_rows(bo, replicas, racks, s, t)).to_dicts()


def pools_smaller_than_assumed(bo: BuiltOut, sol) -> dict[int, float]:
    """Columns (of ``bo.built.options``) whose option was sized for a larger prefill pool than some period of some
    demand scenario deploys (MODEL.md 9.2): column -> the fewest whole servers its pool has in any period."""
    installed = installed_of(bo.problem, sol.buys)
    caps: dict[int, float] = {}
    for s in range(bo.problem.n_scenarios):
        for t in range(bo.problem.n_periods):
            rows = period_rows(bo, sol.replicas[t, s], installed[t, s], s, t)
            for j, servers in assumed_servers_above_pools(period_built(bo, s, t), rows).items():
                caps[j] = min(caps.get(j, math.inf), servers)
    return caps


def repair_buildout_pools(scenario, bo: BuiltOut, sol, settings, deadline: float, progress=None):
    """``solve.repair_pools`` over every period: an option whose prefill pool is smaller in some period than the
    pool it was sized for is generated again at that period's servers and the build-out solved again (the
    smallest pool bounds every period's queue); after REPAIR_ROUNDS rounds every pooled option is sized for one
    server. A round that leaves the MILP the same (only pools' TTFTs and servers moved, which no row reads) keeps the
    plan already proved within the gap. Returns the BuiltOut and solution of the last solve."""
    for rnd in range(REPAIR_ROUNDS + 1):
        if sol.status not in HAS_PLAN:
            return bo, sol
        caps = pools_smaller_than_assumed(bo, sol)
        if not caps:
            return bo, sol
        if rnd == REPAIR_ROUNDS:
            servers = bo.built.options["servers"]
            caps = {int(j): 1.0 for j in np.flatnonzero(np.nan_to_num(servers, nan=1.0) > 1.0)}
        if progress:
            progress(0, 1, f"pools smaller than assumed in some period: {len(caps)} option(s) sized again, "
                           "solving again")
        old, before = bo, bo.problem
        if deadline - time.monotonic() <= 0:
            return old, out_of_time(sol, caps)
        again, kept = with_options_at(bo.built, caps)
        bo = build_buildout(scenario, progress, deadline, built=again)
        if sol.status == "optimal" and not sol.violations and same_problem(bo.problem, before):
            continue  # only pools' TTFTs and servers moved: the MILP already solved, its plan within the gap stands
        left = deadline - time.monotonic()
        if left <= 0:
            return old, out_of_time(sol, caps)
        replicas = carried_replicas(np.asarray(sol.replicas), kept, old.problem.n_columns, bo.problem.n_columns,
                                    old.columns, bo.columns)  # a dropped column's left out
        start = (sol.buys, replicas) if replicas is not None else None
        found = optimize(bo.problem, settings.name, left, settings.relative_gap, start)
        if found.status not in HAS_PLAN and found.status != "infeasible":  # the time ran out before a plan
            return old, out_of_time(sol, caps)
        sol = found
    return bo, sol


def started_plan(problem, sol, start: tuple):
    """The plan the MILP started from (``starting_plan``: the cheaper comparison plan that holds), where the time
    limit ended the MILP before it found one: a plan of the same problem, with the MILP's bound."""
    ev = evaluate(problem, *start)
    gap = (ev.objective - sol.best_bound) / max(abs(ev.objective), 1e-12) if math.isfinite(sol.best_bound) \
        else math.inf
    return dataclasses.replace(sol, buys=start[0], installed=ev.installed, replicas=start[1], status="time_limit",
                               objective=ev.objective, relative_gap=max(gap, 0.0), violations=ev.violations,
                               scenario_cost=ev.scenario_cost, shares=ev.shares, revenue=ev.revenue)


def out_of_time(sol, caps: dict):
    """The last plan found, when the time limit ends the rounds that size prefill pools again: the best plan and
    its gap, never nothing (issue 44), with the number of options still sized for larger pools than some period
    deploys (``unsized``; the plan's assumptions say so, and its simulation judges their TTFT)."""
    return dataclasses.replace(sol, status="time_limit" if sol.status == "optimal" else sol.status,
                               unsized=len(caps))


ARRAYS = ("chips_per_rack", "rack_power_w", "chips", "coverage", "integer_replicas", "demand", "probability",
          "buy_cost", "available", "alive", "power_budget_w", "max_total_racks", "max_racks")


SITE_ARRAYS = ("rack_site", "site_pue", "site_power_budget_w", "site_max_racks", "rack_system")


def problem_inputs(bo: BuiltOut, sol) -> dict:
    """What ``check`` needs to re-check the build-out from plan.json alone: the MILP's arrays, the hardware ids in
    their order, the period dates and scenario names, the purchases and the replicas."""
    p = bo.problem
    # the installed racks and the wide stages' core chips too: without them check re-evaluated another problem (a
    # fleet with no installed racks failed every period's chips; core chips unheld passed what (2c) refuses)
    names = ARRAYS + ("existing",) + (("group_value", "row_group") if p.sells else ()) \
        + (("core_chips",) if p.core_chips is not None else ()) \
        + (SITE_ARRAYS if p.rack_site is not None else ())  # (8) several sites: each site's limits by period
    arrays = {k: [finite(x) if isinstance(x, float) else x for x in np.asarray(getattr(p, k)).ravel().tolist()]
              for k in names}
    return {"buildout": {"shapes": {k: list(np.asarray(getattr(p, k)).shape) for k in names}, "arrays": arrays,
                         "pue": p.pue, "integer_later": p.integer_later, "hardware": bo.built.type_ids,
                         "periods": [d.isoformat() for d in bo.dates],
                         "scenario_names": bo.scenario_names},
            "buys": sol.buys.tolist(), "replicas": sol.replicas.tolist(), "objective": sol.objective,
            "columns": [int(j) for j in bo.columns],
            "plan": {k: v for k, v in bo.built.inputs.items() if k != "demands"},
            "period_demands": [[[d.to_dict() for d in ds] for ds in row] for row in bo.period_demands]}


def problem_from_inputs(inputs: dict):
    """The BuildOutProblem ``problem_inputs`` wrote (None in JSON is infinity)."""
    b = inputs["buildout"]
    values = {k: np.array([math.inf if x is None else x for x in b["arrays"][k]]).reshape(b["shapes"][k])
              for k in b["arrays"]}
    return BuildOutProblem(pue=b["pue"], integer_later=b.get("integer_later", True), **values)


def evaluation_checks(problem, buys, replicas, objective: float, dates: list[str], names: list[str]) -> list[dict]:
    """The plan's rows recomputed by ``solvers.multiperiod.evaluate`` (no solver), one check per period and
    scenario, the purchases, and the present cost."""
    ev = evaluate(problem, buys, replicas)
    checks = []
    for t in range(problem.n_periods):
        for s, name in enumerate(names):
            bad = [v for v in ev.violations if v.split("[")[-1].startswith(f"{t},{s},") or v.endswith(f"[{t},{s}]")]
            checks.append({"check": f"period {dates[t]} scenario {name}", "ok": not bad,
                           "detail": "demand, chips, caps, power and floor space hold" if not bad
                           else "fails: " + ", ".join(bad)})
    others = [v for v in ev.violations if v in ("first_stage", "fixed_first") or v.startswith(("unavailable",
                                                                                               "integer"))]
    checks.append({"check": "purchases", "ok": not others, "detail": "whole racks, on sale when bought, the first "
                   "order shared by every scenario" if not others else "fails: " + ", ".join(others)})
    checks.append({"check": "objective", "ok": math.isclose(ev.objective, objective, rel_tol=1e-9, abs_tol=1e-6),
                   "detail": f"recomputed {ev.objective:,.6g}, reported {objective:,.6g}"})
    return checks


def buildout_checks(bo: BuiltOut, sol) -> list[dict]:
    return evaluation_checks(bo.problem, sol.buys, sol.replicas, sol.objective,
                             [d.isoformat() for d in bo.dates], bo.scenario_names)


def check_buildout(d: dict) -> list[dict]:
    """``planner check`` of a build-out's plan.json: every period and scenario re-evaluated from its inputs, and
    the reported first order, installed racks and present cost held to them."""
    inputs = d["inputs"]
    problem = problem_from_inputs(inputs)
    b = inputs["buildout"]
    buys, replicas = np.array(inputs["buys"], dtype=float), np.array(inputs["replicas"], dtype=float)
    checks = evaluation_checks(problem, buys, replicas, float(d["objective_value"]), b["periods"],
                               b["scenario_names"])
    order = {r["hardware"]: r["racks"] for r in d["first_period_order"]}
    bought = {h: int(n) for h, n in zip(b["hardware"], buys[0, 0]) if n}
    checks.append({"check": "first period order", "ok": order == bought,
                   "detail": f"reported {order}, purchases {bought}"})

    installed = installed_of(problem, buys)
    periods = [s["periods"] for s in d["scenarios"]] if d.get("scenarios") else [d["periods"]]
    ok = all({r["hardware"]: r["racks_installed"] for r in per["fleet"] if r["racks_installed"]}
             == {h: int(n) for h, n in zip(b["hardware"], installed[t, s]) if n}
             for s, pers in enumerate(periods) for t, per in enumerate(pers))
    checks.append({"check": "installed racks", "ok": ok, "detail": "each period's installed racks are the "
                   "purchases not yet retired" if ok else "a period's installed racks differ from its purchases"})
    if "columns" in inputs:  # plans written before the periods carried their allocation have none to hold
        checks.append(allocation_check(periods, problem, replicas, installed, inputs["columns"]))
    if problem.rack_site is not None:
        checks.append(sites_check(periods, problem, installed))
    return checks


def sites_check(periods: list, problem, installed: np.ndarray) -> dict:
    """(8) a build-out over several sites: each period's reported sites (``totals.sites``) are the racks installed
    at each, their facility power at its own PUE, within its budget and floor space then."""
    bad = []
    for s, pers in enumerate(periods):
        for t, per in enumerate(pers):
            reported = per["totals"].get("sites") or []
            for k, e in enumerate(reported[:problem.n_sites]):
                # recomputed from the plan's inputs by the function that wrote the report (its cost aside)
                want = period_site_totals(problem, installed[t, s], np.zeros(problem.n_hardware), t, k, e["name"])
                mw, budget = want["facility_power_mw"], problem.site_budgets_w[t, k] / 1e6
                if not (e["racks"] == want["racks"] and math.isclose(e["facility_power_mw"], mw, rel_tol=1e-9,
                                                                     abs_tol=1e-12)
                        and mw <= budget * (1 + 1e-9) and want["racks"] <= problem.site_rack_limits[t, k] + 1e-9):
                    bad.append(f"{per['start_date']} {e['name']}" + (f" ({s})" if len(periods) > 1 else ""))
            if len(reported) != problem.n_sites:
                bad.append(f"{per['start_date']}: {len(reported)} sites reported of {problem.n_sites}")
    return {"check": "sites", "ok": not bad,
            "detail": "each period's racks at each site within its power budget and floor space, as reported"
            if not bad else "fails: " + ", ".join(bad)}


def allocation_check(periods: list, problem, replicas: np.ndarray, installed: np.ndarray, columns: list) -> dict:
    """Each period's allocation rows (what ``planner simulate`` runs) against the plan's replicas [T, S, J]: the
    same columns, each at its replicas or rounded up to whole ones, within the chips of the racks installed."""
    index = {int(c): k for k, c in enumerate(columns)}
    bad = []
    for s, pers in enumerate(periods):
        for t, per in enumerate(pers):
            rows: dict = {}
            for r in per.get("allocation") or []:
                if r.get("column") is not None and r["role"] != "ffn":
                    rows[int(r["column"])] = rows.get(int(r["column"]), 0.0) + float(r["replicas"])
            solved = {int(columns[j]): float(x) for j, x in enumerate(replicas[t, s]) if x > 1e-9}
            same = rows.keys() == solved.keys() and all(
                math.isclose(n, solved[j], rel_tol=1e-6, abs_tol=1e-6)
                or (n > solved[j] and math.isclose(n, math.ceil(solved[j] - 1e-9), abs_tol=1e-6))
                for j, n in rows.items())
            used = sum((n * problem.chips[index[j]] for j, n in rows.items() if j in index),
                       np.zeros(problem.n_hardware))
            fits = bool(np.all(used <= installed[t, s] * problem.chips_per_rack * (1 + 1e-9) + 1e-6))
            if not (same and fits):
                bad.append(per["start_date"] + (f" ({s})" if len(periods) > 1 else ""))
    return {"check": "period allocations", "ok": not bad,
            "detail": "each period's allocation rows hold the plan's replicas (small fractions rounded up within "
            "the racks installed)" if not bad else "the allocation rows differ from the replicas in " + ", ".join(bad)}


def buildout_assumptions(bo: BuiltOut) -> list[str]:
    sc = bo.scenario
    life = sc.service_life_years or sc.horizon_years
    decline = sc.hardware.price_decline_per_year
    goal = {"min_cost": "the expected net present cost", "min_power": "the expected IT power over the horizon "
            "(W-years of the racks installed; the cost is reported beside it)",
            "max_revenue": "the expected net present cost less the present revenue of the demand served (each "
            "workload served up to its demand in each period)"}[sc.objective]
    lines = [
        f"objective: {goal}",
        f"net present cost at {100 * sc.finance.wacc:.3g}% a year over {sc.horizon_years:g} years from "
        f"{sc.start_date}: each rack's capex as an annuity over its {life:g}-year life (the same as paying it when "
        f"bought less its value left at the end), maintenance and energy, for the years it serves within the horizon",
        f"racks retire {life:g} years after purchase (service_life_years); a system can be bought from its "
        f"availability date",
        ("capex per period as given for " + ", ".join(sc.hardware.capex_usd_by_period) + "; otherwise it "
         if sc.hardware.capex_usd_by_period else "capex ") + "falls by " + (", ".join(f"{k} {100 * v:.3g}%" for k, v in decline.items()) if isinstance(decline, dict)
                             else f"{100 * decline:.3g}%") + " a year (hardware.price_decline_per_year)",
        "each period's demand is its workloads' peak, served at their tiers and TTFT with options scored once "
        "(a period changes demand, limits, prices and availability, not what an option serves)",
    ]
    if bo.continuous_replicas:
        lines.append(f"replicas are continuous (a share of a replica's time), racks whole: with "
                     f"{bo.problem.n_periods} periods and {bo.problem.n_scenarios} scenarios the integer replicas "
                     f"would be more than {MAX_INTEGER_REPLICA_VARIABLES:,} variables (docs/OPTIMIZER.md 7.2)")
    elif bo.problem.n_periods > 1 and not bo.problem.integer_later:
        lines.append("the first order packs whole replicas; after the first period replicas are shares of a "
                     "replica's time, racks whole (later periods are forecasts, planned again when they come: "
                     "docs/OPTIMIZER.md 7.2)")
    if sc.demand_scenarios:
        lines.append("two-stage plan: the first period's order is shared by every demand scenario, later orders "
                     "adapt to each; the cost is the expected present cost over "
                     + ", ".join(f"{d.name} ({100 * d.probability:.3g}%)" for d in sc.demand_scenarios))
    return lines


OBJECTIVE_UNITS = {"min_cost": "USD", "min_power": "W-years", "max_revenue": "USD"}


def present_cost_of(bo: BuiltOut, buys: np.ndarray) -> float:
    """Expected USD present cost of purchases [T, S, H], whatever the objective minimised."""
    return float(bo.problem.probability @ np.einsum("tsh,th->s", buys, np.where(bo.problem.available,
                                                                                 bo.present_cost, 0.0)))


def best_of(problem, sol, mean, near):
    """The solver's plan, or a comparison plan that is better where the solver stopped short (a time limit, or a
    gap): the mean-demand plan (its first order shared by construction) and the myopic one where its first orders
    agree are plans of the same two-stage problem, so the answer is never worse than either. The bound stays the
    solver's (the comparisons solve restricted problems); the gap is recomputed against it."""
    candidates = [sol]
    if mean is not None and not mean.violations:  # a plan of the problem only where it holds
        candidates.append(mean)
    ev = held_myopic(problem, near)
    if ev is not None:
        candidates.append(dataclasses.replace(sol, buys=near[0], replicas=near[1], objective=ev.objective,
                                              scenario_cost=ev.scenario_cost, violations=()))
    best = min(candidates, key=lambda c: c.objective)
    if best is sol or best.objective >= sol.objective - 1e-9 * max(abs(sol.objective), 1.0):
        return sol
    gap = (best.objective - sol.best_bound) / max(abs(best.objective), 1e-12) if math.isfinite(sol.best_bound) \
        else sol.relative_gap
    return dataclasses.replace(best, status=sol.status, best_bound=sol.best_bound, relative_gap=max(gap, 0.0),
                               solver=sol.solver, solve_seconds=sol.solve_seconds)


def buildout_infeasibility(bo: BuiltOut, status: str, solver: str) -> str:
    """Why no build-out exists: the first period (of the first demand scenario where they differ) that cannot be
    served even alone, buying anything on sale by then beside the installed racks, with the single-period
    diagnosis of that period (``diagnose.infeasibility_message``: which site, workload or limit); else that every
    period alone can be served but not one after another (racks bought stay installed and draw power until they
    retire, so a period whose limits fall below what an earlier one bought binds)."""
    p = bo.problem
    for s in range(p.n_scenarios):
        for t in range(p.n_periods):
            alone = optimize(myopic_step(p, s, t, p.existing[t]), solver, 30.0, 1e-3)
            if alone.status in HAS_PLAN or alone.status != "infeasible":
                continue
            where = f"period {bo.dates[t]}" + (f" of demand scenario {bo.scenario_names[s]}"
                                              if p.n_scenarios > 1 and t > 0 else "")
            why = infeasibility_message(build_problem(bo.views[s][t], options_from=bo.built))
            return f"no feasible build-out: {where} cannot be served even alone: " + why.removeprefix(
                "no feasible fleet: ")
    return (f"no feasible build-out ({status}): each period alone can be served, but not one after another: racks "
            f"bought for an earlier period stay installed until they retire (service_life_years) and hold a later "
            f"period's power and floor space")


def solve_buildout(scenario, progress=None) -> BuildOutPlan:
    """The build-out of least expected present cost, with its myopic and mean-demand comparisons and checks."""
    if scenario.hardware.max_platforms is not None or scenario.hardware.min_racks:
        raise PlannerError("hardware.max_platforms and hardware.min_racks are not yet supported with periods")
    refuse_spares(scenario, "build-outs over periods")
    settings = scenario.solver
    started = time.monotonic()
    bo = build_buildout(scenario, progress, started + settings.time_limit_s)
    engine_s = time.monotonic() - started
    if progress:
        progress(0, 1, f"solving the build-out ({bo.problem.n_periods} periods, {bo.problem.n_scenarios} "
                       f"scenarios, {bo.problem.n_columns} columns)")
    left = max(settings.time_limit_s - engine_s, 1.0)
    # The comparisons first (side by side where there are two threads: a few seconds), then the build-out itself
    # started from the better of them: without a plan to start from, the MILP's search for one took the time.
    mid = time.monotonic()
    compared, (near, mean) = bo.problem, comparisons(bo, settings.name, left, settings.relative_gap)
    comparisons_s = time.monotonic() - mid
    left = max(started + settings.time_limit_s - time.monotonic(), 1.0)
    start = starting_plan(bo.problem, near, mean)
    sol = optimize(bo.problem, settings.name, left, settings.relative_gap, start)
    if sol.status not in HAS_PLAN and sol.status != "infeasible" and start is not None:
        sol = started_plan(bo.problem, sol, start)  # the time ran out before the MILP found a plan: its start
    bo, sol = repair_buildout_pools(scenario, bo, sol, settings, started + settings.time_limit_s, progress)
    left = max(started + settings.time_limit_s - time.monotonic(), 1.0)
    if sol.status not in HAS_PLAN:
        raise InfeasibleError(buildout_infeasibility(bo, sol.status, settings.name))
    if not same_problem(bo.problem, compared):  # the pools' repair moved the MILP: its comparisons again
        mid = time.monotonic()
        near, mean = comparisons(bo, settings.name, left, settings.relative_gap)
        comparisons_s += time.monotonic() - mid
    myopic_value = myopic_cost = None
    if near is not None:
        ev = evaluate(bo.problem, *near)
        if not ev.violations:
            myopic_value, myopic_cost = ev.objective, present_cost_of(bo, near[0])
    unsized = sol.unsized
    sol = best_of(bo.problem, sol, mean, near)
    buys, replicas = sol.buys, sol.replicas
    order = [{"hardware": name, **({"site": site_of(name)} if scenario.sites else {}), "racks": int(buys[0, 0, k])}
             for k, name in enumerate(bo.built.type_ids) if buys[0, 0, k]]
    solver = {"name": sol.solver, "status": sol.status, "relative_gap": finite(sol.relative_gap),
              "best_bound": finite(sol.best_bound), "candidates_scored": bo.built.candidates_scored,
              "columns": bo.problem.n_columns, "continuous_replicas": bo.continuous_replicas,
              "periods": bo.problem.n_periods,
              "demand_scenarios": bo.problem.n_scenarios}
    periods = [period_tables(bo, buys, replicas, s, sol.shares) for s in range(bo.problem.n_scenarios)]
    installed = installed_of(bo.problem, buys)
    for s, row in enumerate(periods):
        for t, period in enumerate(row):
            period["allocation"] = period_allocation(bo, replicas[t, s], installed[t, s], s, t)
    plan = BuildOutPlan(
        scenario.name, sol.status, scenario.objective, solver, periods, bo.scenario_names,
        bo.problem.probability.tolist(), order, present_cost_of(bo, buys), myopic_cost,
        present_cost_of(bo, mean.buys) if mean is not None else None, buildout_checks(bo, sol),
        buildout_assumptions(bo),
        provenance(), {"engine_s": engine_s, "solve_s": sol.solve_seconds, "comparisons_s": comparisons_s},
        problem_inputs(bo, sol), OBJECTIVE_UNITS[scenario.objective], sol.objective, myopic_value,
        mean.objective if mean is not None else None, sol.revenue if bo.problem.sells else None)
    if unsized:
        plan.assumptions.append(f"time limit: it ended the rounds that size prefill pools again (docs/MODEL.md 9.2) "
                                f"with {unsized} option(s) sized for a larger prefill pool than some period deploys; "
                                f"their TTFT there is the larger pool's until the simulation judges it (raise "
                                f"solver.time_limit_s for the rounds to finish)")
    if bo.problem.rack_site is not None:  # (8) each period's sites as reported, within their limits
        plan.checks.append(sites_check(periods, bo.problem, installed))
        plan.assumptions += [line for s, row in enumerate(periods) for period in row  # KV caches moved between sites
                             for line in cross_site_words(period["allocation"], f" in the period of "
                                                          f"{period['start_date']}" + (f" ({bo.scenario_names[s]})"
                                                                                       if len(periods) > 1 else ""))]
    plan.built = bo
    failed = [c for c in plan.checks if not c["ok"]]
    if failed:
        raise PlannerError("bug: the build-out fails its own check: " + "; ".join(
            c["check"] + ": " + c["detail"] for c in failed[:5]))
    return plan
