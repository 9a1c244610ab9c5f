"""Issue 44: a plan that holds however large the site (docs/OPTIMIZER.md 20). Generated sites
(``tests.generators.scale_scenario``: every merchant system, ten models, chat and agentic workloads) solved by both
solvers and checked; the fallback that sizes a plan's pools on its own columns when the first MILP stops unproved;
the honest bound that fallback reports. The sizes that take minutes live in benchmarks/bench_scale.py."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
import yaml

import planner.fleet.solve as S
from planner.fleet.check import check
from planner.fleet.problem import build_problem
from planner.scenario import scenario_from_yaml
from tests.generators import scale_scenario

pytestmark = pytest.mark.integration


def site(n: int, seed: int, **settings):
    sc = scenario_from_yaml(yaml.safe_dump(scale_scenario(n, seed)))
    return sc.with_({f"solver.{k}": v for k, v in settings.items()}) if settings else sc


@pytest.fixture(scope="module")
def four():
    """A generated site of four workloads with its options scored once."""
    sc = site(4, 4, time_limit_s=120)  # seed 4: four rounds a loop end at their last resort (below)
    return sc, build_problem(sc)


CALLS: dict = {"fewest_platforms": [], "tie_breaks": 0}  # what ``whole``'s solve asked of the MILP


@pytest.fixture(scope="module")
def whole(four):
    """``four`` solved as ``planner solve`` solves it, each MILP's fewest_platforms and each lone tie-break counted
    (CALLS)."""
    sc, built = four
    optimize, tie_break = S.optimize, S.tie_break

    def counted_optimize(*args, **kwargs):
        CALLS["fewest_platforms"].append(kwargs.get("fewest_platforms"))
        return optimize(*args, **kwargs)

    def counted_tie_break(*args, **kwargs):
        CALLS["tie_breaks"] += 1
        return tie_break(*args, **kwargs)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(S, "optimize", counted_optimize)
        patch.setattr(S, "tie_break", counted_tie_break)
        return S.solve(sc, options_from=built)


@pytest.mark.parametrize("n,seed", [(3, 11), pytest.param(5, 12, marks=pytest.mark.slow)])  # 5 workloads: 15 s
def test_random_sites_hold_under_both_solvers_and_each_plan_is_above_the_others_bound(n, seed):
    sc = site(n, seed, time_limit_s=120)
    built = build_problem(sc)
    plans = {name: S.solve(sc, solver=name, options_from=built) for name in ("scip", "highs")}
    for name, plan in plans.items():
        failed = [c for c in check(plan) if not c["ok"]]
        assert not failed, (name, failed[:3])
        assert plan.status in ("optimal", "feasible", "time_limit")
    # a bound is a bound on every plan that holds, whichever solver found it (docs/OPTIMIZER.md 20)
    a, b = plans["scip"], plans["highs"]
    assert a.objective_usd_per_year >= b.solver["best_bound"] * (1 - 1e-6)
    assert b.objective_usd_per_year >= a.solver["best_bound"] * (1 - 1e-6)
    if a.status == b.status == "optimal":
        gap = max(a.solver["relative_gap"], b.solver["relative_gap"], sc.solver.relative_gap)
        assert a.objective_usd_per_year == pytest.approx(b.objective_usd_per_year, rel=2 * gap + 1e-6)


def test_a_first_milp_stopped_unproved_still_gives_a_plan_that_holds(four, whole, monkeypatch):
    sc, built = four
    real, calls = S.optimize_by, []

    def first_unproved(*args, **kwargs):
        sol = real(*args, **kwargs)
        calls.append(sol)
        return dataclasses.replace(sol, status="time_limit") if len(calls) == 1 else sol

    monkeypatch.setattr(S, "optimize_by", first_unproved)
    plan = S.solve(sc, options_from=built)
    assert not [c for c in check(plan) if not c["ok"]]
    how = plan.solver["heuristic"]
    assert how.startswith("the first MILP stopped unproved") and "own" in how
    assert plan.solver["columns"] < built.problem.n_columns
    # its bound is the first MILP's, on every column at its most optimistic pools: below every plan that holds
    assert plan.solver["best_bound"] == pytest.approx(min(calls[0].best_bound, plan.objective_usd_per_year))
    assert plan.solver["best_bound"] <= whole.objective_usd_per_year * (1 + 1e-6)
    # a narrower search finds no plan cheaper than the whole one's, beyond the whole one's gap
    assert plan.objective_usd_per_year >= whole.objective_usd_per_year * (1 - sc.solver.relative_gap - 1e-6)
    gap = (plan.objective_usd_per_year - plan.solver["best_bound"]) / plan.objective_usd_per_year
    assert plan.solver["relative_gap"] == pytest.approx(gap, abs=1e-9)
    assert plan.status == ("optimal" if gap <= sc.solver.relative_gap else "feasible")


def test_own_columns_keep_what_the_plan_deploys_and_a_few_cheapest_per_workload(four):
    sc, built = four
    sol = S.optimize(built.problem, solver="scip", time_limit_s=60, relative_gap=sc.solver.relative_gap)
    keep = S.own_columns(built, sol)
    deployed = S.plan_replicas(built, sol) > 1e-9
    assert np.all(keep[deployed])
    w = built.problem.workload
    served = np.unique(w[deployed])
    assert set(np.unique(w[keep])) == set(served)
    for k in served:
        assert (keep & (w == k)).sum() <= (deployed & (w == k)).sum() + S.ALTERNATES


def test_the_rounds_solve_without_the_tie_break_which_runs_once_on_their_plan(whole):
    """The tie-break (T) took about half of each round's time on a generated site of 20 workloads: the first MILP
    runs it, the rounds that size the pools again do not, and it runs once on the plan they settle on (and, where
    it moves that plan, no more after the rounds its move starts)."""
    asked = CALLS["fewest_platforms"]
    assert asked[0] is True and len(asked) > 3 and not any(asked[1:])
    assert 1 <= CALLS["tie_breaks"] <= 2 and whole.solver["tie_break"]


def test_sixteen_rounds_a_loop_settle_before_the_last_resort(four, whole):
    # With four rounds a loop this site's rounds on every column ended at their last resort (the next test); with
    # sixteen (PATIENCE 4, as shipped) they settle: proved within the gap on every column, no fallback
    sc = four[0]
    assert whole.solver["heuristic"] is None and whole.status == "optimal"
    assert whole.solver["relative_gap"] <= sc.solver.relative_gap
    assert not [c for c in check(whole) if not c["ok"]]


@pytest.mark.slow  # a whole solve more (20 s): CI's time
def test_a_plan_sized_at_its_last_resort_gives_way_to_a_cheaper_one_that_holds(four, whole, monkeypatch):
    # With four rounds a loop (PATIENCE 1), this site's rounds on every column end at their last resort; the first
    # plan sized again on its own columns holds within 0.25% of the first MILP's bound, and its status says whether
    # that is within the requested gap
    sc, built = four
    monkeypatch.setattr(S, "PATIENCE", 1)
    plan = S.solve(sc, options_from=built)
    assert not [c for c in check(plan) if not c["ok"]]
    assert plan.solver["heuristic"].startswith("the rounds sizing its pools again on every column took an option")
    assert plan.solver["relative_gap"] <= 0.0025
    assert plan.status == ("optimal" if plan.solver["relative_gap"] <= sc.solver.relative_gap else "feasible")
    assert whole.objective_usd_per_year <= plan.objective_usd_per_year * (1 + sc.solver.relative_gap)


def test_a_plan_whose_last_round_the_time_limit_cut_short_is_weighed_against_its_own_columns(four, whole,
                                                                                               monkeypatch):
    # a round cut short by the time limit can end far above the round before (a generated site of 20 workloads,
    # seed 3, fewest_platforms off: 12.4 M USD a year against 10.45 M, 16.8% above the bound), and such a plan
    # can still hold: it is weighed against the first plan sized again on its own columns
    sc, built = four
    real_sizes, real_own, own = S.size_pools, S.on_own_columns, []

    def cut_short(*args, **kwargs):
        b, sol = real_sizes(*args, **kwargs)
        return b, (dataclasses.replace(sol, status="time_limit") if not own else sol)  # the rounds on every column

    monkeypatch.setattr(S, "size_pools", cut_short)
    monkeypatch.setattr(S, "on_own_columns", lambda *a, **k: own.append(a[5] if len(a) > 5 else k.get("why"))
                        or real_own(*a, **k))
    plan = S.solve(sc, options_from=built)
    assert own == [S.OUT_OF_TIME]
    assert not [c for c in check(plan) if not c["ok"]]
    assert plan.objective_usd_per_year <= whole.objective_usd_per_year * (1 + sc.solver.relative_gap)
