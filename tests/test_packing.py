"""Replicas in racks by scale-up domain (docs/OPTIMIZER.md 17, issue 41 item 2): hand-computed coefficients, the
rows (2) and (2c) exact against a first-fit packing on random stage sets, the MILP buying a rack per 64-GPU replica
on NVL72 on every solver, and ``check`` failing a plan whose racks hold its chips but not its replicas (14
replicas of 64 GPUs on 13 NVL72 racks passed before)."""

from __future__ import annotations

import copy
import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from planner.fleet.check import check
from planner.fleet.packing import chip_rows, core_and_tail, domains_needed, held_chips
from planner.fleet.solve import solve
from planner.scenario import scenario_from_yaml
from solvers import backends
from solvers import milp as F

SOLVERS = backends.available()


@pytest.mark.parametrize("chips, stages, domain, rack, rows, held", [
    (64, 1, 72, 72, (64, 72), 72),      # one 64-GPU stage a NVL72 domain: its core whole, 8 GPUs beside it
    (32, 1, 72, 72, (32, 36), 36),      # two a domain
    (16, 1, 72, 72, (16, 18), 18),      # four a domain, 8 GPUs left for the tail
    (8, 1, 72, 72, (8, 0), 8),          # fits the tail: only chips count
    (72, 1, 72, 72, (72, 72), 72),      # a whole domain (wide expert parallelism)
    (24, 3, 72, 72, (24, 0), 24),       # three stages of 8
    (128, 2, 72, 72, (128, 144), 144),  # two 64-GPU stages over the scale-out network: two domains
    (16, 2, 8, 8, (16, 0), 16),         # 8-GPU servers: no tail, chips only
    (8, 1, 8, 144, (8, 0), 8),          # 18 domains of 8 a rack (Rubin CPX)
    (64, 1, 576, 72, (64, 0), 64),      # a domain spanning eight racks: chips only
    (64, 1, 144, 144, (64, 72), 72),    # 144 = 128 + 16: two 64-GPU stages a domain
])
def test_hand_computed_coefficients(chips, stages, domain, rack, rows, held):
    assert chip_rows(chips, stages, domain, rack) == pytest.approx(rows)
    assert held_chips(chips, stages, domain, rack) == pytest.approx(held)


def test_cores_and_tails():
    assert core_and_tail(72) == (64, 8) and core_and_tail(144) == (128, 16) and core_and_tail(8) == (8, 0)


def test_first_fit_by_hand():
    assert domains_needed([(64, 14)], 0.0, 72) == 14            # the 14 replicas: 14 racks, not 13
    assert domains_needed([(32, 3), (8, 2)], 0.0, 72) == 2      # 32 + 32 + 8 and 32 + 8
    assert domains_needed([(64, 2)], 16.0, 72) == 2             # the fluid 16 fills both tails
    assert domains_needed([(64, 2)], 17.0, 72) == 3
    assert domains_needed([(128, 1)], 0.0, 72) == 2             # wider than a domain: whole domains
    # counted by room left, not stage by stage: a billion replicas pack at once (one by one, check hung)
    assert domains_needed([(64, 1e9), (32, 3e8), (8, 5e8)], 0.0, 72) == 1_150_000_000


STAGES = st.lists(st.tuples(st.sampled_from([1, 2, 4, 8, 16, 32, 64, 72]), st.integers(1, 12)), max_size=6)


@given(stages=STAGES)
@settings(max_examples=300, deadline=None)
def test_rows_2_and_2c_are_exact_for_the_grids_stages(stages):
    """The MILP's rows hold a set of stages in n domains exactly when first-fit decreasing packs them in n (the
    rows' bound is the packing's count), and the whole-domain shares a build-out bounds are never fewer."""
    need = domains_needed([(float(s), float(n)) for s, n in stages], 0.0, 72)
    row2 = sum(n * chip_rows(s, 1, 72, 72)[0] for s, n in stages)
    row2c = sum(n * chip_rows(s, 1, 72, 72)[1] for s, n in stages)
    assert need == max(math.ceil(row2 / 72 - 1e-9), math.ceil(row2c / 72 - 1e-9))
    assert math.ceil(sum(n * held_chips(s, 1, 72, 72) for s, n in stages) / 72 - 1e-9) >= need


def nvl72_problem(core: bool) -> F.FleetProblem:
    """14 replicas of 64 GPUs needed (demand 1400 at 100 a replica) on 72-GPU racks at 100 USD a year."""
    row2, row2c = chip_rows(64, 1, 72, 72)
    return F.FleetProblem(chips_per_rack=[72], rack_power_w=[130e3], annual_cost_usd_per_rack=[100.0],
                          max_racks=[math.inf], workload=[0], capacity=[100.0], chips=[[row2]],
                          integer_replicas=[True], demand=[1400.0], core_chips=[[row2c]] if core else None)


def test_the_milp_buys_a_rack_per_64_gpu_replica_on_every_solver():
    for name in SOLVERS:
        sol = F.optimize(nvl72_problem(core=True), name, time_limit_s=30, relative_gap=1e-9)
        assert sol.status == "optimal" and list(sol.racks) == [14], name
    # chips alone (row (2)) buy 13: 896 GPUs fit 936, though no rack holds two replicas
    assert list(F.optimize(nvl72_problem(core=False), "highs", time_limit_s=30).racks) == [13]
    assert "cores[h=0]" in F.evaluate(nvl72_problem(core=True), [13], [14.0]).violations


SCENARIO = """
name: packing
start_date: 2027-01-01
horizon_years: 4
finance: {wacc: 0.08, electricity_usd_per_mwh: 70, pue: 1.2}
site: {power_budget_mw: 20}
hardware: {allow: [gb200-nvl72]}
workloads:
  - {name: chat, model: deepseek-r1, requests_per_s: 40, input_tokens: 2000, output_tokens: 500,
     tier: standard, ttft_s: 2.0}
"""


@pytest.fixture(scope="module")
def plan():
    return solve(scenario_from_yaml(SCENARIO))


def checks_named(d, prefix: str) -> list[dict]:
    return [c for c in check(d) if c["check"].startswith(prefix)]


@pytest.mark.integration
def test_a_plan_holds_its_replicas_and_says_how_racks_fill(plan):
    d = plan.to_dict()
    assert all(c["ok"] for c in check(d)), [c for c in check(d) if not c["ok"]]
    fleet = {f["hardware"]: f for f in d["fleet"]}
    assert fleet["gb200-nvl72"]["racks_for_domains"] <= fleet["gb200-nvl72"]["racks"]
    assert checks_named(d, "rack packing gb200-nvl72")[0]["ok"]


@pytest.mark.integration
def test_check_fails_racks_that_hold_the_chips_but_not_the_replicas(plan):
    """Issue 41: 14 decode replicas of 64 GPUs on 13 NVL72 racks passed ``check`` (896 of 936 GPUs)."""
    d = copy.deepcopy(plan.to_dict())
    d["allocation"] = [dict(r, replicas=14, chips_per_replica=64, tensor_parallel=64, pipeline_parallel=1,
                            expert_parallel=True, replica_pool=None)
                       for r in d["allocation"] if r["role"] == "decode"][:1]
    d["fleet"] = [dict(f, racks=13, racks_new=13, chips=936) for f in d["fleet"] if f["hardware"] == "gb200-nvl72"]
    assert checks_named(d, "chips gb200-nvl72")[0]["ok"]  # the chips fit: what the check looked at before
    packing = checks_named(d, "rack packing gb200-nvl72")
    assert packing and not packing[0]["ok"] and "14 racks" in packing[0]["detail"]


def test_replicas_a_rack_holds_by_hand():
    """A stage lives in one domain: an NVL72 rack holds one 64-GPU replica (not 72 / 64), two of 32, a quarter of
    one of four 64-GPU stages; 9 of 8 GPUs; where a domain spans racks (a 576-chip pod of 72-chip racks), its chips'
    share of a rack."""
    from planner.fleet.packing import replicas_per_rack

    assert replicas_per_rack(64, 1, 72, 72) == 1.0
    assert replicas_per_rack(32, 1, 72, 72) == 2.0
    assert replicas_per_rack(256, 4, 72, 72) == 0.25
    assert replicas_per_rack(8, 1, 72, 72) == 9.0
    assert replicas_per_rack(8, 1, 8, 8) == 1.0
    assert replicas_per_rack(144, 1, 576, 72) == 0.5


@pytest.mark.integration
def test_the_fleet_says_how_many_replicas_a_rack_holds_where_packing_binds(plan):
    """Interface, third round: fleet rows gain ``replicas_per_rack`` where packing binds (null elsewhere), and
    check recomputes it with the rest of the fleet table."""
    import polars as pl

    from planner import catalog
    from planner.fleet.plan import packing_replicas_per_rack

    hw = catalog.get_hardware("gb200-nvl72")
    row = dict(next(r for r in plan.to_dict()["allocation"] if r["role"] == "decode"), replicas=14,
               chips_per_replica=64, tensor_parallel=64, pipeline_parallel=1, replica_pool=None, spare_replicas=0)
    assert packing_replicas_per_rack(pl.DataFrame([row], infer_schema_length=None), hw) == 1.0  # 14 racks, not 13
    eight = dict(row, replicas=9, chips_per_replica=8, tensor_parallel=8)  # 72 GPUs fill one rack: no binding
    assert packing_replicas_per_rack(pl.DataFrame([eight], infer_schema_length=None), hw) is None
    d = plan.to_dict()
    assert all("replicas_per_rack" in f for f in d["fleet"]) and all(c["ok"] for c in check(d))
