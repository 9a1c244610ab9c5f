"""Robustness over a sweep's samples (docs/OPTIMIZER.md 8, docs/INTERFACE.md 2.9): the base plan's regret in each
sample (its racks kept, the cheapest additions that serve the sample, against the sample's own optimum) and the
robust fleet (``solvers.robust``: one fleet for every sample, least mean or percentile), with its regret beside.

Regret is in the base scenario objective's unit (USD/year for min_cost and max_revenue, W of IT power for
min_power); a variant whose objective differs from the base's has none.
"""

from __future__ import annotations

import math
import os
import re
import time
from dataclasses import dataclass

import numpy as np

from planner.errors import InfeasibleError, InputError, PlannerError
from planner.fleet.check import check
from planner.fleet.plan import extract_plan
from planner.fleet.problem import refuse_spares
from planner.fleet.solve import repair_pools, size_decode_queues
from solvers import milp
from solvers.robust import RobustProblem, known_plan, optimize, sample_statistic, topped_up
from solvers.vocabulary import HAS_PLAN

MAX_ROBUST_SAMPLES = 400  # the robust MILP holds every sample's columns at once
UNITS = {"min_cost": "usd_per_year", "max_revenue": "usd_per_year", "min_power": "w", "max_served": "usd_per_year",
         "min_carbon": "kg_co2e_per_year"}


def objective_unit(objective: str) -> str:
    return UNITS[objective]


def parse_statistic(text: str | None) -> float | None:
    """``mean`` -> None; ``pNN`` -> NN (0 < NN < 100, e.g. p90, p97.5). InputError names ``--robust``."""
    key = str(text).strip().lower()
    if key == "mean":
        return None
    m = re.fullmatch(r"p(\d+(?:\.\d+)?)", key)
    if m and 0.0 < float(m.group(1)) < 100.0:
        return float(m.group(1))
    raise InputError(f"expected mean or pNN (a percentile, 0 < NN < 100, e.g. p90), got {text!r}",
                     field="--robust")


def statistic_name(percentile: float | None) -> str:
    return "mean" if percentile is None else f"p{percentile:g}"


@dataclass(frozen=True)
class BaseFleet:
    """The base plan's racks (in the order of its hardware ids) and, where every variant reuses its options, its
    replicas; what each sample's regret starts from. ``late_premium``: what a rack bought late costs extra (None:
    no late racks)."""

    hardware: tuple
    racks: np.ndarray
    replicas: np.ndarray | None
    objective: str
    solver: str
    time_limit_s: float
    relative_gap: float
    late_premium: float | None = None


def base_fleet_of(plan, reuse: bool, late_premium: float | None) -> BaseFleet:
    sol, built = plan.solution, plan.built
    settings = built.scenario.solver
    return BaseFleet(tuple(built.type_ids), np.asarray(sol.racks, dtype=float),
                     np.asarray(sol.replicas, dtype=float) if reuse else None, built.problem.objective,
                     settings.name, settings.time_limit_s, settings.relative_gap, late_premium)


def base_plan_in(plan, base: BaseFleet | None):
    """The base plan in one solved variant: (serves as bought, racks added, value, late racks [H], replicas), the
    value where it has one (as bought; with a late premium, topped up at it), else (False, added, None, None, None);
    None where it cannot be tried (no plan, another objective or other systems)."""
    if base is None or plan is None or plan.solution is None:
        return None
    problem = plan.built.problem
    if problem.objective != base.objective or tuple(plan.built.type_ids) != base.hardware:
        return None
    if base.replicas is not None and len(base.replicas) == problem.n_columns and problem.objective != "max_revenue":
        ev = milp.evaluate(problem, base.racks, base.replicas)  # the base plan as it stands, no solve
        if not ev.violations:
            return True, 0, ev.objective, np.zeros(problem.n_hardware), base.replicas
    premium = base.late_premium or 0.0
    sol = topped_up(problem, base.racks, base.solver, base.time_limit_s, base.relative_gap, premium)
    if sol.status not in HAS_PLAN or sol.violations:
        return False, None, None, None, None
    late = sol.racks - base.racks
    added = int(round(float(late.sum())))
    if added and base.late_premium is None:
        return False, added, None, None, None
    return added == 0, added, sol.objective, late, sol.replicas


def base_plan_columns(found, optimum: float | None, unit: str) -> dict:
    """The base plan in one variant as columns, from what :func:`base_plan_in` gave (None: it could not be tried)
    and the variant's optimum: ``base_plan_serves`` (its racks as bought serve the variant),
    ``base_plan_added_racks`` (the fewest-cost racks it would add), and ``base_plan_<unit>`` and
    ``base_plan_regret_<unit>`` (its value less the variant's optimum): as bought where it serves; with a late
    premium, topped up at that premium where it does not; else null."""
    out = {"base_plan_serves": None, "base_plan_added_racks": None, f"base_plan_{unit}": None,
           f"base_plan_regret_{unit}": None}
    if found is None:
        return out
    serves, added, value = found[:3]
    out.update({"base_plan_serves": serves, "base_plan_added_racks": added})
    if value is not None:
        out.update({f"base_plan_{unit}": value, f"base_plan_regret_{unit}": value - optimum})
    return out


@dataclass
class RobustOutcome:
    """What ``robust_fleet`` found: the solution, the variants it used (in sample order) and their optima."""

    solution: object  # solvers.robust.RobustSolution
    variants: list
    optimum: np.ndarray
    hardware: list
    percentile: float | None
    late_premium: float | None = None

    @property
    def value_by_variant(self) -> dict:
        return dict(zip(self.variants, self.solution.sample_objective.tolist()))

    @property
    def regret_by_variant(self) -> dict:
        return dict(zip(self.variants, (self.solution.sample_objective - self.optimum).tolist()))


def robust_fleet(samples: dict, hardware: list, percentile: float | None, solver: str, time_limit_s: float,
                 relative_gap: float, late_premium: float | None = None,
                 base: BaseFleet | None = None) -> RobustOutcome:
    """The fleet of least mean (or percentile) objective that serves every solved variant (``samples``: variant ->
    (its FleetProblem, its optimum, the base plan in it: base_plan_in)), each weighted equally; with
    ``late_premium``, a variant may add racks at that premium. The base plan, where it has a value in every
    variant, is the solve's starting plan, so the robust fleet is never worse than it."""
    used = sorted(samples)
    if not used:
        raise InfeasibleError("no variant has a plan: there is nothing for a robust fleet to serve")
    if len(used) > MAX_ROBUST_SAMPLES:
        raise InputError(f"{len(used)} solved variants; a robust fleet takes at most {MAX_ROBUST_SAMPLES} samples "
                         f"(every sample's options are in one MILP): lower samples.n", field="samples.n")
    if any(samples[v][0].objective == "max_served" for v in used):
        raise InputError("a robust fleet needs a cost objective (min_cost, min_power or max_revenue), not max_served",
                         field="objective")
    if any(samples[v][0].n_rentals for v in used):
        raise InputError("a robust fleet does not yet rent capacity (hardware rental offers): leave them out",
                         field="hardware.overrides")
    if any(np.any(samples[v][0].own_cost_usd > 0) for v in used):
        raise InputError("a robust fleet does not yet take hosted API offers (workloads' api): leave them out",
                         field="workloads.api")
    if any(samples[v][0].has_installed for v in used):
        raise InputError("a robust fleet does not yet start from installed racks (its MILP prices every rack as "
                         "bought): solve the variants one by one, or leave installed out", field="installed")
    try:
        problem = RobustProblem([samples[v][0] for v in used], percentile=percentile, late_premium=late_premium)
    except ValueError as exc:
        raise InputError(str(exc).removeprefix("invalid RobustProblem: "), field="robustness") from None
    start = None
    found = [samples[v][2] for v in used]
    if base is not None and all(f is not None and f[2] is not None for f in found):
        start = known_plan(problem, base.racks, [f[4] for f in found], [f[3] for f in found])
    sol = optimize(problem, solver, time_limit_s, relative_gap, start)
    if sol.status == "infeasible":
        raise InfeasibleError(f"no one fleet serves all {len(used)} solved variants within each one's site limits "
                              f"(a variant's power budget or rack limit is below what another's demand needs); "
                              f"narrow the axes that tighten the site"
                              + ("" if late_premium is not None else ", or allow late racks (robustness.late_premium)"))
    if sol.status not in HAS_PLAN or sol.violations:
        raise PlannerError(f"the robust fleet's solve ended {sol.status} within {time_limit_s:g} s"
                           + (f" ({'; '.join(sol.violations[:3])})" if sol.violations else "")
                           + "; raise robustness.time_limit_s or use fewer samples")
    return RobustOutcome(sol, used, np.array([samples[v][1] for v in used]), list(hardware), percentile,
                         late_premium)


def robust_columns(table, outcome: RobustOutcome, unit: str):
    """The sweep table with ``robust_plan_<unit>``, ``robust_plan_regret_<unit>`` and ``robust_plan_late_racks``
    (racks the variant adds late; 0 without a late premium), null where a variant was not a sample."""
    import polars as pl

    value, regret = outcome.value_by_variant, outcome.regret_by_variant
    late = dict(zip(outcome.variants, np.rint(outcome.solution.late.sum(axis=1)).astype(int).tolist()))
    return table.with_columns(
        pl.Series(f"robust_plan_{unit}", [value.get(v) for v in table["variant"]], dtype=pl.Float64),
        pl.Series(f"robust_plan_regret_{unit}", [regret.get(v) for v in table["variant"]], dtype=pl.Float64),
        pl.Series("robust_plan_late_racks", [late.get(v) for v in table["variant"]], dtype=pl.Int64))


def distribution(values) -> dict:
    """mean, p50, p90 and max of a list (nulls dropped); None where empty."""
    v = np.array([x for x in values if x is not None and math.isfinite(x)], dtype=float)
    if not len(v):
        return {"mean": None, "p50": None, "p90": None, "max": None, "samples": 0}
    w = np.full(len(v), 1.0 / len(v))

    return {"mean": float(v.mean()), "p50": sample_statistic(v, w, 50.0), "p90": sample_statistic(v, w, 90.0),
            "max": float(v.max()), "samples": int(len(v))}


def robust_summary(table, outcome: RobustOutcome, base: BaseFleet | None, unit: str) -> dict:
    """The robust fleet beside the base plan's (racks per system), each one's objective and regret over the same
    samples (the robust fleet's samples with a base plan value), and what the solver said (INTERFACE.md 2.9)."""
    import polars as pl

    sol = outcome.solution
    rows = table.filter(pl.col("variant").is_in(outcome.variants))
    base_col, base_regret = f"base_plan_{unit}", f"base_plan_regret_{unit}"
    both = rows.filter(pl.col(base_col).is_not_null()) if base_col in rows.columns else rows.clear()
    robust_value, robust_regret = outcome.value_by_variant, outcome.regret_by_variant
    shared = both["variant"].to_list()
    base_racks = dict(zip(base.hardware, base.racks.tolist())) if base is not None else {}
    fleet = [{"hardware": h, "base_racks": int(base_racks.get(h, 0)), "robust_racks": int(sol.racks[i])}
             for i, h in enumerate(outcome.hardware) if sol.racks[i] > 0 or base_racks.get(h, 0) > 0]
    served = rows.filter(pl.col("base_plan_serves").is_not_null()) if "base_plan_serves" in rows.columns else rows
    served_as_bought = float(served["base_plan_serves"].mean()) if len(served) and base is not None else None
    return {
        "statistic": statistic_name(outcome.percentile),
        "unit": unit,
        "late_premium": outcome.late_premium,
        "samples": len(outcome.variants),
        "variants_without_plan": int(len(table) - len(outcome.variants)),
        "robust_value": sol.value,
        "robust_mean": sol.mean,
        "solver": {"name": sol.solver, "status": sol.status, "relative_gap": sol.relative_gap,
                   "best_bound": sol.best_bound, "solve_seconds": sol.solve_seconds},
        "fleet": fleet,
        "compared_samples": len(shared),
        "base_plan_served_as_bought_share": served_as_bought,
        "base_plan": {"objective": distribution(both[base_col].to_list()) if len(both) else distribution([]),
                      "regret": distribution(both[base_regret].to_list()) if len(both) else distribution([])},
        "robust_plan": {"objective": distribution([robust_value[v] for v in shared]),
                        "regret": distribution([robust_regret[v] for v in shared])},
    }


def solve_robust(scenario, samples_file, statistic: str = "mean", engine: str = "local", address: str | None = None,
                 workers: int | None = None, progress=None):
    """``planner solve SCENARIO --robust STAT --samples SWEEP.yaml``: the robust fleet over the sweep file's
    samples of ``scenario`` (its axes applied to this scenario, its ``base`` ignored), as a Plan of the scenario
    itself: the robust racks kept, operated as well as they can be, topped up (at the late premium, else at cost)
    where the scenario needs more. ``Plan.robust`` carries the summary (INTERFACE.md 2.9)."""
    import dataclasses

    from planner.sweep.run import sweep

    refuse_spares(scenario, "a robust fleet (--robust)")
    if not isinstance(samples_file, (str, os.PathLike)):  # an int was a TypeError from inside the sweep (issue 43)
        raise InputError(f"expected the path of a sweep file, got {type(samples_file).__name__}", field="--samples")
    outcome = sweep(samples_file, engine, address, workers, progress, regret=True, robust=statistic,
                    base_scenario=scenario)
    if outcome.robust_error is not None:
        raise outcome.robust_error
    if outcome.base_plan is None:
        raise InfeasibleError(f"{scenario.name} itself has no feasible plan, so no robust plan of it either "
                              f"(planner solve without --robust says why)")
    built = outcome.base_plan.built
    res = outcome.robust_outcome
    index = {h: i for i, h in enumerate(res.hardware)}
    racks = np.zeros(built.problem.n_hardware)
    for i, h in enumerate(built.type_ids):
        racks[i] = res.solution.racks[index[h]]
    premium = res.late_premium or 0.0
    s = scenario.solver

    sol = topped_up(built.problem, racks, s.name, s.time_limit_s, s.relative_gap, premium)
    if sol.status in HAS_PLAN and not sol.violations:
        # the robust racks operated on this scenario may deploy smaller prefill (and decode) pools than the options
        # were sized for: sized again at the pools deployed and topped up again, as a plain solve is (OPTIMIZER.md 14)
        def again(b):
            return topped_up(b.problem, racks, s.name, s.time_limit_s, s.relative_gap, premium)

        deadline = time.monotonic() + s.time_limit_s
        built, sol = repair_pools(built, sol, s, deadline, resolve=again)
        # and its decode pools held at their percentile as a plain solve's are (OPTIMIZER.md 18)
        built, sol = size_decode_queues(built, sol, s, deadline, resolve=again)
    if sol.status not in HAS_PLAN or sol.violations:
        raise PlannerError(f"the robust fleet could not be operated on {scenario.name} itself ({sol.status}"
                           f"{': ' + sol.detail if sol.detail else ''})")
    # The plan is the robust racks (and any added) on this scenario: its objective is theirs, at cost; its bound is
    # the scenario's own (the plain solve's), so the gap says how far holding up over the samples is from the
    # cheapest fleet for this scenario alone.
    cost = milp.evaluate(built.problem, sol.racks, sol.replicas).objective if built.problem.objective != "max_revenue" \
        else sol.objective
    bound = min(float(outcome.base_plan.solution.best_bound), cost)
    sol = dataclasses.replace(sol, status="feasible", objective=cost, best_bound=bound,
                              relative_gap=(cost - bound) / max(abs(cost), 1e-9), tie_break="",
                              detail=f"the robust fleet ({outcome.robust['statistic']} over the samples) kept; "
                                     "the bound is this scenario's own optimum's")
    plan = extract_plan(built, sol)
    plan.checks = check(plan)
    failed = [c for c in plan.checks if not c["ok"]]
    if failed:
        raise PlannerError("bug: the robust plan fails its own check: "
                           + "; ".join(c["check"] + ": " + c["detail"] for c in failed[:5]))
    added = int(round(float(np.sum(sol.racks - racks))))
    plan.robust = {**outcome.robust, "racks_added_for_this_scenario": added}
    return plan
