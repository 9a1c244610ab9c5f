"""Several sites in one MILP (solvers.milp (16), docs/OPTIMIZER.md 21): a hardware type is a system at one site;
each site has its own power budget, PUE and rack limit; a system's supply cap, minimum purchase and platform count
span its sites. Held to the brute force (kernel and twin) on random tiny instances with SCIP and HiGHS, and by hand.
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest

from solvers import backends
from solvers import bruteforce as bf
from solvers import milp as F

INF = math.inf
TIGHT = 1e-9
REL = 1e-6
EXACT = backends.available_exact()


def two_site_problem(seed: int) -> F.FleetProblem:
    """2 sites x 1-2 systems (types h = site * K + k), 1-2 workloads, one column per (workload, type) at most 5,
    each site its own pue, budget and rack limit; supply caps, minimum purchases and a platform limit at random."""
    rng = np.random.default_rng(seed)
    K, W, S = int(rng.integers(1, 3)), int(rng.integers(1, 3)), 2
    H = S * K
    cpr_k = rng.choice([4.0, 8.0], K)
    power_k = rng.uniform(5e3, 50e3, K)
    capex_k = rng.uniform(1e5, 1e6, K)
    site_energy = rng.uniform(0.8, 1.3, S)  # electricity at each site: a rack's cost differs by site
    cols = [(w, h) for w in range(W) for h in range(H)]
    rng.shuffle(cols)
    cols = cols[:5]
    if not {w for w, _ in cols} >= set(range(W)):
        cols = [(w, w % H) for w in range(W)] + cols[W:]
    J = len(cols)
    chips = np.zeros((J, H))
    workload = np.array([w for w, _ in cols])
    speed_k = rng.uniform(50.0, 150.0, K)
    for j, (w, h) in enumerate(cols):
        chips[j, h] = rng.choice([1.0, 2.0, 4.0])
    capacity = np.array([speed_k[h % K] * chips[j, h] / 2.0 for j, (w, h) in enumerate(cols)])
    demand = np.array([rng.uniform(0.5, 3.0) * capacity[workload == w].mean() for w in range(W)])
    cap_k = np.where(rng.random(K) < 0.4, rng.integers(1, 5, K), INF)
    least_k = np.where(rng.random(K) < 0.3, rng.integers(1, 3, K), 0)
    power = np.tile(power_k, S)
    return F.FleetProblem(
        chips_per_rack=np.tile(cpr_k, S), rack_power_w=power,
        annual_cost_usd_per_rack=np.concatenate([capex_k * e for e in site_energy]),
        max_racks=np.tile(cap_k, S).astype(float), workload=workload, capacity=capacity, chips=chips,
        integer_replicas=np.ones(J, bool), demand=demand, min_racks=np.tile(least_k, S).astype(float),
        max_platforms=1.0 if rng.random() < 0.25 else INF,
        rack_site=np.repeat(np.arange(S), K), rack_system=np.tile(np.arange(K), S),
        site_pue=rng.choice([1.1, 1.4], S),
        site_power_budget_w=np.where(rng.random(S) < 0.6, rng.uniform(1.0, 4.0, S) * power_k.mean(), INF),
        site_max_racks=np.where(rng.random(S) < 0.3, rng.integers(1, 4, S), INF).astype(float),
        objective="min_power" if rng.random() < 0.2 else "min_cost")


def same_objective(a: float, b: float) -> bool:
    return (math.isinf(a) and math.isinf(b)) or abs(a - b) <= REL * max(abs(a), abs(b))


def brute_force_twins_agree(problems) -> None:
    """The jitted brute force and its plain-Python twin: the same feasibility and optimum on every problem."""
    for seed, p in enumerate(problems):
        jit, py = bf.brute_force(p), bf.brute_force_python(p)
        assert jit.feasible == py.feasible and same_objective(jit.objective, py.objective), (seed, jit.objective,
                                                                                             py.objective)


def test_the_brute_force_kernel_matches_its_twin_on_two_sites():
    brute_force_twins_agree(two_site_problem(seed) for seed in range(40))
    for seed in range(40):
        p = two_site_problem(seed)
        jit = bf.brute_force(p)
        if jit.feasible:
            ev = F.evaluate(p, jit.racks, jit.replicas)
            assert ev.feasible and ev.objective == pytest.approx(jit.objective, rel=1e-12), (seed, ev.violations)


def solved_as_the_brute_force(problems) -> list[tuple]:
    """(brute-force result, solution) of SCIP and HiGHS on each problem: the same optimum, each plan re-checked by
    evaluate (its rented chips with it)."""
    out = []
    for seed, p in enumerate(problems):
        want = bf.brute_force(p)
        for name in EXACT:
            sol = F.optimize(p, name, relative_gap=TIGHT)
            got = sol.objective if sol.status == "optimal" else INF
            assert same_objective(got, want.objective), (seed, name, got, want.objective)
            if sol.status == "optimal":
                ev = F.evaluate(p, sol.racks, sol.replicas, rented=sol.rented)
                assert sol.violations == () and ev.feasible, (seed, name, ev.violations)
            out.append((want, sol))
    return out


def test_scip_and_highs_agree_with_the_brute_force_on_two_sites():
    solved = solved_as_the_brute_force(two_site_problem(seed) for seed in range(40))
    assert sum(want.feasible for want, _ in solved) >= 15 * len(EXACT)


def one_system_two_sites(budget_a_w: float, budget_b_w: float, pue=(1.0, 1.0), cap=INF, least=0.0,
                         site_racks=(INF, INF)) -> F.FleetProblem:
    """One system of 4 chips and 10 kW a rack, 100 USD a rack at site 0 and 150 at site 1; one workload of 10
    replicas of one chip each (capacity 1), served at either site."""
    chips = np.array([[1.0, 0.0], [0.0, 1.0]])
    return F.FleetProblem(
        chips_per_rack=np.array([4.0, 4.0]), rack_power_w=np.array([10e3, 10e3]),
        annual_cost_usd_per_rack=np.array([100.0, 150.0]), max_racks=np.array([cap, cap]),
        workload=np.array([0, 0]), capacity=np.array([1.0, 1.0]), chips=chips,
        integer_replicas=np.array([True, True]), demand=np.array([10.0]), min_racks=np.array([least, least]),
        rack_site=np.array([0, 1]), rack_system=np.array([0, 0]), site_pue=np.array(pue),
        site_power_budget_w=np.array([budget_a_w, budget_b_w]), site_max_racks=np.array(site_racks))


@pytest.mark.parametrize("solver", EXACT)
def test_each_sites_budget_binds_its_own_racks(solver):
    # 10 replicas need 3 racks (12 chips). Site 0 (cheaper) holds 2 racks within 20 kW: the third goes to site 1
    sol = F.optimize(one_system_two_sites(20e3, INF), solver, relative_gap=TIGHT)
    assert sol.status == "optimal" and list(sol.racks) == [2, 1] and sol.objective == pytest.approx(350.0)
    # at pue 1.25 site 0's 20 kW holds one rack (12.5 kW a rack): 1 + 2 racks, 400 USD
    sol = F.optimize(one_system_two_sites(20e3, INF, pue=(1.25, 1.0)), solver, relative_gap=TIGHT)
    assert list(sol.racks) == [1, 2] and sol.objective == pytest.approx(400.0)
    ev = F.evaluate(sol_problem := one_system_two_sites(20e3, INF, pue=(1.25, 1.0)), sol.racks, sol.replicas)
    assert ev.site_facility_power_w.tolist() == pytest.approx([12.5e3, 20e3]) and ev.feasible
    assert not F.evaluate(sol_problem, np.array([2, 1]), np.array([8.0, 2.0])).feasible  # 25 kW at site 0


@pytest.mark.parametrize("solver", EXACT)
def test_a_systems_supply_cap_and_site_racks_span_its_sites(solver):
    # a cap of 2 racks over both sites cannot hold 3 racks anywhere: infeasible, though each site alone could
    assert F.optimize(one_system_two_sites(INF, INF, cap=2.0), solver).status == "infeasible"
    ev = F.evaluate(one_system_two_sites(INF, INF, cap=2.0), np.array([2, 1]), np.array([8.0, 2.0]))
    assert "max_racks[h=0]" in ev.violations and "max_racks[h=1]" in ev.violations
    # site 0 holds 1 rack at most: 1 + 2 racks
    sol = F.optimize(one_system_two_sites(INF, INF, site_racks=(1.0, INF)), solver, relative_gap=TIGHT)
    assert list(sol.racks) == [1, 2] and sol.objective == pytest.approx(400.0)


@pytest.mark.parametrize("solver", EXACT)
def test_a_minimum_purchase_counts_every_site_and_a_platform_is_a_system(solver):
    # a minimum of 4 racks over the sites: 4 at the cheaper site, not 3 + anything
    sol = F.optimize(one_system_two_sites(INF, INF, least=4.0), solver, relative_gap=TIGHT)
    assert list(sol.racks) == [4, 0] and sol.objective == pytest.approx(400.0)
    # 2 + 2 racks over the sites also meets it (the minimum is the system's, not each site's)
    assert F.evaluate(one_system_two_sites(INF, INF, least=4.0), np.array([2, 2]), np.array([8.0, 2.0])).feasible
    # one system at two sites is one platform
    p = one_system_two_sites(20e3, INF)
    sol = F.optimize(dataclasses.replace(p, max_platforms=1.0), solver, relative_gap=TIGHT)
    assert list(sol.racks) == [2, 1] and sol.violations == ()


def test_a_column_on_two_sites_is_refused():
    p = one_system_two_sites(INF, INF)
    with pytest.raises(ValueError, match="two sites"):
        dataclasses.replace(p, chips=np.array([[1.0, 1.0], [0.0, 1.0]]))


@pytest.mark.parametrize("solver", EXACT)
def test_a_site_that_may_not_buy_a_system_leaves_its_cap_to_the_others(solver):
    # site 0 may not buy the system (cap 0: installed-only there, or not allowed), site 1 up to 5: all 3 at site 1,
    # and the system's cap over the sites is the larger, 5 (brute force and twin agree)
    p = dataclasses.replace(one_system_two_sites(INF, INF), max_racks=np.array([0.0, 5.0]))
    sol = F.optimize(p, solver, relative_gap=TIGHT)
    assert list(sol.racks) == [0, 3] and sol.objective == pytest.approx(450.0)
    assert bf.brute_force(p).objective == pytest.approx(450.0) == bf.brute_force_python(p).objective
    assert "max_racks[h=0]" in F.evaluate(p, np.array([1, 2]), np.array([4.0, 6.0])).violations


# ---- rentals over sites (12, 16): one offer rented at several sites is one provider's capacity ------------------
def with_shared_offers(p: F.FleetProblem, seed: int) -> F.FleetProblem:
    """``p`` with 1-2 rental offers per system, each offered at both sites (its system's type at each) under one
    limit over them, priced near a rack's cost per chip."""
    rng = np.random.default_rng(1000 + seed)
    K = int(p.rack_systems.max()) + 1
    hw, cost, most, offer = [], [], [], []
    for k in range(K):
        per_chip = float(p.annual_cost_usd_per_rack[k] / p.chips_per_rack[k])
        for _ in range(int(rng.integers(1, 3))):
            price, limit, o = per_chip * rng.uniform(0.6, 2.0), float(rng.integers(1, 9)), len(set(offer))
            for h in np.flatnonzero(p.rack_systems == k).tolist():
                hw.append(h)
                cost.append(price)
                most.append(limit)
                offer.append(o)
    return dataclasses.replace(p, rent_hardware=np.array(hw), rent_cost_usd_per_chip=np.array(cost),
                               rent_max_chips=np.array(most), rent_offer=np.array(offer),
                               objective="min_cost")


def test_the_brute_force_kernel_matches_its_twin_with_offers_over_two_sites():
    brute_force_twins_agree(with_shared_offers(two_site_problem(seed), seed) for seed in range(40))


def test_scip_and_highs_agree_with_the_brute_force_with_offers_over_two_sites():
    solved = solved_as_the_brute_force(with_shared_offers(two_site_problem(seed), seed) for seed in range(40))
    assert sum(sol.status == "optimal" and np.sum(sol.rented) > 0 for _, sol in solved) >= 10


@pytest.mark.parametrize("solver", EXACT)
def test_one_offer_rented_at_two_sites_holds_its_chips_over_both(solver):
    # no site may hold a rack: the 10 one-chip replicas run on rented chips only, 1 USD a chip at either site
    p = dataclasses.replace(one_system_two_sites(INF, INF, site_racks=(0.0, 0.0)),
                            rent_hardware=np.array([0, 1]), rent_cost_usd_per_chip=np.array([1.0, 1.0]),
                            rent_max_chips=np.array([6.0, 6.0]))
    # each site its own offer of 6: 12 chips, enough (6 + 4 or any split)
    sol = F.optimize(p, solver, relative_gap=TIGHT)
    assert sol.status == "optimal" and sol.objective == pytest.approx(10.0) and sum(sol.rented) == pytest.approx(10)
    # one offer of 6 chips over both sites: 6 chips cannot hold 10 replicas
    shared = dataclasses.replace(p, rent_offer=np.array([0, 0]))
    assert F.optimize(shared, solver).status == "infeasible"
    assert not bf.brute_force(shared).feasible and not bf.brute_force_python(shared).feasible
    ev = F.evaluate(shared, np.zeros(2), np.array([6.0, 4.0]), rented=np.array([6.0, 4.0]))
    assert "offer[0]" in ev.violations and "rent[0]" not in ev.violations
    # with racks allowed at site 1 again, 4 chips are bought there (1 rack at 150) and 6 rented: 156 USD
    sol = F.optimize(dataclasses.replace(shared, site_max_racks=np.array([0.0, INF])), solver, relative_gap=TIGHT)
    assert sol.status == "optimal" and sol.objective == pytest.approx(156.0)
    assert list(sol.racks) == [0, 1] and sum(sol.rented) == pytest.approx(6.0)


def test_one_offers_rentals_carry_its_one_limit():
    p = one_system_two_sites(INF, INF)
    with pytest.raises(ValueError, match="one offer's rentals carry its one limit"):
        dataclasses.replace(p, rent_hardware=np.array([0, 1]), rent_cost_usd_per_chip=np.array([1.0, 1.0]),
                            rent_max_chips=np.array([6.0, 5.0]), rent_offer=np.array([0, 0]))


def test_rented_chips_rounded_up_past_an_offers_limit_over_its_sites_are_scaled_back():
    # extract rounds a rental within 1e-6 of a whole chip up to it (whole_chips_up): at two sites of one 6-chip
    # offer, 2.9999996 + 3.0000001 would round to 3 + 3.0000001, past 6; within_offers takes the sum back to 6
    p = dataclasses.replace(one_system_two_sites(INF, INF), rent_hardware=np.array([0, 1]),
                            rent_cost_usd_per_chip=np.array([1.0, 1.0]), rent_max_chips=np.array([6.0, 6.0]),
                            rent_offer=np.array([0, 0]))
    rounded = F.whole_chips_up(np.array([2.9999996, 3.0000001]), p.rent_max_chips)
    assert rounded.sum() > 6.0
    held = F.within_offers(p, rounded)
    assert held.sum() == pytest.approx(6.0, abs=1e-12) and held.sum() <= 6.0 + 1e-12
    assert F.within_offers(p, np.array([2.0, 3.0])).tolist() == [2.0, 3.0]  # within the limit: as it was


# ---- one robust fleet over sites (solvers.robust with (16)) --------------------------------------------------------
def two_site_samples(seed: int):
    """2-3 samples of a random two-site problem: each its demand x U(0.6, 1.6) and its racks' cost x U(0.8, 1.3);
    the mean or a percentile, half with a late premium."""
    from solvers import robust as R

    rng = np.random.default_rng(2000 + seed)
    base = dataclasses.replace(two_site_problem(seed), objective="min_cost")
    samples = [dataclasses.replace(base, demand=base.demand * rng.uniform(0.6, 1.6),
                                   annual_cost_usd_per_rack=base.annual_cost_usd_per_rack * rng.uniform(0.8, 1.3))
               for _ in range(int(rng.integers(2, 4)))]
    return R.RobustProblem(samples, percentile=None if seed % 2 else 75.0,
                           late_premium=0.5 if seed % 3 == 0 else None)


def test_scip_and_highs_find_the_robust_brute_force_optimum_over_two_sites():
    from tests.test_robust import robust_as_the_brute_force

    assert sum(robust_as_the_brute_force(two_site_samples(seed), seed) for seed in range(30)) >= 15


def test_a_robust_fleet_holds_each_sites_budget_and_a_systems_cap_over_its_sites():
    from solvers import robust as R

    # one system at two sites, 3 racks' demand in one sample and 2 in the other: site 0 (cheaper) holds 2 racks
    # within its 20 kW; a cap of 3 racks over both sites still serves the larger sample (2 + 1)
    low = dataclasses.replace(one_system_two_sites(20e3, INF, cap=3.0), demand=np.array([8.0]))
    high = one_system_two_sites(20e3, INF, cap=3.0)
    for name in EXACT:
        sol = R.optimize(R.RobustProblem([low, high]), name, relative_gap=TIGHT)
        assert sol.status == "optimal" and list(sol.racks) == [2, 1], (name, sol.racks)
    # a cap of 2 over both sites: no fleet serves the larger sample (each site alone would take 2)
    capped = [dataclasses.replace(q, max_racks=np.array([2.0, 2.0])) for q in (low, high)]
    for name in EXACT:
        assert R.optimize(R.RobustProblem(capped), name).status == "infeasible"
    assert math.isinf(bf.robust_brute_force(R.RobustProblem(capped))[0])
