"""Decode pools as queues of batch slots at the workload's percentile (docs/OPTIMIZER.md 18, issue 41 item 1):
hand-computed slot times and utilization bounds, the margin a short pool needs, and a solved plan that holds in its
own simulation where the pool sized at 100% of its peak did not (the shipped sovereign plan simulated 173 tok/s per
user at p90 against its 200 tier); ``check`` fails a plan whose decode slots run busier than their percentile
allows."""

from __future__ import annotations

import copy
import json
import math
from pathlib import Path

import numpy as np
import pytest
import yaml

from planner.fleet.check import Inputs, check
from planner.fleet.demand import Demand
from planner.fleet.queues import (MAX_DECODE_UTILIZATION, assumed_slots, column_bounds, effective_capacity,
                                  max_colocated_utilization, max_decode_utilization, routing_share, slack_s,
                                  slot_seconds, slot_share)
from planner.fleet.solve import solve
from planner.scenario import scenario_from_yaml
from planner.sim import simulate
from planner.sim.build import pools_of
from solvers.sim import engine as E


def demand(**kw) -> Demand:
    base = dict(name="chat", model="llama-3.1-8b", output_tokens_per_s=1000.0, prefill_tokens_per_s=2000.0,
                calls_per_s=2.0, input_tokens=1000.0, prefill_tokens=1000.0, output_tokens=500.0,
                min_tps_per_user=200.0, resident_s_per_token=0.0, ttft_s=1.0, ttft_quantile=0.9, precision=None,
                allow_hardware=None)
    base.update(kw)
    return Demand(**base)


def test_slot_time_and_slack_by_hand():
    d = demand()
    # 500 tokens at 250 tok/s, one a step: 500 steps of 4 ms and the one it joins in hold the slot 2.004 s; the
    # tier's 2.5 s less the 500 steps and the join at p90 (0.9 of a step) leaves 0.4964 s to wait for a slot
    assert slot_seconds(d, 250.0, 1.0) == pytest.approx(2.004)
    assert slack_s(d, 250.0, 1.0) == pytest.approx(2.5 - 500.9 * 0.004)
    # 2.38 tokens kept a step (speculative): ceil(500 / 2.38) = 211 steps, and one more, of 2.38 / 250 s
    assert slot_seconds(d, 250.0, 2.38) == pytest.approx(212 * 2.38 / 250.0)
    assert slack_s(d, 500.9 / 2.5, 1.0) == 0.0  # steps and join take the tier's whole time: nothing left to wait
    assert slack_s(d, 200.0, 1.0) < 0  # at the tier's own speed the join misses it
    # whole steps: 500 tokens at 3 a step are 167 steps, 501 tokens' time: at 200.2 tok/s they miss the tier
    assert slack_s(d, 200.2, 3.0) < 0 and max_decode_utilization(d, 1000.0, 200.2, 3.0) == 0.0


def test_a_slot_serves_its_streams_whole_steps_and_its_join():
    # 500 tokens one a step: 500 steps a stream and half a step's join on average, so 500/500.5 of the capacity
    # (slots x tok/s per user) is streams
    assert slot_share(demand(), 1.0) == pytest.approx(500 / 500.5)
    # 60 tokens keeping 2.79 a step: 22 steps (the last keeps 1.62) and the join, 21.5 steps' worth in 22.5
    assert slot_share(demand(output_tokens=60.0), 2.79) == pytest.approx(60 / 2.79 / 22.5)
    assert slot_share(demand(output_tokens=60.0), 3.0) == pytest.approx(20 / 20.5)  # whole steps: only the join
    for o, kept in ((60.0, 2.79), (500.0, 1.0), (7.0, 3.3)):  # the percentile's slot time takes the whole join step
        d = demand(output_tokens=o)
        assert o / slot_seconds(d, 250.0, kept) < slot_share(d, kept) * 250.0


def test_utilization_bounds_by_hand():
    d = demand()
    # no slack: a stream may not wait at p90, so C(c, rho) <= 0.1; one slot: C(1, rho) = rho, rho* = 0.1
    exact = 500.9 / 2.5  # its steps and join take the tier's whole time
    assert max_decode_utilization(d, 1.0, exact) == pytest.approx(0.1, abs=1e-9)
    at = [max_decode_utilization(d, c, exact) for c in (1.0, 10.0, 100.0, 1000.0, 100_000.0)]
    assert at == sorted(at) and at[-1] == MAX_DECODE_UTILIZATION  # more slots run busier, never past the cap
    assert max_decode_utilization(d, 10.0, 250.0) > max_decode_utilization(d, 10.0, exact)  # slack helps
    assert max_decode_utilization(d, 0.0, 250.0) == 0.0


def row(replicas, batch=16, tps=250.0, out=1000.0, workload="chat", role="decode"):
    return {"workload": workload, "role": role, "replicas": replicas, "batch": batch, "tps_per_user": tps,
            "output_tokens_per_s": out, "draft_tokens": 0, "acceptance": 0.0, "acquisition": "owned"}


def test_usable_capacity_and_the_milps_coverage():
    d = demand()
    # one row holding exactly the peak (1000 of 1000 tok/s): its 160 slots allow rho* of what they serve as
    # streams, 500/500.5 of the capacity (500 steps and half a step's join), the usable part
    rho = max_decode_utilization(d, 160.0, 250.0) * 500 / 500.5
    assert effective_capacity(d, [row(10.0)]) == pytest.approx((1000.0, 1000.0 * rho))
    # a hosted API's capacity counts whole; a colocated row's at its rho* within what its TTFT leaves of the
    # target (its streams wait for a slot before their first token: test_colocated_queues)
    api = dict(row(0.5, out=500.0), role="api", acquisition="api")
    colocated = dict(row(10.0, out=500.0), role="colocated", ttft_s=0.4)
    assert effective_capacity(d, [row(10.0, out=500.0), api]) == pytest.approx((1000.0, 500.0 * rho + 500.0))
    rho_colocated = max_colocated_utilization(d, 160.0, 250.0, 1.0, 0.4) * 500 / 500.5
    assert 0 < rho_colocated < 1 and rho_colocated != rho
    assert effective_capacity(d, [colocated]) == pytest.approx((500.0, 500.0 * rho_colocated))
    assert routing_share(d, row(10.0)) == pytest.approx(rho) and routing_share(d, api) == 1.0
    # another workload's row is not this one's
    assert effective_capacity(d, [row(10.0, workload="other")]) == (0.0, 0.0)
    # the MILP's coverage: an option alone serving the sized demand (1000 tok/s at 100 a replica: 10 replicas of
    # 16 slots), rho* at its slots; a prefill option is not a decode queue
    cols = {"workload": np.array(["chat", "chat"]), "kind": np.array(["decode", "prefill"]),
            "output_tokens_per_s": np.array([100.0, 0.0]), "batch": np.array([16.0, 4.0]),
            "tps_per_user": np.array([250.0, np.nan]), "draft_tokens": np.array([0, 0]),
            "acceptance": np.array([0.0, 0.0])}
    slots = assumed_slots(cols, {"chat": d})
    assert list(slots) == [160.0, 0.0]
    assert list(column_bounds(cols, {"chat": d}, slots)) == pytest.approx([rho, 1.0])


SCENARIO = """
name: queues
start_date: 2027-01-01
horizon_years: 4
finance: {wacc: 0.08, electricity_usd_per_mwh: 70, pue: 1.2}
hardware: {allow: [hgx-h200]}
workloads:
  - {name: chat, model: llama-3.1-70b, requests_per_s: 30, input_tokens: 1000, output_tokens: 400,
     tier: high, ttft_s: 1.0, precision: fp8}
"""


@pytest.fixture(scope="module")
def plan():
    return solve(scenario_from_yaml(SCENARIO))


@pytest.mark.integration
def test_a_small_pool_holds_its_tier_in_simulation_and_check(plan):
    d = plan.to_dict()
    assert all(c["ok"] for c in check(d))
    queue = [c for c in check(d) if c["check"] == "decode queue chat"]
    assert queue and queue[0]["ok"]
    held = sum(r["output_tokens_per_s"] for r in d["allocation"] if r["role"] in ("decode", "colocated"))
    assert held > 1.05 * d["inputs"]["demands"][0]["output_tokens_per_s"]  # a pool of ~100 slots below 100% busy
    result = simulate(plan, duration_s=120.0, seed=1)
    assert result.holds, result.failures


@pytest.mark.integration
def test_check_fails_decode_slots_busier_than_the_percentile_allows(plan):
    d = copy.deepcopy(plan.to_dict())
    decode = [r for r in d["allocation"] if r["role"] in ("decode", "colocated")]
    held = sum(r["output_tokens_per_s"] for r in decode)
    peak = d["inputs"]["demands"][0]["output_tokens_per_s"]
    for r in decode:  # the pool cut to exactly its peak, as the MILP alone sized it
        r["replicas"] = r["replicas"] * peak / held
    queue = [c for c in check(d) if c["check"] == "decode queue chat"]
    assert queue and not queue[0]["ok"] and "100% busy" in queue[0]["detail"]


def test_streams_in_flight_are_length_biased():
    """A stream stays for its output, so the outputs in flight average E[O] (1 + scv): the KV each holds and the
    context its steps read; fixed outputs are unchanged (issue 41: priced at the mean, a spread of answers left a
    pool far under its tier)."""
    from planner.lengths import Lengths
    from solvers.perf import slots as L

    fixed = demand().workload_vector()
    assert fixed[L.W_CONTEXT_MAX] == 1500.0 and fixed[L.W_CONTEXT_AVG] == 1250.0
    spec = {"mean": 400, "p99": 3000}
    scv = Lengths.from_spec(spec, "output_lengths").scv
    v = demand(output_tokens=400.0, output_lengths=spec).workload_vector()
    assert scv > 1.0
    assert v[L.W_CONTEXT_MAX] == pytest.approx(1000.0 + 400.0 * (1 + scv))
    assert v[L.W_CONTEXT_AVG] == pytest.approx(1000.0 + 400.0 * (1 + scv) / 2)


@pytest.mark.integration
def test_a_plan_with_spread_output_lengths_holds_in_simulation():
    """bank-2mw with the chatbot's answers spread (mean 250, p99 800): 92 tok/s per user at p90 against its 100
    tier when the pool was priced at the mean length; held now."""
    from planner.scenario import load_scenario

    plan = solve(load_scenario("scenarios/bank-2mw.yaml",
                               ["workloads.customer-chatbot.output_tokens={mean: 250, p99: 800}"]))
    assert all(c["ok"] for c in check(plan))
    result = simulate(plan, seed=0)
    assert result.holds, result.failures


@pytest.mark.integration
def test_alternatives_price_a_decode_queue_at_the_capacity_the_milp_counts(plan):
    """The alternatives (and the answer's why: lines) priced a decode option at its whole output, while the MILP
    counts its batch slots' usable share rho* (OPTIMIZER.md 18): sovereign's voice line called vr-nvl72 49% cheaper
    than the cs3 the plan bought, an option whose queue the MILP could use only in part. Each decode row's cost is
    the cheapest of its system's options at the coverage the MILP gives it, and an option the MILP cannot use at
    all (rho* = 0) is no alternative."""
    built = plan.built
    cols, cover = built.options, built.problem.coverage
    cost_per_chip = {h.id: c / h.chips_per_rack for h, c in zip(built.hardware, built.problem.annual_cost_usd_per_rack)}
    decode = [j for j in range(len(cols["workload"])) if cols["kind"][j] == "decode"]
    usable = {j: cover[j, 0::2].sum() for j in decode}
    assert any(usable[j] < cols["output_tokens_per_s"][j] * (1 - 1e-6) for j in decode)  # queues count a share
    rows = [a for a in plan.to_dict()["alternatives"] if a["role"] == "decode"]
    assert rows
    for a in rows:
        mine = [cost_per_chip[a["hardware"]] * cols["chips"][j] / usable[j] * 1e3 for j in decode
                if cols["hardware"][j] == a["hardware"] and usable[j] > 0]
        assert a["usd_per_year_per_1k_tokens_per_s"] == pytest.approx(min(mine), rel=1e-9)


# ---- every golden plan's slots turn over the streams routed to them (Little's law, by hand) --------------------
PLANS = Path(__file__).parent / "golden" / "plans"
# single-period plans (a build-out's periods are simulated period by period in tests/test_sim_buildout.py)
GOLDEN = sorted(p.stem for p in PLANS.glob("*.json")
                if "periods" not in yaml.safe_load((PLANS.parents[2] / "scenarios" / f"{p.stem}.yaml").read_text()))


@pytest.mark.parametrize("name", GOLDEN)
def test_no_golden_plan_routes_more_streams_to_a_pool_than_its_slots_turn_over(name):
    """Streams a second routed to a decode or colocated row (the simulator's routing weights, at the workload's
    peak) times the mean seconds each holds a slot, its whole steps and half a step's join at the row's speed, are
    at most MAX_DECODE_UTILIZATION of the row's slots. bank-2mw's plan routed its code completion's colocated row
    more than its slots turn over (its capacity counted 21.5 steps a stream, not 22 and the join), and its queue
    grew without bound in simulation past the quick run's 28 s."""
    plan = json.loads((PLANS / f"{name}.json").read_text())
    inputs = Inputs(plan["inputs"])
    for pools in pools_of(plan, inputs):
        d, roles = pools.demand, pools.rp[:, E.RP_ROLE]
        weights = pools.rw[:, E.RW_WEIGHT]
        total = weights[roles != E.PREFILL].sum()
        for r in np.flatnonzero((roles == E.DECODE) | (roles == E.COLOCATED)):
            row, kept = pools.rows[pools.source[r]], pools.rw[r, E.RW_TOKENS_PER_STEP]
            held_s = (math.ceil(d.output_tokens / kept - 1e-9) + 0.5) * kept / float(row["tps_per_user"])
            streams_per_s = d.calls_per_s * weights[r] / total
            slots = pools.rp[r, E.RP_C] * pools.rp[r, E.RP_BATCH]
            assert streams_per_s * held_s <= MAX_DECODE_UTILIZATION * slots * (1 + 1e-5), (d.name, row["role"])
