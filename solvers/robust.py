"""The robust fleet: one set of racks for many samples of what may happen (a sample-average approximation), arrays
in, arrays out (docs/OPTIMIZER.md 8).

Each sample is a :class:`solvers.milp.FleetProblem` (its prices, budgets, demand and scored options); the fleet is
bought once and must serve every sample, each with its own replicas. As ``solvers.milp``: :func:`build` ->
:func:`solve` -> :func:`extract`, each callable alone, :func:`optimize` chaining them, :func:`evaluate` re-checking a
fleet without a solver, and ``robust_brute_force`` in ``solvers.bruteforce`` finding the same optimum by
enumeration. :func:`topped_up` prices a given fleet on one sample (regret: the base plan's racks kept, the
cheapest additions that serve the sample).
"""

# Formulation (docs/OPTIMIZER.md 8; the same numbers there)
# ---------------------------------------------------------
# Index sets: samples s = 0..S-1 with weights pi_s (sum 1), hardware h (the same systems in every sample), the
# columns j of sample s (its own options), demand rows w, sold goods g (max_revenue).
# Data per sample: its FleetProblem (solvers.milp): p_sh (primary coefficient of the objective), coverage, chips,
#       chips_per_rack, rack power, pue, power budget, rack limit, supply caps, value_sg (max_revenue);
#       K_sh = min(max_racks_sh, max_total_racks_s, power_budget_s / (pue_s rack_power_sh)), the sample's hard cap.
#       late premium e >= 0, or none (no late racks).
#
# Variables:
#   racks_h  integer, 0 <= racks_h <= R_h = max_s R_sh (solvers.milp (5) of each sample)   (bought now, for all)
#   y_sh     integer, 0 <= y_sh <= R_sh, only with a late premium                          (bought late, in s)
#   x_sj     >= 0 (integer where integer_replicas)                                          (replicas in sample s)
#   v_sg     in [0, 1] under max_revenue                                                    (served shares)
#   n_sh  =  racks_h + y_sh                                                                 (installed in s)
#   f_s   =  sum_h p_sh (racks_h + (1 + e) y_sh) - sum_g value_sg v_sg                      (sample s's objective)
#
#   s.t. for every sample s, on its installed racks n_sh:
#   (1) demand rows of solvers.milp (with shares under max_revenue)
#   (2) sum_j chips_sjh x_sj <= chips_per_rack_sh n_sh
#   (3) pue_s sum_h rack_power_sh n_sh <= power_budget_s          (4) sum_h n_sh <= max_total_racks_s
#   (5) n_sh <= K_sh where K_sh < R_h (+ R_sh with late racks): the box alone does not hold it
#   (7) of solvers.milp on racks_h (the platform limit and minimum purchases; the same in every sample)
#   (M) statistic mean:  min sum_s pi_s f_s
#   (Q) statistic percentile q (0 < q < 100): min t, t >= L,
#        f_s <= t + M_s z_s,  z_s binary,  sum_s pi_s z_s <= 1 - q/100
#        so t is at least f_s on samples of weight >= q/100: the q-th percentile of f (the smallest value v with
#        P(f <= v) >= q/100). M_s = sum_h p_sh (R_h + (1 + e) R_sh) - L with L = min_s (-sum_g value_sg) (0
#        without revenue) is the most f_s - t can be anywhere in the box, so z_s = 1 frees row s, cutting off
#        nothing.
#   (Q2) after (Q) gives t*: (M) s.t. the rows of (Q) with t = t* (1 + 1e-9): the lowest mean among the fleets of
#        the least percentile.
#   No tie terms: a plan reports only its racks and each sample's objective, recomputed from them (evaluate).
#   Without late racks the fleet must serve every sample as bought; with a late premium of 0 buying late costs
#   nothing extra and racks_h = 0 (each sample buys its own optimum) is optimal: the premium is what makes buying
#   ahead a decision.
#
# Scaling: rows (1) as solvers.milp scales them, (2) by chips_per_rack_sh, (3) by pue_s max_h rack_power_sh; the
# objective and the f_s rows by max_sh p_sh.

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from solvers import backends, formulation, milp
from solvers.objectives import objective as objective_named
from solvers.vocabulary import HAS_PLAN

MEAN = "mean"
CAP_SLACK = 1e-9  # (Q2)'s cap on the percentile, relative


@dataclass(frozen=True, eq=False)
class RobustProblem:
    """The samples a fleet must serve, their weights and the statistic of their objectives to minimise."""

    samples: tuple  # [S] solvers.milp.FleetProblem, the same hardware types in each
    weight: np.ndarray = formulation.DEFAULT  # [S] sums to 1; default (None) equal, filled in by __post_init__
    percentile: float | None = None  # None: the mean (M); q in (0, 100): the q-th percentile (Q)
    late_premium: float | None = None  # e: late racks cost (1 + e) x; None: no late racks

    def __post_init__(self):
        object.__setattr__(self, "samples", tuple(self.samples))
        S = len(self.samples)
        w = np.full(S, 1.0 / max(S, 1)) if self.weight is None else np.asarray(self.weight, dtype=float)
        object.__setattr__(self, "weight", formulation.frozen(w, float))
        problems = list(self._problems())
        if problems:
            raise ValueError("invalid RobustProblem: " + "; ".join(problems))

    def _problems(self):
        if not self.samples:
            yield "no samples"
            return
        first = self.samples[0]
        if self.weight.shape != (len(self.samples),) or np.any(self.weight < 0) or not math.isclose(
                float(self.weight.sum()), 1.0, rel_tol=1e-9):
            yield f"weight must be {len(self.samples)} values >= 0 summing to 1"
        if self.percentile is not None and not 0.0 < float(self.percentile) < 100.0:
            yield f"percentile = {self.percentile!r}, expected 0 < q < 100 (None: the mean)"
        if self.late_premium is not None:
            if not (math.isfinite(self.late_premium) and self.late_premium >= 0):
                yield f"late_premium = {self.late_premium!r}, expected >= 0 (None: no late racks)"
            if not objective_named(first.objective).is_cost:
                yield "a late premium needs a cost objective: a rack bought late draws the same power and emits the same"
        for s, p in enumerate(self.samples[1:], start=1):
            if p.n_hardware != first.n_hardware:
                yield f"sample {s} has {p.n_hardware} hardware types, sample 0 has {first.n_hardware}"
                return
            if p.objective != first.objective:
                yield f"sample {s}'s objective is {p.objective}, sample 0's {first.objective}"
            if p.max_platforms != first.max_platforms or not np.array_equal(p.min_racks, first.min_racks):
                yield f"sample {s}'s max_platforms or min_racks differ from sample 0's (they limit the one fleet)"

    @property
    def n_samples(self) -> int:
        return len(self.samples)

    @property
    def n_hardware(self) -> int:
        return self.samples[0].n_hardware

    @property
    def objective(self) -> str:
        return self.samples[0].objective

    @property
    def statistic(self) -> str:
        return MEAN if self.percentile is None else f"p{self.percentile:g}"


@dataclass
class RobustModel:
    """What :func:`build` returns: the MathOpt model and its variables; it has what solvers.milp.solve reads of a
    model (``model``, ``solver``, ``cpsat_var_scaling``: solvers.backends.solve_parameters and run)."""

    model: Any  # mathopt.Model (OR-Tools ships no types for MathOpt)
    racks: list  # [H]
    replicas: list  # [S][J_s]
    shares: list  # [S][G] (max_revenue)
    scale: float
    build_seconds: float
    solver: str
    t: Any = None  # (Q) the percentile variable (mathopt.Variable)
    exceeds: list = field(default_factory=list)  # (Q) z_s
    cpsat_var_scaling: float = 1.0
    late: list = field(default_factory=list)  # [S][H] y_sh (empty lists without late racks)


@dataclass(frozen=True, eq=False)
class RobustSolution:
    """The fleet, each sample's replicas and objective f_s (recomputed from the plan), and the statistic."""

    racks: np.ndarray  # [H]
    replicas: tuple  # [S] arrays
    shares: tuple  # [S] arrays (max_revenue)
    sample_objective: np.ndarray  # [S] f_s
    value: float  # the statistic of f_s
    mean: float
    status: str
    best_bound: float  # a proven lower bound on value (of (Q) or (M); (Q2) keeps (Q)'s)
    relative_gap: float
    solver: str
    solve_seconds: float
    violations: tuple = ()
    late: np.ndarray = field(default_factory=lambda: np.zeros((0, 0)))  # [S, H] y_sh: racks bought late in each
    # sample (zeros without a premium; every solution built here gives them)


def sample_statistic(values, weight, percentile: float | None) -> float:
    """The weighted mean, or the q-th percentile: the smallest value v with P(f <= v) >= q/100."""
    f, w = np.asarray(values, dtype=float), np.asarray(weight, dtype=float)
    if percentile is None:
        return float(w @ f)
    order = np.argsort(f, kind="stable")
    reached = np.cumsum(w[order]) >= percentile / 100.0 - 1e-12
    return float(f[order][int(np.argmax(reached))])


def rack_upper_bounds(problem: RobustProblem) -> np.ndarray:
    """R_h: the most racks of type h any one sample could use (solvers.milp (5))."""
    return np.max([formulation.rack_upper_bounds(p) for p in problem.samples], axis=0)


def hard_caps(p) -> np.ndarray:
    """K_sh of one sample: its supply cap, and its type's site's rack limit and power budget (solvers.milp (16); one
    site: the scenario's), in racks of each type."""
    return np.floor(np.minimum(p.max_racks, formulation.site_caps(p)) * (1.0 + 1e-12))


def _primary(problem: RobustProblem) -> np.ndarray:
    """[S, H] p_sh."""
    return np.array([formulation.primary_coefficients(p) for p in problem.samples])


def objective_floor(problem: RobustProblem) -> float:
    """L of (Q): no f_s is below it (the most revenue any sample can earn, negated; 0 without revenue)."""
    if not objective_named(problem.objective).sells_shares:
        return 0.0
    return float(min(-p.group_value.sum() for p in problem.samples))


def _add_cap_rows(m, p, s: int, racks, late, r_ub) -> None:
    """(5) of sample s: its hard caps on the installed racks, where the variables' box does not already hold them;
    and (16) each system at several sites within its supply cap over them, sum_{h in k} (racks_h + late_sh) <= cap_k."""
    caps = hard_caps(p)
    most = r_ub + (formulation.rack_upper_bounds(p) if late else 0.0)  # the installed racks' box
    installed = formulation.installed_terms(racks, late)
    for h in np.flatnonzero(caps < most).tolist():
        row = m.add_linear_constraint(ub=float(caps[h]), name=f"cap[s={s},h={h}]")
        for v in installed[h]:
            row.set_coefficient(v, 1.0)
    formulation.add_supply_rows(m, p, racks, tag=f"s={s},", late=late)


def build(problem: RobustProblem, solver_name: str = "scip", cap: float | None = None) -> RobustModel:
    """The MathOpt model of (M), or of (Q) (``cap`` given: of (Q2), the mean under the percentile ``cap``)."""
    from ortools.math_opt.python import mathopt

    solver = backends.require(solver_name)
    t0 = time.perf_counter()
    m = mathopt.Model(name="robust-fleet")
    r_ub = rack_upper_bounds(problem)
    racks = [m.add_integer_variable(lb=0.0, ub=float(r_ub[h]), name=f"racks[{h}]")
             for h in range(problem.n_hardware)]
    primary = _primary(problem)
    scale = float(primary.max())
    late_factor = None if problem.late_premium is None else 1.0 + float(problem.late_premium)
    sells = objective_named(problem.objective).sells_shares
    replicas, shares, late_racks, f_terms = [], [], [], []
    bounds = [formulation.replica_upper_bounds(p) for p in problem.samples]
    scaling = backends.cpsat_var_scaling(np.concatenate([b[~p.integer_replicas]
                                                         for b, p in zip(bounds, problem.samples)]
                                                    + [np.zeros(1)]))
    big_late = np.zeros(problem.n_samples)
    for s, p in enumerate(problem.samples):
        x_ub = formulation.padded_replica_bounds(bounds[s], p.integer_replicas, solver, scaling)  # as milp.build
        x = [m.add_variable(lb=0.0, ub=float(x_ub[j]), is_integer=bool(p.integer_replicas[j]), name=f"x[{s},{j}]")
             for j in range(p.n_columns)]
        v = ([m.add_variable(lb=0.0, ub=1.0, name=f"share[{s},{g}]") for g in range(len(p.group_value))]
             if sells else [])
        y = []
        if late_factor is not None:
            y_ub = formulation.rack_upper_bounds(p)
            y = [m.add_integer_variable(lb=0.0, ub=float(y_ub[h]), name=f"late[{s},{h}]")
                 for h in range(problem.n_hardware)]
            big_late[s] = late_factor * float(primary[s] @ y_ub)
        tag = f"s={s},"
        formulation.add_demand_rows(m, p, x, v, tag)
        formulation.add_chip_rows(m, p, racks, x, tag, y)
        formulation.add_power_row(m, p, racks, tag, y, x)
        formulation.add_total_racks_row(m, p, racks, tag, y)
        _add_cap_rows(m, p, s, racks, y, r_ub)
        replicas.append(x)
        shares.append(v)
        late_racks.append(y)
        f_terms.append([(racks[h], primary[s, h] / scale) for h in range(problem.n_hardware)]
                       + [(y[h], late_factor * primary[s, h] / scale) for h in range(len(y))]
                       + [(v[g], -float(p.group_value[g]) / scale) for g in range(len(v))]
                       + [(x[j], float(c) / scale) for j, c in enumerate(formulation.column_primary_coefficients(p))
                          if c > 0])
    if late_factor is None:  # (7) on the fleet: every sample installs it as bought
        formulation.add_platform_rows(m, problem.samples[0], racks, r_ub)
    else:  # and on what each sample installs, its late racks with it (a system bought late is bought)
        for s, p in enumerate(problem.samples):
            formulation.add_platform_rows(m, p, racks, r_ub, f"s={s},", late_racks[s], formulation.rack_upper_bounds(p))
    t, exceeds = None, []
    if problem.percentile is not None:
        floor = objective_floor(problem)
        t = m.add_variable(lb=floor / scale, name="t")
        exceeds = [m.add_binary_variable(name=f"z[{s}]") for s in range(problem.n_samples)]
        for s, terms in enumerate(f_terms):
            big = (float(primary[s] @ r_ub) + big_late[s] - floor) / scale
            row = m.add_linear_constraint(ub=0.0, name=f"percentile[s={s}]")
            for var, c in terms:
                row.set_coefficient(var, c)
            row.set_coefficient(t, -1.0)
            row.set_coefficient(exceeds[s], -big)
        tail = m.add_linear_constraint(ub=1.0 - problem.percentile / 100.0 + 1e-9, name="tail")
        for s, z in enumerate(exceeds):
            tail.set_coefficient(z, float(problem.weight[s]))
    m.objective.clear()
    m.objective.is_maximize = False
    if problem.percentile is not None and cap is None:
        m.objective.set_linear_coefficient(t, 1.0)
    else:
        if t is not None:  # (Q2): the percentile's (Q) ran first, and cap is its t*
            assert cap is not None
            t.upper_bound = (cap + CAP_SLACK * max(abs(cap), 1.0)) / scale
            t.lower_bound = min(t.lower_bound, t.upper_bound)
        for s, terms in enumerate(f_terms):
            for var, c in terms:
                m.objective.set_linear_coefficient(var, m.objective.get_linear_coefficient(var)
                                                   + float(problem.weight[s]) * c)
    return RobustModel(m, racks, replicas, shares, scale, time.perf_counter() - t0, solver, t, exceeds, scaling,
                       late_racks)


def solve(built: RobustModel, time_limit_s: float = 60.0, relative_gap: float = 1e-4, hint: dict | None = None):
    """(result, wall seconds) of one solver run, by solvers.milp.solve (its parameters, stdout guard, interrupt
    handling and errors); ``hint`` (variable -> value, :func:`hint_of`): a known plan to start from."""
    raw = milp.solve(built, backends.solver_seconds(time_limit_s), relative_gap, hint=hint)
    return raw.result, raw.wall_seconds


def extract(problem: RobustProblem, built: RobustModel, result, seconds: float) -> RobustSolution:
    """The fleet read back (racks rounded), each sample's objective recomputed by :func:`evaluate`."""
    status = backends.status_of(result)
    H, S = problem.n_hardware, problem.n_samples
    if status not in HAS_PLAN:
        return RobustSolution(np.zeros(H), (), (), np.full(S, math.nan), math.nan, math.nan, status, math.nan,
                              math.nan, built.solver, seconds, late=np.zeros((S, H)))
    racks = np.rint(np.asarray(result.variable_values(built.racks), dtype=float))
    late = np.array([np.rint(np.asarray(result.variable_values(y), dtype=float)) if y else np.zeros(H)
                     for y in built.late])
    replicas, shares = [], []
    for s, p in enumerate(problem.samples):
        x = np.maximum(np.asarray(result.variable_values(built.replicas[s]), dtype=float), 0.0)
        x = np.where(p.integer_replicas, np.rint(x), x)
        replicas.append(milp.repair_replicas(p, racks + late[s], x))
        shares.append(np.clip(np.asarray(result.variable_values(built.shares[s]), dtype=float), 0.0, 1.0)
                      if built.shares[s] else None)
    ev = evaluate(problem, racks, replicas, shares, late)
    bound = float(result.termination.objective_bounds.dual_bound) * built.scale
    gap = abs(ev.value - bound) / max(abs(ev.value), 1e-9) if math.isfinite(bound) else math.inf
    return RobustSolution(racks, tuple(replicas), tuple(ev.shares), ev.sample_objective, ev.value,
                          float(problem.weight @ ev.sample_objective), status, min(bound, ev.value), gap,
                          built.solver, seconds, ev.violations, late)


def hint_of(problem: RobustProblem, built: RobustModel, sol: RobustSolution) -> dict:
    """A solution of ``built`` from a plan of the same samples: its racks, late racks, replicas and shares, and
    for (Q) t at the plan's percentile with z_s = 1 on the samples above it (of weight <= 1 - q/100, by the
    percentile's definition)."""
    hint = backends.hint_from((built.racks, sol.racks))
    for s in range(problem.n_samples):
        hint.update(backends.hint_from((built.late[s], sol.late[s]), (built.replicas[s], sol.replicas[s]),
                                       (built.shares[s], sol.shares[s] if built.shares[s] else ())))
    if built.t is not None:
        t = sample_statistic(sol.sample_objective, problem.weight, problem.percentile)
        hint[built.t] = t / built.scale
        hint.update({z: float(sol.sample_objective[s] > t) for s, z in enumerate(built.exceeds)})
    return hint


MEAN_TIME_SHARE = 0.3  # a percentile's solve first spends this share of its time on the mean, its starting plan


def known_plan(problem: RobustProblem, racks, replicas, late=None) -> RobustSolution | None:
    """A fleet found elsewhere (e.g. the base plan, topped up in each sample) as a solution of ``problem``, checked
    by :func:`evaluate`; None where it breaks a row."""
    late = np.zeros((problem.n_samples, problem.n_hardware)) if late is None else np.asarray(late, dtype=float)
    ev = evaluate(problem, racks, replicas, None, late)
    if ev.violations:
        return None
    f = ev.sample_objective
    return RobustSolution(np.asarray(racks, dtype=float), tuple(np.asarray(x, dtype=float) for x in replicas),
                          ev.shares, f, ev.value, float(problem.weight @ f), "feasible", -math.inf, math.inf, "",
                          0.0, (), late)


def _better_of(problem: RobustProblem, found: RobustSolution, known: RobustSolution | None) -> RobustSolution:
    """The solver's plan, or the known one where that is better (or the solver has none), with the solver's bound."""
    import dataclasses

    if known is None:
        return found
    value = sample_statistic(known.sample_objective, problem.weight, problem.percentile)
    usable = found.status in HAS_PLAN and not found.violations
    if usable and found.value <= value:
        return found
    bound = found.best_bound if usable else -math.inf
    return dataclasses.replace(known, value=value, best_bound=min(bound, value), status="feasible", solver=found.solver,
                               relative_gap=abs(value - bound) / max(abs(value), 1e-9),
                               solve_seconds=found.solve_seconds)


RELAXED_TIME_SHARE = 0.25  # the relaxed start may take this share of the time limit


def relaxed_start(problem: RobustProblem, solver: str, time_limit_s: float, relative_gap: float):
    """A known plan from the relaxation: every replica continuous (solved in a fraction of the integer model's
    time), its fleet then topped up in each sample with whole replicas (at the late premium; without one, by the
    most any sample adds, kept for all). None where that fails a row."""
    import dataclasses

    started = time.perf_counter()
    relaxed = dataclasses.replace(problem, samples=tuple(
        dataclasses.replace(p, integer_replicas=np.zeros(p.n_columns, dtype=bool)) for p in problem.samples))
    sol = optimize(relaxed, solver, RELAXED_TIME_SHARE * time_limit_s, relative_gap, relax=False)
    if sol.status not in HAS_PLAN or sol.violations:
        return None
    fleet, late, replicas = sol.racks, [], []
    premium = problem.late_premium if problem.late_premium is not None else 0.0
    for s, p in enumerate(problem.samples):
        left = time_limit_s - (time.perf_counter() - started)
        if left <= 0.05:
            return None
        top = topped_up(p, fleet + sol.late[s], solver, left, relative_gap, premium)
        if top.status not in HAS_PLAN or top.violations:
            return None
        late.append(top.racks - fleet)
        replicas.append(top.replicas)
    late_racks = np.array(late)
    if problem.late_premium is None and late_racks.sum() > 0:
        fleet, late_racks = fleet + late_racks.max(axis=0), np.zeros_like(late_racks)
    return known_plan(problem, fleet, replicas, late_racks)


def optimize(problem: RobustProblem, solver: str = "scip", time_limit_s: float = 60.0,
             relative_gap: float = 1e-4, start: RobustSolution | None = None, relax: bool = True) -> RobustSolution:
    """build -> solve -> extract, from the better of ``start`` (a known plan, :func:`known_plan`) and, where some
    replicas are integer (``relax``), :func:`relaxed_start`: a hint, and the answer where the solver ends worse. A
    percentile starts from the least-mean fleet (its big-M rows make a poor first plan hard to find), then solves
    (Q) from it, then (Q2): the lowest mean at that percentile."""
    import dataclasses

    started = time.perf_counter()
    if relax and any(p.integer_replicas.any() for p in problem.samples):
        quick = relaxed_start(problem, solver, time_limit_s, relative_gap)
        options = [c for c in (start, quick) if c is not None]
        start = min(options, key=lambda c: sample_statistic(c.sample_objective, problem.weight, problem.percentile),
                    default=None)
        time_limit_s = max(time_limit_s - (time.perf_counter() - started), 0.05)
        started = time.perf_counter()
    if problem.percentile is None:
        built = build(problem, solver)
        hint = hint_of(problem, built, start) if start is not None else None
        return _better_of(problem, extract(problem, built, *solve(built, time_limit_s, relative_gap, hint)), start)
    mean_problem = dataclasses.replace(problem, percentile=None)
    mean_start = optimize(mean_problem, solver, MEAN_TIME_SHARE * time_limit_s, relative_gap, start, relax=False)
    if mean_start.status == "infeasible":
        return mean_start
    usable = mean_start.status in HAS_PLAN and not mean_start.violations
    candidates = [c for c in (mean_start if usable else None, start) if c is not None]
    known = min(candidates, key=lambda c: sample_statistic(c.sample_objective, problem.weight, problem.percentile),
                default=None)
    built = build(problem, solver)
    left = time_limit_s - (time.perf_counter() - started)
    first = extract(problem, built, *solve(built, left, relative_gap,
                                           hint_of(problem, built, known) if known is not None else None))
    first = _better_of(problem, first, known)
    if first.status not in HAS_PLAN or first.violations:
        return first
    left = time_limit_s - (time.perf_counter() - started)
    if left <= 0.05:
        return first
    capped = build(problem, solver, cap=first.value)
    second = extract(problem, capped, *solve(capped, left, relative_gap, hint_of(problem, capped, first)))
    if second.status not in HAS_PLAN or second.violations or second.value > first.value * (1 + 1e-6) + 1e-6:
        return first
    return dataclasses.replace(second, best_bound=first.best_bound, relative_gap=first.relative_gap,
                               status=first.status, solve_seconds=time.perf_counter() - started)


@dataclass(frozen=True)
class RobustEvaluation:
    sample_objective: np.ndarray
    value: float
    violations: tuple
    shares: tuple


def evaluate(problem: RobustProblem, racks, replicas, shares=None, late=None) -> RobustEvaluation:
    """Every sample's rows and objective f_s for one fleet, its late racks and replicas, and the statistic; no
    solver involved (each sample by solvers.milp.evaluate on its installed racks, late racks at the premium)."""
    racks = np.asarray(racks, dtype=float)
    f, violations, served = np.zeros(problem.n_samples), [], []
    for s, p in enumerate(problem.samples):
        y = np.zeros(problem.n_hardware) if late is None else np.asarray(late[s], dtype=float)
        if np.any(y > 0.5) and problem.late_premium is None:
            violations.append(f"sample {s}: late racks without a late premium")
        ev = milp.evaluate(p, racks + y, replicas[s], None if shares is None else shares[s])
        premium = 0.0 if problem.late_premium is None else problem.late_premium
        f[s] = ev.objective + premium * float(formulation.primary_coefficients(p) @ y)
        violations += [f"sample {s}: {v}" for v in ev.violations]
        served.append(ev.shares)
    return RobustEvaluation(f, sample_statistic(f, problem.weight, problem.percentile), tuple(violations),
                            tuple(served))


def topped_up(problem, fleet, solver: str = "scip", time_limit_s: float = 60.0, relative_gap: float = 1e-4,
              late_premium: float = 0.0) -> milp.FleetSolution:
    """The best plan of one sample (a FleetProblem) that keeps ``fleet``'s racks and buys what else it needs
    ((8) of solvers.milp), each added rack at (1 + ``late_premium``) x its cost (its objective counts them so);
    status infeasible, without a solve, where a cap is below the kept racks."""
    import dataclasses

    kept = np.rint(np.asarray(fleet, dtype=float))
    p = dataclasses.replace(problem, racks_at_least=kept)
    over = np.flatnonzero(kept > formulation.rack_upper_bounds(p))
    if len(over):
        return milp.FleetSolution(kept, np.zeros(p.n_columns), "infeasible", math.inf, math.inf, math.inf, solver,
                                  0.0, detail="the kept racks exceed this sample's supply cap, rack limit or power "
                                              f"budget (hardware index {int(over[0])})")
    if late_premium == 0.0:
        return milp.optimize(p, solver, time_limit_s, relative_gap, fewest_platforms=False)
    if not objective_named(p.objective).is_cost:
        raise ValueError("a late premium needs a cost objective: a rack bought late draws the same power and emits "
                         "the same")
    # every rack at (1 + e) c, less e c on the kept ones: kept at c, added at (1 + e) c (racks >= kept)
    dear = dataclasses.replace(p, annual_cost_usd_per_rack=p.annual_cost_usd_per_rack * (1.0 + late_premium))
    sol = milp.optimize(dear, solver, time_limit_s, relative_gap, fewest_platforms=False)
    if sol.status not in HAS_PLAN:
        return sol
    rebate = late_premium * float(p.annual_cost_usd_per_rack @ kept)
    return dataclasses.replace(sol, objective=sol.objective - rebate, best_bound=sol.best_bound - rebate)
