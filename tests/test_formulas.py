"""The performance model's formulas against values worked out by hand (docs/MODEL.md, section numbers below).

Every expected number is derived in a comment next to its assertion, from tiny hand-built model and hardware vectors
(round numbers, so the arithmetic can be redone on paper). The jitted kernels in ``solvers.perf.kernels`` are called
directly; ``tests/test_kernels_twin.py`` separately checks them against the plain-Python twin on random inputs.
"""

from __future__ import annotations

import numpy as np
import pytest

from planner.catalog import get_model
from planner.perf.estimate import spec_tokens
from planner.perf.frontier import pareto_mask
from planner.perf.pack import attention_peak_flops, model_vector
from planner.vocabulary import tier_of
from solvers.perf import slots as L
from solvers.perf.kernels import (
    cached_layers,
    context_free_flops,
    kv_read_bytes_per_chip,
    busiest_assignments,
    busiest_touched,
    expert_groups,
    attention_compute_s,
    linear_step_terms,
    stream_fixed_time,
    tier_coefficients,
    prompts_per_pass,
    speculative_decode_breakdown,
    stream_cap,
    active_params_per_stage,
    allreduce_time,
    alltoall_time,
    attention_shards,
    context_layers,
    decode_breakdown,
    experts_touched,
    head_params_held,
    head_params_read,
    held_weight_params_per_chip,
    kv_bytes_per_chip,
    kv_shards,
    pipeline_hop_time,
    batch_prefill_breakdown,
    prefill_breakdown,
    read_weight_params_per_chip,
    stage_comm_time,
    stage_fixed_time,
    stage_fraction,
    stage_kernels,
    stage_layers,
    tier_read_time,
    usable_bytes_per_chip,
)

REL = 1e-12


def approx(x):
    return pytest.approx(x, rel=REL, abs=0.0)


# ---- hand-built vectors -------------------------------------------------------------------------------------
def model(**slots) -> np.ndarray:
    """A model vector with the named slots set (names without the ``M_`` prefix) and every other slot 0."""
    v = np.zeros(L.N_MODEL)
    for name, value in slots.items():
        v[getattr(L, "M_" + name.upper())] = value
    return v


def hardware(tiers=((1e11, 1e12),), **slots) -> np.ndarray:
    """A hardware vector: ``tiers`` as (capacity bytes, bandwidth bytes/s), fastest first; other slots by name."""
    v = np.zeros(L.N_HW)
    v[L.H_MAX_STREAMS_PER_RANK] = np.inf  # no scheduler bound unless a test sets one
    v[L.H_GROUPED_GEMM_FACTOR] = 1.0  # grouped expert matmuls at the dense rate unless a test sets one
    v[L.H_IDLE_POWER_SHARE] = 1.0  # design power at every load unless a test sets a curve
    v[L.H_N_TIERS] = len(tiers)
    v[L.H_SERVING_TIERS] = len(tiers)
    for i, (cap, bw) in enumerate(tiers):
        v[L.H_CAP + i] = cap
        v[L.H_BW + i] = bw
    for name, value in slots.items():
        v[getattr(L, "H_" + name.upper())] = value
    if "prefill_kernel_s" not in slots:  # a prompt pass's kernels at the decode step's latency unless a test sets it
        v[L.H_PREFILL_KERNEL_S] = v[L.H_KERNEL_S]
    return v


# A dense toy model: 4 layers of 4e6 attention + 12e6 FFN weights, hidden 1000, vocab 1000 untied
# (embedding + LM head 2 * 1000 * 1000 = 2e6, LM head 1e6), 500 KV elements per token per layer from 8 KV heads,
# 4000 attention FLOPs per query-context pair in decode and 6000 in prefill (deliberately different, to see which
# one is used).
DENSE = model(
    layers=4, dense_layers=4, moe_layers=0, hidden=1000, attn_params=4e6, dense_ffn_params=12e6,
    embed_params=2e6, lm_head_params=1e6, kv_elems=500, kv_heads=8, attn_flops=4000, prefill_attn_flops=6000,
    attn_kernels=3, dense_ffn_kernels=2,
)

# One-tier toy hardware: 100 GB at 1 TB/s, 1 PFLOP/s (attention too: weights and KV share the precision), 1-byte
# weights and KV, 16-bit activations, scale-up domain of 8 chips at 100 GB/s and 1 us, scale-out 10 GB/s and 10 us,
# 8 chips in an 8 kW rack; efficiencies 0.5 / 0.5, 2 us per kernel (DENSE's 5 kernels a layer: 10 us per layer), no
# step overhead (DENSE samples nothing), 2 us per collective, half of memory usable.
HW = hardware(
    tiers=((1e11, 1e12),), peak_flops=1e15, attn_peak_flops=1e15, weight_bytes=1.0, kv_bytes=1.0, act_bytes=2.0,
    su_domain=8, su_bw=1e11, su_lat=1e-6, so_bw=1e10, so_lat=1e-5, chips_per_rack=8, rack_power_w=8000.0,
    bw_eff=0.5, flops_eff=0.5, kernel_s=2e-6, coll_lat_s=2e-6, mem_usable=0.5,
)

# A small MoE: 2 MoE layers, 8 experts of 100 weights, top-2, shared expert + router 50, attention 10,
# embeddings 40 (LM head 20).
MOE = model(
    layers=2, dense_layers=0, moe_layers=2, hidden=1000, attn_params=10, expert_params=100, experts=8,
    experts_per_token=2, shared_params=50, embed_params=40, lm_head_params=20,
)


# ---- 2.1 pipeline stages ------------------------------------------------------------------------------------
def test_stage_fraction_balances_bytes():
    # DENSE: a layer is 4e6 + 12e6 = 16e6 weights, the model 4 * 16e6 + 2e6 embeddings = 66e6; the largest piece
    # no stage splits is a layer (16e6 > the 1e6 LM head and 1e6 embedding table): 16/66 = 0.2424...
    assert stage_fraction(DENSE, 1.0) == 1.0
    assert stage_fraction(DENSE, 2.0) == approx(0.5)
    assert stage_fraction(DENSE, 3.0) == approx(1.0 / 3.0)
    assert stage_fraction(DENSE, 4.0) == approx(0.25)
    # eight stages cannot go below one layer's bytes
    assert stage_fraction(DENSE, 8.0) == approx(16e6 / 66e6)
    # an LM head larger than a layer sets the floor: head 40e6 of 2 * 16e6 + 80e6 = 112e6
    big_head = model(layers=2, dense_layers=2, attn_params=4e6, dense_ffn_params=12e6, embed_params=80e6,
                     lm_head_params=40e6)
    assert stage_fraction(big_head, 2.0) == approx(0.5)
    assert stage_fraction(big_head, 3.0) == approx(40e6 / 112e6)


def test_stage_layers_takes_the_largest_stage():
    m = model(layers=10, dense_layers=4, moe_layers=6)
    # no weights to balance: 1/pp of the layers, 10 / 3 = 3.333 layers, 4/3 dense, 2 MoE
    ls, dense, moe = stage_layers(m, 3.0)
    assert (ls, dense, moe) == (approx(10.0 / 3.0), approx(4.0 / 3.0), approx(2.0))
    assert stage_layers(m, 1.0) == (approx(10.0), approx(4.0), approx(6.0))
    assert stage_layers(m, 10.0) == (approx(1.0), approx(0.4), approx(0.6))


def test_stage_kernels_and_fixed_time():
    # 10 layers (4 dense, 6 MoE): attention 5 kernels a layer, dense FFN 4, MoE block 11 -> 50 + 16 + 66 = 132
    m = model(layers=10, dense_layers=4, moe_layers=6, attn_kernels=5, dense_ffn_kernels=4, moe_kernels=11,
              samples=1)
    assert stage_kernels(m, 1.0) == approx(132.0)
    assert stage_kernels(m, 2.0) == approx(66.0)
    hw = hardware(kernel_s=3e-6, step_s=50e-6)
    # pp 1: 132 * 3 us + 50 us = 446 us; pp 2: 66 * 3 us + 50 / 2 us = 223 us a stage, the same 446 us an interval
    assert stage_fixed_time(m, hw, 1.0) == approx(446e-6)
    assert stage_fixed_time(m, hw, 2.0) == approx(223e-6)
    # a part that samples nothing (an FFN pool, a drafter) pays no step overhead
    m[L.M_SAMPLES] = 0.0
    assert stage_fixed_time(m, hw, 1.0) == approx(396e-6)


# ---- 2.2 weights held and read ------------------------------------------------------------------------------
def test_held_and_read_weight_params_dense():
    # held per chip, tp 2, pp 1, ep 0: split part (4 * 12e6 FFN + 2e6 embedding and LM head, one stage holds both)
    # / 2 = 50e6 / 2 = 25e6, plus attention 4 * 4e6 / 2 attention shards = 8e6 -> 33e6
    assert held_weight_params_per_chip(DENSE, 2.0, 1.0, 0.0) == approx(33e6)
    # read per step: the LM head (1e6) instead of embedding + LM head: (48e6 + 1e6) / 2 + 8e6 = 32.5e6
    assert read_weight_params_per_chip(DENSE, 2.0, 1.0, 0.0, 7.0) == approx(32.5e6)
    # tp 2, pp 2: byte-balanced stages, the largest holds half of everything (embeddings and LM head included):
    # held 0.5 * 33e6 = 16.5e6; read 0.5 * 32.5e6 = 16.25e6
    assert held_weight_params_per_chip(DENSE, 2.0, 2.0, 0.0) == approx(16.5e6)
    assert read_weight_params_per_chip(DENSE, 2.0, 2.0, 0.0, 1.0) == approx(16.25e6)
    # active per stage (FLOPs): 4 * 4e6 + 4 * 12e6 + 1e6 = 65e6; pp 2: half, 32.5e6
    assert active_params_per_stage(DENSE, 1.0) == approx(65e6)
    assert active_params_per_stage(DENSE, 2.0) == approx(32.5e6)


def test_head_params_held():
    # one stage holds embedding and LM head (2e6); byte-balanced stages each carry their share: 1/2, 1/4
    assert head_params_held(DENSE, 1.0) == approx(2e6)
    assert head_params_held(DENSE, 2.0) == approx(1e6)
    assert head_params_held(DENSE, 4.0) == approx(0.5e6)
    assert head_params_read(DENSE, 2.0) == approx(0.5e6)


def test_attention_shards():
    # tensor parallel: attention weights split over all tp chips; data-parallel attention (ep 1): replicated
    assert attention_shards(8.0, 0.0) == 8.0
    assert attention_shards(1.0, 0.0) == 1.0
    assert attention_shards(8.0, 1.0) == 1.0


def test_held_and_read_weight_params_moe():
    # held, tp 2, ep 0: split (2 * (50 shared + 8 * 100 experts) + 40 embeddings) / 2 = 1740 / 2 = 870,
    # attention 2 * 10 / 2 = 10 -> 880
    assert held_weight_params_per_chip(MOE, 2.0, 1.0, 0.0) == approx(880.0)
    # read with 1 token: it touches k = 2 experts: (2 * (50 + 2 * 100) + 20 LM head) / 2 + 10 = 260 + 10 = 270
    assert read_weight_params_per_chip(MOE, 2.0, 1.0, 0.0, 1.0) == approx(270.0)
    # 2 tokens touch 8 * (1 - 0.75^2) = 3.5 experts: (2 * (50 + 350) + 20) / 2 + 10 = 410 + 10 = 420
    assert read_weight_params_per_chip(MOE, 2.0, 1.0, 0.0, 2.0) == approx(420.0)
    # ep 1 (data-parallel attention): attention 2 * 10 = 20 replicated on every chip: held 870 + 20 = 890.
    # Read (1 token): the experts sit in R = 2 groups of 4; the token touches 2 (p = 1/4), 1 per group on average,
    # variance 1 x 3/4; the busiest group touches 1 + z_2 sqrt(0.75) = 1 + 0.5874 x 0.8660 = 1.5087 (z_2, the
    # expected larger of two normals, 0.587 by Blom and Tukey against 0.564 exactly), so the busiest chip reads
    # (2 * (50 + 2 x 1.5087 x 100) + 20) / 2 + 20 = 381.74
    assert held_weight_params_per_chip(MOE, 2.0, 1.0, 1.0) == approx(890.0)
    assert read_weight_params_per_chip(MOE, 2.0, 1.0, 1.0, 1.0) == pytest.approx(381.74, abs=0.01)
    # tp 4, ep 1: 1740 / 4 + 20 = 455; tp 4, ep 0: 1740 / 4 + 20 / 4 = 440
    assert held_weight_params_per_chip(MOE, 4.0, 1.0, 1.0) == approx(455.0)
    assert held_weight_params_per_chip(MOE, 4.0, 1.0, 0.0) == approx(440.0)
    # active per token: 20 + 2 * (50 + 2 * 100) + 20 = 540, whatever the batch
    assert active_params_per_stage(MOE, 1.0) == approx(540.0)


# ---- 2.3 experts touched ------------------------------------------------------------------------------------
def test_experts_touched():
    m = model(layers=1, moe_layers=1, experts=8, experts_per_token=2)
    # batch 1: 8 * (1 - (1 - 2/8)^1) = 8 * 0.25 = 2 = k
    assert experts_touched(m, 1.0) == approx(2.0)
    # batch 2: 8 * (1 - 0.75^2) = 8 * 0.4375 = 3.5
    assert experts_touched(m, 2.0) == approx(3.5)
    # batch 4: 8 * (1 - 0.75^4) = 8 * (1 - 0.31640625) = 5.46875
    assert experts_touched(m, 4.0) == approx(5.46875)
    # large batch approaches E = 8 (0.75^100 ~ 3e-13)
    assert experts_touched(m, 100.0) == pytest.approx(8.0, abs=1e-11)
    assert experts_touched(m, 100.0) < 8.0
    # a dense model touches none
    assert experts_touched(DENSE, 64.0) == 0.0


# ---- 2.4 KV cache -------------------------------------------------------------------------------------------
def test_context_layers_with_sliding_window():
    # 4 layers, 2 of them sliding-window over 100 tokens
    m = model(layers=4, window_layers=2, window_tokens=100)
    # context 1000: full layers count 1, window layers 100 / 1000 = 0.1: 4 * (0.5 * 1 + 0.5 * 0.1) = 2.2
    assert context_layers(m, 4.0, 1000.0) == approx(2.2)
    # a stage of 2 layers (pp 2) holds the same mix: 2 * 0.55 = 1.1
    assert context_layers(m, 2.0, 1000.0) == approx(1.1)
    # context inside the window: every layer counts fully
    assert context_layers(m, 4.0, 50.0) == approx(4.0)
    # no context, no attention
    assert context_layers(m, 4.0, 0.0) == 0.0
    # no window: layers as they are
    assert context_layers(DENSE, 4.0, 1000.0) == approx(4.0)


def test_kv_bytes_per_chip():
    # dense toy (8 KV heads), tp 2, pp 1, ep 0, 4 streams at 2000 tokens, 1-byte KV:
    # 4 * 2000 * 500 * 1 * 4 layers / min(2, 8) = 16e6 / 2 = 8e6
    assert kv_bytes_per_chip(DENSE, HW, 2.0, 1.0, 0.0, 4.0, 2000.0) == approx(8e6)
    # with a window: 4 layers (2 windowed at 100 tokens), 500 elements, 2-byte KV, tp 2, pp 2, 3 streams at 1000:
    # stage of 2 layers -> 1.1 layer-equivalents (above); per token 500 * 2 * 1.1 = 1100 B; 3 * 1000 * 1100 / 2
    m = model(layers=4, dense_layers=4, kv_elems=500, kv_heads=8, window_layers=2, window_tokens=100)
    hw = hardware(kv_bytes=2.0)
    assert kv_bytes_per_chip(m, hw, 2.0, 2.0, 0.0, 3.0, 1000.0) == approx(1.65e6)


def test_kv_shards():
    gqa = model(kv_heads=8)
    mla = model(kv_heads=1)  # MLA: one shared latent per token
    # tensor parallel splits by KV head: tp 4 <= 8 heads -> 4; tp 16 > 8 heads -> only 8 (heads are replicated)
    assert kv_shards(gqa, 4.0, 0.0) == 4.0
    assert kv_shards(gqa, 16.0, 0.0) == 8.0
    # MLA's latent cannot be split: every one of the tp chips holds all of it
    assert kv_shards(mla, 8.0, 0.0) == 1.0
    # data-parallel attention (ep 1): each chip holds whole streams, a 1/tp share, whatever the heads
    assert kv_shards(mla, 8.0, 1.0) == 8.0
    assert kv_shards(gqa, 16.0, 1.0) == 16.0


def test_kv_bytes_per_chip_gqa_and_mla_shards():
    # dense toy (8 KV heads), tp 16, pp 1, 4 streams at 2000: 16e6 B of KV over min(16, 8) = 8 shards = 2e6
    assert kv_bytes_per_chip(DENSE, HW, 16.0, 1.0, 0.0, 4.0, 2000.0) == approx(2e6)
    # the same layers as MLA (1 KV head): tp 8, ep 0 keeps all 16e6 B on each chip; ep 1 splits it 8 ways: 2e6
    mla = DENSE.copy()
    mla[L.M_KV_HEADS] = 1
    assert kv_bytes_per_chip(mla, HW, 8.0, 1.0, 0.0, 4.0, 2000.0) == approx(16e6)
    assert kv_bytes_per_chip(mla, HW, 8.0, 1.0, 1.0, 4.0, 2000.0) == approx(2e6)


# ---- 2.10 linear and sparse attention ---------------------------------------------------------------------------
# A hybrid toy: 4 layers, 3 of them linear attention (a 1e6-byte state per stream per layer, 4 state heads,
# 2e6 FLOPs per token per layer), one full-attention layer of 500 KV elements per token (8 KV heads).
HYBRID = model(layers=4, dense_layers=4, kv_elems=500, kv_heads=8, attn_flops=4000, linear_layers=3,
               state_bytes=1e6, state_heads=4, linear_flops=2e6)
# A sparse toy: 2 layers, MLA (1 KV head), each reading the top 1000 of its cache, with a 100-element indexer key per
# token and layer and 300 indexer FLOPs per query-cached pair.
SPARSE = model(layers=2, dense_layers=2, kv_elems=500, kv_heads=1, attn_flops=4000, topk=1000, index_elems=100,
               index_flops=300)


def test_linear_attention_layers_hold_a_fixed_state_not_a_cache():
    # only the full layer attends: 1 layer-equivalent of 4, whatever the context
    assert context_layers(HYBRID, 4.0, 1000.0) == approx(1.0)
    # 2 streams at 1000 tokens, tp 2 (KV split min(2, 8) = 2, state min(2, 4) = 2), 1-byte KV:
    # cache 2 * 1000 * 500 * 1 / 2 = 5e5; states 2 streams * 3 layers * 1e6 / 2 = 3e6
    assert kv_bytes_per_chip(HYBRID, HW, 2.0, 1.0, 0.0, 2.0, 1000.0) == approx(5e5 + 3e6)
    # a decode step reads the cache and reads and writes each state: 5e5 + 2 * 3e6
    assert kv_read_bytes_per_chip(HYBRID, HW, 2.0, 1.0, 0.0, 2.0, 1000.0) == approx(5e5 + 6e6)
    # tp 8 splits the state only 4 ways (its heads): 2 * 3e6 / 4 = 1.5e6 beside the cache's 2 * 1000 * 500 / 8
    assert kv_bytes_per_chip(HYBRID, HW, 8.0, 1.0, 0.0, 2.0, 1000.0) == approx(1.25e5 + 1.5e6)
    # data-parallel attention: whole streams per chip, 1/tp of them: 2 * 3e6 / 8
    assert kv_bytes_per_chip(HYBRID, HW, 8.0, 1.0, 1.0, 2.0, 1000.0) == approx(1.25e5 + 7.5e5)


def test_sparse_attention_holds_the_whole_cache_and_reads_its_top_k():
    # at 4000 tokens each layer holds all of them but reads 1000: 2 layers held, 2 * 1000 / 4000 = 0.5 read
    assert cached_layers(SPARSE, 2.0, 4000.0) == approx(2.0)
    assert context_layers(SPARSE, 2.0, 4000.0) == approx(0.5)
    # inside the top k it reads everything
    assert context_layers(SPARSE, 2.0, 800.0) == approx(2.0)
    # held: 1 stream * 4000 tokens * (500 + 100 indexer) * 2 layers = 4.8e6 (MLA: unsplit at tp 4)
    assert kv_bytes_per_chip(SPARSE, HW, 4.0, 1.0, 0.0, 1.0, 4000.0) == approx(4.8e6)
    # read: the top 1000 tokens' latents, 1000 * 500 * 2, and every token's indexer key, 4000 * 100 * 2
    assert kv_read_bytes_per_chip(SPARSE, HW, 4.0, 1.0, 0.0, 1.0, 4000.0) == approx(1e6 + 8e5)


def test_decode_prices_the_indexer_and_the_state_updates():
    # SPARSE, one query token at 4000 tokens, tp 1: the indexer scores 4000 keys in 2 layers at 300 FLOPs each
    assert context_free_flops(SPARSE, 2.0, 1.0, 4000.0, 1.0) == approx(2.4e6)
    # HYBRID, 10 tokens, tp 2: 10 tokens * 3 linear layers * 2e6 / 2 (no indexer), whatever the context
    assert context_free_flops(HYBRID, 4.0, 10.0, 1e6, 2.0) == approx(3e7)
    # a decode step's FLOPs: the attention pairs (1 token x 1000 top-k tokens x 2 layers x 4000) and the indexer's
    out = np.zeros(L.N_BREAKDOWN)
    decode_breakdown(SPARSE, HW, 1.0, 1.0, 0.0, 1.0, 4000.0, 4000.0, 1.0, 1.0, out)
    assert out[L.B_FLOPS_PER_CHIP] == approx(1000 * 2 * 4000 + 2.4e6)


# ---- 2.5 memory tiers ---------------------------------------------------------------------------------------
# SRAM 1 GB at 100 TB/s, HBM 100 GB at 1 TB/s; half of each usable, half of each bandwidth achieved.
TWO_TIER = hardware(tiers=((1e9, 1e14), (1e11, 1e12)), mem_usable=0.5, bw_eff=0.5)


def test_usable_bytes_sum_the_tiers():
    # (1e9 + 1e11) * 0.5 = 50.5e9
    assert usable_bytes_per_chip(TWO_TIER) == approx(50.5e9)


def test_tier_read_time_weights_split_across_sram_and_hbm():
    # 2 GB of weights held, 1 GB read (e.g. touched experts only); 1 GB of KV held, 0.4 GB read.
    # SRAM room 0.5 GB: 0.5 GB of weights (a quarter of them), no room for KV.
    #   reads 1e9 * 0.25 = 0.25e9 B at 1e14 * 0.5 = 5e13 B/s -> 5e-6 s
    # HBM room 50 GB: the other 1.5 GB of weights and all the KV.
    #   reads 1e9 * 0.75 + 0.4e9 = 1.15e9 B at 1e12 * 0.5 = 5e11 B/s -> 2.3e-3 s
    # total 2.305e-3 s (tiers are read one after the other)
    assert tier_read_time(TWO_TIER, 2e9, 1e9, 1e9, 0.4e9) == approx(2.305e-3)


def test_tier_read_time_kv_fills_sram_after_weights():
    # 0.2 GB of weights (all read), 1 GB of KV (0.5 GB read).
    # SRAM (0.5 GB): 0.2 GB weights + 0.3 GB KV -> reads 0.2e9 + 0.5e9 * 0.3 = 0.35e9 B at 5e13 -> 7e-6 s
    # HBM: 0.7 GB KV -> reads 0.5e9 * 0.7 = 0.35e9 B at 5e11 -> 7e-4 s; total 7.07e-4 s
    assert tier_read_time(TWO_TIER, 0.2e9, 0.2e9, 1e9, 0.5e9) == approx(7.07e-4)


def test_tier_read_time_overflow_is_priced_at_the_slowest_tier():
    # SRAM 1 GB, HBM 4 GB, half usable: rooms 0.5 GB and 2 GB; 3 GB of weights, all read, no KV.
    # SRAM 0.5e9 / 5e13 = 1e-5; HBM 2e9 / 5e11 = 4e-3; overflow 0.5e9 at the HBM's 5e11 -> 1e-3. Total 5.01e-3.
    hw = hardware(tiers=((1e9, 1e14), (4e9, 1e12)), mem_usable=0.5, bw_eff=0.5)
    assert tier_read_time(hw, 3e9, 3e9, 0.0, 0.0) == approx(5.01e-3)


# ---- 2.7 communication --------------------------------------------------------------------------------------
def test_allreduce_time():
    hw = hardware(su_domain=8, su_bw=1e11, coll_lat_s=2e-6)
    # tp 4, 1 MB: 2e-6 + 2 * 3/4 * 1e6 / 1e11 = 2e-6 + 1.5e-5 = 1.7e-5
    assert allreduce_time(hw, 4.0, 1e6) == approx(1.7e-5)
    # tp 2: 2e-6 + 2 * 1/2 * 1e6 / 1e11 = 1.2e-5
    assert allreduce_time(hw, 2.0, 1e6) == approx(1.2e-5)
    # one chip: nothing to reduce, no latency either
    assert allreduce_time(hw, 1.0, 1e6) == 0.0


def test_alltoall_time():
    hw = hardware(su_domain=8, su_bw=1e11, coll_lat_s=2e-6)
    # tp 4, each chip receives 1 MB of which 3/4 from the other chips: 2e-6 + 0.75e6 / 1e11 = 9.5e-6
    assert alltoall_time(hw, 4.0, 1e6) == approx(9.5e-6)
    assert alltoall_time(hw, 1.0, 1e6) == 0.0


def test_wide_expert_parallel_collectives_cross_the_scale_out_network():
    hw = hardware(su_domain=8, su_bw=1e11, coll_lat_s=2e-6, so_bw=1e10, so_lat=1e-5)
    # all-to-all over 32 chips (4 domains of 8), 1 MB received a chip: 7/32 of it from its own domain over
    # scale-up, 0.21875e6 / 1e11 = 2.1875e-6; 24/32 over scale-out, 0.75e6 / 1e10 = 7.5e-5, at once: the slower.
    # 2e-6 + 1e-5 (the scale-out hop) + 7.5e-5 = 8.7e-5
    assert alltoall_time(hw, 32.0, 1e6) == approx(8.7e-5)
    # all-reduce of 1 MB over 32 chips: inside each domain 2 * 7/8 * 1e6 / 1e11 = 1.75e-5, across the 4 domains
    # each chip's eighth, 2 * 3/4 * 1.25e5 / 1e10 = 1.875e-5, plus the hop 1e-5: 2e-6 + 1.75e-5 + 1e-5 + 1.875e-5
    assert allreduce_time(hw, 32.0, 1e6) == approx(4.825e-5)
    # a group of one domain's chips never touches the scale-out link: the formulas above
    assert alltoall_time(hw, 8.0, 1e6) == approx(2e-6 + 0.875e6 / 1e11)
    assert allreduce_time(hw, 8.0, 1e6) == approx(2e-6 + 1.75e6 / 1e11)


def test_pipeline_hop_time_scale_up_vs_scale_out():
    hw = hardware(su_domain=8, su_bw=1e11, su_lat=1e-6, so_bw=1e10, so_lat=1e-5)
    # tp 2 x pp 4 = 8 chips <= domain 8: scale-up, 1e-6 + 1e6 / 1e11 = 1.1e-5
    assert pipeline_hop_time(hw, 2.0, 4.0, 1e6) == approx(1.1e-5)
    # tp 2 x pp 8 = 16 chips > 8: scale-out, 1e-5 + 1e6 / 1e10 = 1.1e-4
    assert pipeline_hop_time(hw, 2.0, 8.0, 1e6) == approx(1.1e-4)
    # one stage: no hop
    assert pipeline_hop_time(hw, 8.0, 1.0, 1e6) == 0.0


def test_stage_comm_time_tensor_vs_expert_parallel():
    m = model(layers=4, dense_layers=1, moe_layers=3, hidden=1000, experts=8, experts_per_token=2)
    hw = hardware(act_bytes=2.0, su_bw=1e11, coll_lat_s=2e-6, su_domain=8)
    # 10 tokens: message 10 * 1000 * 2 B = 20000 B.
    # all-reduce, tp 4: 2e-6 + 2 * 3/4 * 20000 / 1e11 = 2e-6 + 3e-7 = 2.3e-6
    # tensor-parallel experts: 2 all-reduces per layer, 4 layers: 8 * 2.3e-6 = 1.84e-5
    assert stage_comm_time(m, hw, 4.0, 1.0, 0.0, 10.0) == approx(1.84e-5)
    # ep 1 (data-parallel attention, expert parallel): no attention all-reduce; all-to-all receives
    #   20000 * k / tp = 20000 * 2 / 4 = 10000 B per chip: 2e-6 + 10000 * 3/4 / 1e11 = 2.075e-6
    # dense layer: one all-reduce (its FFN) 2.3e-6; each MoE layer 2 all-to-alls 4.15e-6, 3 of them 1.245e-5
    # total 1.475e-5
    assert stage_comm_time(m, hw, 4.0, 1.0, 1.0, 10.0) == approx(1.475e-5)
    # pp 2 adds one hop of the 20000 B message over scale-up (8 chips <= 8): 0 + 20000 / 1e11 = 2e-7 (su_lat 0);
    # the stage has 2 layers (0.5 dense, 1.5 MoE): tp: 4 * 2.3e-6 = 9.2e-6 + 2e-7 = 9.4e-6
    assert stage_comm_time(m, hw, 4.0, 2.0, 0.0, 10.0) == approx(9.4e-6)


# ---- 3 decode step ------------------------------------------------------------------------------------------
def test_decode_breakdown_one_tier_dense_every_slot():
    # tp 2, pp 1, 4 streams, average context 1000, longest 2000, no speculation.
    out = np.full(L.N_BREAKDOWN, np.nan)
    decode_breakdown(DENSE, HW, 2.0, 1.0, 0.0, 4.0, 1000.0, 2000.0, 1.0, 1.0, out)
    # b = max(4 / 1, 1) = 4 streams per micro-batch, 4 tokens per step; 4 layers in the stage.
    # weights held 33e6 B, read 32.5e6 B (test_held_and_read_weight_params_dense, 1-byte weights)
    # KV held: 4 streams * 2000 * 500 * 1 B * 4 layers / 2 = 8e6 B; read: 4 * 1000 * 500 * 4 / 2 = 4e6 B
    # memory: (32.5e6 + 4e6) / (1e12 * 0.5) = 36.5e6 / 5e11 = 7.3e-5 s
    # FLOPs per chip: 2 * 4 tokens * 65e6 / 2 = 260e6; attention 4 tokens * 1000 ctx * 4000 * 4 layers / 2 = 32e6
    #   -> 292e6 FLOPs; compute 292e6 / (1e15 * 0.5) = 5.84e-7 s
    # comm: message 4 * 1000 * 2 B = 8000 B; all-reduce 2e-6 + 2 * 1/2 * 8000 / 1e11 = 2.08e-6;
    #   2 per layer * 4 layers = 1.664e-5 s; pp 1, no hop
    # floor: 4 layers * 1e-5 = 4e-5 s
    # step = max(7.3e-5, 5.84e-7) + 1.664e-5 + 4e-5 = 1.2964e-4 s; interval = pp * step = the same
    step = 7.3e-5 + 1.664e-5 + 4e-5
    assert out[L.B_TIME_S] == approx(step)
    assert out[L.B_MEMORY_S] == approx(7.3e-5)
    assert out[L.B_COMPUTE_S] == approx(5.84e-7)
    assert out[L.B_ROOFLINE_S] == approx(7.3e-5)
    assert out[L.B_COMM_S] == approx(1.664e-5)
    assert out[L.B_FLOOR_S] == approx(4e-5)
    # per user 1 / 1.2964e-4 = 7713.67 tok/s; replica 4 streams * that = 30854.7 tok/s
    assert out[L.B_TPS_PER_USER] == approx(1.0 / step)
    assert out[L.B_TPS_PER_USER] == pytest.approx(7713.67, rel=1e-6)
    assert out[L.B_TOKENS_PER_S] == approx(4.0 / step)
    # fits: 33e6 + 8e6 = 41e6 <= 1e11 * 0.5 = 5e10
    assert out[L.B_FITS] == 1.0
    assert out[L.B_WEIGHT_BYTES_PER_CHIP] == approx(33e6)
    assert out[L.B_KV_BYTES_PER_CHIP] == approx(8e6)
    assert out[L.B_USABLE_BYTES_PER_CHIP] == approx(5e10)
    # largest of (memory 7.3e-5, compute 5.84e-7, comm 1.664e-5, floor 4e-5) is memory
    assert L.BOUND_NAMES[int(out[L.B_BOUND])] == "memory"
    # power: 2 chips * 8000 W / 8 chips per rack = 2000 W
    assert out[L.B_POWER_W] == approx(2000.0)
    assert out[L.B_BYTES_READ_PER_CHIP] == approx(36.5e6)
    assert out[L.B_FLOPS_PER_CHIP] == approx(292e6)


def test_decode_breakdown_two_stages():
    # tp 2, pp 2 (4 chips <= domain 8: hops over scale-up), 4 streams, contexts 1000 / 2000.
    out = np.zeros(L.N_BREAKDOWN)
    decode_breakdown(DENSE, HW, 2.0, 2.0, 0.0, 4.0, 1000.0, 2000.0, 1.0, 1.0, out)
    # b = 4 / 2 = 2 streams per micro-batch; the largest stage holds half the model (2 layers' worth).
    # weights held 16.5e6, read 16.25e6 (test_held_and_read_weight_params_dense)
    # KV held: 4 * 2000 * 500 * 2 layers / 2 = 4e6; read: 2 * 1000 * 500 * 2 / 2 = 1e6
    # memory (16.25e6 + 1e6) / 5e11 = 3.45e-5 s
    # FLOPs: 2 * 2 * 32.5e6 / 2 = 65e6 + attention 2 * 1000 * 4000 * 2 / 2 = 8e6 -> 73e6; / 5e14 = 1.46e-7 s
    # comm: message 2 * 1000 * 2 = 4000 B; all-reduce 2e-6 + 4000 / 1e11 = 2.04e-6, 2 per layer * 2 layers
    #   = 8.16e-6; hop 1e-6 + 4000 / 1e11 = 1.04e-6; total 9.2e-6 s
    # floor 2 layers * 5 kernels * 2 us = 2e-5 s; step 3.45e-5 + 9.2e-6 + 2e-5 = 6.37e-5 s; interval 1.274e-4 s
    assert out[L.B_TIME_S] == approx(1.274e-4)
    assert out[L.B_MEMORY_S] == approx(2 * 3.45e-5)
    assert out[L.B_COMPUTE_S] == approx(2 * 1.46e-7)
    assert out[L.B_FLOPS_PER_CHIP] == approx(73e6)
    assert out[L.B_COMM_S] == approx(2 * 9.2e-6)
    assert out[L.B_FLOOR_S] == approx(2 * 2e-5)
    assert out[L.B_TPS_PER_USER] == approx(1.0 / 1.274e-4)
    assert out[L.B_TOKENS_PER_S] == approx(4.0 / 1.274e-4)
    assert out[L.B_WEIGHT_BYTES_PER_CHIP] == approx(16.5e6)
    assert out[L.B_KV_BYTES_PER_CHIP] == approx(4e6)
    assert out[L.B_POWER_W] == approx(4000.0)


def test_decode_attention_flops_at_the_attention_peak():
    # as test_decode_breakdown_one_tier_dense_every_slot, but attention runs at a quarter of the linear peak
    # (2.5e14 FLOP/s): compute (260e6 / 1e15 + 32e6 / 2.5e14) / 0.5 = (2.6e-7 + 1.28e-7) / 0.5 = 7.76e-7 s;
    # the FLOP count itself is unchanged (292e6)
    hw = HW.copy()
    hw[L.H_ATTN_PEAK_FLOPS] = 2.5e14
    out = np.zeros(L.N_BREAKDOWN)
    decode_breakdown(DENSE, hw, 2.0, 1.0, 0.0, 4.0, 1000.0, 2000.0, 1.0, 1.0, out)
    assert out[L.B_COMPUTE_S] == approx(7.76e-7)
    assert out[L.B_FLOPS_PER_CHIP] == approx(292e6)


def test_attention_peak_flops_follows_the_kv_precision():
    from planner.catalog import get_hardware

    hw = get_hardware("vr-nvl72")
    # vr-nvl72: fp4 35.0e15, fp8 17.5e15, bf16 4.0e15 dense. fp4 runs keep an fp8 KV cache: attention at 17.5e15
    assert attention_peak_flops(hw, "fp4") == 17.5e15
    assert attention_peak_flops(hw, "fp8") == 17.5e15
    assert attention_peak_flops(hw, "bf16") == 4.0e15


def test_decode_breakdown_speculative_tokens():
    # 1 stream, tp 1, pp 1, context 1000 (avg = max), 3 query tokens per step of which 2 accepted on average.
    out = np.zeros(L.N_BREAKDOWN)
    decode_breakdown(DENSE, HW, 1.0, 1.0, 0.0, 1.0, 1000.0, 1000.0, 3.0, 2.0, out)
    # weights read 65e6 B; KV read 1 * 1000 * 500 * 4 = 2e6 B: memory 67e6 / 5e11 = 1.34e-4 s
    # FLOPs 2 * 3 * 65e6 = 390e6 + 3 * 1000 * 4000 * 4 = 48e6 -> 438e6; compute 438e6 / 5e14 = 8.76e-7 s
    # tp 1: no collectives; floor 4e-5; step 1.74e-4 s; 2 accepted tokens per step: 2 / 1.74e-4 tok/s
    assert out[L.B_COMM_S] == 0.0
    assert out[L.B_FLOPS_PER_CHIP] == approx(438e6)
    assert out[L.B_TIME_S] == approx(1.74e-4)
    assert out[L.B_TPS_PER_USER] == approx(2.0 / 1.74e-4)


def test_kernel_groups_each_pay_their_own_roofline():
    # MODEL.md 3.2: the weight matmuls and attention are separate kernels, each overlapping its own reads and
    # arithmetic, so the step adds their rooflines. DENSE on tp 1, 1 stream at 1000 tokens of context:
    #   matmuls: 65e6 B read at 5e11 B/s = 1.3e-4 s; 2 * 65e6 = 1.3e8 FLOPs at 5e14 = 2.6e-7 s -> 1.3e-4 s
    #   attention: KV 1000 * 500 * 4 layers = 2e6 B at 5e11 = 4e-6 s; 1000 * 4000 * 4 = 1.6e7 FLOPs at an
    #   attention peak of 1e12 x 0.5 = 3.2e-5 s -> 3.2e-5 s (compute-bound while the matmuls are memory-bound)
    #   roofline 1.3e-4 + 3.2e-5 = 1.62e-4 s (one max over the sums would give 1.34e-4); floor 4 * 5 * 2 us = 4e-5
    hw = HW.copy()
    hw[L.H_ATTN_PEAK_FLOPS] = 1e12
    out = np.zeros(L.N_BREAKDOWN)
    decode_breakdown(DENSE, hw, 1.0, 1.0, 0.0, 1.0, 1000.0, 1000.0, 1.0, 1.0, out)
    assert out[L.B_MEMORY_S] == approx(1.34e-4)
    assert out[L.B_COMPUTE_S] == approx(2.6e-7 + 3.2e-5)
    assert out[L.B_ROOFLINE_S] == approx(1.62e-4)
    assert out[L.B_TIME_S] == approx(1.62e-4 + 4e-5)


def test_softmax_exponentials_bound_attention():
    # 8 query heads, exponentials at 1e9 a second: 1000 cached tokens x 4 layers x 8 heads = 32,000 exponentials a
    # query token, 3.2e-5 s, above the 1.6e7 FLOPs' 3.2e-8 s at the 1e15 attention peak (x 0.5): attention is
    # exponential-bound, 3.2e-5 s against its 4e-6 s of KV reads
    m = DENSE.copy()
    m[L.M_ATTN_HEADS] = 8.0
    hw = HW.copy()
    hw[L.H_EXP_PER_S] = 1e9
    assert attention_compute_s(m, hw, 1000.0 * 4.0, 4000.0) == approx(3.2e-5)
    hw[L.H_EXP_PER_S] = 0.0  # not stated: matmul-bound
    assert attention_compute_s(m, hw, 1000.0 * 4.0, 4000.0) == approx(3.2e-8)
    out = np.zeros(L.N_BREAKDOWN)
    hw[L.H_EXP_PER_S] = 1e9
    decode_breakdown(m, hw, 1.0, 1.0, 0.0, 1.0, 1000.0, 1000.0, 1.0, 1.0, out)
    assert out[L.B_ROOFLINE_S] == approx(1.3e-4 + 3.2e-5)


def test_attention_fixed_cost_per_stream():
    # 0.1 us a stream a layer (MODEL.md 2.8): DENSE on tp 2, 8 streams, every chip handles all 8 (its heads of
    # each) in 4 layers: 3.2e-6 s; MOE under data-parallel attention on tp 2: each chip 4 of them in 2 layers, 8e-7
    hw = HW.copy()
    hw[L.H_ATTN_STREAM_S] = 1e-7
    assert stream_fixed_time(DENSE, hw, 2.0, 0.0, 4.0, 8.0) == approx(3.2e-6)
    m = MOE.copy()
    m[L.M_ATTN_KERNELS] = 5.0
    assert stream_fixed_time(m, hw, 2.0, 1.0, 2.0, 8.0) == approx(8e-7)
    assert stream_fixed_time(MOE, hw, 2.0, 1.0, 2.0, 8.0) == 0.0  # a part without attention kernels (an FFN pool)
    base, out = np.zeros(L.N_BREAKDOWN), np.zeros(L.N_BREAKDOWN)
    decode_breakdown(DENSE, HW, 2.0, 1.0, 0.0, 8.0, 1000.0, 2000.0, 1.0, 1.0, base)
    decode_breakdown(DENSE, hw, 2.0, 1.0, 0.0, 8.0, 1000.0, 2000.0, 1.0, 1.0, out)
    assert out[L.B_FLOOR_S] - base[L.B_FLOOR_S] == approx(3.2e-6)


def test_matmul_groups_of_data_parallel_attention_and_experts():
    # MOE on tp 2 under data-parallel attention, 4 tokens, 1 byte a weight read at 1 s per byte (a_w = 1):
    #   split over tp: shared 2 x 50 + head 20 = 120 weights / 2 = 60 B -> 60 s; 2 * (100 * 4 + 20 * 4) / 2 = 480
    #     FLOPs at 5e14 -> 9.6e-13 s
    #   replicated attention: 2 layers x 10 = 20 B -> 20 s; 2 * 20 * 4 / 2 = 80 FLOPs
    #   routed experts: 200 / 2 = 100 weights an expert's share, times the busiest group's touched experts (read)
    #   and assignments (matmul rows), at half the dense rate
    hw = HW.copy()
    hw[L.H_GROUPED_GEMM_FACTOR] = 0.5
    groups = expert_groups(MOE, 2.0, 1.0)
    touched = busiest_touched(experts_touched(MOE, 4.0), 8.0, groups)
    rows = busiest_assignments(8.0, groups)
    memory, compute, roofline = linear_step_terms(MOE, hw, 2.0, 1.0, 1.0, 4.0, 4.0, 1.0)
    assert memory == approx(60.0 + 20.0 + 100.0 * touched)
    assert compute == approx((480.0 + 80.0 + 2.0 * 100.0 * rows / 0.5) / 5e14)
    assert roofline == approx(memory)  # every group memory-bound at a second a byte
    # under tensor parallelism attention joins the split weights: (120 + 20) / 2 = 70 B
    memory, _, _ = linear_step_terms(MOE, hw, 2.0, 1.0, 0.0, 4.0, 4.0, 1.0)
    assert memory == approx(70.0 + 100.0 * experts_touched(MOE, 4.0))


def test_tier_coefficients_are_seconds_per_byte_read():
    # TWO_TIER (below): weights 2e9 B, KV 1e9 B. SRAM's 0.5 GB room holds a quarter of the weights, HBM the rest
    # and all the KV: a weight byte 1/4 at 50 TB/s and 3/4 at 0.5 TB/s, a KV byte at 0.5 TB/s
    a_w, a_kv = tier_coefficients(TWO_TIER, 2e9, 1e9)
    assert a_w == approx(0.25 / 5e13 + 0.75 / 5e11)
    assert a_kv == approx(1.0 / 5e11)


def test_scheduler_bound_on_streams_per_rank():
    # at most 3 streams per rank (MODEL.md 3.5): 4 streams on one tensor-parallel replica of 2 chips (one
    # scheduler) do not fit; under data-parallel attention each of the 2 chips schedules 3, so 4 do
    hw = HW.copy()
    hw[L.H_MAX_STREAMS_PER_RANK] = 3.0
    out = np.zeros(L.N_BREAKDOWN)
    decode_breakdown(DENSE, hw, 2.0, 1.0, 0.0, 3.0, 1000.0, 2000.0, 1.0, 1.0, out)
    assert out[L.B_FITS] == 1.0
    decode_breakdown(DENSE, hw, 2.0, 1.0, 0.0, 4.0, 1000.0, 2000.0, 1.0, 1.0, out)
    assert out[L.B_FITS] == 0.0
    decode_breakdown(MOE, hw, 2.0, 1.0, 1.0, 4.0, 1000.0, 2000.0, 1.0, 1.0, out)
    assert out[L.B_FITS] == 1.0
    assert stream_cap(hw, 2.0, 1.0, 1.0) == 6.0 and stream_cap(hw, 2.0, 1.0, 0.0) == 3.0
    # each of 2 pipeline stages schedules its own micro-batch of 3: 6 streams fit, 7 do not
    decode_breakdown(DENSE, hw, 2.0, 2.0, 0.0, 6.0, 1000.0, 2000.0, 1.0, 1.0, out)
    assert out[L.B_FITS] == 1.0
    decode_breakdown(DENSE, hw, 2.0, 2.0, 0.0, 7.0, 1000.0, 2000.0, 1.0, 1.0, out)
    assert out[L.B_FITS] == 0.0


def test_speculative_per_stream_work():
    # a drafter with no weights or kernels costs nothing but the stack's per-stream work each verify step:
    # 4 streams, pp 2 (2 micro-batches of 2), 10 us a stream: 2 x (2 draft steps x 0 + 2 x 1e-5) = 4e-5 s
    hw = HW.copy()
    hw[L.H_SPEC_STREAM_S] = 1e-5
    out, plain, scratch = np.zeros(L.N_BREAKDOWN), np.zeros(L.N_BREAKDOWN), np.zeros(L.N_BREAKDOWN)
    speculative_decode_breakdown(DENSE, np.zeros(L.N_MODEL), hw, 2.0, 2.0, 0.0, 4.0, 1000.0, 2000.0, 2.0, 2.5,
                                 scratch, out)
    decode_breakdown(DENSE, hw, 2.0, 2.0, 0.0, 4.0, 1000.0, 2000.0, 3.0, 2.5, plain)
    assert out[L.B_DRAFT_S] == approx(4e-5)
    assert out[L.B_TIME_S] == approx(plain[L.B_TIME_S] + 4e-5)


def test_decode_does_not_fit():
    # tp 1, usable 1e11 * 0.5 = 5e10 B. 4000 streams at 2000 tokens: KV 4000 * 2000 * 500 * 4 layers = 1.6e10 B,
    # plus 66e6 B of weights, fits. 20000 streams: KV 8e10 B > 5e10 B, does not.
    out = np.zeros(L.N_BREAKDOWN)
    decode_breakdown(DENSE, HW, 1.0, 1.0, 0.0, 4000.0, 1000.0, 2000.0, 1.0, 1.0, out)
    assert out[L.B_FITS] == 1.0
    decode_breakdown(DENSE, HW, 1.0, 1.0, 0.0, 20000.0, 1000.0, 2000.0, 1.0, 1.0, out)
    assert out[L.B_FITS] == 0.0


# ---- 4 prefill ----------------------------------------------------------------------------------------------
def test_prefill_breakdown():
    # one prompt of 1000 tokens, tp 2, pp 1.
    out = np.full(L.N_BREAKDOWN, np.nan)
    prefill_breakdown(DENSE, HW, 2.0, 1.0, 0.0, 1000.0, out)
    # weights read 32.5e6 B; KV written 1 * 1000 * 500 * 4 / 2 = 1e6 B: memory 33.5e6 / 5e11 = 6.7e-5 s
    # FLOPs: only the last prompt token goes through the LM head (1e6):
    #   linear 2 * (1000 * (65e6 - 1e6) + 1e6) / 2 = 64e9 + 1e6 = 64.001e9;
    #   causal attention 1000 * 500 pairs * 6000 (prefill slot) * 4 layers / 2 = 6e9 -> 70.001e9;
    #   compute 70.001e9 / 5e14 = 1.40002e-4 s
    # comm: message 1000 * 1000 * 2 = 2e6 B; all-reduce 2e-6 + 2e6 / 1e11 = 2.2e-5; 8 of them 1.76e-4 s
    # floor 4e-5; TTFT = 1.40002e-4 + 1.76e-4 + 4e-5 = 3.56002e-4 s (pp 1: no hop to drop);
    # prompt rate 1000 / 3.56002e-4 tok/s
    assert out[L.B_MEMORY_S] == approx(6.7e-5)
    assert out[L.B_FLOPS_PER_CHIP] == approx(70.001e9)
    assert out[L.B_COMPUTE_S] == approx(1.40002e-4)
    assert out[L.B_ROOFLINE_S] == approx(1.40002e-4)
    assert out[L.B_COMM_S] == approx(1.76e-4)
    assert out[L.B_FLOOR_S] == approx(4e-5)
    assert out[L.B_TIME_S] == approx(3.56002e-4)
    assert out[L.B_TOKENS_PER_S] == approx(1000.0 / 3.56002e-4)
    assert out[L.B_TPS_PER_USER] == 0.0
    assert out[L.B_KV_BYTES_PER_CHIP] == approx(1e6)
    assert out[L.B_WEIGHT_BYTES_PER_CHIP] == approx(33e6)
    assert out[L.B_BYTES_READ_PER_CHIP] == approx(33.5e6)
    assert out[L.B_FITS] == 1.0
    assert L.BOUND_NAMES[int(out[L.B_BOUND])] == "communication"


def test_a_prompt_pass_pays_its_own_kernel_latency():
    # test_prefill_breakdown's replica with a prompt pass's kernels at 5 us instead of 2 us (launched one by one,
    # MODEL.md 2.8): its floor 4 layers x 5 kernels x 5 us = 1e-4 s (from 4e-5), TTFT 3.56002e-4 + 6e-5; a decode
    # step's floor is unchanged
    hw = HW.copy()
    hw[L.H_PREFILL_KERNEL_S] = 5e-6
    out = np.full(L.N_BREAKDOWN, np.nan)
    prefill_breakdown(DENSE, hw, 2.0, 1.0, 0.0, 1000.0, out)
    assert out[L.B_FLOOR_S] == approx(1e-4)
    assert out[L.B_TIME_S] == approx(3.56002e-4 + 6e-5)
    plain, slow = np.full(L.N_BREAKDOWN, np.nan), np.full(L.N_BREAKDOWN, np.nan)
    decode_breakdown(DENSE, HW, 2.0, 1.0, 0.0, 8.0, 1000.0, 1000.0, 1.0, 1.0, plain)
    decode_breakdown(DENSE, hw, 2.0, 1.0, 0.0, 8.0, 1000.0, 1000.0, 1.0, 1.0, slow)
    assert slow[L.B_FLOOR_S] == plain[L.B_FLOOR_S]


def test_batch_prefill_of_prompts_arriving_together():
    # test_prefill_breakdown's replica, 4 prompts of 1000 tokens in one pass (MODEL.md 4.3):
    # weights read once 32.5e6 B; KV written 4 * 1e6 = 4e6 B: memory 36.5e6 / 5e11 = 7.3e-5 s
    # linear 2 * (4000 * 64e6 + 4 * 1e6) / 2 = 256.004e9 (one LM-head row per prompt);
    # attention: each prompt attends to itself, 4 * 6e9 = 24e9 -> 280.004e9 FLOPs; compute 5.60008e-4 s
    # comm: message 4000 * 1000 * 2 = 8e6 B; all-reduce 2e-6 + 8e6 / 1e11 = 8.2e-5; 8 of them 6.56e-4 s
    # floor 4e-5 (paid once); the last first token at 5.60008e-4 + 6.56e-4 + 4e-5 = 1.256008e-3 s
    out = np.zeros(L.N_BREAKDOWN)
    batch_prefill_breakdown(DENSE, HW, 2.0, 1.0, 0.0, 1000.0, 4.0, out)
    assert out[L.B_MEMORY_S] == approx(7.3e-5)
    assert out[L.B_FLOPS_PER_CHIP] == approx(280.004e9)
    assert out[L.B_COMM_S] == approx(6.56e-4)
    assert out[L.B_TIME_S] == approx(1.256008e-3)
    assert out[L.B_TOKENS_PER_S] == approx(4000.0 / 1.256008e-3)
    # under four lone prompts one after another (3.56002e-4 s each), over one
    one = np.zeros(L.N_BREAKDOWN)
    prefill_breakdown(DENSE, HW, 2.0, 1.0, 0.0, 1000.0, one)
    assert one[L.B_TIME_S] < out[L.B_TIME_S] < 4.0 * one[L.B_TIME_S]


def test_prefill_rate_batches_prompts_to_the_token_budget():
    # a budget of 4,000 prompt tokens a pass takes 4 prompts of 1000 (MODEL.md 4.2): the lone prompt's TTFT is
    # unchanged (3.56002e-4 s, test_prefill_breakdown), the rate is the 4-prompt pass's
    # (test_batch_prefill_of_prompts_arriving_together: 4000 / 1.256008e-3)
    hw = HW.copy()
    hw[L.H_PREFILL_TOKENS_PER_PASS] = 4000.0
    out = np.zeros(L.N_BREAKDOWN)
    prefill_breakdown(DENSE, hw, 2.0, 1.0, 0.0, 1000.0, out)
    assert out[L.B_TIME_S] == approx(3.56002e-4)
    assert out[L.B_TOKENS_PER_S] == approx(4000.0 / 1.256008e-3)
    assert prompts_per_pass(hw, 1000.0) == 4.0 and prompts_per_pass(hw, 3000.0) == 1.0
    assert prompts_per_pass(hw, 5000.0) == 1.0  # a prompt longer than the budget still takes a pass


def test_prefill_lm_head_only_for_the_last_token():
    # a 1-token prompt multiplies through the LM head once, like decode: 2 * 65e6 / 2 = 65e6 linear FLOPs
    # + attention 1 * 0.5 * 6000 * 4 / 2 = 6000 -> 65,006,000
    out = np.zeros(L.N_BREAKDOWN)
    prefill_breakdown(DENSE, HW, 2.0, 1.0, 0.0, 1.0, out)
    assert out[L.B_FLOPS_PER_CHIP] == approx(65_006_000.0)
    # 10 tokens: 2 * (10 * 64e6 + 1e6) / 2 = 641e6 (not 10 * 65e6 = 650e6) + 10 * 5 * 6000 * 4 / 2 = 600,000
    prefill_breakdown(DENSE, HW, 2.0, 1.0, 0.0, 10.0, out)
    assert out[L.B_FLOPS_PER_CHIP] == approx(641_600_000.0)


def test_prefill_attention_flops_at_the_attention_peak():
    # test_prefill_breakdown with attention at 2.5e14 FLOP/s: (64.001e9 / 1e15 + 6e9 / 2.5e14) / 0.5
    #   = (6.4001e-5 + 2.4e-5) / 0.5 = 1.76002e-4 s
    hw = HW.copy()
    hw[L.H_ATTN_PEAK_FLOPS] = 2.5e14
    out = np.zeros(L.N_BREAKDOWN)
    prefill_breakdown(DENSE, hw, 2.0, 1.0, 0.0, 1000.0, out)
    assert out[L.B_COMPUTE_S] == approx(1.76002e-4)


def test_prefill_two_stages_ttft_and_rate():
    # tp 2, pp 2, 1000 tokens: the largest stage holds half the model, its LM-head share 0.5e6 included.
    out = np.zeros(L.N_BREAKDOWN)
    prefill_breakdown(DENSE, HW, 2.0, 2.0, 0.0, 1000.0, out)
    # memory: (16.25e6 weights read + KV 1000 * 500 * 2 / 2 = 0.5e6) / 5e11 = 3.35e-5
    # FLOPs: linear 2 * (1000 * (32.5e6 - 0.5e6) + 0.5e6) / 2 = 32.0005e9 + attention 1000 * 500 * 6000 * 2 / 2
    #   = 3e9 -> 35.0005e9; / 5e14 = 7.0001e-5
    # comm: 4 all-reduces * 2.2e-5 = 8.8e-5 + hop 1e-6 + 2e6 / 1e11 = 2.1e-5 -> 1.09e-4
    # floor 2e-5; stage 7.0001e-5 + 1.09e-4 + 2e-5 = 1.99001e-4;
    # TTFT 2 stages less the hop after the last: 3.98002e-4 - 2.1e-5 = 3.77002e-4; comm 2.18e-4 - 2.1e-5 = 1.97e-4
    # rate 1000 / 1.99001e-4 tok/s (stages pipelined over prompts)
    assert out[L.B_MEMORY_S] == approx(2 * 3.35e-5)
    assert out[L.B_FLOPS_PER_CHIP] == approx(35.0005e9)
    assert out[L.B_COMPUTE_S] == approx(2 * 7.0001e-5)
    assert out[L.B_COMM_S] == approx(1.97e-4)
    assert out[L.B_FLOOR_S] == approx(4e-5)
    assert out[L.B_TIME_S] == approx(3.77002e-4)
    assert out[L.B_TOKENS_PER_S] == approx(1000.0 / 1.99001e-4)


# ---- planner.perf helpers ----------------------------------------------------------------------------
def test_spec_tokens():
    # no drafting: one query token, one token out
    assert spec_tokens(0, 0.7) == (1.0, 1.0)
    # 3 drafts at 0.5: 4 query tokens; accepted 1 + 0.5 + 0.25 + 0.125 = (1 - 0.5^4) / (1 - 0.5) = 1.875
    q, a = spec_tokens(3, 0.5)
    assert (q, a) == (4.0, approx(1.875))
    # every draft accepted: d + 1
    assert spec_tokens(3, 1.0) == (4.0, 4.0)
    # none accepted: only the verified token
    assert spec_tokens(3, 0.0) == (4.0, approx(1.0))


def test_colocated_request_s():
    from solvers.perf.serving import colocated_request_s

    # 10 streams keeping 1 token per 10 ms interval decode 1000 tok/s; prefill 10000 tok/s; 1000 in / 500 out:
    # each request takes 500 / 1000 + 1000 / 10000 = 0.6 s of the replica; 500 / 0.6 = 833.33 output tok/s
    assert colocated_request_s(500.0, 0.01, 10.0, 1.0, 1000.0 / 10000.0) == approx(0.6)
    assert 500.0 / colocated_request_s(500.0, 0.01, 10.0, 1.0, 0.1) == approx(500.0 / 0.6)
    # speculation: 2 tokens accepted per interval halve the decode share
    assert colocated_request_s(500.0, 0.01, 10.0, 2.0, 0.1) == approx(0.35)


def test_pareto_mask():
    x = np.array([1.0, 2.0, 3.0, 2.0, 1.0, 0.5])
    y = np.array([5.0, 4.0, 1.0, 3.0, 5.0, 5.0])
    # by x descending: (3, 1) kept; (2, 4) kept; (2, 3) dominated by (2, 4); (1, 5) kept (first of the two equal
    # points); its duplicate dropped; (0.5, 5) dominated by (1, 5)
    assert pareto_mask(x, y).tolist() == [True, True, True, False, False, False]


def test_tier_of():
    assert tier_of(99.9) == "below-standard"
    assert tier_of(100.0) == "standard"
    assert tier_of(399.0) == "high"
    assert tier_of(400.0) == "premium"
    assert tier_of(1000.0) == "ultra"
    assert tier_of(5000.0) == "ultra"


# ---- catalog ------------------------------------------------------------------------------------------------
def test_llama_3_1_70b_attention_by_hand():
    m = get_model("llama-3.1-70b")
    # hidden 8192, 64 heads, 8 KV heads, head_dim 128, no bias:
    # q 8192 * 64 * 128 = 67,108,864; k and v 2 * 8192 * 8 * 128 = 16,777,216; o 64 * 128 * 8192 = 67,108,864
    assert m.attention_params_per_layer == 67_108_864 + 16_777_216 + 67_108_864 == 150_994_944
    # QK^T and AV: 2 FLOPs per MAC * 64 heads * (128 + 128) = 32,768 per query token per cached token per layer
    assert m.attention_flops_per_token_per_context == 2 * 64 * 2 * 128 == 32_768
    assert m.prefill_attention_flops_per_token_per_context == 32_768
    # KV elements: K and V of 8 heads of 128 = 2048 per token per layer
    assert m.kv_elements_per_token_per_layer == 2048
    # FFN 3 * 8192 * 28672 = 704,643,072; 80 layers of 855,638,016 = 68,451,041,280;
    # embeddings 2 * 128256 * 8192 = 2,101,346,304 -> total 70,552,387,584
    assert m.dense_ffn_params_per_layer == 704_643_072
    assert m.total_params == 70_552_387_584


def test_deepseek_v3_mla_by_hand():
    m = get_model("deepseek-v3")
    # q: 7168 * 1536 + 1536 * 128 * 192 = 11,010,048 + 37,748,736 = 48,758,784
    # kv: 7168 * (512 + 64) + 512 * 128 * (128 + 128) = 4,128,768 + 16,777,216 = 20,905,984
    # o: 128 * 128 * 7168 = 117,440,512; sum 187,105,280
    assert m.attention_params_per_layer == 187_105_280
    # latent KV: 512 + 64 = 576 elements per token per layer
    assert m.kv_elements_per_token_per_layer == 576
    # decode (absorbed): 2 * 128 * (2 * 512 + 64) = 278,528; prefill (un-absorbed): 2 * 128 * (192 + 128) = 81,920
    assert m.attention_flops_per_token_per_context == 278_528
    assert m.prefill_attention_flops_per_token_per_context == 81_920


# ---- MODEL.md 6: per-user speed on the frontier -----------------------------------------------------------------
def test_frontier_per_user_speed_shares_the_replica_with_prefill():
    # sweep_points scales decode per-user speed by R_col / R_dec; without speculation R_dec = B * tps_dec, so the
    # frontier's per-user speed is R_col / B: the colocated replica throughput shared by its B streams.
    from planner.catalog import get_hardware
    from planner.perf.frontier import sweep_points

    s = sweep_points(get_model("llama-3.1-70b"), get_hardware("vr-nvl72"), "fp8", 1000, 1000, chips=8,
                     batches=np.array([16.0, 64.0]))
    assert len(s["tp"]) > 0
    np.testing.assert_allclose(s["tps_per_user"], s["output_tokens_per_s"] / s["batch"], rtol=1e-12)
    assert (s["tps_per_user"] < s["decode_tps_per_user"]).all()


# ---- MODEL.md 8: the worked example, with the hardware and efficiencies written out ----------------------------
# nvidia-gpu efficiencies as fitted (data/efficiency.yaml when MODEL.md 8 was written; the step overhead sits at its
# lower bound 1 us, MODEL.md 5.3).
ETA_BW, ETA_F, KERNEL, STEP, COLL_LAT, USABLE = 0.8002, 0.4206, 5.372e-6, 1.0e-6, 9.696e-6, 0.9
FLOOR = 80 * 9 * KERNEL + STEP  # llama-3.1-70b: 80 layers of 9 kernels (5 attention, 4 FFN), one step overhead


def test_worked_example_llama_70b_vr_nvl72_fp8():
    # vr-nvl72 at fp8 as in docs/MODEL.md 8: one HBM tier of 288 GB at 22 TB/s, 17.5 PFLOP/s fp8 (attention too: fp8
    # KV), NVLink 1.8 TB/s per direction in a 72-chip domain, 72 chips in a 190 kW rack. tp 8, pp 1, ep 0, batch 64,
    # 1000 in / 1000 out: average context 1500, longest 2000.
    hw = hardware(
        tiers=((288e9, 22e12),), peak_flops=17.5e15, attn_peak_flops=17.5e15, weight_bytes=1.0, kv_bytes=1.0,
        act_bytes=2.0, su_domain=72, su_bw=1.8e12, su_lat=1e-6, so_bw=200e9, so_lat=5e-6, chips_per_rack=72,
        rack_power_w=190e3, bw_eff=ETA_BW, flops_eff=ETA_F, kernel_s=KERNEL, step_s=STEP, coll_lat_s=COLL_LAT,
        mem_usable=USABLE,
    )
    mem_rate = 22e12 * ETA_BW  # 17.6044e12 B/s
    flop_rate = 17.5e15 * ETA_F  # 7.3605e15 FLOP/s
    mv = model_vector(get_model("llama-3.1-70b"))
    assert mv[L.M_KV_HEADS] == 8
    dec = np.zeros(L.N_BREAKDOWN)
    decode_breakdown(mv, hw, 8.0, 1.0, 0.0, 64.0, 1500.0, 2000.0, 1.0, 1.0, dec)
    # LM head 128,256 * 8192 = 1,050,673,152 (the input embedding the same); 80 layers of 855,638,016 =
    # 68,451,041,280. pp 1, tensor parallel: everything / 8.
    # held (68,451,041,280 + 2 * 1,050,673,152) / 8 = 70,552,387,584 / 8 = 8,819,048,448 B;
    # read (LM head, not input embedding) 69,501,714,432 / 8 = 8,687,714,304 B
    assert dec[L.B_WEIGHT_BYTES_PER_CHIP] == approx(8_819_048_448)
    # KV per token 2048 * 80 = 163,840 B, split over min(tp 8, 8 KV heads) = 8 chips;
    # held 64 * 2000 * 163,840 / 8 = 2,621,440,000 B; read 64 * 1500 * 163,840 / 8 = 1,966,080,000 B
    assert dec[L.B_KV_BYTES_PER_CHIP] == approx(2_621_440_000)
    assert dec[L.B_USABLE_BYTES_PER_CHIP] == approx(259.2e9)
    assert dec[L.B_BYTES_READ_PER_CHIP] == approx(8_687_714_304 + 1_966_080_000)
    # memory 10,653,794,304 / 17.6044e12 = 605.178 us
    assert dec[L.B_MEMORY_S] == approx(10_653_794_304 / mem_rate)
    assert dec[L.B_MEMORY_S] == pytest.approx(605.178e-6, rel=1e-5)
    # FLOPs: linear 2 * 64 * 69,501,714,432 / 8 = 1,112,027,430,912; attention 64 * 1500 * 32768 * 80 / 8 =
    # 31,457,280,000; both at the fp8 peak: 1,143,484,710,912 / 7.3605e15 = 155.354 us
    assert dec[L.B_FLOPS_PER_CHIP] == approx(1_143_484_710_912)
    assert dec[L.B_COMPUTE_S] == approx(1_143_484_710_912 / flop_rate)
    assert dec[L.B_COMPUTE_S] == pytest.approx(155.354e-6, rel=1e-5)
    # all-reduce of 64 * 8192 * 2 = 1,048,576 B: 9.696e-6 + 1.75 * 1,048,576 / 1.8e12 = 10.7154 us;
    # 2 per layer * 80 = 160 of them = 1714.47 us
    ar = COLL_LAT + 1.75 * 1_048_576 / 1.8e12
    assert dec[L.B_COMM_S] == approx(160 * ar)
    assert dec[L.B_COMM_S] == pytest.approx(1714.47e-6, rel=1e-5)
    # floor 720 kernels * 5.372 us + 1 us step overhead = 3868.84 us
    assert dec[L.B_FLOOR_S] == approx(FLOOR)
    assert dec[L.B_FLOOR_S] == pytest.approx(3868.84e-6, rel=1e-6)
    # step 605.178 + 1714.47 + 3868.84 = 6188.49 us; 1 / step = 161.590 tok/s per user; * 64 = 10,341.8 tok/s
    step = 10_653_794_304 / mem_rate + 160 * ar + FLOOR
    assert dec[L.B_TIME_S] == approx(step)
    assert dec[L.B_TIME_S] == pytest.approx(6.18849e-3, rel=1e-5)
    assert dec[L.B_TPS_PER_USER] == pytest.approx(161.590, rel=1e-5)
    assert dec[L.B_TOKENS_PER_S] == pytest.approx(10341.8, rel=1e-5)
    assert dec[L.B_POWER_W] == approx(8 * 190e3 / 72)
    assert L.BOUND_NAMES[int(dec[L.B_BOUND])] == "floor"

    pre = np.zeros(L.N_BREAKDOWN)
    prefill_breakdown(mv, hw, 8.0, 1.0, 0.0, 1000.0, pre)
    # memory (8,687,714,304 + 1000 * 163,840 / 8 = 20,480,000) / 17.6044e12 = 494.660 us;
    # FLOPs: linear, LM head for the last token only, 2 * (1000 * 68,451,041,280 + 1,050,673,152) / 8
    #   = 17,113,022,988,288; attention 1000 * 500 * 32768 * 80 / 8 = 163,840,000,000 -> 17,276,862,988,288;
    #   / 7.3605e15 = 2347.24 us (compute-bound roofline)
    # all-reduce of 16,384,000 B: 9.696e-6 + 1.75 * 16,384,000 / 1.8e12 = 25.6249 us, 160 of them = 4099.98 us
    # TTFT (pp 1: no last hop to drop) 2347.24 + 4099.98 + 3868.84 = 10316.06 us; prompt rate 1000 / TTFT
    #   = 96,936.2 tok/s
    assert pre[L.B_MEMORY_S] == approx(8_708_194_304 / mem_rate)
    assert pre[L.B_MEMORY_S] == pytest.approx(494.660e-6, rel=1e-5)
    assert pre[L.B_FLOPS_PER_CHIP] == approx(17_276_862_988_288)
    assert pre[L.B_COMPUTE_S] == pytest.approx(2347.24e-6, rel=1e-5)
    ar_p = COLL_LAT + 1.75 * 16_384_000 / 1.8e12
    assert pre[L.B_COMM_S] == approx(160 * ar_p)
    ttft = 17_276_862_988_288 / flop_rate + 160 * ar_p + FLOOR
    assert pre[L.B_TIME_S] == approx(ttft)
    assert pre[L.B_TIME_S] == pytest.approx(10.31606e-3, rel=1e-5)
    assert pre[L.B_TOKENS_PER_S] == pytest.approx(96936.2, rel=1e-5)
    assert L.BOUND_NAMES[int(pre[L.B_BOUND])] == "communication"
    # colocated: 1000 / (1000 / 10,341.8 + 1000 / 96,936.2) = 9,344.81 tok/s; per user / 64 = 146.013
    from solvers.perf.serving import colocated_request_s

    colocated = 1000 / colocated_request_s(1000.0, dec[L.B_TIME_S], 64.0, 1.0, 1000 / pre[L.B_TOKENS_PER_S])
    assert colocated == pytest.approx(9344.81, rel=1e-5)
    assert colocated / 64 == pytest.approx(146.013, rel=1e-4)


def test_busiest_expert_group_by_hand():
    """MODEL.md 2.3: the busiest of R groups under uniform routing, mean + z_R sd, capped."""
    from solvers.perf.kernels import busiest_assignments, busiest_touched, expected_max_normal, expert_groups

    # z_R, the expected maximum of R standard normals: exact 0.5642, 1.4236, 2.7888 (R = 2, 8, 256)
    for r, exact in ((2.0, 0.5642), (8.0, 1.4236), (256.0, 2.7888)):
        assert expected_max_normal(r) == pytest.approx(exact, rel=0.045)
    assert expected_max_normal(1.0) == 0.0
    # 8 assignments (one token, k = 8) over 8 groups: mean 1, variance 7/8 -> 8 x (1 + 1.4348 x 0.9354) = 18.74
    assert busiest_assignments(8.0, 8.0) == pytest.approx(18.737, abs=1e-3)
    assert busiest_assignments(3.0, 1.0) == 3.0  # one group: nothing to unbalance
    # one assignment over 2 groups: 0.5 + 0.5874 x 0.5 = 0.79, raised to the one whole assignment that lands: 2 x 1
    assert busiest_assignments(1.0, 2.0) == pytest.approx(2.0)
    assert busiest_assignments(2.0, 64.0) == pytest.approx(64.0)  # 2 over 64 groups: the busiest has 1 (0.44 raw)
    assert busiest_assignments(1.0e6, 8.0) / 1.0e6 == pytest.approx(1.0, abs=0.01)  # large batches even out
    # 64 of 256 experts touched, 8 groups of 32: mean 8, variance 8 x 3/4 = 6 -> 8 x (8 + 1.4348 x 2.449) = 92.12
    assert busiest_touched(64.0, 256.0, 8.0) == pytest.approx(92.116, abs=1e-2)
    assert busiest_touched(256.0, 256.0, 8.0) == approx(256.0)  # all touched: every group full
    # 2 of 256 touched: mean 0.25 a group, variance 0.248 -> 0.25 + 1.4348 x 0.498 = 0.965, raised to the one
    # expert the busiest group touches: 8 x 1
    assert busiest_touched(2.0, 256.0, 8.0) == pytest.approx(8.0)
    m = np.zeros(L.N_MODEL)
    m[L.M_EXPERTS] = 384.0
    assert expert_groups(m, 8.0, 1.0) == 8.0 and expert_groups(m, 512.0, 1.0) == 384.0
    assert expert_groups(m, 8.0, 0.0) == 1.0


def test_estimate_chooses_the_layout_of_the_shortest_request():
    """With --chips, estimate takes the layout on which one request is shortest, prefill and decode together: a
    long prompt with a short answer the layout that prefills fastest, never one whose TTFT plus decoding is longer
    (issue 22 item 3: the layout chosen for TTFT and decode together)."""
    from planner import catalog
    from planner.perf.estimate import estimate, evaluate_config
    from planner.perf.grid import parallel_grid

    # DeepSeek-R1 at fp4 on 8 Rubin GPUs decodes fastest on 8 pipeline stages (no all-reduces at batch 1) but
    # prefills an 8,000-token prompt far slower there than on 8-way tensor parallelism
    m, hw = catalog.get_model("deepseek-r1"), catalog.get_hardware("vr-nvl72")
    for inp, out in ((8000, 16), (100, 2000)):
        chosen = estimate("deepseek-r1", "vr-nvl72", chips=8, precision="fp4", input_tokens=inp, output_tokens=out)
        latency = chosen.ttft_s + out / chosen.tps_per_user
        for tp, pp, ep in parallel_grid(hw, m, 8):
            dec, pre = evaluate_config(m, hw, "fp4", int(tp), int(pp), int(ep), 1, inp, out)
            if dec[L.B_FITS] > 0.5:
                assert latency <= pre[L.B_TIME_S] + out / dec[L.B_TPS_PER_USER] + 1e-12, (inp, out, tp, pp)
