"""The serving formulas and the engine's reductions against their plain-Python twins (solvers.perf.twin), on
random inputs: colocated time share, TTFT queue, residency fit, KV transfer, replica power, speculative tokens,
and the engine's best batch per layout for decode-only, colocated and agentic workloads."""

import math

import numpy as np
import pytest

from solvers.perf import serving
from solvers.perf import slots as L
from solvers.perf import sweep
from solvers.perf import twin
from tests.generators import random_config, random_hw, random_model, random_model_of_kinds, random_workload

REL = 1e-9


@pytest.mark.parametrize("seed", range(50))
def test_serving_formulas_match_their_twins(seed):
    rng = np.random.default_rng(7000 + seed)
    m, h = random_model(rng), random_hw(rng)
    d, a = float(rng.integers(0, 8)), float(rng.uniform(0, 0.99))
    assert serving.spec_tokens(d, a) == pytest.approx(twin.spec_tokens(d, a), rel=REL)
    chips = float(rng.integers(1, 300))
    assert serving.replica_power_w(h, chips) == pytest.approx(twin.replica_power_w(h, chips), rel=REL)
    out, interval, streams, acc, pre = (rng.uniform(10, 4000), 10 ** rng.uniform(-4, -1), rng.uniform(1, 500),
                                        rng.uniform(1, 4), 10 ** rng.uniform(-3, 0))
    assert out / serving.colocated_request_s(out, interval, streams, acc, pre) == pytest.approx(
        twin.colocated_tokens_per_s(out, interval, streams, acc, pre), rel=REL)
    util, service, q = rng.uniform(0, 0.99), 10 ** rng.uniform(-3, 0), float(rng.choice([0.5, 0.9, 0.99]))
    assert serving.wait_quantile_s(util, service, q) == pytest.approx(twin.wait_quantile_s(util, service, q),
                                                                      rel=REL, abs=1e-15)
    target, fixed = 10 ** rng.uniform(-1, 1), 10 ** rng.uniform(-2, 0)
    assert serving.max_prefill_utilization(target, fixed, service, q) == pytest.approx(
        twin.max_prefill_utilization(target, fixed, service, q), rel=1e-9, abs=1e-12)
    prompt = float(rng.integers(1, 50000))
    assert serving.kv_transfer_s(m, h, chips, prompt) == pytest.approx(twin.kv_transfer_s(m, h, chips, prompt),
                                                                       rel=REL)
    r, tps = 10 ** rng.uniform(-3, 0), rng.uniform(1, 1000)
    assert serving.resident_share(r, tps) == pytest.approx(1 + r * tps, rel=REL)


def engine_against_twin(seed: int, colocated: bool, agentic: bool, kinds: bool = False):
    rng = np.random.default_rng(8000 + seed + 1000 * colocated + 2000 * agentic + 5000 * kinds)
    m, h = (random_model_of_kinds if kinds else random_model)(rng), random_hw(rng)
    wl = random_workload(rng, colocated, agentic)
    layouts = np.array([random_config(rng, m) for _ in range(4)])
    batches = np.array([1.0, 3.0, 8.0, 40.0, 256.0, 1500.0])
    k, a = np.array([0.0, 3.0]), np.array([1.0, 2.2])
    draft = random_model(rng)
    pps = np.unique(layouts[:, 1])
    touched = sweep.touched_experts_table(m, pps, batches, k + 1.0)
    draft_touched = sweep.touched_experts_table(draft, pps, batches, np.ones(1))
    pre = sweep.prefill_per_layout(m, h, layouts, wl[L.W_PREFILL_TOKENS])
    rate = np.where(pre[:, 0] > 0, pre[:, 0], 1e-30) if colocated else np.full(len(layouts), np.inf)
    single = pre[:, 1] if colocated else np.zeros(len(layouts))
    # colocated prompts queue in a pool sized for the workload's load (M/G/c), some layouts capped to a few servers
    load, scv = 10 ** rng.uniform(1, 6), float(rng.choice([0.0, 0.4, 1.0, 2.5]))
    cap = np.where(rng.uniform(size=len(layouts)) < 0.5, np.inf, rng.integers(1, 20, len(layouts)).astype(float))
    got = sweep.best_decode_per_layout(m, draft, h, wl, layouts, np.searchsorted(pps, layouts[:, 1]), touched,
                                       draft_touched, batches, k, a, rate, single, load, scv, cap)
    for i, layout in enumerate(layouts):
        for j in range(len(k)):
            want = twin.best_batch(m, h, wl, tuple(layout), batches, k[j], a[j], rate[i], single[i], draft, load, scv,
                                   cap[i])
            row = got[i * len(k) + j]
            assert row[L.E_TOKENS_PER_S] == pytest.approx(want[0], rel=1e-7, abs=1e-12), (i, j)
            if want[0] > 0:
                assert row[L.E_BATCH] == want[1]
                assert row[L.E_TPS_PER_USER] == pytest.approx(want[2], rel=1e-7)
                assert row[L.E_TTFT_S] == pytest.approx(want[3], rel=1e-7)


@pytest.mark.parametrize("seed", range(30))
@pytest.mark.parametrize("colocated,agentic", [(False, False), (True, False), (False, True), (True, True)])
def test_engine_equals_its_twin(seed, colocated, agentic):
    engine_against_twin(seed, colocated, agentic)


@pytest.mark.parametrize("seed", range(10))
@pytest.mark.parametrize("colocated,agentic", [(False, False), (True, True)])
def test_engine_equals_its_twin_on_linear_and_sparse_attention(seed, colocated, agentic):
    """The engine's per-layout coefficients (the state read per stream, the indexer's and linear layers' FLOPs per
    query token) against the twin (MODEL.md 2.10)."""
    engine_against_twin(seed, colocated, agentic, kinds=True)


@pytest.mark.parametrize("seed", range(30))
@pytest.mark.parametrize("agentic", [False, True])
def test_ways_of_serving_scored_together_are_each_scored_alone(seed, agentic):
    """Decode only and colocated (capped pools and not) in one call of the engine: each way's rows are, to the bit,
    those of a call of that way alone (they share each layout's coefficients and token intervals, nothing else)."""
    rng = np.random.default_rng(8500 + seed + 1000 * agentic)
    m, h, draft = random_model(rng), random_hw(rng), random_model(rng)
    wl = random_workload(rng, True, agentic)
    layouts = np.array([random_config(rng, m) for _ in range(5)])
    batches = np.array([1.0, 3.0, 8.0, 40.0, 256.0, 1500.0])
    k, a = np.array([0.0, 2.0, 4.0]), np.array([1.0, 1.8, 2.6])
    pps = np.unique(layouts[:, 1])
    touched = sweep.touched_experts_table(m, pps, batches, k + 1.0)
    draft_touched = sweep.touched_experts_table(draft, pps, batches, np.ones(1))
    pre = sweep.prefill_per_layout(m, h, layouts, wl[L.W_PREFILL_TOKENS])
    rates = np.array([np.full(len(layouts), np.inf), np.where(pre[:, 0] > 0, pre[:, 0], 1e-30),
                      np.where(pre[:, 0] > 0, pre[:, 0], 1e-30)])
    singles = np.array([np.zeros(len(layouts)), pre[:, 1], pre[:, 1]])
    caps = np.array([np.full(len(layouts), np.inf), np.full(len(layouts), np.inf),
                     rng.integers(1, 6, len(layouts)).astype(float)])
    load, scv = 10 ** rng.uniform(1, 6), float(rng.choice([0.0, 1.0, 2.5]))
    args = (m, draft, h, wl, layouts, np.searchsorted(pps, layouts[:, 1]), touched, draft_touched, batches, k, a)
    together = sweep.best_decode_per_layout(*args, rates, singles, load, scv, caps)
    assert together.shape == (3, len(layouts) * len(k), L.N_ENGINE)
    for w in range(3):
        alone = sweep.best_decode_per_layout(*args, rates[w], singles[w], load, scv, caps[w])
        assert np.array_equal(together[w], alone)


@pytest.mark.parametrize("seed", range(40))
def test_speculative_decode_matches_its_twin(seed):
    from solvers.perf.kernels import speculative_decode_breakdown

    rng = np.random.default_rng(6000 + seed)
    m, h, draft = random_model(rng), random_hw(rng), random_model(rng)
    tp, pp, ep = random_config(rng, m)
    streams, k, acc = float(rng.integers(1, 600)), float(rng.integers(0, 6)), rng.uniform(1.0, 3.0)
    out, scratch = np.zeros(L.N_BREAKDOWN), np.zeros(L.N_BREAKDOWN)
    speculative_decode_breakdown(m, draft, h, tp, pp, ep, streams, 3000.0, 4000.0, k, acc, scratch, out)
    want = twin.speculative_decode(m, draft, h, tp, pp, ep, streams, 3000.0, 4000.0, k, acc)
    for key, slot in (("time_s", L.B_TIME_S), ("draft_s", L.B_DRAFT_S), ("tps_per_user", L.B_TPS_PER_USER),
                      ("tokens_per_s", L.B_TOKENS_PER_S)):
        assert out[slot] == pytest.approx(want[key], rel=1e-9, abs=1e-15), key
    assert bool(out[L.B_FITS]) == want["fits"]


def test_the_drafter_costs_time_and_a_better_acceptance_saves_it():
    from solvers.perf.kernels import speculative_decode_breakdown

    rng = np.random.default_rng(5)
    m, h = random_model(rng), random_hw(rng)
    draft = m.copy()
    draft[L.M_LAYERS] = draft[L.M_DENSE_LAYERS] = 1.0
    draft[L.M_MOE_LAYERS] = 0.0
    plain, spec, scratch = np.zeros(L.N_BREAKDOWN), np.zeros(L.N_BREAKDOWN), np.zeros(L.N_BREAKDOWN)
    speculative_decode_breakdown(m, draft, h, 1.0, 1.0, 0.0, 1.0, 3000.0, 4000.0, 0.0, 1.0, scratch, plain)
    _, accepted = serving.spec_tokens(3.0, 0.0)  # every draft rejected: one token per step, and the drafter's cost
    speculative_decode_breakdown(m, draft, h, 1.0, 1.0, 0.0, 1.0, 3000.0, 4000.0, 3.0, accepted, scratch, spec)
    assert spec[L.B_DRAFT_S] > 0 and spec[L.B_TPS_PER_USER] < plain[L.B_TPS_PER_USER]


@pytest.mark.parametrize("seed", range(20))
def test_colocated_points_equal_the_twin(seed):
    rng = np.random.default_rng(9500 + seed)
    m, h = random_model(rng), random_hw(rng)
    wl = random_workload(rng)
    layouts = np.array([random_config(rng, m) for _ in range(3)])
    batches = np.array([1.0, 16.0, 300.0])
    got = sweep.colocated_points(m, h, wl, layouts, batches, 0.0, 1.0)
    for i, (tp, pp, ep) in enumerate(layouts):
        pre = twin.loaded_prefill(m, h, tp, pp, ep, wl[L.W_PREFILL_TOKENS])
        for k, b in enumerate(batches):
            d = twin.decode(m, h, tp, pp, ep, b, wl[L.W_CONTEXT_AVG], wl[L.W_CONTEXT_MAX], 1.0, 1.0)
            served = twin.colocated_tokens_per_s(wl[L.W_OUTPUT_TOKENS], d["time_s"], b, 1.0,
                                                 wl[L.W_PREFILL_TOKENS] / pre["tokens_per_s"])
            row = got[i * len(batches) + k]
            assert bool(row[L.P_FITS]) == d["fits"]
            if not d["fits"]:  # dropped from the frontier (and a prompt that does not fit serves nothing)
                continue
            assert row[L.P_TOKENS_PER_S] == pytest.approx(served, rel=1e-7)
            assert row[L.P_TPS_PER_USER] == pytest.approx(served / b, rel=1e-7)
            assert row[L.P_TTFT_S] == pytest.approx(pre["time_s"], rel=1e-9)
            share = min(1.0, wl[L.W_PREFILL_TOKENS] / pre["tokens_per_s"] * served / wl[L.W_OUTPUT_TOKENS])
            assert row[L.P_POWER_W] == pytest.approx(share * pre["power_w"] + (1 - share) * d["power_w"], rel=1e-9)


def test_spec_tokens_hand_values():
    # 3 drafts at 50%: 1 + 0.5 + 0.25 + 0.125 = 1.875 accepted per step of 4 query tokens
    assert serving.spec_tokens(3.0, 0.5) == (4.0, pytest.approx(1.875))
    assert serving.spec_tokens(0.0, 0.7) == (1.0, 1.0)
    assert math.isclose(serving.spec_tokens(3.0, 0.7)[1], (1 - 0.7**4) / (1 - 0.7), rel_tol=0, abs_tol=0)  # the Python formula, bit for bit


@pytest.mark.parametrize("seed", range(20))
def test_prefill_capacity_equals_its_twin(seed):
    rng = np.random.default_rng(9900 + seed)
    n = 5
    prefill = np.column_stack([10 ** rng.uniform(3, 6, n), 10 ** rng.uniform(-2, 0, n)])
    prefill[0, 0] = 0.0  # a layout whose prompt does not fit serves nothing
    transfer = 10 ** rng.uniform(-4, -1, n)
    tokens, target, q = float(rng.integers(100, 20000)), 10 ** rng.uniform(-1, 1), float(rng.choice([0.5, 0.9, 0.99]))
    # the pool's load: up to a few dozen of the slowest layout's replicas (the twin counts servers one by one)
    load, scv = prefill[1:, 0].min() * rng.uniform(0.3, 40.0), float(rng.choice([0.0, 0.5, 1.0, 3.0]))
    cap = np.where(rng.uniform(size=n) < 0.5, np.inf, rng.integers(1, 10, n).astype(float))
    got = sweep.prefill_capacity(prefill, transfer, tokens, target, q, load, scv, cap)
    assert (got[0, :3] == 0).all() and got[0, 3] == 1.0
    for i in range(1, n):
        service, fixed = tokens / prefill[i, 0], prefill[i, 1] + transfer[i]
        servers = twin.prefill_pool_servers(load, prefill[i, 0], target, fixed, service, q, scv, cap[i])
        util = twin.mgc_max_utilization(target, fixed, service, q, servers, scv)
        assert got[i, 3] == servers
        assert got[i, 0] == pytest.approx(util, rel=1e-9, abs=1e-12)
        assert got[i, 1] == pytest.approx(prefill[i, 0] * util, rel=1e-9, abs=1e-9)
        if util > 0:
            assert got[i, 2] == pytest.approx(fixed + twin.mgc_wait_quantile_s(servers, util, service, scv, q),
                                              rel=1e-9)
            assert got[i, 2] <= target * (1 + 1e-12)
