"""Attention/FFN disaggregation: the jitted kernel against its twin, hand rules, and the CLI's A+B syntax."""

import json

import numpy as np
import pytest
from click.testing import CliRunner

from planner import catalog
from planner.perf import pack
from planner.cli import main
from solvers.perf import slots as L
from solvers.perf import twin as ref
from solvers.perf import split as S
from tests.generators import random_hw, random_model

NO_DRAFT = np.zeros(L.N_MODEL)


def split_vectors(m):
    attn, ffn = m.copy(), m.copy()
    for slot in pack.FFN_SLOTS:
        attn[slot] = 0.0
    for slot in pack.ATTENTION_SLOTS:
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
    draft = random_model(rng)
    k = float(rng.integers(0, 4))
    out = np.zeros(L.N_SPLIT)
    S.split_decode_breakdown(attn, ffn, draft, ha, hf, ca, cf, ep, streams, 3000.0, 4000.0, k, 1.7, 2.0,
                             np.zeros(L.N_BREAKDOWN), out)
    twin = ref.split_decode(attn, ffn, ha, hf, ca, cf, ep, streams, 3000.0, 4000.0, k, 1.7, 2.0, draft=draft)
    for key, slot in [("time_s", L.S_TIME_S), ("attention_s", L.S_ATTENTION_S), ("ffn_s", L.S_FFN_S),
                      ("crossing_s", L.S_CROSSING_S), ("tps_per_user", L.S_TPS_PER_USER),
                      ("tokens_per_s", L.S_TOKENS_PER_S), ("power_w", L.S_POWER_W)]:
        assert out[slot] == pytest.approx(twin[key], rel=1e-9), key
    assert bool(out[L.S_FITS_ATTENTION] and out[L.S_FITS_FFN]) == twin["fits"]


def test_split_parts_add_up_to_the_whole_model():
    m = catalog.get_model("kimi-k2")
    whole = pack.model_vector(m)
    attn, ffn = pack.split_model_vectors(m)
    assert attn[L.M_EXPERTS] == 0 and ffn[L.M_KV_ELEMS] == 0 and ffn[L.M_ATTN_PARAMS] == 0
    for slot in pack.ATTENTION_SLOTS + pack.FFN_SLOTS:
        assert attn[slot] + ffn[slot] == whole[slot]


def test_cycle_rule_by_hand():
    """Two micro-batches: the cycle is the longer of one micro-batch's round trip and twice the busiest side."""
    rng = np.random.default_rng(3)
    attn, ffn = split_vectors(random_model(rng))
    ha, hf = random_hw(rng), random_hw(rng)
    out = np.zeros(L.N_SPLIT)
    S.split_decode_breakdown(attn, ffn, NO_DRAFT, ha, hf, 8.0, 64.0, 0.0, 64.0, 2000.0, 3000.0, 0.0, 1.0, 2.0, np.zeros(L.N_BREAKDOWN), out)
    t_a, t_f, t_x = out[L.S_ATTENTION_S], out[L.S_FFN_S], out[L.S_CROSSING_S]
    assert out[L.S_TIME_S] == pytest.approx(max(t_a + t_f + t_x, 2 * max(t_a, t_f, t_x / 2)))
    assert out[L.S_TOKENS_PER_S] == pytest.approx(64.0 / out[L.S_TIME_S])


def test_more_ffn_bandwidth_is_never_slower():
    rng = np.random.default_rng(11)
    for _ in range(50):
        attn, ffn = split_vectors(random_model(rng))
        ha, hf = random_hw(rng), random_hw(rng)
        out, out2 = np.zeros(L.N_SPLIT), np.zeros(L.N_SPLIT)
        S.split_decode_breakdown(attn, ffn, NO_DRAFT, ha, hf, 8.0, 256.0, 0.0, 100.0, 2000.0, 3000.0, 0.0, 1.0, 2.0, np.zeros(L.N_BREAKDOWN), out)
        hf2 = hf.copy()
        hf2[L.H_BW:L.H_BW + L.MAX_TIERS] *= 2
        S.split_decode_breakdown(attn, ffn, NO_DRAFT, ha, hf2, 8.0, 256.0, 0.0, 100.0, 2000.0, 3000.0, 0.0, 1.0, 2.0, np.zeros(L.N_BREAKDOWN), out2)
        assert out2[L.S_TIME_S] <= out[L.S_TIME_S] * (1 + 1e-12)


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


@pytest.mark.parametrize("seed", range(40))
def test_more_streams_never_raise_speed_nor_fit(seed):
    """The premise of split_options' pruning (a layout whose first batch neither fits nor reaches the tier is
    skipped): along the batch grid, tokens/s per user never rises and a side that does not fit never fits again."""
    from planner.perf.grid import BATCHES

    rng = np.random.default_rng(30_000 + seed)
    attn, ffn = split_vectors(random_model(rng))
    ha, hf = random_hw(rng), random_hw(rng)
    ca, cf = float(rng.choice([1, 2, 8, 64])), float(rng.choice([8, 64, 256, 1024]))
    ep, k = float(rng.integers(0, 2)), float(rng.integers(0, 4))
    draft = random_model(rng)
    rows = []
    for streams in BATCHES:
        out = np.zeros(L.N_SPLIT)
        S.split_decode_breakdown(attn, ffn, draft, ha, hf, ca, cf, ep, float(streams), 3000.0, 4000.0, k, 1.7, 2.0,
                                 np.zeros(L.N_BREAKDOWN), out)
        rows.append(out)
    tps = np.array([r[L.S_TPS_PER_USER] for r in rows])
    fits = np.array([r[L.S_FITS_ATTENTION] > 0.5 and r[L.S_FITS_FFN] > 0.5 for r in rows])
    assert np.all(np.diff(tps) <= 1e-12 * tps[:-1])
    assert not np.any(fits[1:] & ~fits[:-1])
