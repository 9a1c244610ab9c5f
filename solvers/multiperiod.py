"""The build-out MILP: racks bought per period, under one demand forecast or several (a two-stage stochastic
programme), arrays in, arrays out (docs/OPTIMIZER.md 7).

As ``solvers.milp``: :func:`build` -> :func:`solve` -> :func:`extract`, each callable alone, :func:`optimize`
chaining them, and :func:`evaluate` re-checking a plan without a solver. The columns (deployment options) are the
single-period MILP's, scored once: a period only changes the demand, the site's limits, the prices and which
systems can be bought, never what an option serves.
"""

# Formulation (docs/OPTIMIZER.md 7; the same numbers there)
# ---------------------------------------------------------
# Index sets: periods t = 0..T-1 (start dates y_t in years from the first), demand scenarios s = 0..S-1 with
# probabilities p_s (one scenario: a deterministic plan), hardware h, columns j, demand rows w.
# Data: buy_cost_th (USD of present value per rack bought in period t: see planner.fleet.buildout), available_th,
#       alive_tau,t (a rack bought in tau is still installed in t: bought no later, not yet retired),
#       demand_stw, coverage_jw, chips_jh, chips_per_rack_h, rack_power_w_h, pue, power_budget_t, max_total_racks_t,
#       max_racks_h (a cap on installed racks), existing_th (racks already installed, paid for before: myopic steps).
#
# Variables:
#   b_0h       integer >= 0              racks bought in the first period, shared by every scenario (first stage)
#   b_tsh      integer >= 0, t >= 1      racks bought later in scenario s (recourse); b_tsh = 0 where not available
#   x_tsj      >= 0 (integer where integer_replicas_j, after the first period only where integer_later)
#                                                        replicas of option j in period t, scenario s
#   n_tsh  =   existing_th + sum_{tau <= t, alive_tau,t} b_tau,s,h      (installed racks; an expression)
#
#   min  sum_h buy_cost_0h b_0h + sum_s p_s sum_{t>=1} sum_h buy_cost_th b_tsh                                (O)
#   (no tie term on replicas: a 1e-8 one made SCIP's cuts cut off the optimum of a tiny case, found by the
#   property test; idle replicas are trimmed after the solve instead, by an LP per period and scenario)
#   s.t. for every (t, s):
#   (1) sum_j coverage_jw x_tsj >= demand_stw                       demand served in every period and scenario
#   (2) sum_j chips_jh x_tsj <= chips_per_rack_h n_tsh              chips within the installed racks
#   (3) pue sum_h rack_power_w_h n_tsh <= power_budget_t            the period's facility power
#   (4) sum_h n_tsh <= max_total_racks_t                            the period's floor space
#   (5) n_tsh <= max_racks_h                                        supply caps, on installed racks
#   (6) fixed_first: b_0h = given (the mean-demand plan's first order, evaluated on the scenarios)
#   (8) several sites (OPTIMIZER.md 21): each type h is a system k(h) at a site n(h) (rack_site, rack_system; by
#       default one site and each type its own system). (3) and (4) become one row per period, scenario and site,
#       pue_n sum_{h at n} rack_power_w_h n_tsh <= power_budget_tn and sum_{h at n} n_tsh <= max_total_racks_tn,
#       and (5) one row per system over its sites, sum_{h in k} n_tsh <= max_racks_k (each type of k carries k's
#       cap: its supply cap plus the racks installed at the start at every site). A column stands at one site.
#   (7) max_revenue (group_value given): shares v_tsg in [0, 1] of each sold good g (a workload's rows); (1) becomes
#       sum_j coverage_jw x_tsj >= v_ts,g(w) demand_stw, and (O) subtracts sum_s p_s sum_t sum_g value_stg v_tsg
#       (value_stg: present value of serving g's whole demand in period t of scenario s). buy_cost is then USD.
#   buy_cost is what the objective counts per rack: USD of present cost (min_cost, max_revenue) or, for min_power,
#   W-years of IT power within the horizon; the planner prices the plan in USD either way.
#
# Scaling as the single-period MILP: (1) by demand_stw, (2) by chips_per_rack_h, (3) by pue max_h rack_power_w_h,
# the objective by max buy_cost.

from __future__ import annotations

import dataclasses
import math
import time
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from solvers import backends
from solvers.backends import SolverError
from solvers.formulation import DEFAULT, SiteTypes, frozen
from solvers.milp import FleetProblem, repair_replicas
from solvers.vocabulary import HAS_PLAN

EVAL_TOL = 1e-6


@dataclass(frozen=True, eq=False)
class BuildOutProblem(SiteTypes):
    """Everything the build-out MILP needs, as arrays (formulation at the top of this module)."""

    chips_per_rack: np.ndarray  # [H]
    rack_power_w: np.ndarray  # [H] IT power
    chips: np.ndarray  # [J, H]
    coverage: np.ndarray  # [J, W]
    integer_replicas: np.ndarray  # [J] bool
    demand: np.ndarray  # [S, T, W]
    probability: np.ndarray  # [S], sums to 1
    buy_cost: np.ndarray  # [T, H] present value of buying one rack in period t
    available: np.ndarray  # [T, H] bool
    alive: np.ndarray  # [T, T] bool: alive[tau, t]
    pue: float = 1.0
    # DEFAULT (None): __post_init__ fills the field in, so every built problem has the array
    power_budget_w: np.ndarray = DEFAULT  # [T], inf = none
    max_total_racks: np.ndarray = DEFAULT  # [T], inf = none
    max_racks: np.ndarray = DEFAULT  # [H], inf = none
    existing: np.ndarray = DEFAULT  # [T, H] racks installed before, at no cost
    fixed_first: np.ndarray | None = None  # [H] the first period's purchases, fixed
    group_value: np.ndarray | None = None  # [S, T, G] (7) max_revenue: present value of serving each good whole
    row_group: np.ndarray | None = None  # [W] (7) the good each demand row belongs to
    core_chips: np.ndarray | None = None  # [J, H] (2c) wide stages' core chips in rack chips (OPTIMIZER.md 17)
    # (8) several sites: None is one site, whose figures are pue, power_budget_w and max_total_racks above (then
    # left at no limit with sites: each site's own limits are the rows); read them through site_pues ... rack_systems
    rack_site: np.ndarray | None = None  # [H] each type's site (default all at site 0)
    site_pue: np.ndarray | None = None  # [N]
    site_power_budget_w: np.ndarray | None = None  # [T, N] facility power, inf = none
    site_max_racks: np.ndarray | None = None  # [T, N] inf = no limit
    rack_system: np.ndarray | None = None  # [H] each type's system (default each its own); members carry its cap
    # False: after the first period every replica is a share of a replica's time (racks stay whole): the first
    # order is what is bought now and packs whole replicas; later periods are forecasts (OPTIMIZER.md 7.2)
    integer_later: bool = True

    def __post_init__(self):
        T, H = self.n_periods, self.n_hardware
        defaults = {"power_budget_w": np.full(T, math.inf), "max_total_racks": np.full(T, math.inf),
                    "max_racks": np.full(H, math.inf), "existing": np.zeros((T, H))}
        for name, value in defaults.items():
            if getattr(self, name) is None:
                object.__setattr__(self, name, value)
        for name, dtype in (("chips_per_rack", float), ("rack_power_w", float), ("chips", float),
                            ("coverage", float), ("integer_replicas", bool), ("demand", float),
                            ("probability", float), ("buy_cost", float), ("available", bool), ("alive", bool),
                            ("power_budget_w", float), ("max_total_racks", float), ("max_racks", float),
                            ("existing", float)):
            object.__setattr__(self, name, frozen(getattr(self, name), dtype))
        if self.fixed_first is not None:
            object.__setattr__(self, "fixed_first", frozen(self.fixed_first, float))
        if self.core_chips is not None:
            object.__setattr__(self, "core_chips", frozen(self.core_chips, float))
        for name, kind in (("rack_site", np.int64), ("site_pue", float), ("site_power_budget_w", float),
                           ("site_max_racks", float), ("rack_system", np.int64)):
            if getattr(self, name) is not None:
                object.__setattr__(self, name, frozen(getattr(self, name), kind))
        if self.group_value is not None:
            object.__setattr__(self, "group_value", frozen(self.group_value, float))
            rows = np.arange(self.demand.shape[2]) if self.row_group is None else self.row_group
            object.__setattr__(self, "row_group", frozen(rows, np.int64))
        object.__setattr__(self, "pue", float(self.pue))
        problems = list(self._problems())
        if problems:
            raise ValueError("invalid BuildOutProblem: " + "; ".join(problems))

    def _problems(self):
        S, T, W = self.demand.shape if self.demand.ndim == 3 else (0, 0, 0)
        H, J = self.n_hardware, self.chips.shape[0]
        if self.demand.ndim != 3:
            yield f"demand must be [S, T, W], got shape {self.demand.shape}"
            return
        shapes = {"rack_power_w": (H,), "chips": (J, H), "coverage": (J, W), "integer_replicas": (J,),
                  "probability": (S,), "buy_cost": (T, H), "available": (T, H), "alive": (T, T),
                  "power_budget_w": (T,), "max_total_racks": (T,), "max_racks": (H,), "existing": (T, H)}
        for name, shape in shapes.items():
            if getattr(self, name).shape != shape:
                yield f"{name} has shape {getattr(self, name).shape}, expected {shape}"
        if self.core_chips is not None and self.core_chips.shape != (J, H):
            yield f"core_chips has shape {self.core_chips.shape}, expected ({J}, {H})"
        if self.fixed_first is not None and self.fixed_first.shape != (H,):
            yield f"fixed_first has shape {self.fixed_first.shape}, expected ({H},)"
        if not math.isclose(float(self.probability.sum()), 1.0, rel_tol=1e-9) or np.any(self.probability < 0):
            yield f"probability must be >= 0 and sum to 1, got {self.probability.tolist()}"
        if S > 1 and not np.allclose(self.demand[:, 0], self.demand[0, 0]):
            yield "the first period's demand must be the same in every scenario (it is decided before they differ)"
        if np.any(self.available & ~(np.isfinite(self.buy_cost) & (self.buy_cost > 0))):
            yield "buy_cost must be finite and > 0 where a system is available"
        if not np.all(np.isfinite(self.demand) & (self.demand >= 0)):
            yield "demand must be finite and >= 0"
        yield from self._site_problems()

    def _site_problems(self):
        """(8): one site per type within the sites' arrays, each site's limits by period, no whole-fleet limit
        beside them, each column at one site and each system's types carrying one cap."""
        T, H, N = self.n_periods, self.n_hardware, self.n_sites
        if self.rack_site is None:
            if any(getattr(self, k) is not None for k in ("site_pue", "site_power_budget_w", "site_max_racks")):
                yield "site_pue, site_power_budget_w and site_max_racks need rack_site"
        else:
            if self.rack_site.shape != (H,) or (H and (self.rack_site.min() < 0 or self.rack_site.max() >= N)):
                yield f"rack_site must give each of the {H} types a site in 0..{N - 1} (one entry of site_pue each)"
            if self.site_budgets_w.shape != (T, N) or self.site_rack_limits.shape != (T, N):
                yield f"site_power_budget_w and site_max_racks must be [periods, sites] = ({T}, {N})"
                return
            if np.any(np.isfinite(self.power_budget_w)) or np.any(np.isfinite(self.max_total_racks)):
                yield "with sites (rack_site), give each site's limits (site_power_budget_w, site_max_racks), not " \
                      "power_budget_w or max_total_racks"
            if not np.all(np.isfinite(self.site_pues) & (self.site_pues > 0)):
                yield "site_pue must be finite and > 0"
            if self.rack_site.shape == (H,) and self.chips.shape == (self.n_columns, H):
                on = self.chips > 0
                sites = np.where(on, self.rack_site[None, :], -1)
                spans = np.flatnonzero(on.any(axis=1) & (sites.max(axis=1) != np.where(on, sites, N).min(axis=1)))
                if len(spans):
                    yield f"column {int(spans[0])} uses hardware types at two sites: a replica stands at one (8)"
        if self.rack_systems.shape != (H,) or (H and self.rack_systems.min() < 0):
            yield f"rack_system must give each of the {H} types a system >= 0"
            return
        for members in self.systems:
            if self.max_racks.shape == (H,) and np.any(self.max_racks[members] != self.max_racks[members[0]]):
                yield f"the types {members.tolist()} of one system must carry one cap (max_racks), got " \
                      f"{self.max_racks[members].tolist()}"

    @property
    def sells(self) -> bool:
        return self.group_value is not None

    @property
    def n_periods(self) -> int:
        return int(np.asarray(self.buy_cost).shape[0])

    @property
    def n_hardware(self) -> int:
        return int(np.asarray(self.chips_per_rack).shape[0])

    @property
    def n_scenarios(self) -> int:
        return int(np.asarray(self.demand).shape[0])

    @property
    def n_columns(self) -> int:
        return int(np.asarray(self.chips).shape[0])

    @property
    def integer_by_period(self) -> np.ndarray:
        """[T, J] which replicas are whole in each period: integer_replicas, after the first period only where
        integer_later."""
        later = self.integer_replicas if self.integer_later else np.zeros_like(self.integer_replicas)
        return np.vstack([self.integer_replicas] + [later] * (self.n_periods - 1))

    @property
    def n_sites(self) -> int:
        return 1 if self.site_pue is None else int(len(self.site_pue))

    @property
    def site_budgets_w(self) -> np.ndarray:
        """[T, N] (8) each site's facility power budget by period (power_budget_w with one site)."""
        return self.power_budget_w[:, None] if self.site_power_budget_w is None else self.site_power_budget_w

    @property
    def site_rack_limits(self) -> np.ndarray:
        """[T, N] (8) each site's most racks by period (max_total_racks with one site)."""
        return self.max_total_racks[:, None] if self.site_max_racks is None else self.site_max_racks

    @property
    def systems(self) -> list[np.ndarray]:
        """(5, 8) the types of each system, in the order of their systems' numbers."""
        return [np.flatnonzero(self.rack_systems == k) for k in np.unique(self.rack_systems)]

    @property
    def type_pue(self) -> np.ndarray:
        """[H] the PUE of each type's site."""
        return self.site_pues[self.rack_sites]


@dataclass
class BuildOutModel:
    model: Any  # mathopt.Model (OR-Tools ships no types for MathOpt)
    buys: list  # [T][S][H] variables (period 0: the same variable in every scenario), None where not available
    replicas: list  # [T][S][J]
    shares: list  # [T][S][G] (7) max_revenue, else empty
    solver: str
    objective_scale: float
    build_seconds: float


@dataclass(frozen=True, eq=False)
class BuildOutSolution:
    """A build-out plan: racks bought [T, S, H] (period 0 the same in every scenario), installed [T, S, H],
    replicas [T, S, J]; ``objective`` the expected present cost (USD) recomputed from the buys, ``best_bound`` a
    proven bound on it, ``violations`` what :func:`evaluate` found."""

    buys: np.ndarray
    installed: np.ndarray
    replicas: np.ndarray
    status: str
    objective: float
    best_bound: float
    relative_gap: float
    solver: str
    solve_seconds: float
    build_seconds: float = 0.0
    violations: tuple = field(default_factory=tuple)
    scenario_cost: np.ndarray = field(default_factory=lambda: np.zeros(0))  # [S] buy_cost of each scenario's buys
    shares: np.ndarray = field(default_factory=lambda: np.zeros(0))  # [T, S, G] max_revenue: served shares
    revenue: float = 0.0  # max_revenue: expected present revenue
    unsized: int = 0  # options the planner left sized for larger prefill pools when its time ran out


def replica_upper_bounds(problem: BuildOutProblem) -> np.ndarray:
    """[S, T, J]: no column needs more replicas than cover, alone, every row it serves in that period."""
    cov = problem.coverage[None, None, :, :]
    d = problem.demand[:, :, None, :]
    with np.errstate(divide="ignore", invalid="ignore"):
        need = np.where((cov > 0) & (d > 0), d / np.where(cov > 0, cov, 1.0), 0.0)
    ub = need.max(axis=3, initial=0.0)
    return np.where(problem.integer_by_period[None, :, :], np.ceil(ub * (1.0 - 1e-12)), ub)


def buy_upper_bounds(problem: BuildOutProblem) -> np.ndarray:
    """[T, H]: the racks one period could need (every column at its bound, in any scenario), within the caps, the
    power budget and the floor space of that period; 0 where the system is not available."""
    x_ub = replica_upper_bounds(problem).max(axis=0)  # [T, J]
    chips = x_ub @ problem.chips if problem.core_chips is None else np.maximum(x_ub @ problem.chips,
                                                                               x_ub @ problem.core_chips)
    need = np.ceil(chips / problem.chips_per_rack * (1.0 - 1e-12))  # [T, H]
    ub = np.minimum(need.max(axis=0, keepdims=True), problem.max_racks[None, :])
    site = problem.rack_sites
    ub = np.minimum(ub, problem.site_rack_limits[:, site])  # (4, 8) its own site's floor space
    with np.errstate(divide="ignore"):
        power = problem.site_budgets_w[:, site] / (problem.type_pue * problem.rack_power_w)[None, :]
    ub = np.floor(np.minimum(ub, power) * (1.0 + 1e-12))
    return np.where(problem.available, np.maximum(ub, 0.0), 0.0)


def build(problem: BuildOutProblem, solver_name: str = "scip") -> BuildOutModel:  # noqa: C901
    """The MathOpt model of (1)-(6) and (O)."""
    from ortools.math_opt.python import mathopt

    solver = backends.require(solver_name)
    if not backends.BACKENDS[solver].exact_continuous:
        exact = ", ".join(name for name, b in backends.BACKENDS.items() if b.exact_continuous)
        raise SolverError(f"the build-out MILP is solved with {exact.replace(', ', ' or ')} "
                          f"({backends.BACKENDS[solver].label} rounds its continuous replicas); choose one of: {exact}")
    t0 = time.perf_counter()
    m = mathopt.Model(name="buildout")
    T, S, H, J = problem.n_periods, problem.n_scenarios, problem.n_hardware, problem.n_columns
    b_ub, x_ub = buy_upper_bounds(problem), replica_upper_bounds(problem)
    first = []
    for h in range(H):
        if problem.fixed_first is not None:
            first.append(m.add_integer_variable(lb=float(problem.fixed_first[h]), ub=float(problem.fixed_first[h]),
                                                name=f"b[0,{h}]"))
        elif problem.available[0, h] and b_ub[0, h] > 0:
            first.append(m.add_integer_variable(lb=0.0, ub=float(b_ub[0, h]), name=f"b[0,{h}]"))
        else:
            first.append(None)
    buys = [[first] * S]
    for t in range(1, T):
        buys.append([[m.add_integer_variable(lb=0.0, ub=float(b_ub[t, h]), name=f"b[{t},{s},{h}]")
                      if problem.available[t, h] and b_ub[t, h] > 0 else None for h in range(H)]
                     for s in range(S)])
    integer = problem.integer_by_period
    replicas = [[[m.add_variable(lb=0.0, ub=float(x_ub[s, t, j]), is_integer=bool(integer[t, j]),
                                 name=f"x[{t},{s},{j}]") if x_ub[s, t, j] > 0 else None for j in range(J)]
                 for s in range(S)] for t in range(T)]
    G = problem.group_value.shape[2] if problem.group_value is not None else 0  # (7) sells
    shares = [[[m.add_variable(lb=0.0, ub=1.0, name=f"v[{t},{s},{g}]") for g in range(G)] for s in range(S)]
              for t in range(T)]
    share = problem.chips / problem.chips_per_rack
    core = None if problem.core_chips is None else problem.core_chips / problem.chips_per_rack
    unit = float((problem.type_pue * problem.rack_power_w).max(initial=1.0))
    for t in range(T):
        for s in range(S):
            installed = _installed_terms(problem, buys, t, s)
            xs = replicas[t][s]
            for w in np.flatnonzero(problem.demand[s, t] > 0):
                row = m.add_linear_constraint(lb=0.0 if G else 1.0, name=f"demand[{t},{s},{w}]")
                if G:
                    assert problem.row_group is not None  # filled in with group_value
                    row.set_coefficient(shares[t][s][int(problem.row_group[w])], -1.0)
                for j in np.flatnonzero(problem.coverage[:, w] > 0):
                    if xs[j] is not None:
                        row.set_coefficient(xs[j], float(problem.coverage[j, w] / problem.demand[s, t, w]))
            for h in range(H):
                for name, a in (("chips", share), ("cores", core)):  # (2), and (2c) where a domain has a tail
                    if a is None or (name == "cores" and not np.any(a[:, h] > 0)):
                        continue
                    row = m.add_linear_constraint(ub=float(problem.existing[t, h]), name=f"{name}[{t},{s},{h}]")
                    for v in installed[h]:
                        row.set_coefficient(v, -1.0)
                    for j in np.flatnonzero(a[:, h] > 0):
                        if xs[j] is not None:
                            row.set_coefficient(xs[j], float(a[j, h]))
            add_site_rows(m, problem, installed, t, s, unit)
    scale = float(np.max(np.where(problem.available, problem.buy_cost, 0.0), initial=1.0))
    m.objective.is_maximize = False
    for h in range(H):
        if first[h] is not None:
            m.objective.set_linear_coefficient(first[h], float(problem.buy_cost[0, h] / scale))
    for t in range(1, T):
        for s in range(S):
            for h in range(H):
                if buys[t][s][h] is not None:
                    m.objective.set_linear_coefficient(buys[t][s][h], float(problem.probability[s]
                                                                            * problem.buy_cost[t, h] / scale))
    for t in range(T):
        for s in range(S):
            for g, v in enumerate(shares[t][s]):
                assert problem.group_value is not None  # shares only where it sells (7)
                m.objective.set_linear_coefficient(v, float(-problem.probability[s] * problem.group_value[s, t, g]
                                                            / scale))
    return BuildOutModel(m, buys, replicas, shares, solver, scale, time.perf_counter() - t0)


def add_site_rows(m, problem: BuildOutProblem, installed: list[list], t: int, s: int, unit: float) -> None:
    """(5) each system's cap over its sites, (3) and (4) each site's power budget and floor space (8), in period
    ``t`` of scenario ``s``; ``installed``: [H] the purchase variables installed then. One site's rows keep the
    names they had before sites (power[t,s], racks[t,s]); several sites' carry the site (power[t,s,n])."""
    for k, members in enumerate(problem.systems):
        cap = float(problem.max_racks[members].max())
        terms = [v for h in members for v in installed[h]]
        if math.isfinite(cap) and terms:
            row = m.add_linear_constraint(ub=cap - float(problem.existing[t, members].sum()),
                                          name=f"cap[{t},{s},{k}]")
            for v in terms:
                row.set_coefficient(v, 1.0)
    for n in range(problem.n_sites):
        at = np.flatnonzero(problem.rack_sites == n)
        key = f"{t},{s}" if problem.rack_site is None else f"{t},{s},{n}"
        budget, pue = problem.site_budgets_w[t, n], float(problem.site_pues[n])
        if math.isfinite(budget):
            left = budget - pue * float(problem.rack_power_w[at] @ problem.existing[t, at])
            row = m.add_linear_constraint(ub=left / unit, name=f"power[{key}]")
            for h in at:
                for v in installed[h]:
                    row.set_coefficient(v, float(pue * problem.rack_power_w[h] / unit))
        if math.isfinite(problem.site_rack_limits[t, n]):
            row = m.add_linear_constraint(ub=float(problem.site_rack_limits[t, n] - problem.existing[t, at].sum()),
                                          name=f"racks[{key}]")
            for h in at:
                for v in installed[h]:
                    row.set_coefficient(v, 1.0)


def _installed_terms(problem: BuildOutProblem, buys, t: int, s: int) -> list[list]:
    """[H] lists of the purchase variables installed in period t of scenario s."""
    return [[buys[tau][s][h] for tau in range(t + 1) if problem.alive[tau, t] and buys[tau][s][h] is not None]
            for h in range(problem.n_hardware)]


def solve(built: BuildOutModel, time_limit_s: float = 60.0, relative_gap: float = 1e-3, hint: dict | None = None):
    """(result, wall seconds) of one solver run by ``solvers.backends.run`` (the least limit where none is left:
    MathOpt refuses a negative one); ``hint``: variable -> value of a nearby plan, the solver's starting point (for
    the backends that take one, as in ``solvers.milp.solve``)."""
    params = backends.solve_parameters(built, time_limit_s, relative_gap)
    return backends.run(built, params, backends.hint_parameters(built.solver, hint), failure="failed")


def plan_hint(built: BuildOutModel, buys: np.ndarray, replicas: np.ndarray) -> dict:
    """A plan as variable -> value (period 0's purchase is one variable shared by every scenario)."""
    hint = {}
    for t, per_t in enumerate(built.buys):
        for s, per_s in enumerate(per_t):
            hint.update(backends.hint_from((per_s, buys[t, s]), (built.replicas[t][s], replicas[t, s])))
    return hint


def _values(result, variables) -> np.ndarray:
    flat = [v for v in variables if v is not None]
    got = dict(zip(flat, result.variable_values(flat))) if flat else {}
    return np.array([got.get(v, 0.0) if v is not None else 0.0 for v in variables], dtype=float)


def extract(problem: BuildOutProblem, built: BuildOutModel, result, seconds: float) -> BuildOutSolution:
    T, S, H, J = problem.n_periods, problem.n_scenarios, problem.n_hardware, problem.n_columns
    status = backends.status_of(result)
    dual = float(result.termination.objective_bounds.dual_bound) * built.objective_scale
    if status not in HAS_PLAN:
        empty = np.zeros((T, S, H))
        return BuildOutSolution(empty, empty, np.zeros((T, S, J)), status, math.nan,
                                math.inf if status == "infeasible" else max(dual, 0.0), math.nan, built.solver,
                                seconds, built.build_seconds)
    buys = np.zeros((T, S, H))
    replicas = np.zeros((T, S, J))
    for t in range(T):
        for s in range(S):
            buys[t, s] = np.rint(_values(result, built.buys[t][s]))
            x = np.maximum(_values(result, built.replicas[t][s]), 0.0)
            replicas[t, s] = np.where(problem.integer_by_period[t], np.rint(x), x)
    replicas = trim_replicas(problem, buys, replicas)
    ev = evaluate(problem, buys, replicas)
    if problem.sells:  # cost less revenue can be negative: the bound as the solver gives it
        bound = min(dual, ev.objective) if math.isfinite(dual) else -math.inf
    else:
        bound = min(max(dual, 0.0), ev.objective) if math.isfinite(dual) else 0.0
    return BuildOutSolution(buys, ev.installed, replicas, status, ev.objective, bound,
                            gap_of(problem, ev.objective, bound), built.solver, seconds, built.build_seconds,
                            ev.violations, ev.scenario_cost, ev.shares, ev.revenue)


def gap_of(problem: BuildOutProblem, objective: float, bound: float) -> float:
    """The relative gap of a plan's ``objective`` over a proven ``bound``: on |value| (at least 1) where cost less
    revenue can be negative (max_revenue), else on the cost (0 for a plan that costs nothing)."""
    if problem.sells:
        return (objective - bound) / max(abs(objective), 1.0)
    return (objective - bound) / objective if objective > 0 else 0.0


def trim_replicas(problem: BuildOutProblem, buys: np.ndarray, replicas: np.ndarray) -> np.ndarray:
    """The continuous replicas of each period and scenario re-solved by the single-period MILP's LP repair
    (``solvers.milp.repair_replicas``: the fewest, by the rack value they occupy, that still serve what the plan
    serves, racks and integer replicas held). Idle replicas cost nothing in (O), so a solver may leave some; they
    would inflate each workload's share of the fleet's cost."""
    out = replicas.copy()
    if problem.integer_by_period.all() or not problem.n_columns:
        return out
    n = installed_of(problem, buys)
    value = np.where(problem.available, problem.buy_cost, 0.0).max(axis=0)
    value = np.where(value > 0, value, 1.0)
    for t in range(problem.n_periods):
        for s in range(problem.n_scenarios):
            x = replicas[t, s]
            single = FleetProblem(
                chips_per_rack=problem.chips_per_rack, rack_power_w=problem.rack_power_w,
                annual_cost_usd_per_rack=value, max_racks=np.full(problem.n_hardware, math.inf),
                workload=problem.coverage.argmax(axis=1), capacity=problem.coverage.max(axis=1), chips=problem.chips,
                core_chips=problem.core_chips, integer_replicas=problem.integer_by_period[t], coverage=problem.coverage,
                demand=np.minimum(problem.coverage.T @ x, problem.demand[s, t]) * (1 - 1e-9))
            out[t, s] = repair_replicas(single, n[t, s], x)
    return out


def optimize(problem: BuildOutProblem, solver: str = "scip", time_limit_s: float = 60.0,
             relative_gap: float = 1e-3, start: tuple | None = None) -> BuildOutSolution:
    """build -> solve -> extract. ``start``: (buys [T, S, H], replicas [T, S, J]) of a nearby plan, the solver's
    hint (it need not be feasible here: a plan of the same build-out before its options were sized again)."""
    built = build(problem, solver)
    result, seconds = solve(built, time_limit_s, relative_gap, plan_hint(built, *start) if start else None)
    return extract(problem, built, result, seconds)


def optimize_each_scenario(problem: BuildOutProblem, solver: str = "scip", time_limit_s: float = 60.0,
                           relative_gap: float = 1e-3) -> BuildOutSolution:
    """``optimize`` of a build-out whose first order is fixed (6), one demand scenario at a time. With b_0 given,
    no variable is shared between scenarios, so (O) is sum_s p_s (c_0 b_0 + scenario s's later orders), each
    term a MILP of its own (``scenario_problem``). Each solved to ``relative_gap`` of its own objective leaves
    sum_s p_s (value_s - bound_s) <= relative_gap sum_s p_s value_s: the whole plan within the same gap, from
    S small searches instead of one large one. The plan is theirs side by side, re-evaluated on the whole."""
    if problem.fixed_first is None:
        raise ValueError("optimize_each_scenario needs the first order fixed (fixed_first)")
    deadline = time.monotonic() + time_limit_s
    parts = [optimize(scenario_problem(problem, s), solver, deadline - time.monotonic(), relative_gap)
             for s in range(problem.n_scenarios)]
    seconds, build_seconds = sum(x.solve_seconds for x in parts), sum(x.build_seconds for x in parts)
    failed = next((x for x in parts if x.status not in HAS_PLAN), None)
    if failed is not None:
        empty = np.zeros((problem.n_periods, problem.n_scenarios, problem.n_hardware))
        return BuildOutSolution(empty, empty, np.zeros((problem.n_periods, problem.n_scenarios, problem.n_columns)),
                                failed.status, math.nan, failed.best_bound, math.nan, failed.solver, seconds,
                                build_seconds)
    buys = np.concatenate([x.buys for x in parts], axis=1)
    replicas = np.concatenate([x.replicas for x in parts], axis=1)
    ev = evaluate(problem, buys, replicas)
    bound = float(problem.probability @ np.array([x.best_bound for x in parts]))
    status = next((s for s in ("time_limit", "feasible") if any(x.status == s for x in parts)), "optimal")
    return BuildOutSolution(buys, ev.installed, replicas, status, ev.objective, bound,
                            max(gap_of(problem, ev.objective, bound), 0.0), parts[0].solver, seconds, build_seconds,
                            ev.violations, ev.scenario_cost, ev.shares, ev.revenue)


def scenario_problem(problem: BuildOutProblem, s: int) -> BuildOutProblem:
    """Demand scenario ``s`` alone, with probability 1."""
    return dataclasses.replace(problem, demand=problem.demand[s:s + 1], probability=np.ones(1),
                               group_value=problem.group_value[s:s + 1] if problem.group_value is not None else None)


# ---- evaluate: every row and the objective from a plan alone -------------------------------------------------
@dataclass(frozen=True, eq=False)
class BuildOutEvaluation:
    installed: np.ndarray  # [T, S, H]
    served: np.ndarray  # [T, S, W]
    facility_power_w: np.ndarray  # [T, S] over every site
    scenario_cost: np.ndarray  # [S] present cost of each scenario's purchases
    objective: float  # expected present cost (max_revenue: less the expected present revenue)
    violations: tuple
    shares: np.ndarray = field(default_factory=lambda: np.zeros(0))  # [T, S, G] max_revenue: served shares
    revenue: float = 0.0  # max_revenue: expected present revenue


def installed_of(problem: BuildOutProblem, buys: np.ndarray) -> np.ndarray:
    """[T, S, H] racks installed: existing plus what was bought and has not retired."""
    alive = problem.alive.astype(float)  # [tau, t]
    return problem.existing[:, None, :] + np.einsum("ut,ush->tsh", alive, buys)


def evaluate(problem: BuildOutProblem, buys, replicas, tol: float = EVAL_TOL) -> BuildOutEvaluation:
    """Recompute (1)-(6) and (O) for a plan: buys [T, S, H], replicas [T, S, J]; no solver involved."""
    buys = np.asarray(buys, dtype=float)
    x = np.asarray(replicas, dtype=float)
    T, S, H = problem.n_periods, problem.n_scenarios, problem.n_hardware
    if buys.shape != (T, S, H) or x.shape != (T, S, problem.n_columns):
        raise ValueError(f"plan shapes {buys.shape}, {x.shape}; expected ({T}, {S}, {H}), "
                         f"({T}, {S}, {problem.n_columns})")
    n = installed_of(problem, buys)
    served = np.einsum("tsj,jw->tsw", x, problem.coverage)
    chips_used = np.einsum("tsj,jh->tsh", x, problem.chips)
    core_used = (np.einsum("tsj,jh->tsh", x, problem.core_chips) if problem.core_chips is not None
                 else np.zeros_like(chips_used))
    site_power = np.stack([np.einsum("tsh,h->ts", n[:, :, at], problem.type_pue[at] * problem.rack_power_w[at])
                           for at in (problem.rack_sites == k for k in range(problem.n_sites))], axis=2)  # [T, S, N]
    site_racks = np.stack([n[:, :, problem.rack_sites == k].sum(axis=2) for k in range(problem.n_sites)], axis=2)
    system_racks = np.stack([n[:, :, members].sum(axis=2) for members in problem.systems], axis=2)
    system_cap = np.array([problem.max_racks[members].max() for members in problem.systems])
    power = site_power.sum(axis=2)
    cost = np.where(problem.available, problem.buy_cost, 0.0)
    scenario_cost = np.einsum("tsh,th->s", buys, cost)
    shares, revenue = np.zeros(0), 0.0
    if problem.sells:  # demand is a ceiling: each good sold up to the share its replicas serve
        assert problem.group_value is not None and problem.row_group is not None
        G = problem.group_value.shape[2]
        ratio = np.where(problem.demand > 0, np.einsum("tsw->stw", served) / np.where(problem.demand > 0,
                                                                                        problem.demand, 1.0), np.inf)
        shares = np.ones((S, T, G))
        for w, g in enumerate(problem.row_group):
            shares[:, :, g] = np.minimum(shares[:, :, g], ratio[:, :, w])
        shares = np.clip(shares, 0.0, 1.0)
        revenue = float(np.einsum("s,stg,stg->", problem.probability, shares, problem.group_value))
        shares = np.einsum("stg->tsg", shares)
    violations = []
    for t in range(T):
        for s in range(S):
            d = problem.demand[s, t]
            short = np.flatnonzero((served[t, s] - d) / np.where(d > 0, d, 1.0) < -tol)
            violations += [f"demand[{t},{s},{w}]" for w in short if not problem.sells]
            over = np.flatnonzero((problem.chips_per_rack * n[t, s] - chips_used[t, s]) / problem.chips_per_rack
                                  < -tol)
            violations += [f"chips[{t},{s},{h}]" for h in over]
            short_core = np.flatnonzero((problem.chips_per_rack * n[t, s] - core_used[t, s])
                                        / problem.chips_per_rack < -tol)
            violations += [f"cores[{t},{s},{h}]" for h in short_core]
            violations += [f"cap[{t},{s},{k}]" for k in np.flatnonzero(system_racks[t, s] > system_cap + tol)]
            for k in range(problem.n_sites):  # (8) one site's names as before sites, several sites' with the site
                key = f"{t},{s}" if problem.rack_site is None else f"{t},{s},{k}"
                if site_power[t, s, k] > problem.site_budgets_w[t, k] * (1 + tol) + tol:
                    violations.append(f"power[{key}]")
                if site_racks[t, s, k] > problem.site_rack_limits[t, k] + tol:
                    violations.append(f"racks[{key}]")
    bought_early = (buys > tol) & ~problem.available[:, None, :]
    violations += [f"unavailable[{t},{s},{h}]" for t, s, h in zip(*np.nonzero(bought_early))]
    violations += [f"integer[{t},{s},{h}]" for t, s, h in zip(*np.nonzero(np.abs(buys - np.rint(buys)) > tol))]
    if S > 1 and not np.allclose(buys[0], buys[0, 0]):
        violations.append("first_stage")  # the first order is decided before the scenarios differ
    if problem.fixed_first is not None and not np.allclose(buys[0, 0], problem.fixed_first):
        violations.append("fixed_first")
    objective = float(problem.probability @ scenario_cost) - revenue
    return BuildOutEvaluation(n, served, power, scenario_cost, objective, tuple(violations), shares, revenue)
