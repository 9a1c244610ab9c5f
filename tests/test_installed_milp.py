"""(9) of solvers.milp: an installed fleet whose capex is sunk. Hand-computed plans, then the jitted brute force, its
plain-Python twin, SCIP and HiGHS on random tiny problems with installed racks and a cap on new ones."""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest

from solvers import bruteforce as bf
from solvers import milp as F
from tests.test_fleet_milp import REL, TIGHT, brute_force_and_solvers, tiny_problem

pytestmark = pytest.mark.unit
INF = math.inf


def two_kinds(**kw) -> F.FleetProblem:
    """Type A (installed kind): 100 USD/year new, one replica a rack. Type B: 80 USD/year new, one replica a rack.
    Each replica serves 1 unit; the demand is 3 units."""
    base = dict(chips_per_rack=[8.0, 8.0], rack_power_w=[10e3, 10e3], annual_cost_usd_per_rack=[100.0, 80.0],
                max_racks=[INF, INF], workload=[0, 0], capacity=[1.0, 1.0], chips=[[8.0, 0.0], [0.0, 8.0]],
                integer_replicas=[True, True], demand=[3.0])
    base.update(kw)
    return F.FleetProblem(**base)


@pytest.mark.parametrize("solver", ["scip", "highs"])
def test_a_sunk_fleet_is_used_before_anything_is_bought(solver):
    # Two installed A racks cost 30 a year each to keep (energy and maintenance), below B's 80 new: keep both (60)
    # and buy one B (80) = 140. Without the fleet, three B racks (240).
    p = two_kinds(installed_racks=[2.0, 0.0], installed_annual_cost_usd_per_rack=[30.0, 80.0])
    sol = F.optimize(p, solver, relative_gap=TIGHT)
    assert list(sol.racks) == [2, 1] and sol.objective == pytest.approx(140.0)
    assert list(F.new_racks(p, sol.racks)) == [0.0, 1.0]
    assert F.optimize(two_kinds(), solver, relative_gap=TIGHT).objective == pytest.approx(240.0)


@pytest.mark.parametrize("solver", ["scip", "highs"])
def test_installed_racks_beyond_the_need_retire_and_none_is_bought_again(solver):
    # Five installed A racks, three needed: keep three (90), retire two, buy nothing; A's supply cap of 0 does not
    # bind on racks already owned.
    p = two_kinds(installed_racks=[5.0, 0.0], installed_annual_cost_usd_per_rack=[30.0, 80.0], max_racks=[0.0, INF])
    sol = F.optimize(p, solver, relative_gap=TIGHT)
    assert list(sol.racks) == [3, 0] and sol.objective == pytest.approx(90.0)
    assert F.new_racks(p, sol.racks).sum() == 0


@pytest.mark.parametrize("solver", ["scip", "highs"])
def test_an_installed_rack_dearer_to_keep_than_a_new_one_retires(solver):
    # Keeping an A costs 95 a year, a new B 80: three new B racks (240) beat keeping the two A (2 x 95 + 80 = 270).
    p = two_kinds(installed_racks=[2.0, 0.0], installed_annual_cost_usd_per_rack=[95.0, 80.0])
    sol = F.optimize(p, solver, relative_gap=TIGHT)
    assert list(sol.racks) == [0, 3] and sol.objective == pytest.approx(240.0)


@pytest.mark.parametrize("solver", ["scip", "highs"])
def test_no_new_racks_leaves_the_fleet_alone(solver):
    p = two_kinds(installed_racks=[2.0, 0.0], installed_annual_cost_usd_per_rack=[30.0, 80.0], max_new_racks=0.0)
    assert F.optimize(p, solver, relative_gap=TIGHT).status == "infeasible"  # two racks cannot serve three units
    enough = dataclasses.replace(p, installed_racks=np.array([4.0, 0.0]))
    sol = F.optimize(enough, solver, relative_gap=TIGHT)
    assert list(sol.racks) == [3, 0] and sol.objective == pytest.approx(90.0)


def test_evaluate_charges_capex_on_new_racks_only_and_names_the_new_rack_cap():
    p = two_kinds(installed_racks=[2.0, 0.0], installed_annual_cost_usd_per_rack=[30.0, 80.0], max_new_racks=1.0,
                  max_racks=[INF, 0.0])
    ev = F.evaluate(p, [3, 1], [3, 1])
    # kept: 30 x 3 + (100 - 30) x 1 new A + 80 x 1 new B = 240
    assert ev.annual_cost_usd == pytest.approx(240.0)
    assert "max_new_racks" in ev.violations and "max_racks[h=1]" in ev.violations
    assert F.evaluate(p, [3, 0], [3, 0]).violations == ()


def test_keeping_may_not_cost_more_than_buying():
    with pytest.raises(ValueError, match="keeping a rack never costs more"):
        two_kinds(installed_racks=[1.0, 0.0], installed_annual_cost_usd_per_rack=[120.0, 80.0])
    with pytest.raises(ValueError, match="installed_racks"):
        two_kinds(installed_racks=[1.5, 0.0])


def with_installed(p: F.FleetProblem, seed: int) -> F.FleetProblem:
    """The tiny problem with 0-3 installed racks of each type, kept at 0-100% of a new rack's yearly cost, and in
    a third of the cases at most 0-2 new racks."""
    rng = np.random.default_rng(20_000 + seed)
    return dataclasses.replace(p, installed_racks=rng.integers(0, 4, p.n_hardware).astype(float),
                               installed_annual_cost_usd_per_rack=p.annual_cost_usd_per_rack
                               * rng.uniform(0.0, 1.0, p.n_hardware),
                               max_new_racks=float(rng.integers(0, 3)) if rng.random() < 0.35 else INF)


def test_installed_fleets_brute_force_twins_and_solvers_agree():
    """(9): the jitted brute force, its twin, SCIP and HiGHS find the same optimum; every plan holds under evaluate
    and buys no more than the cap; an installed fleet never makes a plan dearer."""
    cheaper = capped = 0
    for seed in range(60):
        base = tiny_problem(seed, multi_row=seed % 2 == 1)
        p = with_installed(base, seed)
        jit, plans = brute_force_and_solvers(p, seed)
        if jit.feasible:
            ev = F.evaluate(p, jit.racks, jit.replicas)
            assert ev.feasible and ev.objective == pytest.approx(jit.objective, rel=1e-12), (seed, ev.violations)
        for sol in plans.values():
            if sol.status == "optimal":
                assert F.evaluate(p, sol.racks, sol.replicas).feasible
                assert F.new_racks(p, sol.racks).sum() <= p.max_new_racks
        fresh = bf.brute_force(base).objective
        if math.isfinite(p.max_new_racks):
            capped += 1
        else:  # without a cap on new racks an owned fleet is only an extra option
            assert jit.objective <= fresh * (1 + REL) or math.isinf(fresh)
            cheaper += jit.objective < fresh * (1 - REL)
    assert cheaper >= 10 and capped >= 10


def test_max_served_serves_what_the_brute_force_serves_and_costs_what_it_costs():
    """(10): SCIP and HiGHS serve as much as the brute force of (10a) (cost less SERVED_WEIGHT-scaled value), and
    at the same least cost, on random tiny problems with installed racks and caps on new ones."""
    partial = 0
    for seed in range(40):
        rng = np.random.default_rng(30_000 + seed)
        base = with_installed(tiny_problem(seed, multi_row=seed % 2 == 1), seed)
        p = dataclasses.replace(base, objective="max_served", group_value=rng.uniform(1.0, 5.0, base.n_workloads),
                                max_new_racks=float(rng.integers(0, 3)))
        want = bf.brute_force(dataclasses.replace(p, objective="max_revenue", group_value=F.served_values(p)))
        assert want.feasible, seed  # serving nothing is always a plan
        want_shares = F.served_shares(p, p.coverage.T @ want.replicas)
        want_cost = F.evaluate(p, want.racks, want.replicas).annual_cost_usd
        for name in ("scip", "highs"):
            sol = F.optimize(p, name, relative_gap=TIGHT)
            assert sol.status == "optimal" and not sol.violations, (seed, name, sol.detail)
            assert p.group_value @ sol.shares == pytest.approx(p.group_value @ want_shares, rel=1e-6), (seed, name)
            assert sol.objective == pytest.approx(want_cost, rel=1e-6, abs=1e-6), (seed, name)
            assert sol.objective == pytest.approx(F.evaluate(p, sol.racks, sol.replicas).annual_cost_usd, rel=1e-9)
        partial += bool(np.any(want_shares < 1 - 1e-9))
    assert partial >= 6  # the caps leave demand unserved often enough to mean something


def with_api(p: F.FleetProblem, seed: int) -> F.FleetProblem:
    """The tiny problem with one more column per workload that needs no chips (a hosted API, (11)): it covers the
    workload's row whole at a yearly cost of 0.3-3 times what the cheapest rack costs."""
    rng = np.random.default_rng(40_000 + seed)
    W = p.n_workloads
    coverage = np.vstack([p.coverage, np.diag(p.demand)])
    cost = rng.uniform(0.3, 3.0, W) * float(p.annual_cost_usd_per_rack.min())
    return dataclasses.replace(
        p, workload=np.concatenate([p.workload, np.arange(W)]), capacity=np.concatenate([p.capacity, p.demand]),
        chips=np.vstack([p.chips, np.zeros((W, p.n_hardware))]), coverage=coverage,
        integer_replicas=np.concatenate([p.integer_replicas, np.ones(W, bool)]),
        column_cost_usd=np.concatenate([np.zeros(p.n_columns), cost]))


def test_columns_with_their_own_cost_brute_force_twins_and_solvers_agree():
    """(11): a column that needs no racks and costs per replica; the jitted brute force, its twin, SCIP and HiGHS
    agree, and such a column is taken exactly when it is cheaper than the racks it saves."""
    used = skipped = 0
    for seed in range(50):
        p = with_api(tiny_problem(seed), seed)
        jit, plans = brute_force_and_solvers(p, seed)
        assert jit.feasible, seed
        for sol in plans.values():
            assert F.evaluate(p, sol.racks, sol.replicas).feasible
        api = jit.replicas[-p.n_workloads:]
        used += bool(api.any())
        skipped += bool(not api.all())
        if p.objective == "min_power":  # an API draws no site power: under min_power it serves everything
            assert jit.objective == pytest.approx(0.0, abs=1e-9)
    assert used >= 10 and skipped >= 10


def with_rentals(p: F.FleetProblem, seed: int) -> F.FleetProblem:
    """The tiny problem with one or two rental offers (12) on its types, at 0.05-0.4 of a rack's yearly cost per
    chip, some with a chip limit."""
    rng = np.random.default_rng(50_000 + seed)
    R = int(rng.integers(1, 3))
    hw = rng.integers(0, p.n_hardware, R)
    per_chip = p.annual_cost_usd_per_rack[hw] / p.chips_per_rack[hw]
    return dataclasses.replace(p, rent_hardware=hw, rent_cost_usd_per_chip=per_chip * rng.uniform(0.4, 3.0, R),
                               rent_max_chips=np.where(rng.random(R) < 0.5, rng.integers(0, 12, R), INF))


def test_rentals_brute_force_twins_and_solvers_agree():
    """(12): rented chips beside racks; the jitted brute force, its twin, SCIP and HiGHS agree; a plan's rented
    chips hold under evaluate, within each offer's limit; renting never makes a plan dearer."""
    rented = cheaper = 0
    for seed in range(50):
        base = tiny_problem(seed, multi_row=seed % 2 == 1)
        p = with_rentals(base, seed)
        jit, plans = brute_force_and_solvers(p, seed)
        for sol in plans.values():
            if sol.status == "optimal":
                assert F.evaluate(p, sol.racks, sol.replicas, rented=sol.rented).feasible
                assert np.all(sol.rented <= p.rent_max_chips + 1e-9)
                rented += bool(sol.rented.sum() > 1e-9)
        plain = bf.brute_force(base).objective
        assert jit.objective <= plain * (1 + REL) or math.isinf(plain)
        cheaper += jit.objective < plain * (1 - REL)
    assert rented >= 10 and cheaper >= 10
