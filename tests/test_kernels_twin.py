"""The jitted performance model against its plain-Python twin on random inputs."""

import numpy as np
import pytest

from solvers.perf import slots as L
from solvers.perf import twin as ref
from solvers.perf.kernels import batch_prefill_breakdown, decode_breakdown, prefill_breakdown
from solvers.perf.sweep import decode_sweep
from tests.generators import random_config, random_hw, random_model, random_model_of_kinds


@pytest.mark.parametrize("seed", range(200))
def test_decode_matches_twin(seed, kinds=False):
    rng = np.random.default_rng(seed)
    m, h = (random_model_of_kinds if kinds else random_model)(rng), random_hw(rng)
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
def test_prefill_matches_twin(seed, kinds=False):
    rng = np.random.default_rng(1000 + seed)
    m, h = (random_model_of_kinds if kinds else random_model)(rng), random_hw(rng)
    tp, pp, ep = random_config(rng, m)
    n = float(rng.integers(1, 100_000))
    out = np.zeros(L.N_BREAKDOWN)
    prefill_breakdown(m, h, tp, pp, ep, n, out)
    twin = ref.loaded_prefill(m, h, tp, pp, ep, n)
    for key, slot in [("time_s", L.B_TIME_S), ("memory_s", L.B_MEMORY_S), ("compute_s", L.B_COMPUTE_S),
                      ("comm_s", L.B_COMM_S), ("floor_s", L.B_FLOOR_S), ("tokens_per_s", L.B_TOKENS_PER_S)]:
        assert out[slot] == pytest.approx(twin[key], rel=1e-9), key
    assert bool(out[L.B_FITS]) == twin["fits"]
    assert int(out[L.B_BOUND]) == twin["bound"]


@pytest.mark.parametrize("seed", range(100))
def test_batch_prefill_matches_twin(seed, kinds=False):
    rng = np.random.default_rng(3000 + seed)
    m, h = (random_model_of_kinds if kinds else random_model)(rng), random_hw(rng)
    tp, pp, ep = random_config(rng, m)
    n, prompts = float(rng.integers(1, 30_000)), float(rng.integers(1, 256))
    out = np.zeros(L.N_BREAKDOWN)
    batch_prefill_breakdown(m, h, tp, pp, ep, n, prompts, out)
    twin = ref.prefill(m, h, tp, pp, ep, n, prompts)
    for key, slot in [("time_s", L.B_TIME_S), ("memory_s", L.B_MEMORY_S), ("compute_s", L.B_COMPUTE_S),
                      ("comm_s", L.B_COMM_S), ("floor_s", L.B_FLOOR_S), ("tokens_per_s", L.B_TOKENS_PER_S)]:
        assert out[slot] == pytest.approx(twin[key], rel=1e-9), key
    assert bool(out[L.B_FITS]) == twin["fits"]
    assert int(out[L.B_BOUND]) == twin["bound"]


@pytest.mark.parametrize("seed", range(100))
def test_linear_and_sparse_attention_match_twin(seed):
    """Hybrid linear attention and DeepSeek sparse attention (MODEL.md 2.10), decode and prefill, against the twin."""
    test_decode_matches_twin(20_000 + seed, kinds=True)
    test_prefill_matches_twin(21_000 + seed, kinds=True)
    test_batch_prefill_matches_twin(23_000 + seed, kinds=True)


def test_sweep_equals_single_calls():
    rng = np.random.default_rng(7)
    m, h = random_model(rng), random_hw(rng)
    n = 64
    tp = rng.choice([1.0, 2.0, 4.0, 8.0], n)
    pp = rng.integers(1, int(m[L.M_LAYERS]) + 1, n).astype(float)
    ep = rng.integers(0, 2, n).astype(float)
    streams = rng.integers(1, 512, n).astype(float)
    swept = decode_sweep(m, h, tp, pp, ep, streams, 3000.0, 4000.0, 0.0, 1.0)
    one = np.zeros(L.N_BREAKDOWN)
    for i in range(n):
        decode_breakdown(m, h, tp[i], pp[i], ep[i], streams[i], 3000.0, 4000.0, 1.0, 1.0, one)
        np.testing.assert_array_equal(swept[i], one)
