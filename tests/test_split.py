"""Attention/FFN disaggregation: the jitted kernel against its twin, hand rules, and the CLI's A+B syntax."""

import json

import numpy as np
import pytest
from click.testing import CliRunner

from planner import catalog, performance
from planner.cli import main
from solvers import layout as L
from solvers import reference as ref
from solvers import split_kernels as S
from tests.test_kernels_twin import random_hw, random_model


def split_vectors(m):
    attn, ffn = m.copy(), m.copy()
    for slot in performance.FFN_SLOTS:
        attn[slot] = 0.0
    for slot in performance.ATTENTION_SLOTS:
        ffn[slot] = 0.0
    return attn, ffn


@pytest.mark.parametrize("seed", range(100))
def test_split_matches_twin(seed):
    rng = np.random.default_rng(20_000 + seed)
    attn, ffn = split_vectors(random_model(rng))
    ha, hf = random_hw(rng), random_hw(rng)
    ca, cf = float(rng.choice([1, 2, 8, 64])), float(rng.choice([8, 64, 256, 1024]))
    ep = float(rng.integers(0, 2))
    streams = float(rng.integers(1, 2048))
    out = np.zeros(S.N_SPLIT)
    S.split_decode_breakdown(attn, ffn, ha, hf, ca, cf, ep, streams, 3000.0, 4000.0, 2.0, 1.7, 2.0, out)
    twin = ref.split_decode(attn, ffn, ha, hf, ca, cf, ep, streams, 3000.0, 4000.0, 2.0, 1.7, 2.0)
    for key, slot in [("time_s", S.S_TIME_S), ("attention_s", S.S_ATTENTION_S), ("ffn_s", S.S_FFN_S),
                      ("crossing_s", S.S_CROSSING_S), ("tps_per_user", S.S_TPS_PER_USER),
                      ("tokens_per_s", S.S_TOKENS_PER_S), ("power_w", S.S_POWER_W)]:
        assert out[slot] == pytest.approx(twin[key], rel=1e-9), key
    assert bool(out[S.S_FITS_ATTENTION] and out[S.S_FITS_FFN]) == twin["fits"]


def test_split_parts_add_up_to_the_whole_model():
    m = catalog.get_model("kimi-k2")
    whole = performance.model_vector(m)
    attn, ffn = performance.split_model_vectors(m)
    assert attn[L.M_EXPERTS] == 0 and ffn[L.M_KV_ELEMS] == 0 and ffn[L.M_ATTN_PARAMS] == 0
    for slot in performance.ATTENTION_SLOTS + performance.FFN_SLOTS:
        assert attn[slot] + ffn[slot] == whole[slot]


def test_cycle_rule_by_hand():
    """Two micro-batches: the cycle is the longer of one micro-batch's round trip and twice the busiest side."""
    rng = np.random.default_rng(3)
    attn, ffn = split_vectors(random_model(rng))
    ha, hf = random_hw(rng), random_hw(rng)
    out = np.zeros(S.N_SPLIT)
    S.split_decode_breakdown(attn, ffn, ha, hf, 8.0, 64.0, 0.0, 64.0, 2000.0, 3000.0, 1.0, 1.0, 2.0, out)
    t_a, t_f, t_x = out[S.S_ATTENTION_S], out[S.S_FFN_S], out[S.S_CROSSING_S]
    assert out[S.S_TIME_S] == pytest.approx(max(t_a + t_f + t_x, 2 * max(t_a, t_f, t_x / 2)))
    assert out[S.S_TOKENS_PER_S] == pytest.approx(64.0 / out[S.S_TIME_S])


def test_more_ffn_bandwidth_is_never_slower():
    rng = np.random.default_rng(11)
    for _ in range(50):
        attn, ffn = split_vectors(random_model(rng))
        ha, hf = random_hw(rng), random_hw(rng)
        out, out2 = np.zeros(S.N_SPLIT), np.zeros(S.N_SPLIT)
        S.split_decode_breakdown(attn, ffn, ha, hf, 8.0, 256.0, 0.0, 100.0, 2000.0, 3000.0, 1.0, 1.0, 2.0, out)
        hf2 = hf.copy()
        hf2[L.H_BW:L.H_BW + L.MAX_TIERS] *= 2
        S.split_decode_breakdown(attn, ffn, ha, hf2, 8.0, 256.0, 0.0, 100.0, 2000.0, 3000.0, 1.0, 1.0, 2.0, out2)
        assert out2[S.S_TIME_S] <= out[S.S_TIME_S] * (1 + 1e-12)


def test_frontier_accepts_pairs():
    res = CliRunner().invoke(main, ["frontier", "--model", "deepseek-r1", "--hardware", "vr-nvl72+groq3-lpx",
                                    "--format", "json"])
    assert res.exit_code == 0, res.output
    points = json.loads(res.output)
    assert points and all(p["hardware"] == "vr-nvl72+groq3-lpx" for p in points)
    assert all(p["precision"] == "fp4+fp8" for p in points)


@pytest.mark.parametrize("pair, needle", [("groq3-lpx+vr-nvl72", "cannot take the attention role"),
                                          ("vr-nvl72+gb200-nvl72", "cannot take the ffn role")])
def test_pairs_need_the_right_roles(pair, needle):
    res = CliRunner().invoke(main, ["frontier", "--model", "deepseek-r1", "--hardware", pair])
    assert res.exit_code == 2 and needle in res.output


def test_estimate_accepts_pairs():
    res = CliRunner().invoke(main, ["estimate", "--model", "kimi-k2", "--hardware", "vr-nvl72+groq3-lpx",
                                    "--batch", "16", "--format", "json"])
    assert res.exit_code == 0, res.output
    est = json.loads(res.output)
    assert est["hardware"] == "vr-nvl72+groq3-lpx" and est["fits"]
    assert est["decode"]["attention_chips"] + est["decode"]["ffn_chips"] == est["chips"]
    # the FFN pool is the smallest that holds the 1T model's FFN weights in 500 MB LPUs
    ffn_bytes = catalog.get_model("kimi-k2").total_params * 1.0  # fp8, an upper bound (attention excluded)
    assert est["decode"]["ffn_chips"] * 0.5e9 <= 2 * ffn_bytes
    assert est["tps_per_user"] == pytest.approx(est["output_tokens_per_s"] / 16)
