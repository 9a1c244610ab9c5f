"""The candidate engine: score every (layout, speculative setting, batch) of one system for one workload, fast.

The performance model is ``solvers.perf_kernels``; this module only reorganises it for speed. Everything that does
not depend on the batch is computed once per layout (``layout_coefficients``, from the model's own functions), so
that scoring one batch in ``best_decode_per_layout`` is a handful of operations. ``tests/test_engine.py`` checks
that it agrees with a plain loop over ``decode_breakdown`` to rounding.

Only arrays and scalars cross in. Per-layout results go to preallocated per-iteration buffers and are reduced
after the hot loop, which keeps the batch loop free of running maxima.
"""

from __future__ import annotations

import math

import numpy as np

from solvers import layout as L
from solvers._numba import njit, njit_parallel, prange
from solvers.perf_kernels import (
    active_params_per_stage,
    context_layers,
    held_weight_params_per_chip,
    kv_bytes_per_chip,
    prefill_breakdown,
    read_weight_params_per_chip,
    stage_comm_time,
    stage_layers,
    tier_read_time,
    usable_bytes_per_chip,
)

# ---- per-layout coefficients ----------------------------------------------------------------------------
C_PP = 0
C_HELD_W = 1  # weight bytes held per chip
C_READ_W0 = 2  # weight bytes read per step, without routed experts
C_READ_W1 = 3  # bytes of one routed expert's share per chip, summed over the stage's MoE layers
C_EXPERTS = 4
C_LOG_MISS = 5  # ln(1 - k/E): the chance one token misses a given expert, in logs
C_KV_HELD = 6  # KV bytes held per chip per stream (longest context)
C_KV_READ = 7  # KV bytes read per chip per micro-batch stream (mean context)
C_COMPUTE = 8  # compute seconds per token of a stage step
C_COMM0 = 9  # communication seconds per stage step at zero tokens (latencies)
C_COMM1 = 10  # communication seconds per token
C_FLOOR = 11  # fixed seconds per stage step
C_USABLE = 12  # usable bytes per chip
C_CHIPS = 13
C_POWER_W = 14
N_COEF = 15


@njit
def layout_coefficients(model, hw, tp, pp, ep, context_avg, context_max, c):
    """Fill ``c`` with everything about decode on this layout that does not depend on the batch."""
    ls, _, moe = stage_layers(model, pp)
    wbytes = hw[L.H_WEIGHT_BYTES]
    c[C_PP] = pp
    c[C_HELD_W] = held_weight_params_per_chip(model, tp, pp, ep) * wbytes
    c[C_READ_W0] = read_weight_params_per_chip(model, tp, pp, ep, 0.0) * wbytes
    c[C_READ_W1] = moe * model[L.M_EXPERT_PARAMS] / tp * wbytes
    e = model[L.M_EXPERTS]
    c[C_EXPERTS] = e
    c[C_LOG_MISS] = math.log(1.0 - model[L.M_EXPERTS_PER_TOKEN] / e) if e > model[L.M_EXPERTS_PER_TOKEN] else -np.inf
    c[C_KV_HELD] = kv_bytes_per_chip(model, hw, tp, pp, ep, 1.0, context_max)
    c[C_KV_READ] = kv_bytes_per_chip(model, hw, tp, pp, ep, 1.0, context_avg)
    linear = 2.0 * active_params_per_stage(model, pp) / tp
    attn = context_avg * model[L.M_ATTN_FLOPS] * context_layers(model, ls, context_avg) / tp
    c[C_COMPUTE] = (linear / hw[L.H_PEAK_FLOPS] + attn / hw[L.H_ATTN_PEAK_FLOPS]) / hw[L.H_FLOPS_EFF]
    c[C_COMM0] = stage_comm_time(model, hw, tp, pp, ep, 0.0)
    c[C_COMM1] = stage_comm_time(model, hw, tp, pp, ep, 1.0) - c[C_COMM0]
    c[C_FLOOR] = ls * hw[L.H_LAYER_FLOOR_S]
    c[C_USABLE] = usable_bytes_per_chip(hw)
    c[C_CHIPS] = tp * pp
    c[C_POWER_W] = tp * pp * hw[L.H_RACK_POWER_W] / hw[L.H_CHIPS_PER_RACK]
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
def wait_quantile_s(utilization, service_s, quantile):
    """The ``quantile`` (0..1) of the queueing wait of an M/M/1 server with mean service ``service_s`` at
    ``utilization`` (MODEL.md 7): P(W > t) = rho exp(-(1 - rho) t / s), so t_q = s ln(rho / (1 - q)) / (1 - rho)
    when rho > 1 - q, else 0."""
    if utilization >= 1.0:
        return np.inf
    if utilization <= 1.0 - quantile:
        return 0.0
    return service_s * math.log(utilization / (1.0 - quantile)) / (1.0 - utilization)


@njit
def max_prefill_utilization(ttft_target_s, fixed_s, service_s, quantile):
    """The highest utilization of a prefill server at which fixed time + wait quantile stays within the target
    (bisection: the wait grows with utilization). 0 if even an idle server misses the target; at most 0.95."""
    if fixed_s > ttft_target_s:
        return 0.0
    lo, hi = 0.0, 0.95
    if fixed_s + wait_quantile_s(hi, service_s, quantile) <= ttft_target_s:
        return hi
    for _ in range(60):
        mid = 0.5 * (lo + hi)
        if fixed_s + wait_quantile_s(mid, service_s, quantile) <= ttft_target_s:
            lo = mid
        else:
            hi = mid
    return lo


@njit_parallel
def best_decode_per_layout(model, hw, layouts, pp_index, touched, batches, query_tokens, accepted_tokens,
                           context_avg, context_max, min_tps_per_user, prefill_rate, prefill_single_s,
                           prefill_tokens, output_tokens, ttft_target_s, quantile, resident_s_per_token):
    """For each (layout, speculative setting) pair, the batch with the most output tokens/s per replica among
    those that fit, reach ``min_tps_per_user`` and meet the TTFT target (MODEL.md 3 and 7).

    ``layouts`` is (n, 3) of (tp, pp, ep); ``pp_index[i]`` is the row of ``touched`` (from
    ``touched_experts_table``) for layout i's depth; ``query_tokens`` / ``accepted_tokens`` are the speculative
    settings (length s). Colocated serving: ``prefill_rate[i]`` prompt tokens/s and ``prefill_single_s[i]`` (one
    prompt's prefill alone) of the same layout; the replica also prefills ``prefill_tokens`` per request, which
    takes a share of its time from decode and queues new prompts. Decode only: pass prefill_rate = inf and
    ttft_target_s = inf. Agentic sessions keep their KV cache resident while they wait on tools: each decoding
    stream brings ``resident_s_per_token * its speed`` waiting sessions' KV along (MODEL.md 9.6); 0 for chat.
    Returns (n * s, 5): best output tokens/s (0 if none qualifies), its batch, tokens/s per
    user, TTFT quantile, prefill share of the replica's time.
    """
    n, s, nb = layouts.shape[0], query_tokens.shape[0], batches.shape[0]
    out = np.zeros((n * s, 5))
    room0 = hw[L.H_CAP] * hw[L.H_MEM_USABLE]
    inv_bw0 = 1.0 / (hw[L.H_BW] * hw[L.H_BW_EFF])
    for idx in prange(n * s):
        i, j = idx // s, idx % s
        q, a = query_tokens[j], accepted_tokens[j]
        c = np.empty(N_COEF)
        layout_coefficients(model, hw, layouts[i, 0], layouts[i, 1], layouts[i, 2], context_avg, context_max, c)
        pp, held_w, kvh, kvr = c[C_PP], c[C_HELD_W], c[C_KV_HELD], c[C_KV_READ]
        fixed = c[C_COMM0] + c[C_FLOOR]
        per_token = c[C_COMM1]
        prefill_s = prefill_tokens / prefill_rate[i]  # replica time one request's prefill takes
        row = touched[pp_index[i], j]
        compute = c[C_COMPUTE]
        interval = np.empty(nb)  # per-iteration buffers, reduced after the batch loops
        tput = np.empty(nb)
        ttft = np.full(nb, prefill_single_s[i])
        for k in range(nb):  # everything read from the fastest tier: no calls, no branches
            b = max(batches[k] / pp, 1.0)
            tokens = b * q
            memory = (c[C_READ_W0] + c[C_READ_W1] * row[k] + kvr * b) * inv_bw0
            interval[k] = pp * (max(memory, compute * tokens) + fixed + per_token * tokens)
        for k in range(nb):  # batches whose KV spills past the fastest tier: the full placement
            held_kv = kvh * batches[k]
            if held_w + held_kv > room0:
                b = max(batches[k] / pp, 1.0)
                tokens = b * q
                memory = tier_read_time(hw, held_w, c[C_READ_W0] + c[C_READ_W1] * row[k], held_kv, kvr * b)
                interval[k] = pp * (max(memory, compute * tokens) + fixed + per_token * tokens)
        if prefill_s == 0.0:  # decode only
            for k in range(nb):
                served = batches[k] * a / interval[k]
                resident = 1.0 + resident_s_per_token * served / batches[k]
                ok = (held_w + kvh * batches[k] * resident <= c[C_USABLE]) & (served / batches[k] >= min_tps_per_user)
                tput[k] = served if ok else 0.0
        else:  # colocated: each request also costs the replica its prefill, and prompts queue
            for k in range(nb):
                request_s = output_tokens * interval[k] / (batches[k] * a) + prefill_s
                served = output_tokens / request_s
                ttft[k] += wait_quantile_s(prefill_s / request_s, prefill_s, quantile)
                resident = 1.0 + resident_s_per_token * served / batches[k]
                ok = (held_w + kvh * batches[k] * resident <= c[C_USABLE]) & (served / batches[k] >= min_tps_per_user) & (
                    ttft[k] <= ttft_target_s)
                tput[k] = served if ok else 0.0
        best = np.argmax(tput)
        out[idx, 0] = tput[best]
        out[idx, 1] = batches[best]
        out[idx, 2] = tput[best] / batches[best]
        out[idx, 3] = ttft[best]
        out[idx, 4] = prefill_tokens / prefill_rate[i] * tput[best] / output_tokens
    return out


@njit
def prefill_capacity(prefill, transfer_s, prefill_tokens, ttft_target_s, quantile):
    """For each layout's (prompt tokens/s, one prompt's prefill s) and KV transfer time: the utilization that keeps
    the TTFT quantile (``max_prefill_utilization``), the prompt tokens/s served at it, and that TTFT.
    Returns (n, 3)."""
    n = prefill.shape[0]
    out = np.zeros((n, 3))
    for i in range(n):
        if prefill[i, 0] <= 0.0:
            continue
        service = prefill_tokens / prefill[i, 0]
        fixed = prefill[i, 1] + transfer_s[i]
        util = max_prefill_utilization(ttft_target_s, fixed, service, quantile)
        out[i, 0] = util
        out[i, 1] = prefill[i, 0] * util
        out[i, 2] = fixed + wait_quantile_s(util, service, quantile)
    return out


@njit
def prefill_per_layout(model, hw, layouts, prefill_tokens):
    """(prompt tokens/s with stages pipelined, one prompt's prefill time) for each (tp, pp, ep) layout. Serial:
    about 0.1 us a layout, less than a parallel region costs to start."""
    n = layouts.shape[0]
    out = np.zeros((n, 2))
    b = np.empty(L.N_BREAKDOWN)
    for i in range(n):
        prefill_breakdown(model, hw, layouts[i, 0], layouts[i, 1], layouts[i, 2], prefill_tokens, b)
        out[i, 0] = b[L.B_TOKENS_PER_S] if b[L.B_FITS] > 0.5 else 0.0
        out[i, 1] = b[L.B_TIME_S]
    return out
