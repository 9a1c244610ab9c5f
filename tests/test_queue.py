"""The M/G/c queue kernels (solvers.perf.queue, docs/MODEL.md 15): closed forms computed by hand, M/M/1 as the c = 1,
scv = 1 case, monotonicity in the servers, and the kernels against their plain-Python twins (solvers.perf.twin);
then the pools of a plan: options sized for the pool the plan deploys (repaired where it is smaller) and check
failing a plan whose pool is too small for its TTFT."""

import json
import math

import numpy as np
import pytest

from planner.fleet import solve as S
from planner.fleet.check import check
from planner.fleet.options import pool_key, pools
from planner.scenario import scenario_from_yaml
from solvers.perf import queue as Q
from solvers.perf import serving
from solvers.perf import twin


# ---- closed forms ---------------------------------------------------------------------------------------------
def test_one_server_and_scv_one_is_the_old_m_m_1():
    # P(W > t) = rho exp(-(1 - rho) t / s): at rho 0.5, s 1, q 0.9, t = ln(0.5 / 0.1) / 0.5 = 2 ln 5
    assert Q.wait_quantile_s(1.0, 0.5, 1.0, 1.0, 0.9) == pytest.approx(2 * math.log(5), rel=1e-12)
    assert Q.erlang_c(1.0, 0.37) == pytest.approx(0.37, rel=1e-14)  # C(1, rho) = rho
    rng = np.random.default_rng(1)
    for _ in range(200):
        rho, s, q = rng.uniform(0, 0.999), 10 ** rng.uniform(-3, 1), float(rng.choice([0.5, 0.9, 0.99]))
        old = twin.wait_quantile_s(rho, s, q)  # the M/M/1 formula the planner used before pools
        assert Q.wait_quantile_s(1.0, rho, s, 1.0, q) == pytest.approx(old, rel=1e-12, abs=1e-15)
        assert serving.wait_quantile_s(rho, s, q) == pytest.approx(old, rel=1e-12, abs=1e-15)
        target, fixed = 10 ** rng.uniform(-1, 1), 10 ** rng.uniform(-2, 0)
        assert serving.max_prefill_utilization(target, fixed, s, q) == pytest.approx(
            twin.max_prefill_utilization(target, fixed, s, q), rel=1e-9, abs=1e-12)


def test_exact_m_m_c_by_hand():
    # Erlang C = (a^c / c!) (c / (c - a)) / (sum_{k<c} a^k / k! + (a^c / c!) (c / (c - a))), a = c rho
    # c = 2, rho 1/2, a = 1: (1/2 * 2) / (1 + 1 + 1) = 1/3; P(W > t) = C exp(-c (1 - rho) t / s) = exp(-t) / 3
    assert Q.erlang_c(2.0, 0.5) == pytest.approx(1 / 3, rel=1e-13)
    assert Q.wait_quantile_s(2.0, 0.5, 1.0, 1.0, 0.9) == pytest.approx(math.log(10 / 3), rel=1e-12)
    # c = 3, rho 2/3, a = 2: (8/6 * 3) / (1 + 2 + 2 + 4) = 4/9; c (1 - rho) / s = 1 at s = 1
    assert Q.erlang_c(3.0, 2 / 3) == pytest.approx(4 / 9, rel=1e-13)
    assert Q.wait_quantile_s(3.0, 2 / 3, 1.0, 1.0, 0.9) == pytest.approx(math.log(40 / 9), rel=1e-12)
    assert Q.wait_quantile_s(3.0, 2 / 3, 2.0, 1.0, 0.9) == pytest.approx(2 * math.log(40 / 9), rel=1e-12)  # x s
    # Allen-Cunneen: the wait scales by (1 + scv) / 2, so M/D/c (scv 0) waits half as long as M/M/c
    assert Q.wait_quantile_s(3.0, 2 / 3, 1.0, 0.0, 0.9) == pytest.approx(0.5 * math.log(40 / 9), rel=1e-12)
    assert Q.wait_quantile_s(3.0, 2 / 3, 1.0, 3.0, 0.9) == pytest.approx(2 * math.log(40 / 9), rel=1e-12)
    # no wait at the quantile when fewer than 1 - q arrivals wait: C(3, 2/3) = 0.44 < 0.5
    assert Q.wait_quantile_s(3.0, 2 / 3, 1.0, 1.0, 0.5) == 0.0
    assert Q.wait_quantile_s(5.0, 1.0, 1.0, 1.0, 0.9) == math.inf


def test_fractional_and_small_server_counts():
    # between whole numbers, C is blended linearly; below one server, one server
    assert Q.erlang_c(2.5, 0.5) == pytest.approx(0.5 * (1 / 3) + 0.5 * Q.erlang_c(3.0, 0.5), rel=1e-13)
    assert Q.erlang_c(0.3, 0.6) == pytest.approx(0.6, rel=1e-14)
    assert Q.wait_quantile_s(0.3, 0.6, 1.0, 1.0, 0.9) == Q.wait_quantile_s(1.0, 0.6, 1.0, 1.0, 0.9)


def test_stable_up_to_a_hundred_thousand_servers():
    for c in (1e3, 1e4, 1e5):
        for rho in (0.5, 0.9, 0.95, 0.999):
            got = Q.erlang_c(c, rho)
            assert 0.0 <= got <= 1.0 and math.isfinite(got)
            assert got == pytest.approx(twin.erlang_c(int(c), rho), rel=1e-8, abs=1e-300)
    assert Q.erlang_c(1e5, 0.999) > Q.erlang_c(1e5, 0.99) > 0.0


def test_more_servers_never_wait_longer():
    rng = np.random.default_rng(2)
    counts = np.concatenate([np.arange(1.0, 60.0, 0.5), [100.0, 333.0, 1000.0, 5000.0, 1e5]])
    for _ in range(60):
        rho, s, scv, q = rng.uniform(0.01, 0.99), 10 ** rng.uniform(-3, 0), rng.uniform(0, 4), rng.uniform(0.5, 0.999)
        waits = np.array([Q.wait_quantile_s(c, rho, s, scv, q) for c in counts])
        chances = np.array([Q.erlang_c(c, rho) for c in counts])
        assert np.all(np.diff(waits) <= 1e-12 * waits[:-1] + 1e-15)
        assert np.all(np.diff(chances) <= 1e-12)
        # and more servers allow at least the same utilization under the same target
        target, fixed = 10 ** rng.uniform(-1, 1), 10 ** rng.uniform(-2, -1)
        utils = [Q.max_utilization(target, fixed, s, q, c, scv) for c in counts[::10]]
        assert np.all(np.diff(utils) >= -1e-12)


def test_max_utilization_meets_the_target_exactly():
    rho = Q.max_utilization(2.0, 0.5, 0.4, 0.99, 8.0, 1.0)
    assert 0 < rho < Q.MAX_PREFILL_UTILIZATION
    assert 0.5 + Q.wait_quantile_s(8.0, rho, 0.4, 1.0, 0.99) == pytest.approx(2.0, rel=1e-9)
    assert rho > Q.max_utilization(2.0, 0.5, 0.4, 0.99, 1.0, 1.0)  # a pool runs busier than one server
    assert Q.max_utilization(0.4, 0.5, 0.4, 0.99, 8.0, 1.0) == 0.0  # the prompt alone misses the target


def test_pool_servers_rule():
    # the largest c with c rho*(c) R <= load: a pool of load / (rho*(c) R) replicas has at least c of them
    load, rate, target, fixed, s, q, scv = 1000.0, 10.0, 2.0, 0.5, 0.4, 0.9, 1.0
    c = Q.prefill_pool_servers(load, rate, target, fixed, s, q, scv, np.inf)
    util = lambda n: Q.max_utilization(target, fixed, s, q, n, scv)  # noqa: E731
    assert c * util(c) * rate <= load < (c + 1) * util(c + 1) * rate
    assert load / (util(c) * rate) >= c
    assert Q.prefill_pool_servers(load, rate, target, fixed, s, q, scv, 7.0) == 7.0  # capped
    assert Q.prefill_pool_servers(1.0, rate, target, fixed, s, q, scv, np.inf) == 1.0  # at least one
    assert Q.servers_for_load(1000.0, 30.0, np.inf) == 33.0 and Q.servers_for_load(10.0, 30.0, np.inf) == 1.0


@pytest.mark.parametrize("seed", range(30))
def test_queue_kernels_equal_their_twins(seed):
    rng = np.random.default_rng(4200 + seed)
    c = float(rng.choice([rng.integers(1, 400), rng.uniform(0.2, 300)]))
    rho, s, scv, q = rng.uniform(0, 0.999), 10 ** rng.uniform(-3, 0), rng.uniform(0, 4), rng.uniform(0.3, 0.999)
    assert Q.erlang_c(c, rho) == pytest.approx(twin.erlang_c(c, rho), rel=1e-10, abs=1e-300)
    assert Q.wait_quantile_s(c, rho, s, scv, q) == pytest.approx(twin.mgc_wait_quantile_s(c, rho, s, scv, q),
                                                                 rel=1e-9, abs=1e-15)
    target, fixed = 10 ** rng.uniform(-1, 1), 10 ** rng.uniform(-2, 0)
    assert Q.max_utilization(target, fixed, s, q, c, scv) == pytest.approx(
        twin.mgc_max_utilization(target, fixed, s, q, c, scv), rel=1e-9, abs=1e-12)
    rate = 10 ** rng.uniform(1, 3)
    load, cap = rate * rng.uniform(0.2, 60), float(rng.choice([np.inf, rng.integers(1, 30)]))
    assert Q.prefill_pool_servers(load, rate, target, fixed, s, q, scv, cap) == twin.prefill_pool_servers(
        load, rate, target, fixed, s, q, scv, cap)
    assert Q.servers_for_load(load, rate, cap) == twin.servers_for_load(load, rate, cap)


# ---- pools in plans -------------------------------------------------------------------------------------------
SPLIT = """
name: split-prefill
start_date: 2027-01-01
horizon_years: 4
finance: {wacc: 0.08, electricity_usd_per_mwh: 70, pue: 1.25}
site: {power_budget_mw: 50}
hardware: {allow: [hgx-h200, hgx-b200], max_racks: {hgx-b200: CAP}}
workloads:
  - {name: chat, model: llama-3.1-70b, requests_per_s: 60, input_tokens: 6000, output_tokens: 200,
     tier: standard, ttft_s: 0.8, ttft_percentile: 99, precision: fp8}
"""


def assumed_within_pools(plan) -> bool:
    rows = plan.allocation.to_dicts()
    found = pools(rows)
    return all(plan.built.options["servers"][r["column"]] <= found[pool_key(r)][0] * (1 + 1e-9)
               for r in rows if pool_key(r) is not None)


@pytest.mark.integration
def test_a_pool_split_smaller_than_assumed_is_repaired(monkeypatch):
    rounds = []
    real = S.with_options_at

    def counted(built, caps):
        rounds.append(dict(caps))
        return real(built, caps)

    monkeypatch.setattr(S, "with_options_at", counted)
    plan = S.solve(scenario_from_yaml(SPLIT.replace("CAP", "1")))
    assert rounds, "a single b200 rack cannot hold the whole prefill pool its options were sized for"
    assert all(c["ok"] for c in plan.checks)
    assert assumed_within_pools(plan)
    prefill = [r for r in plan.allocation.to_dicts() if r["role"] in ("prefill", "colocated")]
    assert prefill and all(r["ttft_s"] <= 0.8 * (1 + 1e-9) and r["servers"] >= 1 for r in prefill)
    assert {r["hardware"] for r in plan.allocation.to_dicts()} == {"hgx-h200", "hgx-b200"}


@pytest.mark.integration
def test_check_fails_a_plan_whose_pool_is_too_small():
    plan = S.solve(scenario_from_yaml(SPLIT.replace("CAP", "100")))
    d = json.loads(json.dumps(plan.to_dict()))
    rows = [r for r in d["allocation"] if r["role"] == "prefill" and r["servers"] >= 3]
    assert rows, "the plan should deploy a prefill pool of a few servers"
    row = rows[0]
    row["replicas"], row["servers"] = 1, 1.0  # the same utilization, in a pool of one server
    failed = {c["check"] for c in check(d) if not c["ok"]}
    assert f"allocation chat/prefill/{row['hardware']} ttft" in failed
