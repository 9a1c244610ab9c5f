"""The robust fleet (solvers.robust): hand cases, SCIP and HiGHS against the brute force on random tiny samples,
evaluate() re-checking every plan, the topped-up fleet (regret), and what the statistic means."""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest

from solvers import backends
from solvers import bruteforce as bf
from solvers import milp as F
from solvers import robust as R
from tests.test_fleet_milp import tiny_problem

INF = math.inf


def one_system(demand: float, cost: float, budget_w: float = INF) -> F.FleetProblem:
    """One rack type of 4 chips and 10 kW; one option of 1 chip serving 100 units: ceil(demand / 400) racks."""
    return F.FleetProblem(chips_per_rack=[4.0], rack_power_w=[10e3], annual_cost_usd_per_rack=[cost],
                          max_racks=[INF], workload=[0], capacity=[100.0], chips=[[1.0]], integer_replicas=[True],
                          demand=[demand], power_budget_w=budget_w)


def two_systems(demand: float, cost_a: float, cost_b: float) -> F.FleetProblem:
    """Rack a (4 chips, 1 chip per 100 units) and rack b (8 chips, 1 chip per 100 units)."""
    return F.FleetProblem(chips_per_rack=[4.0, 8.0], rack_power_w=[10e3, 10e3],
                          annual_cost_usd_per_rack=[cost_a, cost_b], max_racks=[INF, INF], workload=[0, 0],
                          capacity=[100.0, 100.0], chips=[[1.0, 0.0], [0.0, 1.0]], integer_replicas=[True, True],
                          demand=[demand])


# ---- hand cases -----------------------------------------------------------------------------------------------
@pytest.mark.parametrize("solver", backends.available_exact())
def test_the_fleet_serves_the_largest_sample(solver):
    # demand 400, 800, 1200: 1, 2 and 3 racks alone; one fleet for all must hold 3 racks
    p = R.RobustProblem([one_system(d, 1e6) for d in (400.0, 800.0, 1200.0)])
    sol = R.optimize(p, solver)
    assert sol.status == "optimal" and sol.racks.tolist() == [3.0]
    assert sol.value == pytest.approx(3e6) and sol.violations == ()


def test_the_mean_weighs_each_sample_by_its_price():
    # rack a costs 1.0 in sample 0 and 3.0 in sample 1; rack b costs 2.2 in both. Serving 800 units takes 2 racks
    # of a or 1 of b: a's mean cost is 2 x 2.0 = 4.0, b's 2.2, so the mean picks b
    p = R.RobustProblem([two_systems(800.0, 1.0e6, 2.2e6), two_systems(800.0, 3.0e6, 2.2e6)])
    sol = R.optimize(p, "scip")
    assert sol.racks.tolist() == [0.0, 1.0] and sol.mean == pytest.approx(2.2e6)
    # with sample 0 weighted 0.9, a costs 2 x (0.9 + 0.3) = 2.4 > 2.2: still b; at 0.95 a costs 2.2 - tie; at 0.99
    # a costs 2.04 < 2.2
    heavy = R.RobustProblem(p.samples, weight=[0.99, 0.01])
    assert R.optimize(heavy, "highs").racks.tolist() == [2.0, 0.0]


def test_a_percentile_ignores_the_tail_the_mean_does_not():
    # four samples: rack a costs 1 in three of them and 10 in the fourth, rack b costs 2.5 always; 800 units.
    # a: 2 racks, f = 2, 2, 2, 20 (mean 6.5, p75 2); b: 1 rack, f = 2.5 always. Mean -> b; p75 -> a; p90 -> b
    samples = [two_systems(800.0, c, 2.5e6) for c in (1e6, 1e6, 1e6, 10e6)]
    mean = R.optimize(R.RobustProblem(samples), "scip")
    p75 = R.optimize(R.RobustProblem(samples, percentile=75.0), "scip")
    p90 = R.optimize(R.RobustProblem(samples, percentile=90.0), "highs")
    assert mean.racks.tolist() == [0.0, 1.0]
    assert p75.racks.tolist() == [2.0, 0.0] and p75.value == pytest.approx(2e6)
    assert p90.racks.tolist() == [0.0, 1.0] and p90.value == pytest.approx(2.5e6)


def test_a_late_premium_decides_how_much_to_buy_ahead():
    # demand 400 or 1200 (1 or 3 racks at 1e6): buying 1 ahead and 2 late at +50% averages (1 + 1 + 3) / 2 = 2.5
    # against 3 ahead (3) or 2 ahead (2.75); at +200% buying all 3 ahead (3) beats 1 ahead (4) and 2 ahead (3.5)
    samples = [one_system(400.0, 1e6), one_system(1200.0, 1e6)]
    cheap = R.optimize(R.RobustProblem(samples, late_premium=0.5), "scip")
    assert cheap.racks.tolist() == [1.0] and cheap.late.tolist() == [[0.0], [2.0]]
    assert cheap.mean == pytest.approx(2.5e6) and cheap.sample_objective.tolist() == pytest.approx([1e6, 4e6])
    dear = R.optimize(R.RobustProblem(samples, late_premium=2.0), "highs")
    assert dear.racks.tolist() == [3.0] and dear.mean == pytest.approx(3e6)
    assert R.optimize(R.RobustProblem(samples), "scip").racks.tolist() == [3.0]  # no late racks: all ahead
    with pytest.raises(ValueError, match="cost objective"):
        R.RobustProblem([dataclasses.replace(samples[0], objective="min_power")], late_premium=0.5)


def test_sample_statistic():
    f, w = [3.0, 1.0, 2.0, 4.0], [0.25] * 4
    assert R.sample_statistic(f, w, None) == pytest.approx(2.5)
    assert R.sample_statistic(f, w, 50.0) == 2.0  # P(f <= 2) = 0.5
    assert R.sample_statistic(f, w, 50.1) == 3.0
    assert R.sample_statistic(f, w, 99.0) == 4.0
    assert R.sample_statistic(f, [0.7, 0.1, 0.1, 0.1], 60.0) == 3.0


def test_no_fleet_serves_every_sample_within_its_budget():
    # sample 1's budget holds one rack (12.5 kW), its demand needs two
    p = R.RobustProblem([one_system(400.0, 1e6), one_system(800.0, 1e6, budget_w=12.5e3)])
    assert R.optimize(p, "scip").status == "infeasible"


def test_bad_problems_name_what_is_wrong():
    with pytest.raises(ValueError, match="weight"):
        R.RobustProblem([one_system(400.0, 1e6)], weight=[0.5])
    with pytest.raises(ValueError, match="percentile"):
        R.RobustProblem([one_system(400.0, 1e6)], percentile=100.0)
    with pytest.raises(ValueError, match="hardware types"):
        R.RobustProblem([one_system(400.0, 1e6), two_systems(400.0, 1e6, 1e6)])
    with pytest.raises(ValueError, match="no samples"):
        R.RobustProblem([])


# ---- the topped-up fleet ----------------------------------------------------------------------------------------
def test_topped_up_keeps_the_racks_and_adds_what_is_missing():
    p = two_systems(2000.0, 1e6, 1.5e6)  # 20 chips: alone, 1 rack of a and 2 of b (4.0e6) beat 3 of b (4.5e6)
    assert F.optimize(p).racks.tolist() == [1.0, 2.0]
    kept = R.topped_up(p, [3.0, 0.0])  # 12 chips of a kept: 8 chips left, 1 rack of b (1.5e6) < 2 of a (2e6)
    assert kept.status == "optimal" and kept.racks.tolist() == [3.0, 1.0]
    assert kept.objective == pytest.approx(4.5e6)
    enough = R.topped_up(p, [0.0, 4.0])  # already enough: nothing bought, the kept racks cost what they cost
    assert enough.racks.tolist() == [0.0, 4.0] and enough.objective == pytest.approx(6e6)
    late = R.topped_up(p, [3.0, 0.0], late_premium=1.0)  # the added rack of b at 3e6 still beats 2 of a at 4e6
    assert late.racks.tolist() == [3.0, 1.0] and late.objective == pytest.approx(3e6 + 3e6)


def test_topped_up_past_a_cap_is_infeasible_without_a_solve():
    p = dataclasses.replace(one_system(400.0, 1e6), max_racks=np.array([1.0]))
    sol = R.topped_up(p, [2.0])
    assert sol.status == "infeasible" and "supply cap" in sol.detail and sol.solve_seconds == 0.0
    assert F.evaluate(p, [2.0], [4.0]).violations  # and evaluate agrees the kept racks break the cap


@pytest.mark.parametrize("seed", range(25))
def test_topped_up_is_never_below_the_optimum_and_nothing_kept_is_the_optimum(seed):
    p = tiny_problem(seed)
    best = F.optimize(p, "scip", fewest_platforms=False)
    none_kept = R.topped_up(p, np.zeros(p.n_hardware))
    assert none_kept.status == best.status
    if best.status != "optimal":
        return
    assert none_kept.objective == pytest.approx(best.objective, rel=1e-6)
    kept = np.random.default_rng(seed).integers(0, 3, p.n_hardware)
    top = R.topped_up(p, kept, "highs")
    if top.status == "optimal":
        assert np.all(top.racks >= kept) and top.objective >= best.objective * (1 - 1e-6)
        ev = F.evaluate(dataclasses.replace(p, racks_at_least=kept.astype(float)), top.racks, top.replicas)
        assert ev.violations == ()


# ---- random tiny samples against the brute force --------------------------------------------------------------
def tiny_samples(seed: int) -> R.RobustProblem:
    """2-4 samples of one tiny problem: the same systems, each sample's demand x U(0.6, 1.6), each rack's cost
    x U(0.7, 1.4), some with a power budget or a supply cap of their own; the mean or a percentile; half with a
    late premium."""
    rng = np.random.default_rng(1000 + seed)
    base = tiny_problem(seed)
    base = dataclasses.replace(base, objective="min_cost", power_budget_w=INF, max_total_racks=INF)
    samples = []
    for _ in range(int(rng.integers(2, 5))):
        samples.append(dataclasses.replace(
            base, demand=base.demand * rng.uniform(0.6, 1.6), annual_cost_usd_per_rack=(
                base.annual_cost_usd_per_rack * rng.uniform(0.7, 1.4, base.n_hardware)),
            power_budget_w=float(rng.uniform(2.0, 8.0) * base.rack_power_w.mean()) if rng.random() < 0.3 else INF,
            max_racks=np.where(rng.random(base.n_hardware) < 0.2, rng.integers(1, 4, base.n_hardware),
                               base.max_racks).astype(float)))
    percentile = None if seed % 3 == 0 else float(rng.choice([50.0, 75.0, 90.0]))
    late = float(rng.choice([0.0, 0.25, 1.0])) if seed % 2 else None
    return R.RobustProblem(samples, percentile=percentile, late_premium=late)


def robust_as_the_brute_force(p: R.RobustProblem, seed: int) -> bool:
    """SCIP and HiGHS against the robust brute force on one problem (its optimum, its re-check, its bound, (Q2)'s
    mean); False where the problem is too big to enumerate."""
    try:
        exact, fleet = bf.robust_brute_force(p)
    except ValueError:
        return False
    for solver in backends.available_exact():
        sol = R.optimize(p, solver, relative_gap=1e-9)
        if math.isinf(exact):
            assert sol.status == "infeasible", (seed, solver)
            continue
        assert sol.status == "optimal" and sol.violations == (), (seed, solver, sol.violations)
        assert sol.value == pytest.approx(exact, rel=1e-6), (seed, solver, sol.racks, fleet)
        ev = R.evaluate(p, sol.racks, sol.replicas, late=sol.late)
        assert ev.violations == () and ev.value == pytest.approx(sol.value)
        assert sol.best_bound <= sol.value * (1 + 1e-6)
        if p.percentile is not None and p.late_premium is None:  # (Q2): the lowest mean at that percentile
            assert sol.mean == pytest.approx(float(p.weight @ (np.array([bf.primary_costs(s) for s in p.samples])
                                                             @ fleet)), rel=1e-6), (seed, solver)
    return True


@pytest.mark.parametrize("seed", range(80))
def test_the_exact_backends_find_the_brute_force_optimum(seed):
    if not robust_as_the_brute_force(tiny_samples(seed), seed):
        pytest.skip("too big for brute force")


def test_one_sample_is_the_single_period_optimum():
    for seed in range(10):
        p = tiny_problem(seed)
        single = F.optimize(p, "scip", fewest_platforms=False)
        robust = R.optimize(R.RobustProblem([p]), "scip")
        assert robust.status == single.status
        if single.status == "optimal":
            assert robust.value == pytest.approx(single.objective, rel=1e-6)


@pytest.mark.parametrize("solver", backends.available_exact())
def test_max_revenue_weighs_each_sample_s_revenue(solver):
    # 800 units worth 4e6/year in sample a and 1e6 in b; a rack (1e6) serves 400. Racks r: f_a = r - 2r, f_b =
    # r - r/2 (in 1e6): the mean falls by 0.25e6 a rack, so both racks, f = (-2e6, +1e6)
    def selling(value: float) -> F.FleetProblem:
        return dataclasses.replace(one_system(800.0, 1e6), objective="max_revenue", group_value=np.array([value]))

    p = R.RobustProblem([selling(4e6), selling(1e6)])
    sol = R.optimize(p, solver)
    assert sol.racks.tolist() == [2.0] and sol.violations == ()
    assert sol.sample_objective.tolist() == pytest.approx([-2e6, 1e6]) and sol.mean == pytest.approx(-0.5e6)


@pytest.mark.parametrize("seed", range(0, 40, 3))
def test_a_known_start_is_never_beaten_by_a_worse_answer_and_the_relaxed_start_holds(seed):
    p = tiny_samples(seed)
    exact, fleet = bf.robust_brute_force(p)
    if math.isinf(exact):
        return
    quick = R.relaxed_start(p, "scip", 10.0, 1e-6)
    if quick is not None:  # whole replicas in every sample, within every row
        assert R.evaluate(p, quick.racks, quick.replicas, late=quick.late).violations == ()
        assert quick.value >= exact * (1 - 1e-9)
    # a deliberately poor start (the brute-force fleet plus a rack of each type, topped up): the answer is no worse
    more = fleet + 1.0
    tops = [R.topped_up(s, more, late_premium=p.late_premium or 0.0) for s in p.samples]
    if all(t.status == "optimal" for t in tops) and (p.late_premium is not None
                                                     or all(np.all(t.racks == more) for t in tops)):
        start = R.known_plan(p, more, [t.replicas for t in tops], [t.racks - more for t in tops])
        if start is not None:
            sol = R.optimize(p, "highs", 20.0, 1e-9, start=start)
            assert sol.value <= start.value * (1 + 1e-9) and sol.value == pytest.approx(exact, rel=1e-6)
