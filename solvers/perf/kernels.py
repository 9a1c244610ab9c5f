"""The analytical performance model, jitted. Every formula is written out in docs/MODEL.md (section numbers below).

One replica = ``tp * pp`` chips: ``pp`` pipeline stages of ``tp`` chips each, balanced by bytes. The largest stage
sets the pace: it holds 1 / pp of the model (embeddings and LM head included), or the largest piece no stage can
split where that is more. ``ep`` = 0 splits every layer tensor-parallel over the ``tp``
chips; ``ep`` = 1 (MoE only) runs attention data-parallel (each chip its own streams, attention weights replicated)
and spreads the routed experts over the ``tp`` chips, with two all-to-alls per MoE layer.

Only arrays and scalars cross in; vectors are laid out as in ``solvers.perf.slots``. ``solvers.perf.twin`` is the
plain-Python twin that tests compare against on random inputs; ``solvers.perf.sweep`` applies these kernels to many
configurations at once, ``solvers.perf.serving`` holds the serving formulas built on them.
"""

from __future__ import annotations

import math

import numpy as np

from solvers.jit import njit
from solvers.perf.slots import (
    B_BOUND,
    B_BYTES_READ_PER_CHIP,
    B_COMM_S,
    B_COMPUTE_S,
    B_DRAFT_S,
    B_FITS,
    B_FLOOR_S,
    B_FLOPS_PER_CHIP,
    B_KV_BYTES_PER_CHIP,
    B_MEMORY_S,
    B_POWER_W,
    B_ROOFLINE_S,
    B_TIME_S,
    B_TOKENS_PER_S,
    B_TPS_PER_USER,
    B_USABLE_BYTES_PER_CHIP,
    B_WEIGHT_BYTES_PER_CHIP,
    H_ACT_BYTES,
    H_ATTN_PEAK_FLOPS,
    H_BW,
    H_BW_EFF,
    H_CAP,
    H_CHIPS_PER_RACK,
    H_COLL_LAT_S,
    H_COMPUTE_POWER_SHARE,
    H_FLOPS_EFF,
    H_ATTN_STREAM_S,
    H_EXP_PER_S,
    H_GROUPED_GEMM_FACTOR,
    H_IDLE_POWER_SHARE,
    H_MAX_STREAMS_PER_RANK,
    H_KV_BYTES,
    H_KERNEL_S,
    H_PREFILL_KERNEL_S,
    H_MEM_USABLE,
    H_MEMORY_POWER_SHARE,
    H_N_TIERS,
    H_PEAK_FLOPS,
    H_PREFILL_TOKENS_PER_PASS,
    H_RACK_POWER_W,
    H_SERVING_TIERS,
    H_STEP_S,
    H_SO_BW,
    H_SPEC_STREAM_S,
    H_SO_LAT,
    H_SU_BW,
    H_SU_DOMAIN,
    H_SU_LAT,
    H_WEIGHT_BYTES,
    M_ATTN_FLOPS,
    M_ATTN_HEADS,
    M_ATTN_KERNELS,
    M_ATTN_PARAMS,
    M_DENSE_FFN_KERNELS,
    M_DENSE_FFN_PARAMS,
    M_DENSE_LAYERS,
    M_EMBED_PARAMS,
    M_EXPERT_PARAMS,
    M_EXPERTS,
    M_EXPERTS_PER_TOKEN,
    M_HIDDEN,
    M_INDEX_ELEMS,
    M_INDEX_FLOPS,
    M_KV_ELEMS,
    M_KV_HEADS,
    M_LAYERS,
    M_LINEAR_FLOPS,
    M_LINEAR_LAYERS,
    M_LM_HEAD_PARAMS,
    M_PREFILL_ATTN_FLOPS,
    M_MOE_KERNELS,
    M_MOE_LAYERS,
    M_SAMPLES,
    M_SHARED_PARAMS,
    M_STATE_BYTES,
    M_STATE_HEADS,
    M_TOPK,
    M_WINDOW_LAYERS,
    M_WINDOW_TOKENS,
)


@njit
def stage_fraction(model, pp):
    """Share of the model that the largest of ``pp`` byte-balanced pipeline stages holds (MODEL.md 2.1): 1 / pp of
    the weights, embedding table and LM head included, but never less than the largest piece no stage can split
    (one decoder layer, or the embedding table or LM head)."""
    if pp <= 1.0:
        return 1.0
    dense_layer = model[M_ATTN_PARAMS] + model[M_DENSE_FFN_PARAMS]
    moe_layer = model[M_ATTN_PARAMS] + model[M_SHARED_PARAMS] + model[M_EXPERTS] * model[M_EXPERT_PARAMS]
    total = model[M_DENSE_LAYERS] * dense_layer + model[M_MOE_LAYERS] * moe_layer + model[M_EMBED_PARAMS]
    if total <= 0.0:
        return 1.0 / pp
    largest = max(model[M_LM_HEAD_PARAMS], model[M_EMBED_PARAMS] - model[M_LM_HEAD_PARAMS])
    if model[M_DENSE_LAYERS] > 0.0:
        largest = max(largest, dense_layer)
    if model[M_MOE_LAYERS] > 0.0:
        largest = max(largest, moe_layer)
    return min(1.0, max(1.0 / pp, largest / total))


@njit
def stage_layers(model, pp):
    """(layers, dense layers, MoE layers) of the largest pipeline stage, as shares of the model's (MODEL.md 2.1)."""
    f = stage_fraction(model, pp)
    return model[M_LAYERS] * f, model[M_DENSE_LAYERS] * f, model[M_MOE_LAYERS] * f


@njit
def experts_touched(model, tokens):
    """Distinct routed experts per MoE layer that ``tokens`` tokens touch, uniform routing (MODEL.md 2.3)."""
    e = model[M_EXPERTS]
    if e <= 0.0:
        return 0.0
    k = model[M_EXPERTS_PER_TOKEN]
    return e * (1.0 - (1.0 - k / e) ** tokens)


@njit
def expert_groups(model, tp, ep):
    """Groups of chips the routed experts are spread over: under expert parallelism R = min(tp, E) groups, each
    holding E / R whole experts (split further inside a group when tp > E); otherwise 1, since every chip then holds
    a slice of every expert and routing cannot unbalance them (MODEL.md 2.3)."""
    if ep > 0 and model[M_EXPERTS] > 0.0:
        return max(1.0, min(tp, model[M_EXPERTS]))
    return 1.0


@njit
def expected_max_normal(groups):
    """E[max of R independent standard normals]: Blom's plotting position p = (R - 0.375) / (R + 0.25) through
    Tukey's lambda approximation of the normal quantile, 4.91 (p^0.14 - (1 - p)^0.14); within 4% of the exact
    values (0.564 at R = 2, 1.424 at 8, 2.800 at 256). 0 for one group."""
    if groups <= 1.0:
        return 0.0
    p = (groups - 0.375) / (groups + 0.25)
    return 4.91 * (p**0.14 - (1.0 - p) ** 0.14)


@njit
def busiest_load(mean, variance, groups, cap):
    """Expected load of the busiest of ``groups`` groups whose loads have this mean and variance, independent:
    the normal approximation of their maximum, mean + E[max of R normals] sqrt(variance), at most ``cap`` and at
    least one whole unit where the cap allows (something lands somewhere: the approximation runs low for loads of a
    few units)."""
    if groups <= 1.0:
        return mean
    return min(cap, max(mean + expected_max_normal(groups) * math.sqrt(variance), min(1.0, cap)))


@njit
def busiest_touched(touched, experts, groups):
    """Routed experts one MoE layer's busiest group touches, times the group count (so ``/ tp`` is the busiest
    chip's share), when ``touched`` of ``experts`` are touched in all: a group of h = E / R experts touches
    m = h p of them on average (p = touched / E), with binomial variance m (1 - p), at most h and at most all
    ``touched``."""
    if groups <= 1.0 or experts <= 0.0:
        return touched
    p = touched / experts
    m = touched / groups
    return groups * busiest_load(m, m * (1.0 - p), groups, min(experts / groups, touched))


@njit
def busiest_assignments(assignments, groups):
    """Token-to-expert assignments of one MoE layer on its busiest group, times the group count (so ``/ tp`` is
    the busiest chip's expert matmul rows): ``assignments`` spread uniformly over R groups, multinomial, mean A / R
    and variance A / R (1 - 1 / R), at most A."""
    if groups <= 1.0:
        return assignments
    mu = assignments / groups
    return groups * busiest_load(mu, mu * (1.0 - 1.0 / groups), groups, assignments)


@njit
def routed_params_per_assignment(model, pp):
    """Routed-expert weights one token-to-expert assignment multiplies through in the largest stage: one expert
    per MoE layer."""
    _, _, moe = stage_layers(model, pp)
    return moe * model[M_EXPERT_PARAMS]


@njit
def linear_flops_per_chip(model, tp, pp, ep, tokens, head_tokens):
    """Matmul FLOPs of the busiest chip in one stage step over ``tokens`` tokens, ``head_tokens`` of which go
    through the LM head: everything but the routed experts split evenly over ``tp`` chips, the routed experts at
    the busiest expert group's load (MODEL.md 2.3)."""
    head = head_params_read(model, pp)
    routed = routed_params_per_assignment(model, pp)
    k = model[M_EXPERTS_PER_TOKEN]
    even = tokens * (active_params_per_stage(model, pp) - head - k * routed) + head_tokens * head
    busy = busiest_assignments(tokens * k, expert_groups(model, tp, ep))
    return 2.0 * (even + routed * busy) / tp


@njit
def linear_step_terms(model, hw, tp, pp, ep, tokens, head_tokens, a_w):
    """(memory s, compute s, roofline s) of one stage step's weight matmuls on the busiest chip (MODEL.md 2.6).

    Each kernel overlaps its own weight reads with its own arithmetic, but kernels run one after another, so the
    step pays each group of kernels its own roofline, max(reads, matmuls), and the groups add. Within a group every
    matmul has the same rows per weight, so one max per group is exact: the weights split over the ``tp`` chips
    (dense FFNs, shared experts, the LM head, and attention under tensor parallelism) with the step's tokens as
    rows (the head with ``head_tokens``); attention's weights, replicated under data-parallel attention, with each
    chip's own ``tokens / tp``; the routed experts at the busiest expert group's touched experts and assignments,
    whose grouped matmuls reach ``H_GROUPED_GEMM_FACTOR`` of the dense rate. ``a_w`` is seconds per weight byte
    read (``tier_coefficients``)."""
    ls, dense, moe = stage_layers(model, pp)
    wbytes = hw[H_WEIGHT_BYTES]
    rate = hw[H_PEAK_FLOPS] * hw[H_FLOPS_EFF]
    head = head_params_read(model, pp)
    attention = ls * model[M_ATTN_PARAMS]
    split = dense * model[M_DENSE_FFN_PARAMS] + moe * model[M_SHARED_PARAMS]
    replicated_mem = 0.0
    replicated_comp = 0.0
    if ep > 0:
        replicated_mem = attention * wbytes * a_w
        replicated_comp = 2.0 * attention * tokens / tp / rate
    else:
        split += attention
    split_mem = (split + head) / tp * wbytes * a_w
    split_comp = 2.0 * (split * tokens + head * head_tokens) / tp / rate
    groups = expert_groups(model, tp, ep)
    touched = busiest_touched(experts_touched(model, tokens), model[M_EXPERTS], groups)
    rows = busiest_assignments(tokens * model[M_EXPERTS_PER_TOKEN], groups)
    expert = moe * model[M_EXPERT_PARAMS] / tp
    expert_mem = expert * touched * wbytes * a_w
    expert_comp = 2.0 * expert * rows / (rate * hw[H_GROUPED_GEMM_FACTOR])
    memory = split_mem + replicated_mem + expert_mem
    compute = split_comp + replicated_comp + expert_comp
    roofline = max(split_mem, split_comp) + max(replicated_mem, replicated_comp) + max(expert_mem, expert_comp)
    return memory, compute, roofline


@njit
def attention_compute_s(model, hw, pairs, flops_per_pair):
    """Seconds of attention arithmetic for ``pairs`` (query token, cached token) pairs on one chip, every layer of
    the stage counted: the score and value matmuls at the attention peak, or the softmax's exponentials (one per
    query head per pair) on the special-function units where the chip states their rate, whichever is slower: the
    two pipelines overlap, so the slower one sets the pace (MODEL.md 2.6)."""
    t = pairs * flops_per_pair / (hw[H_ATTN_PEAK_FLOPS] * hw[H_FLOPS_EFF])
    if hw[H_EXP_PER_S] > 0.0:
        t = max(t, pairs * model[M_ATTN_HEADS] / hw[H_EXP_PER_S])
    return t


@njit
def stream_fixed_time(model, hw, tp, ep, layers_in_stage, streams):
    """Fixed seconds the attention kernels spend per stream, whatever its context (MODEL.md 2.8): each chip
    handles every stream of the micro-batch under tensor parallelism (its heads of each), 1 / tp of them under
    data-parallel attention; each stream costs ``H_ATTN_STREAM_S`` in every layer."""
    if model[M_ATTN_KERNELS] <= 0.0:  # a part without attention (an FFN pool, MODEL.md 10)
        return 0.0
    per_chip = streams / tp if ep > 0 else streams
    return per_chip * layers_in_stage * hw[H_ATTN_STREAM_S]


@njit
def stream_cap(hw, tp, pp, ep):
    """Streams one replica admits (MODEL.md 3.5): the stack's bound per rank, times the ranks that schedule their
    own streams: each pipeline stage's micro-batch, and under data-parallel attention every chip of a stage (one
    tensor-parallel group schedules one batch)."""
    return hw[H_MAX_STREAMS_PER_RANK] * pp * (tp if ep > 0 else 1.0)


@njit
def full_layer_share(model):
    """Share of the layers that attend over a cache of the whole context: neither sliding-window nor linear
    attention (MODEL.md 2.10)."""
    return 1.0 - model[M_WINDOW_LAYERS] / model[M_LAYERS] - model[M_LINEAR_LAYERS] / model[M_LAYERS]


@njit
def window_share(model, context):
    """Share of a ``context``-token context a sliding-window layer holds and reads: min(S, W) / S."""
    if model[M_WINDOW_LAYERS] > 0.0:
        return min(context, model[M_WINDOW_TOKENS]) / context
    return 0.0


@njit
def sparse_share(model, context):
    """Share of a full-attention layer's ``context``-token cache one query reads: all of it, or under sparse
    attention (DeepSeek's) its top k, min(S, k) / S (MODEL.md 2.10)."""
    if model[M_TOPK] > 0.0:
        return min(context, model[M_TOPK]) / context
    return 1.0


@njit
def context_layers(model, layers_in_stage, context):
    """Layer-equivalents of attention reads over ``context`` tokens: a full-attention layer reads all S tokens (a
    sparse one min(S, k)), a sliding-window layer min(S, W), a linear-attention layer none (its fixed state is
    priced apart, ``state_bytes_per_stream``)."""
    if context <= 0.0 or layers_in_stage <= 0.0:  # no context, or a model part with no layers (a bare drafter)
        return 0.0
    share_window = model[M_WINDOW_LAYERS] / model[M_LAYERS]
    return layers_in_stage * (full_layer_share(model) * sparse_share(model, context)
                              + share_window * window_share(model, context))


@njit
def cached_layers(model, layers_in_stage, context):
    """Layer-equivalents of the KV cache held at ``context`` tokens: a full-attention layer holds every token
    (a sparse one too: any may be among the next query's top k), a sliding-window layer min(S, W), a
    linear-attention layer none."""
    if context <= 0.0 or layers_in_stage <= 0.0:
        return 0.0
    share_window = model[M_WINDOW_LAYERS] / model[M_LAYERS]
    return layers_in_stage * (full_layer_share(model) + share_window * window_share(model, context))


@njit
def indexer_layers(model, layers_in_stage):
    """Full-attention layers of the stage that run a lightning indexer over the whole context (DeepSeek sparse
    attention; none without one)."""
    if model[M_INDEX_ELEMS] <= 0.0 or layers_in_stage <= 0.0:
        return 0.0
    return layers_in_stage * full_layer_share(model)


@njit
def linear_layers(model, layers_in_stage):
    """Linear-attention layers of the stage."""
    if model[M_LINEAR_LAYERS] <= 0.0 or layers_in_stage <= 0.0:
        return 0.0
    return layers_in_stage * model[M_LINEAR_LAYERS] / model[M_LAYERS]


@njit
def state_bytes_per_stream(model, layers_in_stage):
    """Fixed-size state one stream keeps in the stage's linear-attention layers, whatever its context."""
    return linear_layers(model, layers_in_stage) * model[M_STATE_BYTES]


@njit
def context_free_flops(model, layers_in_stage, tokens, context, tp):
    """Attention FLOPs per chip that no softmax pairs count (MODEL.md 2.10): the indexer scoring each of
    ``tokens`` query tokens against all ``context`` cached keys in every indexer layer, and each token's update
    and readout of the state in every linear-attention layer; heads (or streams) split over the ``tp`` chips."""
    index = context * indexer_layers(model, layers_in_stage) * model[M_INDEX_FLOPS]
    return tokens * (index + linear_layers(model, layers_in_stage) * model[M_LINEAR_FLOPS]) / tp


@njit
def context_free_compute_s(model, hw, layers_in_stage, tokens, context, tp):
    """Seconds of ``context_free_flops`` at the attention peak."""
    flops = context_free_flops(model, layers_in_stage, tokens, context, tp)
    if flops <= 0.0:  # a model with neither: nothing to add, whatever the hardware vector holds
        return 0.0
    return flops / (hw[H_ATTN_PEAK_FLOPS] * hw[H_FLOPS_EFF])


@njit
def attention_shards(tp, ep):
    """Chips that split the attention weights: all ``tp`` under tensor parallelism, none (replicated) under
    data-parallel attention (MODEL.md 2.2)."""
    return 1.0 if ep > 0 else tp


@njit
def kv_shards(model, tp, ep):
    """Chips that split one stream's KV cache: tensor parallelism splits it by KV head, so no further than the
    model's KV heads; data-parallel attention gives each chip whole streams, a 1/tp share (MODEL.md 2.4)."""
    if ep > 0:
        return tp
    return max(1.0, min(tp, model[M_KV_HEADS]))  # at least one chip holds a stream's cache (a part with no cache too)


@njit
def state_shards(model, tp, ep):
    """Chips that split one stream's linear-attention state: tensor parallelism splits it by head, no further
    than its heads; data-parallel attention gives each chip whole streams (MODEL.md 2.10)."""
    if ep > 0:
        return tp
    return max(1.0, min(tp, model[M_STATE_HEADS]))


@njit
def head_params_held(model, pp):
    """Embedding and LM head weights on the largest stage: its byte-balanced share of both."""
    return model[M_EMBED_PARAMS] * stage_fraction(model, pp)


@njit
def head_params_read(model, pp):
    """LM head weights the largest stage reads per token: its share of the head (the stages between them carry
    the whole head once)."""
    return model[M_LM_HEAD_PARAMS] * stage_fraction(model, pp)


@njit
def held_weight_params_per_chip(model, tp, pp, ep):
    """Weights one chip of the largest stage stores (MODEL.md 2.2)."""
    ls, dense, moe = stage_layers(model, pp)
    split = dense * model[M_DENSE_FFN_PARAMS] + moe * (
        model[M_SHARED_PARAMS] + model[M_EXPERTS] * model[M_EXPERT_PARAMS]
    ) + head_params_held(model, pp)
    return split / tp + ls * model[M_ATTN_PARAMS] / attention_shards(tp, ep)


@njit
def read_weight_params_per_chip(model, tp, pp, ep, tokens):
    """Weights the busiest chip reads in one stage step over ``tokens`` tokens (touched experts only, at the
    busiest expert group's count; LM head included)."""
    ls, dense, moe = stage_layers(model, pp)
    split = dense * model[M_DENSE_FFN_PARAMS] + moe * (
        model[M_SHARED_PARAMS]
        + busiest_touched(experts_touched(model, tokens), model[M_EXPERTS], expert_groups(model, tp, ep))
        * model[M_EXPERT_PARAMS]
    ) + head_params_read(model, pp)
    return split / tp + ls * model[M_ATTN_PARAMS] / attention_shards(tp, ep)


@njit
def active_params_per_stage(model, pp):
    """Weights each token multiplies through in the largest stage (for FLOPs), LM head included."""
    ls, dense, moe = stage_layers(model, pp)
    return (
        ls * model[M_ATTN_PARAMS]
        + dense * model[M_DENSE_FFN_PARAMS]
        + moe * (model[M_SHARED_PARAMS] + model[M_EXPERTS_PER_TOKEN] * model[M_EXPERT_PARAMS])
        + head_params_read(model, pp)
    )


@njit
def kv_bytes_per_token(model, kv_element_bytes, layers, context):
    """KV bytes one token adds over ``layers`` layers at a ``context``-token context: sliding-window layers count
    min(S, W) / S of a token, linear-attention layers none; a sparse-attention layer holds every token, and its
    indexer's key beside it (MODEL.md 2.4, 2.10)."""
    cache = model[M_KV_ELEMS] * kv_element_bytes * cached_layers(model, layers, context)
    return cache + model[M_INDEX_ELEMS] * kv_element_bytes * indexer_layers(model, layers)


@njit
def kv_read_bytes_per_token(model, kv_element_bytes, layers, context):
    """KV bytes a query reads per token of a ``context``-token context over ``layers`` layers: a sparse-attention
    layer reads min(S, k) / S of its cache and its indexer's keys whole (MODEL.md 2.10)."""
    cache = model[M_KV_ELEMS] * kv_element_bytes * context_layers(model, layers, context)
    return cache + model[M_INDEX_ELEMS] * kv_element_bytes * indexer_layers(model, layers)


@njit
def kv_bytes_per_chip(model, hw, tp, pp, ep, streams, context):
    """KV cache one chip holds for ``streams`` streams at ``context`` tokens, with the streams' linear-attention
    states (MODEL.md 2.4, 2.10)."""
    ls, _, _ = stage_layers(model, pp)
    cache = streams * context * kv_bytes_per_token(model, hw[H_KV_BYTES], ls, context) / kv_shards(model, tp, ep)
    return cache + streams * state_bytes_per_stream(model, ls) / state_shards(model, tp, ep)


@njit
def kv_read_bytes_per_chip(model, hw, tp, pp, ep, streams, context):
    """KV bytes one chip reads in a decode step of ``streams`` streams at ``context`` tokens: what the queries read
    of the caches (``kv_read_bytes_per_token``), and each linear-attention state read and written back whole
    (MODEL.md 2.10)."""
    ls, _, _ = stage_layers(model, pp)
    cache = (streams * context * kv_read_bytes_per_token(model, hw[H_KV_BYTES], ls, context)
             / kv_shards(model, tp, ep))
    return cache + 2.0 * streams * state_bytes_per_stream(model, ls) / state_shards(model, tp, ep)


@njit
def usable_bytes_per_chip(hw):
    """Bytes per chip that weights and KV may occupy: the usable share of the tiers inference serves from (a
    capacity tier such as MemoryX only streams what overflows: it is priced by ``tier_read_time``, never a fit)."""
    total = 0.0
    for i in range(int(hw[H_SERVING_TIERS])):
        total += hw[H_CAP + i]
    return total * hw[H_MEM_USABLE]


@njit
def tier_coefficients(hw, held_w, held_kv):
    """(seconds per weight byte read, seconds per KV byte read) with ``held_w`` weight bytes placed in the fastest
    tiers first and the ``held_kv`` KV bytes after them: a byte read comes from each tier in proportion to what
    that tier holds, the tiers one after another (MODEL.md 2.5). What does not fit is priced at the slowest tier,
    so the time stays finite and monotone."""
    usable = hw[H_MEM_USABLE]
    w_left = held_w
    kv_left = held_kv
    a_w = 0.0
    a_kv = 0.0
    n = int(hw[H_N_TIERS])
    for i in range(n):
        room = hw[H_CAP + i] * usable
        w_here = min(w_left, room)
        w_left -= w_here
        kv_here = min(kv_left, room - w_here)
        kv_left -= kv_here
        inv = 1.0 / (hw[H_BW + i] * hw[H_BW_EFF])
        if held_w > 0.0:
            a_w += w_here / held_w * inv
        if held_kv > 0.0:
            a_kv += kv_here / held_kv * inv
    inv_last = 1.0 / (hw[H_BW + n - 1] * hw[H_BW_EFF])
    if held_w > 0.0:
        a_w += w_left / held_w * inv_last
    if held_kv > 0.0:
        a_kv += kv_left / held_kv * inv_last
    return a_w, a_kv


@njit
def tier_read_time(hw, held_w, read_w, held_kv, read_kv):
    """Seconds to read ``read_w`` weight bytes and ``read_kv`` KV bytes under ``tier_coefficients``' placement."""
    a_w, a_kv = tier_coefficients(hw, held_w, held_kv)
    return read_w * a_w + read_kv * a_kv


@njit
def allreduce_time(hw, tp, nbytes):
    """All-reduce over ``tp`` chips (MODEL.md 2.7). Within one scale-up domain of D chips a ring: latency +
    2 (tp-1)/tp * bytes / scale-up bandwidth. Over n = tp / D domains (an expert-parallel group wider than a
    domain, whose dense layers stay tensor-parallel) hierarchical: the ring inside each domain, and a ring of each
    chip's 1/D share across the n domains over its scale-out link, which adds its hop latency and
    2 (n-1)/n * bytes / D / scale-out bandwidth."""
    if tp <= 1:
        return 0.0
    d = min(tp, hw[H_SU_DOMAIN])
    t = hw[H_COLL_LAT_S] + 2.0 * (d - 1) / d * nbytes / hw[H_SU_BW]
    if tp > d:
        n = tp / d
        t += hw[H_SO_LAT] + 2.0 * (n - 1) / n * nbytes / d / hw[H_SO_BW]
    return t


@njit
def alltoall_time(hw, tp, nbytes_per_chip):
    """One all-to-all in which each chip receives ``nbytes_per_chip`` from the ``tp`` chips alike (MODEL.md 2.7):
    the (D-1)/tp of it from its own scale-up domain of D chips over scale-up, the (tp-D)/tp from other domains
    over its scale-out link (wide expert parallelism), the two at once, so the slower sets the time; crossing
    domains adds the scale-out hop latency."""
    if tp <= 1:
        return 0.0
    d = min(tp, hw[H_SU_DOMAIN])
    inside = nbytes_per_chip * (d - 1) / tp / hw[H_SU_BW]
    if tp <= d:
        return hw[H_COLL_LAT_S] + inside
    outside = nbytes_per_chip * (tp - d) / tp / hw[H_SO_BW]
    return hw[H_COLL_LAT_S] + hw[H_SO_LAT] + max(inside, outside)


@njit
def pipeline_hop_time(hw, tp, pp, nbytes):
    """One stage-to-stage hop: over scale-up when the replica fits one domain, else over scale-out."""
    if pp <= 1:
        return 0.0
    if tp * pp <= hw[H_SU_DOMAIN]:
        return hw[H_SU_LAT] + nbytes / hw[H_SU_BW]
    return hw[H_SO_LAT] + nbytes / hw[H_SO_BW]


@njit
def stage_comm_time(model, hw, tp, pp, ep, tokens):
    """Collectives of one stage step over ``tokens`` tokens (MODEL.md 2.7). Tensor parallel: two all-reduces per
    layer (after attention, after the FFN or experts). Data-parallel attention with expert parallelism: per MoE
    layer two all-to-alls (dispatch, combine), per dense layer one all-reduce (its FFN stays tensor-parallel)."""
    ls, dense, moe = stage_layers(model, pp)
    msg = tokens * model[M_HIDDEN] * hw[H_ACT_BYTES]
    ar = allreduce_time(hw, tp, msg)
    if ep > 0 and tp > 1:
        a2a = alltoall_time(hw, tp, msg * model[M_EXPERTS_PER_TOKEN] / tp)
        t = dense * ar + moe * 2.0 * a2a
    else:
        t = (dense + moe) * 2.0 * ar
    return t + pipeline_hop_time(hw, tp, pp, msg)


@njit
def stage_kernels(model, pp):
    """Dependent kernels of one step of the largest stage: per layer its attention part, per dense layer the
    FFN's, per MoE layer the MoE block's (MODEL.md 2.8)."""
    ls, dense, moe = stage_layers(model, pp)
    return ls * model[M_ATTN_KERNELS] + dense * model[M_DENSE_FFN_KERNELS] + moe * model[M_MOE_KERNELS]


@njit
def stage_fixed_time(model, hw, pp):
    """Fixed seconds of one stage step (MODEL.md 2.8): its kernels at the per-kernel latency, plus a 1/pp share
    of the step overhead (scheduling, sampling) that a token interval of ``pp`` stage steps pays once, where the
    part samples tokens."""
    return stage_kernels(model, pp) * hw[H_KERNEL_S] + model[M_SAMPLES] * hw[H_STEP_S] / pp


@njit
def prompt_fixed_time(model, hw, pp):
    """``stage_fixed_time`` of a prompt pass: its kernels at the prompt pass's per-kernel latency (engines replay
    decode steps as CUDA graphs, but launch a prompt pass's kernels one by one: its shapes change with the prompts,
    MODEL.md 2.8)."""
    return stage_kernels(model, pp) * hw[H_PREFILL_KERNEL_S] + model[M_SAMPLES] * hw[H_STEP_S] / pp


@njit
def replica_power_w(hw, chips):
    """Design (rated) rack power share of a replica of ``chips`` chips: chips x rack power / chips per rack."""
    return chips * hw[H_RACK_POWER_W] / hw[H_CHIPS_PER_RACK]


@njit
def idle_power_w(hw, chips):
    """What a replica of ``chips`` chips draws with its model loaded and no work (MODEL.md 14)."""
    return replica_power_w(hw, chips) * hw[H_IDLE_POWER_SHARE]


@njit
def draw_share(hw, memory, compute, step):
    """Share of design power drawn by a step of ``step`` seconds whose memory reads take ``memory`` and matmuls
    ``compute`` (MODEL.md 14): idle + memory share x memory / step + compute share x compute / step, at most 1."""
    if step <= 0.0:
        return hw[H_IDLE_POWER_SHARE]
    busy = hw[H_MEMORY_POWER_SHARE] * memory / step + hw[H_COMPUTE_POWER_SHARE] * compute / step
    return min(1.0, hw[H_IDLE_POWER_SHARE] + busy)


@njit
def loaded_power_w(idle_w, busy_w, busy_share):
    """Draw of chips busy ``busy_share`` of the time at ``busy_w`` and idle the rest at ``idle_w`` (any two
    states' time-weighted draw: a colocated replica's decode steps and prefill passes too)."""
    return idle_w + (busy_w - idle_w) * min(1.0, max(0.0, busy_share))


@njit
def bound_of(memory, compute, comm, floor):
    """Index of the largest term: 0 memory, 1 compute, 2 communication, 3 floor."""
    best = 0
    value = memory
    if compute > value:
        best, value = 1, compute
    if comm > value:
        best, value = 2, comm
    if floor > value:
        best = 3
    return best


@njit
def write_breakdown(out, hw, tp, pp, memory, compute, roofline, comm, floor, held_w, held_kv, bytes_read, flops):
    """The slots decode and prefill share: one stage's terms times ``pp`` stages (MODEL.md 3.2), memory fit,
    the binding term and the replica's share of rack power. ``roofline`` is the kernel groups' rooflines added
    (each at least its own reads and its own arithmetic)."""
    usable = usable_bytes_per_chip(hw)
    out[B_TIME_S] = pp * (roofline + comm + floor)
    out[B_MEMORY_S] = pp * memory
    out[B_COMPUTE_S] = pp * compute
    out[B_ROOFLINE_S] = pp * roofline
    out[B_COMM_S] = pp * comm
    out[B_FLOOR_S] = pp * floor
    out[B_FITS] = 1.0 if held_w + held_kv <= usable else 0.0
    out[B_WEIGHT_BYTES_PER_CHIP] = held_w
    out[B_KV_BYTES_PER_CHIP] = held_kv
    out[B_USABLE_BYTES_PER_CHIP] = usable
    out[B_BOUND] = bound_of(memory, compute, comm, floor)
    out[B_POWER_W] = replica_power_w(hw, tp * pp) * draw_share(hw, memory, compute, roofline + comm + floor)
    out[B_BYTES_READ_PER_CHIP] = bytes_read
    out[B_FLOPS_PER_CHIP] = flops
    out[B_DRAFT_S] = 0.0


@njit
def decode_breakdown(model, hw, tp, pp, ep, streams, context_avg, context_max, query_tokens, accepted_tokens, out):
    """Decode of ``streams`` concurrent streams on one replica (MODEL.md 3). Writes a breakdown into ``out``.

    The streams form ``pp`` micro-batches of b = max(streams / pp, 1); a stream's token interval is the sum of the
    ``pp`` stage steps. ``query_tokens`` per stream per step (1 + draft tokens with speculative decoding), of which
    ``accepted_tokens`` are kept on average.
    """
    b = max(streams / pp, 1.0)
    tokens = b * query_tokens
    ls, _, _ = stage_layers(model, pp)
    wbytes = hw[H_WEIGHT_BYTES]

    held_w = held_weight_params_per_chip(model, tp, pp, ep) * wbytes
    read_w = read_weight_params_per_chip(model, tp, pp, ep, tokens) * wbytes
    held_kv = kv_bytes_per_chip(model, hw, tp, pp, ep, streams, context_max)
    read_kv = kv_read_bytes_per_chip(model, hw, tp, pp, ep, b, context_avg)
    a_w, a_kv = tier_coefficients(hw, held_w, held_kv)
    memory, compute, roofline = linear_step_terms(model, hw, tp, pp, ep, tokens, tokens, a_w)

    # attention: the micro-batch's cache read once, each query token against the mean context (a sparse layer
    # its top k), the indexer and the linear-attention states beside it (MODEL.md 2.10)
    pairs = tokens * context_avg * context_layers(model, ls, context_avg) / tp
    att_mem = read_kv * a_kv
    att_comp = (attention_compute_s(model, hw, pairs, model[M_ATTN_FLOPS])
                + context_free_compute_s(model, hw, ls, tokens, context_avg, tp))
    flops = (linear_flops_per_chip(model, tp, pp, ep, tokens, tokens) + pairs * model[M_ATTN_FLOPS]
             + context_free_flops(model, ls, tokens, context_avg, tp))

    comm = stage_comm_time(model, hw, tp, pp, ep, tokens)
    floor = stage_fixed_time(model, hw, pp) + stream_fixed_time(model, hw, tp, ep, ls, b)
    write_breakdown(out, hw, tp, pp, memory + att_mem, compute + att_comp, roofline + max(att_mem, att_comp), comm,
                    floor, held_w, held_kv, read_w + read_kv, flops)
    if streams > stream_cap(hw, tp, pp, ep):
        out[B_FITS] = 0.0  # more streams than the stack's scheduler admits
    interval = out[B_TIME_S]
    out[B_TPS_PER_USER] = accepted_tokens / interval
    out[B_TOKENS_PER_S] = streams * accepted_tokens / interval


@njit
def prompts_per_pass(hw, input_tokens):
    """Prompts of ``input_tokens`` tokens one prefill pass takes: as many as the stack's token budget per pass holds
    (``H_PREFILL_TOKENS_PER_PASS``), at least one (MODEL.md 4.2)."""
    if input_tokens <= 0.0:
        return 1.0
    return max(1.0, math.floor(hw[H_PREFILL_TOKENS_PER_PASS] / input_tokens))


@njit
def prefill_breakdown(model, hw, tp, pp, ep, input_tokens, out):
    """Prefill of one prompt of ``input_tokens`` tokens alone on a replica (MODEL.md 4): ``batch_prefill_breakdown``
    of one prompt, whose time is the lone prompt's TTFT; the rate (``B_TOKENS_PER_S``) is that of a loaded
    replica, whose passes each take ``prompts_per_pass`` prompts (MODEL.md 4.2), and so is the draw
    (``B_POWER_W``)."""
    batch_prefill_breakdown(model, hw, tp, pp, ep, input_tokens, 1.0, out)
    prompts = prompts_per_pass(hw, input_tokens)
    if prompts > 1.0:
        full = np.empty(out.shape[0])
        batch_prefill_breakdown(model, hw, tp, pp, ep, input_tokens, prompts, full)
        out[B_TOKENS_PER_S] = full[B_TOKENS_PER_S]
        out[B_POWER_W] = full[B_POWER_W]


@njit
def batch_prefill_breakdown(model, hw, tp, pp, ep, input_tokens, prompts, out):
    """Prefill of ``prompts`` prompts of ``input_tokens`` tokens each that arrive together, in one pass over the
    replica (MODEL.md 4, 4.3): the prompts pass the ``pp`` stages in turn, so the last first token comes ``pp``
    stage times after the start, less the hop after the last stage; with stages pipelined over prompts the replica
    takes ``prompts x input_tokens / stage time`` prompt tokens per second. The weights are read once for all
    prompts; each prompt attends only to itself; only each prompt's last token goes through the LM head."""
    n = input_tokens
    tokens = prompts * n
    ls, _, _ = stage_layers(model, pp)
    wbytes = hw[H_WEIGHT_BYTES]

    held_w = held_weight_params_per_chip(model, tp, pp, ep) * wbytes
    read_w = read_weight_params_per_chip(model, tp, pp, ep, tokens) * wbytes
    kv_written = kv_bytes_per_chip(model, hw, tp, pp, ep, prompts, n)
    a_w, a_kv = tier_coefficients(hw, held_w, kv_written)
    # only each prompt's last token needs logits
    memory, compute, roofline = linear_step_terms(model, hw, tp, pp, ep, tokens, prompts, a_w)

    # Causal attention: token i attends to i earlier tokens, n^2 / 2 pairs a prompt (window layers: n * min(W, n/2),
    # sparse ones n * min(k, n/2)); the indexer scores n^2 / 2 pairs, each linear layer n token updates (MODEL.md 2.10).
    pairs = prompts * n * (n / 2.0) * context_layers(model, ls, n / 2.0) / tp
    att_mem = kv_written * a_kv
    att_comp = (attention_compute_s(model, hw, pairs, model[M_PREFILL_ATTN_FLOPS])
                + context_free_compute_s(model, hw, ls, tokens, n / 2.0, tp))
    flops = (linear_flops_per_chip(model, tp, pp, ep, tokens, prompts) + pairs * model[M_PREFILL_ATTN_FLOPS]
             + context_free_flops(model, ls, tokens, n / 2.0, tp))

    comm = stage_comm_time(model, hw, tp, pp, ep, tokens)
    floor = prompt_fixed_time(model, hw, pp) + stream_fixed_time(model, hw, tp, ep, ls, prompts)
    roofline += max(att_mem, att_comp)
    write_breakdown(out, hw, tp, pp, memory + att_mem, compute + att_comp, roofline, comm, floor, held_w,
                    kv_written, read_w + kv_written, flops)
    last_hop = pipeline_hop_time(hw, tp, pp, tokens * model[M_HIDDEN] * hw[H_ACT_BYTES])
    out[B_TIME_S] -= last_hop
    out[B_COMM_S] -= last_hop
    out[B_TPS_PER_USER] = 0.0
    out[B_TOKENS_PER_S] = tokens / (roofline + comm + floor)


@njit
def speculative_decode_breakdown(model, draft, hw, tp, pp, ep, streams, context_avg, context_max, draft_tokens,
                                 accepted_tokens, scratch, out):
    """Decode with speculative decoding (MODEL.md 3.4): each interval the drafter (``draft``, a model vector: the
    model's MTP layers, an EAGLE head or a draft model, on the same chips) runs ``draft_tokens`` = K steps of one
    token per stream, and the target verifies K + 1 query tokens per stream in one step, keeping
    ``accepted_tokens`` of them. The drafter runs on the last pipeline stage, once per micro-batch of
    b = streams / pp streams, so it adds pp x K x its step at batch b to the interval, and each micro-batch's verify
    step pays the stack's per-stream speculative work (``H_SPEC_STREAM_S`` x b); its weights and the KV cache
    of its layers are held beside the target's. K = 0 is plain decode. ``scratch`` is a breakdown buffer."""
    decode_breakdown(model, hw, tp, pp, ep, streams, context_avg, context_max, draft_tokens + 1.0, accepted_tokens,
                     out)
    if draft_tokens <= 0.0:
        return
    b = max(streams / pp, 1.0)
    decode_breakdown(draft, hw, tp, 1.0, ep, b, context_avg, context_max, 1.0, 1.0, scratch)
    draft_s = pp * (draft_tokens * scratch[B_TIME_S] + b * hw[H_SPEC_STREAM_S])
    # the interval's draw: the verify step's for its part, the drafter's (on the same chips) for the rest
    drafter_share = scratch[B_POWER_W] / replica_power_w(hw, tp)
    verify_s = out[B_TIME_S]
    out[B_POWER_W] = (out[B_POWER_W] * verify_s + replica_power_w(hw, tp * pp) * drafter_share * draft_s) / (
        verify_s + draft_s)
    out[B_TIME_S] += draft_s
    out[B_DRAFT_S] = draft_s
    out[B_WEIGHT_BYTES_PER_CHIP] += scratch[B_WEIGHT_BYTES_PER_CHIP]
    out[B_KV_BYTES_PER_CHIP] += scratch[B_KV_BYTES_PER_CHIP] * streams / b
    held = out[B_WEIGHT_BYTES_PER_CHIP] + out[B_KV_BYTES_PER_CHIP]
    out[B_FITS] = 1.0 if held <= out[B_USABLE_BYTES_PER_CHIP] and streams <= stream_cap(hw, tp, pp, ep) else 0.0
    out[B_TPS_PER_USER] = accepted_tokens / out[B_TIME_S]
    out[B_TOKENS_PER_S] = streams * accepted_tokens / out[B_TIME_S]
