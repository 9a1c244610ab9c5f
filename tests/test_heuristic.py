"""The rounded LP plan (solvers/heuristic.py, docs/OPTIMIZER.md 22): a plan the fleet holds made before the search,
the LP's bound below every plan, the solution saying which plan closed it, and a plan where the search found none."""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest

from planner.fleet.solve import solve
from planner.report.summary import assumptions
from planner.scenario import load_scenario
from solvers import milp as F
from solvers.vocabulary import NO_PLAN
from tests.generators import random_problem

INF = math.inf
TIGHT = 1e-6


def one_rack_type(demand: float) -> F.FleetProblem:
    """One rack of 8 chips at 1,000 USD a year; replicas of 4 chips (half a rack: integer) serving 100 units."""
    return F.FleetProblem(chips_per_rack=[8.0], rack_power_w=[10e3], annual_cost_usd_per_rack=[1000.0],
                          max_racks=[INF], workload=[0], capacity=[100.0], chips=[[4.0]], integer_replicas=[True],
                          demand=[demand])


def test_the_rounded_plan_by_hand():
    """250 units: the LP takes 2.5 replicas on 1.25 racks (1,250 USD); rounded, 3 replicas of 4 chips on 2 racks."""
    p = one_rack_type(250.0)
    plan = F.rounded_lp_plan(p, F.build(p, "scip"))
    assert plan is not None and plan.feasible
    assert plan.replicas.tolist() == [3.0] and plan.racks.tolist() == [2]
    assert plan.objective == pytest.approx(2000.0)
    assert plan.lp_bound == pytest.approx(1250.0, rel=1e-5)


def test_a_minimum_purchase_tops_the_rounded_racks_up():
    p = dataclasses.replace(one_rack_type(250.0), min_racks=np.array([5.0]))
    plan = F.rounded_lp_plan(p, F.build(p, "scip"))
    assert plan is not None and plan.feasible and plan.racks.tolist() == [5]


def test_a_platform_limit_the_rounding_breaks_is_no_start():
    """Rack a is cheaper but capped at one rack; one platform only: the LP takes fractions of both (its platform
    binaries fractional), rounding buys both, which the limit forbids. The rounded plan says what it breaks, and the
    search alone answers: b only."""
    p = F.FleetProblem(chips_per_rack=[8.0, 8.0], rack_power_w=[10e3, 10e3], annual_cost_usd_per_rack=[1000.0, 1500.0],
                       max_racks=[1.0, INF], workload=[0, 0], capacity=[100.0, 100.0], chips=[[4.0, 0.0], [0.0, 4.0]],
                       integer_replicas=[True, True], demand=[250.0], max_platforms=1.0)
    plan = F.rounded_lp_plan(p, F.build(p, "scip"))
    assert plan is not None and "platforms" in plan.violations
    sol = F.optimize(p, "scip", rounded_start=True)
    assert sol.status == "optimal" and sol.racks.tolist() == [0, 2] and "breaks platforms" in sol.start


@pytest.mark.parametrize("seed", range(12))
def test_the_lp_bound_lies_below_the_optimum_and_the_rounded_plan_above(seed):
    """On random problems, under SCIP and HiGHS: LP bound <= the proved optimum <= the rounded plan, where it holds;
    and a search beside it proves the same optimum as one without it."""
    p = random_problem(seed, n_workloads=3, n_hardware=3)
    plan = F.rounded_lp_plan(p, F.build(p, "scip"))
    for solver in ("scip", "highs"):
        plain = F.optimize(p, solver, relative_gap=TIGHT, fewest_platforms=False)
        started = F.optimize(p, solver, relative_gap=TIGHT, fewest_platforms=False, rounded_start=True)
        assert started.status == plain.status
        if plain.status != "optimal":
            continue
        assert started.objective == pytest.approx(plain.objective, rel=1e-5)
        assert plan is not None and plan.lp_bound <= plain.objective * (1 + 1e-6)
        if plan.feasible:
            assert plan.objective >= plain.objective * (1 - 1e-6)
            assert started.start.startswith(("the MILP's plan", "the rounded LP plan: the MILP found none"))
        assert not F.evaluate(p, started.racks, started.replicas, rented=started.rented).violations


def test_the_start_runs_by_size_only():
    p = random_problem(0, n_workloads=2, n_hardware=2)
    assert p.n_columns < F.ROUNDED_START_COLUMNS
    assert F.optimize(p, "scip").start == ""
    assert F.optimize(p, "scip", rounded_start=True).start != ""


def test_a_search_that_ends_with_no_plan_returns_the_rounded_one():
    """A time limit that leaves the search no plan: the rounded plan, feasible, its gap against the LP's bound."""
    p = one_rack_type(250.0)
    plan = F.rounded_lp_plan(p, F.build(p, "scip"))
    assert plan is not None
    none = F.FleetSolution(np.zeros(1, dtype=np.int64), np.zeros(1), NO_PLAN, math.nan, 0.0, math.nan, "scip", 1.0)
    sol = F.closed_by(p, none, plan)
    assert sol.status == "time_limit" and sol.racks.tolist() == [2] and sol.replicas.tolist() == [3.0]
    assert sol.objective == pytest.approx(2000.0) and sol.best_bound == pytest.approx(1250.0, rel=1e-5)
    assert sol.relative_gap == pytest.approx(0.375, rel=1e-4)
    assert "found none in its time" in sol.start and not sol.violations


def test_optimize_returns_the_rounded_plan_where_its_search_found_none(monkeypatch):
    """The search stopped with no plan (the solver's result read as none): optimize answers with the rounded plan
    (status time_limit), never nothing; without the start it would have had no plan to give."""
    p = one_rack_type(250.0)
    real = F.extract

    def nothing(problem, raw):
        sol = real(problem, raw)
        return dataclasses.replace(sol, status=NO_PLAN, objective=math.nan, relative_gap=math.nan)

    monkeypatch.setattr(F, "extract", nothing)
    assert F.optimize(p, "scip").status == NO_PLAN
    sol = F.optimize(p, "scip", rounded_start=True)
    assert sol.status == "time_limit" and sol.objective == pytest.approx(2000.0)
    assert not F.evaluate(p, sol.racks, sol.replicas).violations


@pytest.mark.integration
def test_a_plan_says_which_plan_closed_its_first_milp(monkeypatch):
    """Through planner solve (its rounds after the first MILP start from the plan before them): the plan's JSON
    carries the first MILP's ``start``, and its assumptions the ``start:`` line; with no rounded plan made, null."""
    plain = solve(load_scenario("scenarios/bank-2mw.yaml")).to_dict()
    assert plain["solver"]["start"] is None
    monkeypatch.setattr(F, "ROUNDED_START_COLUMNS", 0)
    d = solve(load_scenario("scenarios/bank-2mw.yaml")).to_dict()
    assert d["solver"]["start"].startswith(("the MILP's plan", "the rounded LP plan"))
    assert d["objective_usd_per_year"] == pytest.approx(plain["objective_usd_per_year"], rel=1e-4)
    assert any(line.startswith("start:") for line in assumptions(d))


def test_a_profit_below_zero_is_still_measured_the_right_way():
    """max_revenue minimises cost less revenue, below zero for a plan that profits: a search's plan that profits
    more than the rounded one is below it, not 'none better' (a ratio of two negative values said so)."""
    p = dataclasses.replace(one_rack_type(250.0), objective="max_revenue", group_value=np.array([10_000.0]))
    rounded = F.rounded_lp_plan(p, F.build(p, "scip"))
    assert rounded is not None and rounded.objective == pytest.approx(2000.0 - 10_000.0)
    sol = F.optimize(p, "scip", relative_gap=TIGHT, fewest_platforms=False)
    richer = dataclasses.replace(sol, objective=-9000.0)  # a plan 1,000 USD more profitable than the rounded one
    words = F.closed_by(p, richer, rounded).start
    assert words == "the MILP's plan, 12.5% below the rounded LP plan"
    assert F.closed_by(p, sol, rounded).start == "the rounded LP plan: the MILP found none better"
