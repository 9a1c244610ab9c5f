"""Sweep drivers: the performance kernels applied to many configurations at once, fast.

Nothing here is a new formula. The candidate engine (``best_decode_per_layout``) computes once per layout what does
not depend on the batch (``layout_coefficients``, from the kernels' own functions) so that one batch costs a handful
of operations, and reduces each layout to its best batch; ``tests/test_engine.py`` checks it against a plain loop
over ``decode_breakdown`` and against the plain-Python twin. ``decode_sweep``, ``split_decode_sweep`` and
``colocated_points`` return every configuration's figures for the frontier, ``estimate`` and calibration.

As in stumpy: arrays and scalars only; a parallel driver splits the work into one chunk per thread and gives each
thread its own buffers, allocated once, so the hot loop allocates nothing and keeps no running maximum (each
thread's results are reduced after its batch loop).
"""

from __future__ import annotations

import math

import numpy as np

from solvers.jit import njit, njit_parallel, prange, threads_for
from solvers.perf import slots as L
from solvers.perf.kernels import (
    attention_compute_s,
    context_free_compute_s,
    context_layers,
    expected_max_normal,
    expert_groups,
    head_params_read,
    held_weight_params_per_chip,
    kv_bytes_per_chip,
    kv_read_bytes_per_chip,
    prefill_breakdown,
    speculative_decode_breakdown,
    stage_comm_time,
    stage_fixed_time,
    stage_layers,
    stream_cap,
    stream_fixed_time,
    tier_coefficients,
    usable_bytes_per_chip,
)
from solvers.perf.queue import max_utilization, prefill_pool_servers, servers_for_load, wait_quantile_s
from solvers.perf.serving import (
    colocated_miss_share,
    colocated_request_s,
    decode_seconds,
    decode_tokens_per_s,
    kv_fits,
    loaded_power_w,
    replica_power_w,
    resident_share,
)
from solvers.perf.split import split_decode_breakdown

# One decode breakdown, and one attention/FFN split row (two breakdowns and their exchange), in units of one
# batch's scoring in ``best_batch_of_intervals``: how ``jit.threads_for`` weighs a driver's work (measured roughly,
# python benchmarks/bench_engine.py).
BREAKDOWN_WORK = 32
SPLIT_ROW_WORK = 64


@njit
def chunk_bounds(n, chunks):
    """(start, stop) of each of ``chunks`` near-equal contiguous chunks of range(n)."""
    out = np.zeros((chunks, 2), dtype=np.int64)
    size = (n + chunks - 1) // chunks
    for t in range(chunks):
        out[t, 0] = min(n, t * size)
        out[t, 1] = min(n, (t + 1) * size)
    return out


@njit
def layout_coefficients(model, hw, tp, pp, ep, context_avg, context_max, c):
    """Fill ``c`` (slots C_*) with everything about decode on this layout that does not depend on the batch: each
    kernel group's bytes read and seconds per token of ``kernels.linear_step_terms`` and the attention terms of
    ``kernels.decode_breakdown``."""
    ls, dense, moe = stage_layers(model, pp)
    wbytes = hw[L.H_WEIGHT_BYTES]
    rate = hw[L.H_PEAK_FLOPS] * hw[L.H_FLOPS_EFF]
    c[L.C_PP] = pp
    c[L.C_HELD_W] = held_weight_params_per_chip(model, tp, pp, ep) * wbytes
    head = head_params_read(model, pp)
    attention = ls * model[L.M_ATTN_PARAMS]
    split = dense * model[L.M_DENSE_FFN_PARAMS] + moe * model[L.M_SHARED_PARAMS]
    c[L.C_ATTW_READ] = 0.0
    c[L.C_ATTW_COMPUTE] = 0.0
    if ep > 0:
        c[L.C_ATTW_READ] = attention * wbytes
        c[L.C_ATTW_COMPUTE] = 2.0 * attention / tp / rate
    else:
        split += attention
    c[L.C_READ_W0] = (split + head) / tp * wbytes
    c[L.C_COMPUTE] = 2.0 * (split + head) / tp / rate  # decode: every token goes through the LM head
    c[L.C_READ_W1] = moe * model[L.M_EXPERT_PARAMS] / tp * wbytes
    e = model[L.M_EXPERTS]
    c[L.C_EXPERTS] = e
    c[L.C_LOG_MISS] = math.log(1.0 - model[L.M_EXPERTS_PER_TOKEN] / e) if e > model[L.M_EXPERTS_PER_TOKEN] else -np.inf
    c[L.C_KV_HELD] = kv_bytes_per_chip(model, hw, tp, pp, ep, 1.0, context_max)
    c[L.C_KV_READ] = kv_read_bytes_per_chip(model, hw, tp, pp, ep, 1.0, context_avg)
    c[L.C_ATT_COMPUTE] = (attention_compute_s(model, hw, context_avg * context_layers(model, ls, context_avg) / tp,
                                              model[L.M_ATTN_FLOPS])
                          + context_free_compute_s(model, hw, ls, 1.0, context_avg, tp))
    c[L.C_EXPERT_COMPUTE] = (2.0 * moe * model[L.M_EXPERT_PARAMS] / tp / rate
                             / hw[L.H_GROUPED_GEMM_FACTOR])
    c[L.C_STREAM_S] = stream_fixed_time(model, hw, tp, ep, ls, 1.0)
    c[L.C_STREAM_CAP] = stream_cap(hw, tp, pp, ep)
    c[L.C_GROUPS] = expert_groups(model, tp, ep)
    c[L.C_EXPERTS_PER_TOKEN] = model[L.M_EXPERTS_PER_TOKEN]
    c[L.C_COMM0] = stage_comm_time(model, hw, tp, pp, ep, 0.0)
    c[L.C_COMM1] = stage_comm_time(model, hw, tp, pp, ep, 1.0) - c[L.C_COMM0]
    c[L.C_FLOOR] = stage_fixed_time(model, hw, pp)
    c[L.C_USABLE] = usable_bytes_per_chip(hw)
    c[L.C_CHIPS] = tp * pp
    c[L.C_POWER_W] = replica_power_w(hw, tp * pp)
    return c


@njit
def touched_experts_table(model, pps, batches, query_tokens):
    """Distinct experts touched per MoE layer for every (pipeline depth, speculative setting, batch): shared by
    all layouts of one depth, so the hot loop needs no exponentials. Shape (len(pps), len(query_tokens), nb)."""
    out = np.zeros((pps.shape[0], query_tokens.shape[0], batches.shape[0]))
    e, k = model[L.M_EXPERTS], model[L.M_EXPERTS_PER_TOKEN]
    if e <= 0.0:
        return out
    for i in range(pps.shape[0]):
        for j in range(query_tokens.shape[0]):
            for m in range(batches.shape[0]):
                tokens = max(batches[m] / pps[i], 1.0) * query_tokens[j]
                out[i, j, m] = e * (1.0 - (1.0 - k / e) ** tokens)
    return out


@njit
def stage_step_s(c, consts, touched, b, tokens, a_w, a_kv):
    """One stage step of ``b`` streams (``tokens`` query tokens) from a layout's coefficients ``c``, at ``a_w``
    and ``a_kv`` seconds per weight and KV byte read (``kernels.tier_coefficients``): each kernel group's roofline,
    added (``kernels.linear_step_terms``), then attention's, the collectives and the fixed costs, as
    ``kernels.decode_breakdown`` adds them. With expert parallelism the busiest expert group's reads and rows
    (``busiest_terms``); without it, every chip's even share."""
    if c[L.C_GROUPS] > 1.0:
        read_e, rows = busiest_terms(c, consts, touched, tokens)
    else:
        read_e, rows = c[L.C_READ_W1] * touched, c[L.C_EXPERTS_PER_TOKEN] * tokens
    t = max(c[L.C_READ_W0] * a_w, c[L.C_COMPUTE] * tokens)
    t += max(c[L.C_ATTW_READ] * a_w, c[L.C_ATTW_COMPUTE] * tokens)
    t += max(read_e * a_w, c[L.C_EXPERT_COMPUTE] * rows)
    t += max(c[L.C_KV_READ] * b * a_kv, c[L.C_ATT_COMPUTE] * tokens)
    return t + c[L.C_COMM0] + c[L.C_FLOOR] + c[L.C_COMM1] * tokens + c[L.C_STREAM_S] * b


@njit
def decode_intervals(hw, c, consts, touched_row, batches, q, interval):
    """Token interval of every batch on one layout (coefficients ``c``, ``busiest_constants`` of them ``consts``)
    into ``interval``: the fastest-tier pass first (weights and KV read at the fastest tier's speed), then the full
    tier placement for batches whose KV spills past the fastest tier."""
    pp, held_w, kvh = c[L.C_PP], c[L.C_HELD_W], c[L.C_KV_HELD]
    room0 = hw[L.H_CAP] * hw[L.H_MEM_USABLE]
    inv_bw0 = 1.0 / (hw[L.H_BW] * hw[L.H_BW_EFF])
    nb = batches.shape[0]
    for k in range(nb):
        b = max(batches[k] / pp, 1.0)
        interval[k] = pp * stage_step_s(c, consts, touched_row[k], b, b * q, inv_bw0, inv_bw0)
    for k in range(nb):
        held_kv = kvh * batches[k]
        if held_w + held_kv > room0:
            b = max(batches[k] / pp, 1.0)
            a_w, a_kv = tier_coefficients(hw, held_w, held_kv)
            interval[k] = pp * stage_step_s(c, consts, touched_row[k], b, b * q, a_w, a_kv)


@njit
def draft_steps(hw, dc, touched_row, batches, pp, out):
    """The drafter's step time at each batch into ``out``: one token for each of the b = batches / pp streams of a
    micro-batch, on the drafter's layout coefficients ``dc`` (its own layers, pipeline depth 1), the fastest-tier
    pass or, where its weights and KV spill, the full placement (as ``decode_breakdown`` of the drafter), at the
    busiest expert group's load."""
    room0 = hw[L.H_CAP] * hw[L.H_MEM_USABLE]
    inv_bw0 = 1.0 / (hw[L.H_BW] * hw[L.H_BW_EFF])
    consts = busiest_constants(dc)
    nb = batches.shape[0]
    for k in range(nb):
        b = max(batches[k] / pp, 1.0)
        out[k] = stage_step_s(dc, consts, touched_row[k], b, b, inv_bw0, inv_bw0)
    for k in range(nb):
        b = max(batches[k] / pp, 1.0)
        held_kv = dc[L.C_KV_HELD] * b
        if dc[L.C_HELD_W] + held_kv > room0:
            a_w, a_kv = tier_coefficients(hw, dc[L.C_HELD_W], held_kv)
            out[k] = stage_step_s(dc, consts, touched_row[k], b, b, a_w, a_kv)


@njit
def busiest_of(cap, estimate):
    """``busiest_load``'s clamp: at most ``cap``, at least one whole unit where the cap allows."""
    return min(cap, max(estimate, min(1.0, cap)))


@njit
def busiest_terms(c, consts, touched, tokens):
    """(routed-expert bytes the busiest chip reads, its routed-expert matmul rows times R) of one stage step over
    ``tokens`` tokens touching ``touched`` experts, at the busiest expert group (``busiest_touched``,
    ``busiest_assignments`` inlined; ``consts`` from ``busiest_constants``)."""
    z2, inv_r, per_group, inv_e, spread, w1_r, groups = consts
    m = touched * inv_r
    busy_touched = busiest_of(min(per_group, touched), m + math.sqrt(z2 * m * (1.0 - touched * inv_e)))
    a = tokens * c[L.C_EXPERTS_PER_TOKEN]
    mu = a * inv_r
    rows = busiest_of(a, mu + math.sqrt(z2 * mu * spread))
    return w1_r * busy_touched, groups * rows


@njit
def busiest_constants(c):
    """Per-layout constants of ``busiest_touched`` and ``busiest_assignments`` inlined in the batch loops: z^2 (z the
    expected maximum of R standard normals), 1 / R, experts per group, 1 / E, 1 - 1 / R, the read coefficient
    times R, and R."""
    groups, experts = c[L.C_GROUPS], c[L.C_EXPERTS]
    inv_e = 1.0 / experts if experts > 0.0 else 0.0
    z = expected_max_normal(groups)
    return (z * z, 1.0 / groups, experts / groups, inv_e, 1.0 - 1.0 / groups, c[L.C_READ_W1] * groups, groups)


@njit
def colocated_wait_s(output_tokens, interval_s, streams, accepted_tokens, prefill_s, load, max_servers, scv,
                     quantile):
    """The ``quantile`` wait of a prompt in the M/G/c pool of colocated replicas at one batch: as many servers as
    serve ``load`` output tokens/s at the batch's capacity (at most ``max_servers``), each busy prefilling the share
    of its time prompts take (MODEL.md 9.2)."""
    request_s = colocated_request_s(output_tokens, interval_s, streams, accepted_tokens, prefill_s)
    servers = servers_for_load(load, output_tokens / request_s, max_servers)
    return wait_quantile_s(servers, prefill_s / request_s, prefill_s, scv, quantile)


@njit
def first_batch_may_serve(hw, wl, c, consts, dc, touched_row, batches, k_draft, a, prefill_s, draft, interval):
    """Whether any batch of one (layout, speculative setting) may qualify (``best_batch_of_intervals``): none where the
    weights alone overflow the memory (the KV only adds), or where the first batch already misses the tier: a step
    only grows with the batch, so tokens/s per user only falls (MODEL.md 3). Prices the first batch's step alone
    (into ``interval[0]``; with a drafter, from its step ``draft[0]``)."""
    held_w = c[L.C_HELD_W]
    if k_draft > 0.0:
        held_w += dc[L.C_HELD_W]
    if held_w > c[L.C_USABLE]:
        return False
    step_intervals(hw, c, consts, touched_row[:1], batches[:1], k_draft, draft[:1], interval[:1])
    return not replica_tokens_per_s(wl, interval[0], batches[0], a, prefill_s) / batches[0] < wl[L.W_MIN_TPS_PER_USER]


@njit
def best_batch_of_intervals(wl, c, dc, batches, k_draft, a, prefill_s, single_s, load, scv, max_servers, interval,
                            tput, out, output_shares):
    """The batch of one (layout, speculative setting) with the most output tokens/s per replica among those that
    fit (the drafter's weights and KV and agentic residency included), reach the tier and, colocated, meet the TTFT
    target, for a pair that ``first_batch_may_serve``, from its token interval at every batch (``interval``:
    ``step_intervals``, the same whether prompts are prefilled elsewhere or on the replica). ``c`` and ``dc`` are the
    target's and the drafter's layout coefficients; ``k_draft`` draft tokens per step (0: plain decode), ``a``
    accepted. Colocated (``prefill_s`` > 0), prompts queue in an M/G/c pool (service scv ``scv``) of the servers
    that serve ``load`` output tokens/s at each batch's capacity (``servers_for_load``, at most ``max_servers``).
    Writes the E_* slots of ``out`` (where no batch qualifies: nothing served, the first batch, a lone prompt's
    TTFT); ``tput`` is the calling thread's buffer."""
    nb = batches.shape[0]
    held_w, kv_per_stream = c[L.C_HELD_W], c[L.C_KV_HELD]
    if k_draft > 0.0:
        held_w += dc[L.C_HELD_W]
        kv_per_stream += dc[L.C_KV_HELD]
    output_tokens = wl[L.W_OUTPUT_TOKENS]
    colocated = prefill_s > 0.0
    for k in range(nb):
        served = replica_tokens_per_s(wl, interval[k], batches[k], a, prefill_s)
        tps = served / batches[k]
        ok = kv_fits(held_w, kv_per_stream, batches[k], resident_share(wl[L.W_RESIDENT_S_PER_TOKEN], tps),
                     c[L.C_USABLE]) & (tps >= wl[L.W_MIN_TPS_PER_USER]) & (batches[k] <= c[L.C_STREAM_CAP])
        if ok and not colocated:  # a mean answer's whole steps and its join reach the tier too (queues.slack_s)
            ok = decode_seconds(output_tokens, a, interval[k], wl[L.W_TTFT_QUANTILE]) <= \
                output_tokens / wl[L.W_MIN_TPS_PER_USER] * (1 + 1e-9)
        tput[k] = served if ok else 0.0
    best = np.argmax(tput)
    ttft_s = single_s
    # Colocated, the best batch must also hold the tier at the workload's percentile past the prefill chunks its
    # streams meet, and meet the TTFT target. Both (a Poisson sum, an Erlang C series) are priced from the most
    # served batch down, each that misses dropped, until one meets them: that one is the argmax over the batches
    # that pass everything (ties to the smallest batch, as argmax breaks them), and the batches that serve less,
    # which could not win, are never priced.
    while colocated and tput[best] > 0.0:
        miss = colocated_miss_share(output_tokens, interval[best], batches[best], a, prefill_s, scv,
                                    wl[L.W_MIN_TPS_PER_USER], output_shares)
        if miss <= (1.0 - wl[L.W_TTFT_QUANTILE]) * (1.0 + 1e-9):
            ttft_s = single_s + colocated_wait_s(output_tokens, interval[best], batches[best], a, prefill_s, load,
                                                 max_servers, scv, wl[L.W_TTFT_QUANTILE])
            if ttft_s <= wl[L.W_TTFT_S]:
                break
        tput[best] = 0.0
        best = np.argmax(tput)
    if tput[best] <= 0.0:
        serves_nothing(batches, single_s, out)
        return
    out[L.E_TOKENS_PER_S] = tput[best]
    out[L.E_BATCH] = batches[best]
    out[L.E_TPS_PER_USER] = tput[best] / batches[best]
    out[L.E_TTFT_S] = ttft_s
    out[L.E_PREFILL_SHARE] = prefill_s * tput[best] / output_tokens


@njit
def step_intervals(hw, c, consts, touched_row, batches, k_draft, draft, interval):
    """Each batch's token interval on one layout into ``interval``: the target's step (``decode_intervals``, K + 1
    query tokens) and, with K draft tokens, the drafter's K steps (``draft``) and each verify step's per-stream
    work, per micro-batch."""
    decode_intervals(hw, c, consts, touched_row, batches, k_draft + 1.0, interval)
    if k_draft > 0.0:
        pp = c[L.C_PP]
        for k in range(batches.shape[0]):
            interval[k] += pp * (k_draft * draft[k] + max(batches[k] / pp, 1.0) * hw[L.H_SPEC_STREAM_S])


@njit
def replica_tokens_per_s(wl, interval_s, streams, a, prefill_s):
    """Output tokens/s of a replica of ``streams`` streams at this interval; colocated (``prefill_s`` > 0) each
    request also costs the replica its prefill."""
    if prefill_s > 0.0:
        return wl[L.W_OUTPUT_TOKENS] / colocated_request_s(wl[L.W_OUTPUT_TOKENS], interval_s, streams, a, prefill_s)
    return decode_tokens_per_s(streams, a, interval_s)


@njit
def serves_nothing(batches, single_s, out):
    """The E_* slots of a (layout, setting) that serves nothing: no tokens, the first batch, a lone prompt's TTFT."""
    out[L.E_TOKENS_PER_S] = 0.0
    out[L.E_BATCH] = batches[0]
    out[L.E_TPS_PER_USER] = 0.0
    out[L.E_TTFT_S] = single_s
    out[L.E_PREFILL_SHARE] = 0.0


def best_decode_per_layout(model, draft, hw, wl, layouts, pp_index, touched, draft_touched, batches, draft_tokens,
                           accepted_tokens, prefill_rate, prefill_single_s, load=0.0, scv=1.0, max_servers=None,
                           output_shares=None):
    """For each (layout, speculative setting) pair, ``best_batch_of_intervals`` (MODEL.md 3, 6, 7, 9.6).

    ``wl`` is a workload vector (slots W_*); ``draft`` the drafter's model vector (zeros without speculation);
    ``layouts`` is (n, 3) of (tp, pp, ep); ``pp_index[i]`` is the row of ``touched`` (``touched_experts_table``
    with K + 1 query tokens per setting) and of ``draft_touched`` (the drafter's, one query token) for layout i's
    depth; ``draft_tokens`` K and ``accepted_tokens`` are the speculative settings (length s). Colocated serving:
    ``prefill_rate[i]`` prompt tokens/s and ``prefill_single_s[i]`` (one prompt alone) of the same layout; decode
    only: prefill_rate = inf. A colocated pool's prompts queue as M/G/c (``solvers.perf.queue``) with service scv
    ``scv`` and as many servers as serve the workload's ``load`` output tokens/s at each batch's capacity, at most
    ``max_servers[i]`` (default: no limit but ``queue.MAX_SERVERS``), and its streams hold the tier at the
    workload's percentile past the prefill chunks they meet, over output lengths of ``output_shares`` x the mean
    (equal weights; default one length, the mean: ``serving.colocated_miss_share``). Returns (n * s, N_ENGINE), row
    i * s + j.

    Several ways of serving at once (``prefill_rate``, ``prefill_single_s`` and ``max_servers`` of shape (m, n),
    one row each: decode only and colocated, say) share each layout's coefficients and token intervals, which do
    not depend on where prompts are prefilled; the answer is then (m, n * s, N_ENGINE), each the rows one call of
    that way alone gives.
    """
    rate = np.asarray(prefill_rate, dtype=np.float64)
    several = rate.ndim == 2
    rate = rate if several else rate[None, :]
    single = np.asarray(prefill_single_s, dtype=np.float64).reshape(rate.shape)
    cap = np.full(rate.shape, np.inf) if max_servers is None else \
        np.broadcast_to(np.asarray(max_servers, dtype=np.float64), rate.shape).copy()
    threads = threads_for(rate.shape[0] * layouts.shape[0] * draft_tokens.shape[0] * batches.shape[0])
    shares = np.ones(1) if output_shares is None else np.asarray(output_shares, dtype=np.float64)
    out = _best_decode_per_layout(model, draft, hw, wl, layouts, pp_index, touched, draft_touched, batches,
                                  draft_tokens, accepted_tokens, rate, single, float(load), float(scv), cap, shares,
                                  threads)
    return out if several else out[0]


@njit_parallel
def _best_decode_per_layout(model, draft, hw, wl, layouts, pp_index, touched, draft_touched, batches, draft_tokens,
                            accepted_tokens, prefill_rate, prefill_single_s, load, scv, max_servers, output_shares,
                            threads):
    n, s, nb = layouts.shape[0], draft_tokens.shape[0], batches.shape[0]
    ways = prefill_rate.shape[0]
    total = n * s
    out = np.zeros((ways, total, L.N_ENGINE))
    threads = max(1, min(threads, total))
    bounds = chunk_bounds(total, threads)
    coef = np.empty((threads, L.N_COEF))  # per-thread buffers, allocated once
    dcoef = np.zeros((threads, L.N_COEF))
    interval = np.empty((threads, nb))
    steps = np.empty((threads, nb))
    tput = np.empty((threads, nb))
    may = np.empty((threads, ways), dtype=np.bool_)
    for t in prange(threads):
        known = -1  # the layout whose coefficients coef[t] and consts hold: they do not depend on the draft length
        consts = (0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0)
        drafted = -1  # the layout whose drafter coefficients dcoef[t] and first step steps[t, 0] are priced
        stepped = -1  # the layout whose drafter steps steps[t] holds at every batch
        for idx in range(bounds[t, 0], bounds[t, 1]):
            i, j = idx // s, idx % s
            tp, pp, ep = layouts[i, 0], layouts[i, 1], layouts[i, 2]
            if known != i:
                layout_coefficients(model, hw, tp, pp, ep, wl[L.W_CONTEXT_AVG], wl[L.W_CONTEXT_MAX], coef[t])
                consts = busiest_constants(coef[t])
                known = i
            if draft_tokens[j] > 0.0 and drafted != i:
                layout_coefficients(draft, hw, tp, 1.0, ep, wl[L.W_CONTEXT_AVG], wl[L.W_CONTEXT_MAX], dcoef[t])
                draft_steps(hw, dcoef[t], draft_touched[pp_index[i], 0], batches[:1], pp, steps[t, :1])
                drafted = i
            touched_row = touched[pp_index[i], j]
            any_may = False
            for w in range(ways):
                prefill_s = wl[L.W_PREFILL_TOKENS] / prefill_rate[w, i]  # replica time one request's prefill takes
                may[t, w] = first_batch_may_serve(hw, wl, coef[t], consts, dcoef[t], touched_row, batches,
                                                  draft_tokens[j], accepted_tokens[j], prefill_s, steps[t],
                                                  interval[t])
                if not may[t, w]:
                    serves_nothing(batches, prefill_single_s[w, i], out[w, idx])
                any_may = any_may or may[t, w]
            if not any_may:
                continue
            if draft_tokens[j] > 0.0 and stepped != i:  # a layout that may serve: its drafter at every batch
                draft_steps(hw, dcoef[t], draft_touched[pp_index[i], 0], batches, pp, steps[t])
                stepped = i
            step_intervals(hw, coef[t], consts, touched_row, batches, draft_tokens[j], steps[t], interval[t])
            for w in range(ways):
                if may[t, w]:
                    best_batch_of_intervals(wl, coef[t], dcoef[t], batches, draft_tokens[j], accepted_tokens[j],
                                            wl[L.W_PREFILL_TOKENS] / prefill_rate[w, i], prefill_single_s[w, i],
                                            load, scv, max_servers[w, i], interval[t], tput[t], out[w, idx],
                                            output_shares)
    return out


@njit
def prefill_per_layout(model, hw, layouts, prefill_tokens):
    """(prompt tokens/s with stages pipelined, one prompt's prefill time, the replica's draw while it prefills) for
    each (tp, pp, ep) layout. Serial: about 0.1 us a layout, less than a parallel region costs to start."""
    n = layouts.shape[0]
    out = np.zeros((n, 3))
    b = np.empty(L.N_BREAKDOWN)
    for i in range(n):
        prefill_breakdown(model, hw, layouts[i, 0], layouts[i, 1], layouts[i, 2], prefill_tokens, b)
        out[i, 0] = b[L.B_TOKENS_PER_S] if b[L.B_FITS] > 0.5 else 0.0
        out[i, 1] = b[L.B_TIME_S]
        out[i, 2] = b[L.B_POWER_W]
    return out


@njit
def prefill_over_lengths(model, hw, layouts, tokens, weights, tokens_at_quantile):
    """``prefill_per_layout`` over a distribution of prompts (MODEL.md 15.3): the prompt tokens/s at which the
    replica serves prompts of ``tokens`` (weights ``weights``) on average, sum w n / sum w n / rate(n) (a long
    prompt costs more per token than a short one, so this is below the rate at the mean length), the lone prefill
    time of a prompt of ``tokens_at_quantile`` (the workload's TTFT percentile), and the draw at the mean length.
    A layout on which any of the prompts does not fit serves none (rate 0). One point of weight 1 at the mean is
    ``prefill_per_layout``."""
    n = layouts.shape[0]
    out = np.zeros((n, 3))
    b = np.empty(L.N_BREAKDOWN)
    mean = 0.0
    for k in range(tokens.shape[0]):
        mean += weights[k] * tokens[k]
    for i in range(n):
        tp, pp, ep = layouts[i, 0], layouts[i, 1], layouts[i, 2]
        busy_s = 0.0
        fits = True
        for k in range(tokens.shape[0]):
            prefill_breakdown(model, hw, tp, pp, ep, tokens[k], b)
            fits = fits and b[L.B_FITS] > 0.5
            busy_s += weights[k] * tokens[k] / b[L.B_TOKENS_PER_S]
        prefill_breakdown(model, hw, tp, pp, ep, mean, b)
        rate = b[L.B_TOKENS_PER_S] if tokens.shape[0] == 1 else mean / busy_s  # one length: its own rate, exactly
        out[i, 0] = rate if fits and b[L.B_FITS] > 0.5 else 0.0
        out[i, 2] = b[L.B_POWER_W]
        prefill_breakdown(model, hw, tp, pp, ep, tokens_at_quantile, b)
        out[i, 1] = b[L.B_TIME_S]
    return out


@njit
def prefill_capacity(prefill, transfer_s, prefill_tokens, ttft_target_s, quantile, load, scv, max_servers):
    """For each layout's (prompt tokens/s, one prompt's prefill s) and KV transfer time, its pool sized for ``load``
    prompt tokens/s as M/G/c with service scv ``scv`` (``solvers.perf.queue``): the servers c of the pool
    (``prefill_pool_servers``, at most ``max_servers[i]``), the utilization that keeps the TTFT quantile with c
    servers (``max_utilization``), the prompt tokens/s one replica serves at it, and that TTFT.
    Returns (n, 4): utilization, prompt tokens/s, TTFT s, servers."""
    n = prefill.shape[0]
    out = np.zeros((n, 4))
    for i in range(n):
        out[i, 3] = 1.0
        if prefill[i, 0] <= 0.0:
            continue
        service = prefill_tokens / prefill[i, 0]
        fixed = prefill[i, 1] + transfer_s[i]
        servers = prefill_pool_servers(load, prefill[i, 0], ttft_target_s, fixed, service, quantile, scv,
                                       max_servers[i])
        util = max_utilization(ttft_target_s, fixed, service, quantile, servers, scv)
        out[i, 0] = util
        out[i, 1] = prefill[i, 0] * util
        out[i, 2] = fixed + wait_quantile_s(servers, util, service, scv, quantile)
        out[i, 3] = servers
    return out


def decode_sweep(model, hw, tp, pp, ep, streams, context_avg, context_max, draft_tokens=0.0, accepted_tokens=1.0,
                 draft=None):
    """Decode breakdowns of many configurations at once (``speculative_decode_breakdown``: plain decode when
    ``draft_tokens`` is 0): ``tp, pp, ep, streams`` are equal-length arrays. Returns an (n, N_BREAKDOWN) array."""
    draft = np.zeros(L.N_MODEL) if draft is None else draft
    threads = threads_for(BREAKDOWN_WORK * len(tp))
    return _decode_sweep(model, draft, hw, tp, pp, ep, streams, float(context_avg), float(context_max),
                         float(draft_tokens), float(accepted_tokens), threads)


@njit_parallel
def _decode_sweep(model, draft, hw, tp, pp, ep, streams, context_avg, context_max, draft_tokens, accepted_tokens,
                  threads):
    n = tp.shape[0]
    out = np.empty((n, L.N_BREAKDOWN))
    threads = max(1, min(threads, n))
    bounds = chunk_bounds(n, threads)
    scratch = np.empty((threads, L.N_BREAKDOWN))
    for t in prange(threads):
        for i in range(bounds[t, 0], bounds[t, 1]):
            speculative_decode_breakdown(model, draft, hw, tp[i], pp[i], ep[i], streams[i], context_avg, context_max,
                                         draft_tokens, accepted_tokens, scratch[t], out[i])
    return out


def colocated_points(model, hw, wl, layouts, batches, draft_tokens=0.0, accepted_tokens=1.0, draft=None):
    """Every (layout, batch) of one system with the replica prefilling its own requests (MODEL.md 6), as the
    frontier, ``estimate`` and calibration see it: (n_layouts * nb, N_POINT) in slots P_*, row i * nb + k. The
    prefill of each layout is computed once; no queueing (one prompt's prefill alone is the TTFT)."""
    draft = np.zeros(L.N_MODEL) if draft is None else draft
    threads = threads_for(layouts.shape[0] * batches.shape[0])
    return _colocated_points(model, draft, hw, wl, layouts, batches, float(draft_tokens), float(accepted_tokens),
                             threads)


@njit_parallel
def _colocated_points(model, draft, hw, wl, layouts, batches, draft_tokens, accepted_tokens, threads):
    n, nb = layouts.shape[0], batches.shape[0]
    pre = prefill_per_layout(model, hw, layouts, wl[L.W_PREFILL_TOKENS])
    out = np.zeros((n * nb, L.N_POINT))
    threads = max(1, min(threads, n))
    bounds = chunk_bounds(n, threads)
    dec = np.empty((threads, L.N_BREAKDOWN))
    scratch = np.empty((threads, L.N_BREAKDOWN))
    for t in prange(threads):
        for i in range(bounds[t, 0], bounds[t, 1]):
            for k in range(nb):
                colocated_row(model, draft, hw, wl, layouts[i], batches[k], pre[i], draft_tokens, accepted_tokens,
                              scratch[t], dec[t], out[i * nb + k])
    return out


@njit
def colocated_row(model, draft, hw, wl, layout, batch, pre, draft_tokens, accepted_tokens, scratch, dec, row):
    """One (layout, batch) point of ``colocated_points`` into ``row`` (slots P_*), its layout's prefill ``pre``
    (rate, TTFT, power) given: the decode step, the requests served with their prompts prefilled in turn, and the
    power drawn over that mix."""
    prefill_s = wl[L.W_PREFILL_TOKENS] / pre[0]  # inf where the prompt does not fit: nothing served
    speculative_decode_breakdown(model, draft, hw, layout[0], layout[1], layout[2], batch, wl[L.W_CONTEXT_AVG],
                                 wl[L.W_CONTEXT_MAX], draft_tokens, accepted_tokens, scratch, dec)
    served = wl[L.W_OUTPUT_TOKENS] / colocated_request_s(wl[L.W_OUTPUT_TOKENS], dec[L.B_TIME_S], batch,
                                                         accepted_tokens, prefill_s)
    row[L.P_TPS_PER_USER] = served / batch
    row[L.P_TOKENS_PER_S] = served
    row[L.P_TTFT_S] = pre[1]
    row[L.P_DECODE_TPS_PER_USER] = dec[L.B_TPS_PER_USER]
    row[L.P_DECODE_TOKENS_PER_S] = dec[L.B_TOKENS_PER_S]
    # the share of its time spent prefilling draws the prefill pass's power
    share = prefill_s * served / wl[L.W_OUTPUT_TOKENS] if served > 0.0 else 0.0
    row[L.P_POWER_W] = loaded_power_w(dec[L.B_POWER_W], pre[2], share)
    row[L.P_FITS] = dec[L.B_FITS]
    row[L.P_BOUND] = dec[L.B_BOUND]


def colocated_point_per_hardware(model, hws, wl, layout, batch, draft_tokens=0.0, accepted_tokens=1.0, draft=None):
    """One (layout, batch) of ``colocated_points`` on each hardware vector of ``hws`` [m, N_HW] (the uncertainty
    bands' systems, each with one figure at its low or high): (m, N_POINT), row j the point on ``hws[j]``, the
    same figures ``colocated_points`` gives on that system alone."""
    draft = np.zeros(L.N_MODEL) if draft is None else draft
    return _colocated_point_per_hardware(model, draft, np.ascontiguousarray(hws, dtype=np.float64), wl,
                                         np.asarray(layout, dtype=np.float64), float(batch), float(draft_tokens),
                                         float(accepted_tokens))


@njit
def _colocated_point_per_hardware(model, draft, hws, wl, layout, batch, draft_tokens, accepted_tokens):
    m = hws.shape[0]
    out = np.zeros((m, L.N_POINT))
    dec, scratch = np.empty(L.N_BREAKDOWN), np.empty(L.N_BREAKDOWN)
    layouts = layout.reshape((1, 3))
    for j in range(m):
        pre = prefill_per_layout(model, hws[j], layouts, wl[L.W_PREFILL_TOKENS])
        colocated_row(model, draft, hws[j], wl, layout, batch, pre[0], draft_tokens, accepted_tokens, scratch, dec,
                      out[j])
    return out


def split_decode_sweep(attn_model, ffn_model, draft, hw_a, hw_f, chips_a, chips_f, ep_a, streams, context_avg,
                       context_max, draft_tokens, accepted_tokens, micro_batches):
    """``split_decode_breakdown`` for many (chips_a, chips_f, ep_a, streams) rows. Returns (n, N_SPLIT)."""
    threads = threads_for(SPLIT_ROW_WORK * len(chips_a))
    return _split_decode_sweep(attn_model, ffn_model, draft, hw_a, hw_f, chips_a, chips_f, ep_a, streams,
                               float(context_avg), float(context_max), float(draft_tokens),
                               float(accepted_tokens), float(micro_batches), threads)


@njit_parallel
def _split_decode_sweep(attn_model, ffn_model, draft, hw_a, hw_f, chips_a, chips_f, ep_a, streams, context_avg,
                        context_max, draft_tokens, accepted_tokens, micro_batches, threads):
    n = chips_a.shape[0]
    out = np.empty((n, L.N_SPLIT))
    threads = max(1, min(threads, n))
    bounds = chunk_bounds(n, threads)
    side = np.empty((threads, L.N_BREAKDOWN))
    for t in prange(threads):
        for i in range(bounds[t, 0], bounds[t, 1]):
            split_decode_breakdown(attn_model, ffn_model, draft, hw_a, hw_f, chips_a[i], chips_f[i], ep_a[i],
                                   streams[i], context_avg, context_max, draft_tokens, accepted_tokens, micro_batches,
                                   side[t], out[i])
    return out
