"""What must always hold of the performance model, checked with hypothesis over random systems and configs."""

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from solvers.perf import slots as L
from solvers.perf.kernels import decode_breakdown, prefill_breakdown
from tests.generators import random_config, random_hw, random_model

seeds = st.integers(min_value=0, max_value=2**31 - 1)


def decode(m, h, tp, pp, ep, streams, ctx=4000.0):
    out = np.zeros(L.N_BREAKDOWN)
    decode_breakdown(m, h, tp, pp, ep, float(streams), ctx, ctx * 1.5, 1.0, 1.0, out)
    return out


def setup(seed):
    rng = np.random.default_rng(seed)
    m, h = random_model(rng), random_hw(rng)
    return rng, m, h, random_config(rng, m)


@settings(max_examples=300, deadline=None)
@given(seeds, st.integers(0, L.MAX_TIERS - 1), st.floats(1.01, 10.0))
def test_more_memory_bandwidth_is_never_slower(seed, tier, factor):
    rng, m, h, (tp, pp, ep) = setup(seed)
    tier = min(tier, int(h[L.H_N_TIERS]) - 1)
    streams = float(rng.integers(1, 1024))
    base = decode(m, h, tp, pp, ep, streams)
    h2 = h.copy()
    h2[L.H_BW + tier] *= factor
    faster = decode(m, h2, tp, pp, ep, streams)
    assert faster[L.B_TIME_S] <= base[L.B_TIME_S] * (1 + 1e-12)
    assert faster[L.B_TPS_PER_USER] >= base[L.B_TPS_PER_USER] * (1 - 1e-12)


@settings(max_examples=200, deadline=None)
@given(seeds, st.sampled_from([L.H_SU_BW, L.H_SO_BW, L.H_PEAK_FLOPS]), st.floats(1.01, 10.0))
def test_more_link_bandwidth_or_flops_is_never_slower(seed, slot, factor):
    rng, m, h, (tp, pp, ep) = setup(seed)
    streams = float(rng.integers(1, 1024))
    h2 = h.copy()
    h2[slot] *= factor
    assert decode(m, h2, tp, pp, ep, streams)[L.B_TIME_S] <= decode(m, h, tp, pp, ep, streams)[L.B_TIME_S] * (1 + 1e-12)
    out, out2 = np.zeros(L.N_BREAKDOWN), np.zeros(L.N_BREAKDOWN)
    prefill_breakdown(m, h, tp, pp, ep, 2000.0, out)
    prefill_breakdown(m, h2, tp, pp, ep, 2000.0, out2)
    assert out2[L.B_TIME_S] <= out[L.B_TIME_S] * (1 + 1e-12)


def slowest_tier_used(h, out):
    """Index of the slowest memory tier the replica's weights and KV reach."""
    held = out[L.B_WEIGHT_BYTES_PER_CHIP] + out[L.B_KV_BYTES_PER_CHIP]
    room = np.cumsum(h[L.H_CAP:L.H_CAP + int(h[L.H_N_TIERS])] * h[L.H_MEM_USABLE])
    return int(np.searchsorted(room, held))


@settings(max_examples=300, deadline=None)
@given(seeds, st.integers(1, 4096), st.integers(1, 4096))
def test_batch_trades_per_user_speed_for_throughput(seed, b1, b2):
    """Per-user speed never rises with batch; throughput never falls with batch until memory runs out. With
    several tiers, "runs out" includes the fast tier: a batch whose KV spills (further) into a slower tier can lose
    throughput, since a growing share of its reads moves to the slow tier."""
    rng, m, h, (tp, pp, ep) = setup(seed)
    small, large = sorted((b1, b2))
    a, b = decode(m, h, tp, pp, ep, small), decode(m, h, tp, pp, ep, large)
    assert b[L.B_TPS_PER_USER] <= a[L.B_TPS_PER_USER] * (1 + 1e-12)
    if b[L.B_FITS] and slowest_tier_used(h, b) == 0:
        assert b[L.B_TOKENS_PER_S] >= a[L.B_TOKENS_PER_S] * (1 - 1e-12)


@settings(max_examples=200, deadline=None)
@given(seeds, st.integers(1, 4096), st.integers(1, 4096))
def test_single_tier_throughput_never_falls_with_batch(seed, b1, b2):
    rng, m, h, (tp, pp, ep) = setup(seed)
    h[L.H_N_TIERS] = 1
    small, large = sorted((b1, b2))
    a, b = decode(m, h, tp, pp, ep, small), decode(m, h, tp, pp, ep, large)
    if b[L.B_FITS]:
        assert b[L.B_TOKENS_PER_S] >= a[L.B_TOKENS_PER_S] * (1 - 1e-12)


@settings(max_examples=200, deadline=None)
@given(seeds, st.integers(1, 2048))
def test_fit_is_monotone_in_batch(seed, streams):
    """If a batch fits, every smaller batch fits."""
    rng, m, h, (tp, pp, ep) = setup(seed)
    if decode(m, h, tp, pp, ep, streams)[L.B_FITS]:
        assert decode(m, h, tp, pp, ep, max(1, streams // 2))[L.B_FITS]


@settings(max_examples=200, deadline=None)
@given(seeds)
def test_breakdown_adds_up(seed):
    rng, m, h, (tp, pp, ep) = setup(seed)
    out = decode(m, h, tp, pp, ep, float(rng.integers(1, 512)))
    total = out[L.B_ROOFLINE_S] + out[L.B_COMM_S] + out[L.B_FLOOR_S]
    assert np.isclose(out[L.B_TIME_S], total, rtol=1e-12)
    # each kernel group's roofline is at least its reads and its arithmetic, and at most both (MODEL.md 3.2)
    roofline, memory, compute = out[L.B_ROOFLINE_S], out[L.B_MEMORY_S], out[L.B_COMPUTE_S]
    assert max(memory, compute) <= roofline * (1 + 1e-12) and roofline <= (memory + compute) * (1 + 1e-12)
    assert np.isclose(out[L.B_TOKENS_PER_S], out[L.B_TPS_PER_USER] * max(1.0, float(int(out[L.B_TOKENS_PER_S] / out[L.B_TPS_PER_USER] + 0.5))), rtol=1e-9)


# ---- estimate's layout: TTFT and decode chosen together (issue 22, item 3) -------------------------------------
def _request_s(e, output_tokens=1000):
    return e.ttft_s + output_tokens / e.tps_per_user


def test_a_faster_precision_or_a_newer_rack_never_lengthens_a_request():
    """``estimate`` takes, on the chips it is given, the layout on which one request (its TTFT plus its output at
    the stream's speed) is shortest; a faster precision or a newer system on the same chips never makes that
    request longer. (Its TTFT alone may rise where a layout that decodes faster wins: MODEL.md 7.)"""
    from planner.perf.estimate import estimate

    fp4 = estimate("deepseek-r1", "vr-nvl72", chips=8, batch=1, precision="fp4")
    fp8 = estimate("deepseek-r1", "vr-nvl72", chips=8, batch=1, precision="fp8")
    gb300 = estimate("deepseek-r1", "gb300-nvl72", chips=8, batch=1, precision="fp4")
    assert _request_s(fp4) <= _request_s(fp8) and _request_s(fp4) <= _request_s(gb300)
