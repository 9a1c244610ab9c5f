"""Load-dependent power (MODEL.md 14, OPTIMIZER.md 12): the chip curve by hand, its fit held out, and the MILP's
peak-draw budget and mean-draw energy (13) by hand and against the brute force."""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest

from planner import catalog
from planner.perf import power
from planner.perf.pack import chip_power_fraction, hardware_vector, power_curve_values, rack_power_shares
from solvers import bruteforce as bf
from solvers import milp as F
from solvers.perf import kernels
from solvers.perf import slots as L
from tests.test_fleet_milp import brute_force_and_solvers, tiny_problem

pytestmark = pytest.mark.unit
INF = math.inf


def test_draw_share_by_hand():
    h = np.zeros(L.N_HW)
    h[L.H_IDLE_POWER_SHARE], h[L.H_MEMORY_POWER_SHARE], h[L.H_COMPUTE_POWER_SHARE] = 0.2, 0.4, 0.7
    # memory busy 3/4 of the step, matmuls 1/4: 0.2 + 0.4 x 0.75 + 0.7 x 0.25 = 0.675
    assert kernels.draw_share(h, 3e-3, 1e-3, 4e-3) == pytest.approx(0.675)
    # both busy the whole step would be 1.3: capped at the design power
    assert kernels.draw_share(h, 4e-3, 4e-3, 4e-3) == 1.0
    # half the time busy at 900 W, idle at 100 W: 500 W
    assert kernels.loaded_power_w(100.0, 900.0, 0.5) == pytest.approx(500.0)


def test_rack_shares_hold_the_rest_of_the_rack_at_design():
    hw = catalog.get_hardware("hgx-h100")  # 8 x 700 W GPUs in a 10.2 kW rack
    c = 8 * 700 / 10_200
    assert chip_power_fraction(hw) == pytest.approx(c)
    curve = power_curve_values("nvidia-gpu")
    idle, mem, comp = rack_power_shares(hw)
    assert idle == pytest.approx(1 - c + c * curve["idle_share"])
    assert (mem, comp) == (pytest.approx(c * curve["memory_share"]), pytest.approx(c * curve["compute_share"]))
    v = hardware_vector(hw, "fp8")
    assert v[L.H_IDLE_POWER_SHARE] == pytest.approx(idle)


def test_a_family_without_measurements_draws_design_power_at_every_load():
    v = hardware_vector(catalog.get_hardware("cs3"), catalog.get_hardware("cs3").precision_or_best(None))
    assert kernels.draw_share(v, 1.0, 0.0, 10.0) == 1.0 and kernels.draw_share(v, 0.0, 0.0, 1.0) == 1.0


def test_decode_at_batch_one_draws_less_than_prefill_or_a_big_batch():
    from planner.perf.estimate import evaluate_config

    m, hw = catalog.get_model("llama-3.1-70b"), catalog.get_hardware("hgx-h100")
    small, pre = evaluate_config(m, hw, "fp8", 8, 1, 0, 1, 2000, 500)
    big, _ = evaluate_config(m, hw, "fp8", 8, 1, 0, 256, 2000, 500)
    design = hw.rack_power_w
    assert small[L.B_POWER_W] < big[L.B_POWER_W] <= design * (1 + 1e-12)
    assert small[L.B_POWER_W] < pre[L.B_POWER_W] <= design * (1 + 1e-12)
    assert small[L.B_POWER_W] > rack_power_shares(hw)[0] * design  # never below the idle floor


def test_the_shipped_curve_is_the_fit_and_holds_out_of_sample():
    fit = power.fit_curve("nvidia-gpu")
    curve = power_curve_values("nvidia-gpu")
    assert (fit["memory_share"], fit["compute_share"]) == (curve["memory_share"], curve["compute_share"])
    book = power.power_ledger("nvidia-gpu")
    held = next(g for g in book["groups"] if g["split"] == "held-out")
    assert held["points"] >= 6 and held["median_error_factor"] < 1.25


# ---- the MILP's (13) ------------------------------------------------------------------------------------------
def one_type(**kw) -> F.FleetProblem:
    """One 8-chip rack type (10 kW design, 4 kW at rest), one column of 2 chips serving 100 units per replica."""
    base = dict(chips_per_rack=[8.0], rack_power_w=[10e3], annual_cost_usd_per_rack=[1000.0], max_racks=[INF],
                workload=[0], capacity=[100.0], chips=[[2.0]], integer_replicas=[True], demand=[400.0],
                rack_idle_power_w=[4e3], column_power_w=[1.2e3], column_energy_usd=[50.0])
    base.update(kw)
    return F.FleetProblem(**base)


def test_the_budget_holds_the_peak_draw_and_the_bill_the_mean():
    p = one_type(power_budget_w=8.8e3)
    # 4 replicas fill one rack: 4 kW at rest + 4 x 1.2 kW = 8.8 kW at peak (design power would be 10 kW)
    sol = F.optimize(p, "scip")
    assert sol.status == "optimal" and list(sol.racks) == [1] and list(sol.replicas) == [4]
    ev = F.evaluate(p, sol.racks, sol.replicas)
    assert ev.rack_power_w == pytest.approx(8.8e3) and ev.feasible
    assert ev.annual_cost_usd == pytest.approx(1000.0 + 4 * 50.0)
    assert not F.evaluate(dataclasses.replace(p, power_budget_w=8.7e3), sol.racks, sol.replicas).feasible
    # without the curve the same rack draws its design power and breaks this budget
    flat = dataclasses.replace(p, rack_idle_power_w=None, column_power_w=None, column_energy_usd=None)
    assert F.optimize(flat, "scip").status == "infeasible"


def test_min_power_counts_the_replicas_draw():
    p = one_type(objective="min_power", demand=[250.0], integer_replicas=[False])
    sol = F.optimize(p, "highs")
    assert sol.objective == pytest.approx(4e3 + 2.5 * 1.2e3, rel=1e-6)


def test_an_idle_floor_above_design_power_is_refused():
    with pytest.raises(ValueError, match="rack_idle_power_w exceeds rack_power_w"):
        one_type(rack_idle_power_w=[11e3])


def curved(p: F.FleetProblem, seed: int) -> F.FleetProblem:
    """``p`` with a power curve: racks rest at 20-90% of design, each replica draws up to its chips' rest of it."""
    rng = np.random.default_rng(10_000 + seed)
    idle_share = rng.uniform(0.2, 0.9, p.n_hardware)
    share = p.chips / p.chips_per_rack  # [J, H] the rack shares a replica holds
    above = (share * (1.0 - idle_share) * p.rack_power_w).sum(axis=1) * rng.uniform(0.3, 1.0, p.n_columns)
    return dataclasses.replace(p, rack_idle_power_w=idle_share * p.rack_power_w, column_power_w=above,
                               column_energy_usd=above * rng.uniform(0.01, 0.2))


@pytest.mark.parametrize("seed", range(40))
def test_brute_force_and_solvers_agree_with_a_power_curve(seed):
    p = curved(tiny_problem(seed, multi_row=seed % 2 == 1), seed)
    jit, plans = brute_force_and_solvers(p, seed)
    if jit.feasible:
        ev = F.evaluate(p, jit.racks, jit.replicas)
        assert ev.feasible and ev.objective == pytest.approx(jit.objective, rel=1e-9)
        for sol in plans.values():
            assert F.evaluate(p, sol.racks, sol.replicas).feasible


def test_the_brute_force_twin_sees_the_replicas_draw():
    p = curved(tiny_problem(3), 3)
    tight = dataclasses.replace(p, power_budget_w=float(p.pue * (p.floor_power_w.max() + p.replica_power_w.min())))
    assert bf.brute_force(tight).objective == pytest.approx(bf.brute_force_python(tight).objective) or (
        not bf.brute_force(tight).feasible and not bf.brute_force_python(tight).feasible)
