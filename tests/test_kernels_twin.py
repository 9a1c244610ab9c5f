"""The jitted performance model against its plain-Python twin on random inputs."""

import numpy as np
import pytest

from solvers.perf import slots as L
from solvers.perf import twin as ref
from solvers.perf.kernels import decode_breakdown, prefill_breakdown
from solvers.perf.sweep import decode_sweep


def random_model(rng):
    m = np.zeros(L.N_MODEL)
    layers = int(rng.integers(2, 100))
    moe = rng.random() < 0.5
    m[L.M_LAYERS] = layers
    m[L.M_MOE_LAYERS] = int(rng.integers(1, layers + 1)) if moe else 0
    m[L.M_DENSE_LAYERS] = layers - m[L.M_MOE_LAYERS]
    h = float(rng.choice([1024, 2880, 4096, 7168, 8192, 16384]))
    m[L.M_HIDDEN] = h
    m[L.M_ATTN_PARAMS] = 4 * h * h * rng.uniform(0.3, 1.2)
    m[L.M_DENSE_FFN_PARAMS] = 3 * h * h * rng.uniform(2, 5)
    if moe:
        m[L.M_EXPERTS] = float(rng.choice([8, 64, 128, 256, 384]))
        m[L.M_EXPERTS_PER_TOKEN] = float(rng.integers(1, 9))
        m[L.M_EXPERT_PARAMS] = 3 * h * rng.uniform(256, 4096)
        m[L.M_SHARED_PARAMS] = m[L.M_EXPERT_PARAMS] * rng.integers(0, 2) + h * m[L.M_EXPERTS]
    m[L.M_EMBED_PARAMS] = 2 * 128000 * h
    m[L.M_LM_HEAD_PARAMS] = 128000 * h
    m[L.M_KV_ELEMS] = float(rng.choice([576, 1024, 2048]))
    if rng.random() < 0.3:
        m[L.M_WINDOW_LAYERS] = int(rng.integers(1, layers + 1))
        m[L.M_WINDOW_TOKENS] = float(rng.choice([128, 4096]))
    m[L.M_ATTN_FLOPS] = 4 * 64 * 128
    m[L.M_PREFILL_ATTN_FLOPS] = 2 * 64 * 320
    m[L.M_KV_HEADS] = float(rng.choice([1, 4, 8, 64]))
    return m


def random_hw(rng):
    h = np.zeros(L.N_HW)
    tiers = int(rng.integers(1, 4))
    h[L.H_N_TIERS] = tiers
    cap, bw = 10 ** rng.uniform(8, 11), 10 ** rng.uniform(13, 15)
    for i in range(tiers):
        h[L.H_CAP + i] = cap
        h[L.H_BW + i] = bw
        cap *= 10 ** rng.uniform(0.5, 2)
        bw /= 10 ** rng.uniform(0.5, 2)
    h[L.H_PEAK_FLOPS] = 10 ** rng.uniform(14, 16.5)
    h[L.H_ATTN_PEAK_FLOPS] = h[L.H_PEAK_FLOPS] / float(rng.choice([1, 2]))
    h[L.H_WEIGHT_BYTES] = float(rng.choice([0.5625, 1.0, 2.0]))
    h[L.H_KV_BYTES] = float(rng.choice([1.0, 2.0]))
    h[L.H_ACT_BYTES] = 2.0
    h[L.H_SU_DOMAIN] = float(rng.choice([1, 8, 72, 256]))
    h[L.H_SU_BW] = 10 ** rng.uniform(10, 12.5)
    h[L.H_SU_LAT] = 10 ** rng.uniform(-7, -5)
    h[L.H_SO_BW] = 10 ** rng.uniform(9.5, 11)
    h[L.H_SO_LAT] = 10 ** rng.uniform(-6, -4)
    h[L.H_CHIPS_PER_RACK] = float(rng.choice([1, 8, 72, 256]))
    h[L.H_RACK_POWER_W] = 10 ** rng.uniform(3, 5.5)
    h[L.H_BW_EFF] = rng.uniform(0.3, 1)
    h[L.H_FLOPS_EFF] = rng.uniform(0.2, 1)
    h[L.H_LAYER_FLOOR_S] = 10 ** rng.uniform(-7, -4)
    h[L.H_COLL_LAT_S] = 10 ** rng.uniform(-7, -4)
    h[L.H_MEM_USABLE] = rng.uniform(0.7, 1)
    return h


def random_config(rng, m):
    tp = float(rng.choice([1, 2, 4, 8, 16]))
    pp = float(rng.integers(1, int(m[L.M_LAYERS]) + 1))
    ep = float(rng.integers(0, 2))
    return tp, pp, ep


@pytest.mark.parametrize("seed", range(200))
def test_decode_matches_twin(seed):
    rng = np.random.default_rng(seed)
    m, h = random_model(rng), random_hw(rng)
    tp, pp, ep = random_config(rng, m)
    streams = float(rng.integers(1, 2048))
    ctx_avg = float(rng.integers(1, 200_000))
    ctx_max = ctx_avg * rng.uniform(1, 2)
    q = float(rng.integers(1, 5))
    a = rng.uniform(1, q)
    out = np.zeros(L.N_BREAKDOWN)
    decode_breakdown(m, h, tp, pp, ep, streams, ctx_avg, ctx_max, q, a, out)
    twin = ref.decode(m, h, tp, pp, ep, streams, ctx_avg, ctx_max, q, a)
    for key, slot in [("time_s", L.B_TIME_S), ("memory_s", L.B_MEMORY_S), ("compute_s", L.B_COMPUTE_S),
                      ("comm_s", L.B_COMM_S), ("floor_s", L.B_FLOOR_S), ("tps_per_user", L.B_TPS_PER_USER),
                      ("tokens_per_s", L.B_TOKENS_PER_S), ("power_w", L.B_POWER_W)]:
        assert out[slot] == pytest.approx(twin[key], rel=1e-9, abs=1e-300), key
    assert bool(out[L.B_FITS]) == twin["fits"]
    assert int(out[L.B_BOUND]) == twin["bound"]


@pytest.mark.parametrize("seed", range(100))
def test_prefill_matches_twin(seed):
    rng = np.random.default_rng(1000 + seed)
    m, h = random_model(rng), random_hw(rng)
    tp, pp, ep = random_config(rng, m)
    n = float(rng.integers(1, 100_000))
    out = np.zeros(L.N_BREAKDOWN)
    prefill_breakdown(m, h, tp, pp, ep, n, out)
    twin = ref.prefill(m, h, tp, pp, ep, n)
    for key, slot in [("time_s", L.B_TIME_S), ("memory_s", L.B_MEMORY_S), ("compute_s", L.B_COMPUTE_S),
                      ("comm_s", L.B_COMM_S), ("floor_s", L.B_FLOOR_S), ("tokens_per_s", L.B_TOKENS_PER_S)]:
        assert out[slot] == pytest.approx(twin[key], rel=1e-9), key
    assert bool(out[L.B_FITS]) == twin["fits"]
    assert int(out[L.B_BOUND]) == twin["bound"]


def test_sweep_equals_single_calls():
    rng = np.random.default_rng(7)
    m, h = random_model(rng), random_hw(rng)
    n = 64
    tp = rng.choice([1.0, 2.0, 4.0, 8.0], n)
    pp = rng.integers(1, int(m[L.M_LAYERS]) + 1, n).astype(float)
    ep = rng.integers(0, 2, n).astype(float)
    streams = rng.integers(1, 512, n).astype(float)
    swept = decode_sweep(m, h, tp, pp, ep, streams, 3000.0, 4000.0, 1.0, 1.0)
    one = np.zeros(L.N_BREAKDOWN)
    for i in range(n):
        decode_breakdown(m, h, tp[i], pp[i], ep[i], streams[i], 3000.0, 4000.0, 1.0, 1.0, one)
        np.testing.assert_array_equal(swept[i], one)
