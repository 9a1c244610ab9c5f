"""The problem as component tables (solvers/components.py, docs/OPTIMIZER.md 23): a site adds rows, an objective
picks a price table, and the compiled MILP is the one the flat arrays gave."""

from __future__ import annotations

import math

import numpy as np
import pytest

from solvers import milp as F
from solvers.components import (COLUMNS, RACKS, SITES, Components, compiled, concatenated, long_table, n_rows,
                                table)
from solvers.formulation import primary_coefficients
from solvers.objectives import Prices

INF = math.inf


def one_site(cost: float, budget_w: float = INF, pue: float = 1.2, carbon: bool = False) -> Components:
    """Two rack types (4 and 8 chips, 10 and 20 kW) and three columns of one workload's two rows: a colocated
    replica (both rows) on each type, and a hosted offer (no chips, its own cost)."""
    chips = np.array([[2.0, 0.0], [0.0, 4.0], [0.0, 0.0]])
    coverage = np.array([[100.0, 50.0], [300.0, 150.0], [1000.0, 500.0]])
    prices = {"annual_cost_usd": Prices(np.array([cost, 1.8 * cost]), column={"own": np.array([0.0, 0.0, 5e6])}),
              "rack_power_w": Prices(None)}
    if carbon:
        prices["carbon_kg_per_year"] = Prices(np.array([9.0, 20.0]), rent=np.zeros(0))
    return Components(
        racks=table(RACKS, chips_per_rack=[4.0, 8.0], rack_power_w=[10e3, 20e3], max_racks=[INF, 6.0],
                    min_racks=[0.0, 0.0], racks_at_least=[0.0, 0.0], installed_racks=[0.0, 0.0], site=[0, 0],
                    system=[0, 1]),
        columns=table(COLUMNS, workload=[0, 0, 0], capacity=[100.0, 300.0, 1000.0],
                      integer_replicas=[True, True, False], pool=[-1, -1, -1]),
        uses=long_table(chips, ("column", "rack", "chips"), {"core_chips": np.zeros_like(chips)}),
        covers=long_table(coverage, ("column", "row", "units")),
        rentals={"rack": np.zeros(0, dtype=np.int64), "max_chips": np.zeros(0)},
        sites=table(SITES, pue=[pue], power_budget_w=[budget_w], max_racks=[INF]),
        rows={"demand": np.array([900.0, 450.0]), "group": np.array([0, 0])}, groups={"value": np.zeros(1)},
        limits={"max_platforms": INF, "max_new_racks": INF}, prices=prices)


def test_one_site_compiles_to_the_flat_problem():
    """The tables of one site give the FleetProblem written out by hand, field for field."""
    p = compiled(one_site(1000.0, 100e3))
    flat = F.FleetProblem(chips_per_rack=[4.0, 8.0], rack_power_w=[10e3, 20e3],
                          annual_cost_usd_per_rack=[1000.0, 1800.0], max_racks=[INF, 6.0], workload=[0, 0, 0],
                          capacity=[100.0, 300.0, 1000.0], chips=[[2.0, 0.0], [0.0, 4.0], [0.0, 0.0]],
                          integer_replicas=[True, True, False], demand=[900.0, 450.0],
                          coverage=[[100.0, 50.0], [300.0, 150.0], [1000.0, 500.0]], row_group=[0, 0],
                          column_cost_usd=[0.0, 0.0, 5e6], pue=1.2, power_budget_w=100e3)
    assert F.same_problem(p, flat)


def test_a_site_adds_rows():
    """Two sites' tables concatenated: their racks, columns, uses and sites one after the other (the second's
    indices moved past the first's), one demand; the compiled MILP puts each column's chips on its own site's racks
    and gives each site its own budget and PUE (row (16))."""
    a, b = one_site(1000.0, 100e3, 1.2), one_site(700.0, 40e3, 1.5)
    both = concatenated([a, b])
    assert both.n_racks == 4 and both.n_columns == 6 and n_rows(both.sites) == 2
    assert both.racks["site"].tolist() == [0, 0, 1, 1]
    assert both.uses["rack"].tolist() == [0, 1, 2, 3] and both.uses["column"].tolist() == [0, 1, 3, 4]
    p = compiled(both)
    assert p.n_sites == 2 and p.site_pues.tolist() == [1.2, 1.5] and p.site_budgets_w.tolist() == [100e3, 40e3]
    assert p.rack_sites.tolist() == [0, 0, 1, 1] and p.column_site.tolist() == [0, 0, -1, 1, 1, -1]
    assert p.annual_cost_usd_per_rack.tolist() == [1000.0, 1800.0, 700.0, 1260.0]
    assert p.chips[4].tolist() == [0.0, 0.0, 0.0, 4.0] and p.demand.tolist() == [900.0, 450.0]
    assert p.own_cost_usd.tolist() == [0.0, 0.0, 5e6, 0.0, 0.0, 5e6]


def test_the_concatenated_problem_solves_as_its_sites_allow():
    """The cheaper site (700 USD a rack) holds what its 40 kW at PUE 1.5 allow (2 of the 8-chip racks: 60 kW at the
    facility would break it; 1 rack of 20 kW and 1 of 10 kW fit), the rest goes to the dearer one; SCIP and HiGHS
    agree, and evaluate finds each site within its budget."""
    p = compiled(concatenated([one_site(1000.0, 100e3, 1.2), one_site(700.0, 40e3, 1.5)]))
    sols = {s: F.optimize(p, s, relative_gap=1e-9) for s in ("scip", "highs")}
    assert sols["scip"].objective == pytest.approx(sols["highs"].objective, rel=1e-7)
    ev = F.evaluate(p, sols["scip"].racks, sols["scip"].replicas)
    assert not ev.violations and np.all(ev.site_facility_power_w <= p.site_budgets_w * (1 + 1e-9))
    assert ev.site_facility_power_w[1] > 0  # the cheap site is used


def test_pools_are_numbered_apart():
    a = one_site(1000.0)
    pooled = Components(**{**a.__dict__, "columns": {**a.columns, "pool": np.array([0, -1, -1])}})
    both = concatenated([pooled, pooled])
    assert both.columns["pool"].tolist() == [0, -1, -1, 1, -1, -1]


def test_an_objective_picks_its_price_table():
    """min_carbon's p_h is the carbon table's rack price, min_cost's the cost table's; min_power's the racks' design
    power where the power table is the default (no curves); a measure a part lacks is priced at its default."""
    c = one_site(1000.0, carbon=True)
    cost = compiled(c)
    carbon = compiled(Components(**{**c.__dict__, "objective": "min_carbon"}))
    power = compiled(Components(**{**c.__dict__, "objective": "min_power"}))
    assert primary_coefficients(cost).tolist() == [1000.0, 1800.0]
    assert primary_coefficients(carbon).tolist() == [9.0, 20.0]
    assert primary_coefficients(power).tolist() == [10e3, 20e3]
    both = concatenated([c, one_site(1000.0)])  # the second site gives no carbon table: none over the sites
    assert "carbon_kg_per_year" not in both.prices and compiled(both).carbon_kg_per_rack is None


def test_a_table_of_two_lengths_is_refused():
    with pytest.raises(ValueError, match="lengths"):
        table(("a", "b"), a=[1.0, 2.0], b=[1.0])
    with pytest.raises(ValueError, match="annual_cost_usd price table"):
        compiled(Components(**{**one_site(1.0).__dict__, "prices": {}}))
