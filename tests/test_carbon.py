"""The min_carbon objective (issue 26; docs/OPTIMIZER.md 15): an entry of the objectives registry and its arrays,
priced by hand, held to the brute force, refused where it cannot price, and the same in the MILP, the plan and
check."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from planner.errors import InputError
from planner.fleet import finance
from solvers import bruteforce as bf
from solvers import milp as F
from solvers.objectives import PRICE_TABLES, REGISTRY, objective
from tests.test_fleet_milp import REL, assert_plan, objective_or_inf, same_objective, solve_all, \
    tiny_problem, two_types


def with_carbon(p: F.FleetProblem, rng) -> F.FleetProblem:
    """``p`` under min_carbon with plausible arrays: a rack's making over 4 years plus its energy, replicas'
    energy beyond the floor, rented chips at their rack's share."""
    rack = rng.uniform(5e3, 5e4, p.n_hardware) / 4.0 + p.rack_power_w * 1.25 * 8760.0 / 1e6 * rng.uniform(50, 600)
    return dataclasses.replace(p, objective="min_carbon", carbon_kg_per_rack=rack,
                               column_carbon_kg=rng.uniform(0.0, 0.1, p.n_columns) * rack.mean(),
                               rent_carbon_kg_per_chip=np.zeros(p.n_rentals))


def test_rack_carbon_hand_values():
    # 40 t to make, over 4 years: 10,000 kg a year; 100 kW x 1.25 x 8760 h = 1,095 MWh at 400 kg/MWh: 438,000 kg
    parts = finance.rack_carbon_parts(40_000.0, 100e3, 4.0, 400.0, 1.25)
    assert parts == {"embodied": pytest.approx(10_000.0), "energy": pytest.approx(438_000.0)}
    # a flat half of design power bills (and emits) half the energy
    assert finance.rack_carbon_parts(40_000.0, 100e3, 4.0, 400.0, 1.25, 0.5)["energy"] == pytest.approx(219_000.0)
    # a replica drawing 2 kW beyond the floor, working a quarter of the year, at PUE 1.25: 5.475 MWh -> 2,190 kg
    assert finance.replica_carbon_kg(2e3, 0.25, {"pue": 1.25}, 400.0) == pytest.approx(2_190.0)


def test_min_carbon_picks_the_system_that_emits_least_per_unit():
    # A: 1000 units a rack at 50 kg (0.05 a unit, and the cheaper); B: 2000 units at 40 kg (0.02): 5 racks of B
    p = two_types(objective="min_carbon", carbon_kg_per_rack=[50.0, 40.0])
    for sol in solve_all(p).values():
        assert_plan(sol, [0, 5], 200.0)
    assert bf.brute_force(p).objective == pytest.approx(200.0)
    assert F.evaluate(p, [0, 5], [0, 5]).objective == pytest.approx(200.0)
    # the same problem under min_cost still buys A
    for sol in solve_all(dataclasses.replace(p, objective="min_cost"), ("scip", "highs")).values():
        assert_plan(sol, [10, 0], 1000.0)


def test_installed_racks_emit_only_their_energy():
    # two installed racks of A whose making is sunk: kept at 10 kg, they serve 2000 units; B serves the rest
    p = two_types(objective="min_carbon", carbon_kg_per_rack=[50.0, 40.0], installed_racks=[2, 0],
                  installed_carbon_kg_per_rack=[10.0, 40.0])
    want = bf.brute_force(p)
    assert want.objective == pytest.approx(2 * 10.0 + 4 * 40.0)
    for sol in solve_all(p, ("scip", "highs")).values():
        assert sol.objective == pytest.approx(want.objective, rel=REL)


def test_min_carbon_solvers_agree_with_brute_force_on_tiny_problems():
    rng = np.random.default_rng(26)
    feasible = 0
    for seed in range(40):
        p = with_carbon(tiny_problem(seed, multi_row=seed % 2 == 1), rng)
        want = bf.brute_force(p)
        twin = bf.brute_force_python(p)
        assert same_objective(want.objective, twin.objective), seed
        for name, sol in solve_all(p, ("scip", "highs")).items():
            assert same_objective(objective_or_inf(sol), want.objective), (seed, name, sol.objective, want.objective)
        feasible += want.feasible
    assert feasible >= 10


def test_min_carbon_needs_its_arrays():
    with pytest.raises(ValueError, match="carbon_kg_per_rack must be 2 finite values"):
        two_types(objective="min_carbon")
    with pytest.raises(ValueError, match="must be > 0"):
        two_types(objective="min_carbon", carbon_kg_per_rack=[0.0, 40.0])
    # given beside another objective, the arrays are only held finite and >= 0 (a free rack is no error there)
    assert two_types(carbon_kg_per_rack=[0.0, 40.0]).objective == "min_cost"


def test_the_registry_is_data():
    """Each objective picks a price table the problem gives, by measure (issue 26: a new objective is an entry;
    issue 44: a measure is a price table), every part of it one price per rack, column and rental offer."""
    p = two_types(carbon_kg_per_rack=[50.0, 40.0])
    for goal in REGISTRY.values():
        assert goal.measure in PRICE_TABLES and goal.tie in PRICE_TABLES and goal.tie != goal.measure
        for measure in (goal.measure, goal.tie):
            t = p.prices(measure)
            assert t.rack.shape == t.kept.shape == (p.n_hardware,) and t.rent.shape == (p.n_rentals,)
            assert all(v.shape == (p.n_columns,) for v in t.column.values())
    assert goal_primary("min_carbon", p).tolist() == [50.0, 40.0]
    assert goal_primary("min_power", p).tolist() == p.floor_power_w.tolist()
    with pytest.raises(ValueError, match="price table"):
        p.prices("water_litres")
    assert objective("min_carbon").value({"carbon_kg_per_year": 5.0, "annual_cost_usd": 9.0}) == 5.0
    assert not objective("min_carbon").is_cost and objective("max_revenue").is_cost


def test_a_scenario_under_min_carbon_needs_the_grid(tmp_path):
    from planner.scenario import load_scenario

    with pytest.raises(InputError, match="grid_kg_co2_per_mwh"):
        load_scenario("scenarios/bank-2mw.yaml", ["objective=min_carbon"])
    sc = load_scenario("scenarios/bank-2mw.yaml", ["site.grid_kg_co2_per_mwh=400"])
    assert sc.site.grid_kg_co2_per_mwh == 400.0
    with pytest.raises(InputError, match="grid_kg_co2_per_mwh"):
        load_scenario("scenarios/bank-2mw.yaml", ["site.grid_kg_co2_per_mwh=-1"])


def test_min_carbon_refuses_what_it_cannot_price():
    from planner.scenario import load_scenario

    with pytest.raises(InputError, match="api offer"):
        load_scenario("scenarios/installed-h100-site.yaml", ["objective=min_carbon", "site.grid_kg_co2_per_mwh=400"])
    with pytest.raises(InputError, match="build-out does not take min_carbon"):
        load_scenario("scenarios/buildout-2027-2030.yaml", ["objective=min_carbon", "site.grid_kg_co2_per_mwh=400"])


@pytest.fixture(scope="module")
def bank_plans():
    import planner
    from planner.scenario import load_scenario

    return {o: planner.solve(load_scenario("scenarios/bank-2mw.yaml",
                                           [f"objective={o}", "site.grid_kg_co2_per_mwh=400"]))
            for o in ("min_cost", "min_carbon")}


@pytest.mark.integration
def test_min_carbon_emits_no_more_and_costs_no_less(bank_plans):
    cost, carbon = bank_plans["min_cost"].to_dict(), bank_plans["min_carbon"].to_dict()
    # each plan is optimal within the gap its own solve proved (the decode pools' rounds, OPTIMIZER.md 18, end each
    # on its own last MILP): the other may beat it on its measure by no more than that
    carbon_gap = max(bank_plans["min_carbon"].solution.relative_gap, 0.0)
    assert carbon["totals"]["carbon_kg_co2e_per_year"] <= cost["totals"]["carbon_kg_co2e_per_year"] * (
        1 + carbon_gap + 1e-6)
    gap = bank_plans["min_cost"].solution.relative_gap
    assert cost["totals"]["annual_cost_usd"] <= carbon["totals"]["annual_cost_usd"] * (1 + gap + 1e-6)
    for d in (cost, carbon):
        assert all(c["ok"] for c in d["checks"]), [c for c in d["checks"] if not c["ok"]]
        assert d["totals"]["carbon_kg_co2e_per_year"] == pytest.approx(
            sum(f["carbon_kg_co2e_per_year"] for f in d["fleet"]))
    # one oracle: the MILP's objective is the plan's emissions, as the plan and check compute them
    assert bank_plans["min_carbon"].solution.objective == pytest.approx(
        carbon["totals"]["carbon_kg_co2e_per_year"], rel=1e-6)


@pytest.mark.integration
def test_check_catches_a_changed_carbon_figure(bank_plans):
    import json

    from planner.fleet.check import check

    d = json.loads(json.dumps(bank_plans["min_carbon"].to_dict()))
    d["fleet"][0]["carbon_kg_co2e_per_year"] *= 0.9
    failed = [c["check"] for c in check(d) if not c["ok"]]
    assert any("carbon_kg_co2e_per_year" in name for name in failed), failed


@pytest.mark.integration
def test_cli_and_library_agree_on_min_carbon(bank_plans):
    import json

    from click.testing import CliRunner

    from planner.cli import main

    out = CliRunner().invoke(main, ["solve", "scenarios/bank-2mw.yaml", "--objective", "min_carbon", "--set",
                                    "site.grid_kg_co2_per_mwh=400", "--format", "json", "-q"])
    assert out.exit_code == 0, out.output
    cli = json.loads(out.output)
    lib = bank_plans["min_carbon"].to_dict()
    assert cli["totals"]["carbon_kg_co2e_per_year"] == pytest.approx(lib["totals"]["carbon_kg_co2e_per_year"])
    assert [(f["hardware"], f["racks"]) for f in cli["fleet"]] == [(f["hardware"], f["racks"]) for f in lib["fleet"]]


def goal_primary(name, p):
    return objective(name).primary(dataclasses.replace(p, objective=name))
