"""Build-outs over several sites (issue 44: "several sites in one plan" for periods and demand scenarios;
docs/OPTIMIZER.md 7's (8) and 21): the MILP against brute force and by hand, a site split in two never cheaper, one
site through the site arrays the same as without them, and the planner's plan, check and errors."""

from __future__ import annotations

import dataclasses
import json
import math

import numpy as np
import pytest

from planner.errors import InfeasibleError, InputError
from planner.scenario import scenario_from_yaml
from solvers import backends
from solvers import bruteforce as bf
from solvers import multiperiod as MP

TIGHT = 1e-6


def tiny_sites(seed: int) -> MP.BuildOutProblem:
    """Two systems at each of two sites (four types, site after site), each column on one type; two periods, one
    or two demand scenarios; each site its own PUE, power budget and floor space by period, each system one
    supply cap over both sites."""
    rng = np.random.default_rng(seed)
    T, S, W = 2, int(rng.integers(1, 3)), int(rng.integers(1, 3))
    cpr = np.tile(rng.integers(2, 5, 2).astype(float), 2)
    power = np.tile([1000.0, 1500.0], 2)
    base = rng.uniform(50, 150, (2, W)) * (rng.random((2, W)) < 0.8)
    base[:, 0] = np.maximum(base[:, 0], 40)
    chips = np.zeros((4, 4))
    coverage = np.zeros((4, W))
    for k in range(4):  # column k on type k: system k % 2 at site k // 2 serves what its system serves
        chips[k, k] = 1.0
        coverage[k] = base[k % 2]
    if rng.random() < 0.5:  # a workload pinned to site 0 (data residence): site 1's columns do not serve it
        coverage[2:, W - 1] = 0.0
    first = rng.uniform(60, 200, W)  # decided before the scenarios differ
    demand = np.array([[first * (1.0 if t == 0 else 1.5 * rng.uniform(0.7, 1.3)) for t in range(T)]
                       for _ in range(S)])
    cap = rng.choice([3.0, 4.0, math.inf], 2)
    return MP.BuildOutProblem(
        chips_per_rack=cpr, rack_power_w=power, chips=chips, coverage=coverage,
        integer_replicas=np.ones(4, bool), demand=demand, probability=np.full(S, 1.0 / S),
        buy_cost=rng.uniform(5, 15, (T, 4)), available=np.ones((T, 4), bool),
        alive=np.array([[u <= t for t in range(T)] for u in range(T)]),
        max_racks=np.tile(cap, 2), rack_site=[0, 0, 1, 1], rack_system=[0, 1, 0, 1],
        site_pue=rng.uniform(1.1, 1.5, 2), site_power_budget_w=rng.uniform(3000, 9000, (T, 2)),
        site_max_racks=rng.choice([2.0, 3.0, 4.0, math.inf], (T, 2)))


@pytest.mark.parametrize("name", backends.available_exact())
def test_milp_over_sites_matches_brute_force(name):
    """SCIP and HiGHS against enumeration on 30 tiny two-site build-outs: each site's power and floor space per
    period, each system's cap over both sites, a workload pinned to one site."""
    feasible = infeasible = 0
    for seed in range(30):
        p = tiny_sites(seed)
        want, _ = bf.buildout_brute_force(p, most_racks=2)
        sol = MP.optimize(p, name, 20, TIGHT)
        if math.isinf(want):
            if sol.status == "infeasible":
                infeasible += 1
            continue  # or a plan buys more than 2 of a type at once, which brute force does not try
        feasible += 1
        assert sol.status == "optimal" and not sol.violations, (seed, name)
        assert sol.objective <= want * (1 + 1e-9), (seed, name)
        if np.all(sol.buys <= 2):
            assert sol.objective == pytest.approx(want, rel=1e-6), (seed, name)
    assert feasible >= 10 and infeasible >= 1, (feasible, infeasible)


def test_each_sites_limits_bind_on_their_own_racks_by_hand():
    """One system at two sites, one workload either serves; 5 racks needed in period 0, 8 in period 1. Site 0 is
    cheaper but holds 3 racks of power (3,000 W at PUE 1: 1,000 W a rack), then 4; site 1 takes the rest. Racks
    cost less a year later, so none is bought before it is needed. With one budget for both, all 8 at site 0."""
    p = MP.BuildOutProblem(
        chips_per_rack=[1.0, 1.0], rack_power_w=[1000.0, 1000.0], chips=np.eye(2), coverage=[[1.0], [1.0]],
        integer_replicas=[True, True], demand=[[[5.0], [8.0]]], probability=[1.0],
        buy_cost=[[1.0, 2.0], [0.9, 1.8]], available=np.ones((2, 2), bool), alive=np.triu(np.ones((2, 2), bool)),
        rack_site=[0, 1], rack_system=[0, 0], site_pue=[1.0, 1.0],
        site_power_budget_w=[[3000.0, math.inf], [4000.0, math.inf]], site_max_racks=np.full((2, 2), math.inf))
    sol = MP.optimize(p, "scip", 20, TIGHT)
    assert sol.status == "optimal" and not sol.violations
    assert sol.buys[:, 0].tolist() == [[3.0, 2.0], [1.0, 2.0]]  # site 0 to its budget each period, site 1 the rest
    assert sol.objective == pytest.approx(3 * 1.0 + 2 * 2.0 + 1 * 0.9 + 2 * 1.8)
    over = np.array([[[4.0, 1.0]], [[0.0, 3.0]]])  # 4 racks at site 0 in period 0: over its 3,000 W
    assert MP.evaluate(p, over, np.array([[[4.0, 1.0]], [[4.0, 4.0]]])).violations == ("power[0,0,0]",)


def test_a_systems_supply_cap_spans_its_sites():
    """(5, 8): a cap of 6 racks on one system at two sites holds 6 over both: 7 needed is infeasible, though each
    site alone could hold 6."""
    base = dict(chips_per_rack=[1.0, 1.0], rack_power_w=[1.0, 1.0], chips=np.eye(2), coverage=[[1.0], [1.0]],
                integer_replicas=[True, True], probability=[1.0], buy_cost=[[1.0, 1.0]],
                available=np.ones((1, 2), bool), alive=[[True]], max_racks=[6.0, 6.0], rack_site=[0, 1],
                rack_system=[0, 0], site_pue=[1.0, 1.0], site_power_budget_w=[[math.inf, math.inf]],
                site_max_racks=[[math.inf, math.inf]])
    assert MP.optimize(MP.BuildOutProblem(demand=[[[6.0]]], **base), "scip", 20, TIGHT).status == "optimal"
    assert MP.optimize(MP.BuildOutProblem(demand=[[[7.0]]], **base), "scip", 20, TIGHT).status == "infeasible"
    split = MP.BuildOutProblem(demand=[[[6.0]]], **{**base, "rack_system": [0, 1]})  # two systems: 6 each
    assert MP.optimize(dataclasses.replace(split, demand=np.array([[[12.0]]])), "scip", 20, TIGHT).status == "optimal"


def one_site_as_sites(p: MP.BuildOutProblem) -> MP.BuildOutProblem:
    """The same problem with its one site given through the site arrays (8)."""
    T = p.n_periods
    return dataclasses.replace(p, rack_site=np.zeros(p.n_hardware, int), site_pue=[p.pue],
                               site_power_budget_w=p.power_budget_w[:, None], site_max_racks=p.max_total_racks[:, None],
                               power_budget_w=np.full(T, math.inf), max_total_racks=np.full(T, math.inf))


@pytest.mark.parametrize("seed", range(8))
def test_one_site_through_the_site_arrays_is_the_same_build_out(seed):
    from tests.test_buildout import tiny

    p = tiny(seed)
    p = dataclasses.replace(p, pue=1.3, power_budget_w=np.full(p.n_periods, 6000.0))
    a, b = MP.optimize(p, "scip", 20, TIGHT), MP.optimize(one_site_as_sites(p), "scip", 20, TIGHT)
    assert a.status == b.status
    if a.status == "optimal":
        assert b.objective == pytest.approx(a.objective, rel=1e-6)


def split_in_two(p: MP.BuildOutProblem) -> MP.BuildOutProblem:
    """One site's build-out as two sites, each with half its power and floor space, every type and column at both
    (one system each over the two: the same supply caps)."""
    H, J = p.n_hardware, p.n_columns
    chips = np.zeros((2 * J, 2 * H))
    chips[:J, :H], chips[J:, H:] = p.chips, p.chips
    return dataclasses.replace(
        p, chips_per_rack=np.tile(p.chips_per_rack, 2), rack_power_w=np.tile(p.rack_power_w, 2), chips=chips,
        coverage=np.vstack([p.coverage, p.coverage]), integer_replicas=np.tile(p.integer_replicas, 2),
        buy_cost=np.tile(p.buy_cost, 2), available=np.tile(p.available, 2), max_racks=np.tile(p.max_racks, 2),
        existing=np.zeros((p.n_periods, 2 * H)), rack_site=np.repeat([0, 1], H), rack_system=np.tile(np.arange(H), 2),
        site_pue=[p.pue, p.pue], site_power_budget_w=np.repeat(p.power_budget_w[:, None] / 2, 2, axis=1),
        site_max_racks=np.repeat(np.floor(p.max_total_racks[:, None] / 2), 2, axis=1),
        power_budget_w=np.full(p.n_periods, math.inf), max_total_racks=np.full(p.n_periods, math.inf))


@pytest.mark.parametrize("seed", range(12))
def test_one_site_split_in_two_with_half_the_power_each_never_costs_less(seed):
    from tests.test_buildout import tiny

    p = tiny(seed)
    p = dataclasses.replace(p, power_budget_w=np.full(p.n_periods, 12000.0))
    whole, split = MP.optimize(p, "scip", 20, TIGHT), MP.optimize(split_in_two(p), "scip", 20, TIGHT)
    if split.status == "optimal":
        assert whole.status == "optimal"
        assert split.objective >= whole.objective * (1 - 1e-6)


def test_bad_site_arrays_are_named():
    p = tiny_sites(0)
    with pytest.raises(ValueError, match="not power_budget_w"):
        dataclasses.replace(p, power_budget_w=np.full(2, 1e6))
    with pytest.raises(ValueError, match=r"\[periods, sites\]"):
        dataclasses.replace(p, site_max_racks=np.full((3, 2), 4.0))
    chips = p.chips.copy()
    chips[0, 2] = 1.0  # column 0 on a type at site 0 and one at site 1
    with pytest.raises(ValueError, match="two sites"):
        dataclasses.replace(p, chips=chips)
    with pytest.raises(ValueError, match="one cap"):
        dataclasses.replace(p, max_racks=np.array([1.0, 2.0, 3.0, 2.0]))


# ---- the planner ------------------------------------------------------------------------------------------------
TWO = """
name: two-site-grow
start_date: 2027-01-01
periods: [2027-01-01, 2028-01-01]
horizon_years: 5
service_life_years: 4
finance: {wacc: 0.08, electricity_usd_per_mwh: 120, pue: 1.4}
sites:
  - {name: city, power_budget_mw: [0.015, 0.03], max_racks: 30}  # one 8-GPU H100 server: 0.0143 MW
  - {name: colo, power_budget_mw: [0.5, 1.5], pue: 1.2, electricity_usd_per_mwh: 45}
hardware: {allow: [hgx-h100, hgx-b200], price_decline_per_year: 0.15}
workloads:
  - {name: chat, model: llama-3.1-8b, requests_per_s: 400, growth_per_year: 2.0, input_tokens: 1000,
     output_tokens: 300, tier: standard, ttft_s: 1.0}
  - {name: local, model: llama-3.1-8b, sites: [city], requests_per_s: 40, growth_per_year: 1.5,
     input_tokens: 1500, output_tokens: 100, tier: high, ttft_s: 0.5}
demand_scenarios:
  - {name: slow, probability: 0.5, multiplier: 0.8}
  - {name: fast, probability: 0.5, multiplier: 1.3}
solver: {name: highs, time_limit_s: 60}
"""


@pytest.fixture(scope="module")
def two_site_plan():
    from planner.fleet.buildout import solve_buildout

    return solve_buildout(scenario_from_yaml(TWO))


@pytest.mark.integration
def test_a_build_out_over_two_sites_places_each_periods_racks_within_each_site(two_site_plan):
    d = two_site_plan.to_dict()
    assert d["status"] == "optimal" and all(c["ok"] for c in d["checks"])
    assert any(c["check"] == "sites" for c in d["checks"])
    assert {r["site"] for r in d["first_period_order"]} <= {"city", "colo"}
    assert all(r["hardware"].endswith("@" + r["site"]) for r in d["first_period_order"])
    for s in d["scenarios"]:
        for per in s["periods"]:
            sites = {e["name"]: e for e in per["totals"]["sites"]}
            assert set(sites) == {"city", "colo"}
            for e in sites.values():
                assert e["facility_power_mw"] <= e["power_budget_mw"] * (1 + 1e-9)
            assert sum(e["racks"] for e in sites.values()) == per["totals"]["racks"]
            assert per["totals"]["facility_power_mw"] == pytest.approx(sum(e["facility_power_mw"]
                                                                         for e in sites.values()))
            for r in per["fleet"]:
                assert r["hardware"] == r["hardware"].split("@")[0] + "@" + r["site"]
            local = [r for r in per["allocation"] if r["workload"] == "local"]
            assert local and all(r["site"] == "city" for r in local)  # pinned to the city in every period
    # the city's budget binds: the unpinned chat goes to the colo hall in some period
    assert any(r["workload"] == "chat" and r["site"] == "colo"
               for s in d["scenarios"] for per in s["periods"] for r in per["allocation"])


@pytest.mark.integration
def test_check_holds_a_written_two_site_build_out_and_catches_a_site_over_its_budget(two_site_plan):
    from planner.fleet.buildout import check_buildout

    d = json.loads(json.dumps(two_site_plan.to_dict()))
    assert all(c["ok"] for c in check_buildout(d))
    bad = json.loads(json.dumps(d))  # a period's city reported with less power than its racks draw
    bad["scenarios"][0]["periods"][1]["totals"]["sites"][0]["facility_power_mw"] *= 0.5
    failed = {c["check"] for c in check_buildout(bad) if not c["ok"]}
    assert failed == {"sites"}
    more = json.loads(json.dumps(d))  # a city rack more than its budget holds, bought in the first period
    h = more["inputs"]["buildout"]["hardware"].index(next(r["hardware"] for r in d["first_period_order"]
                                                          if r["site"] == "city"))
    buys = np.array(more["inputs"]["buys"])
    buys[0, :, h] += 20
    more["inputs"]["buys"] = buys.tolist()
    failed = [c for c in check_buildout(more) if not c["ok"]]
    assert any("power[0,0,0]" in c["detail"] for c in failed)


@pytest.mark.integration
def test_an_infeasible_two_site_build_out_names_the_period_and_the_site():
    from planner.fleet.buildout import solve_buildout

    sc = scenario_from_yaml(TWO).with_({"sites.0.power_budget_mw": [0.015, 0.004]})
    with pytest.raises(InfeasibleError, match=r"period 2028-01-01 of demand scenario slow .*site city"):
        solve_buildout(sc)


def test_a_sites_per_period_limits_need_one_value_per_period():
    with pytest.raises(InputError, match=r"sites\[0\]\.power_budget_mw.*one value per period"):
        scenario_from_yaml(TWO.replace("[0.015, 0.03]", "[0.015, 0.03, 0.05]"))
    one = TWO.replace("periods: [2027-01-01, 2028-01-01]\n", "").replace("service_life_years: 4\n", "")
    one = one[:one.index("demand_scenarios:")] + one[one.index("solver:"):]
    with pytest.raises(InputError, match=r"sites\[0\]\.power_budget_mw.*set periods"):
        scenario_from_yaml(one.replace("growth_per_year: 2.0, ", "").replace("growth_per_year: 1.5,", ""))


def test_requests_decoded_at_another_site_than_their_prefill_are_said():
    """Noticed, not yet a row of the MILP (OPTIMIZER.md 21): a workload that decodes at one site what another
    prefills moves KV caches between sites. By hand: decode 100 at a, prompts 50 at a and 50 at b: half its
    requests are decoded at a with their prompts prefilled at b; balanced places (a hosted API one of them) say
    nothing."""
    from planner.fleet.assumptions import cross_site_words

    rows = [{"workload": "w", "site": "a", "output_tokens_per_s": 100.0, "prefill_tokens_per_s": 50.0},
            {"workload": "w", "site": "b", "output_tokens_per_s": 0.0, "prefill_tokens_per_s": 50.0}]
    (line,) = cross_site_words(rows, " then")
    assert line.startswith("w: 50% of its requests then are decoded at another site")
    balanced = [{"workload": "w", "site": "a", "output_tokens_per_s": 60.0, "prefill_tokens_per_s": 600.0},
                {"workload": "w", "site": None, "output_tokens_per_s": 40.0, "prefill_tokens_per_s": 400.0}]
    assert cross_site_words(balanced) == []


@pytest.mark.integration
def test_installed_racks_stay_at_their_site_in_every_period():
    """A site's installed racks are that site's existing racks in each period of the build-out (OPTIMIZER.md 9),
    counted in its power and in the system's cap over the sites, at no purchase."""
    from planner.fleet.buildout import solve_buildout

    installed = [{"hardware": "hgx-h100", "racks": 1, "bought": "2026-06-01"}]
    sc = scenario_from_yaml(TWO).with_({"sites.0.installed": installed})
    d = solve_buildout(sc).to_dict()
    assert all(c["ok"] for c in d["checks"])
    for s in d["scenarios"]:
        for per in s["periods"]:
            city = {r["hardware"]: r for r in per["fleet"] if r["site"] == "city"}
            assert city["hgx-h100@city"]["racks_installed"] >= 1
    assert all(r["hardware"] != "hgx-h100@city" for r in d["first_period_order"])  # the room holds one already


@pytest.mark.integration
def test_the_shipped_two_site_build_out_against_its_golden_figures():
    """scenarios/two-sites-buildout.yaml (the README's answer): the first order at each site, the cost within the
    scenario's gap, every period of both forecasts within each site's limits, customer data in the city room."""
    from pathlib import Path

    from tests.shipped import shipped_plan

    golden = json.loads((Path(__file__).parent / "golden" / "two-sites-buildout.json").read_text())
    d = shipped_plan("two-sites-buildout").to_dict()
    assert d["status"] == golden["status"] == "optimal" and all(c["ok"] for c in d["checks"])
    assert d["net_present_cost_usd"] == pytest.approx(golden["net_present_cost_usd"], rel=2e-3)
    order = {r["hardware"]: r["racks"] for r in d["first_period_order"]}
    assert sum(order.values()) == pytest.approx(sum(golden["first_period_order"].values()), rel=0.1)
    assert {r["site"] for r in d["first_period_order"]} == {"city", "colo"}
    for s in d["scenarios"]:
        for per in s["periods"]:
            for e in per["totals"]["sites"]:
                assert e["facility_power_mw"] <= e["power_budget_mw"] * (1 + 1e-9)
            assert all(r["site"] == "city" for r in per["allocation"]
                       if r["workload"] in ("customer-chatbot", "code-completion"))
