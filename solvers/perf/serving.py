"""Serving formulas, jitted, written once: speculative tokens per step, replica power, the colocated time share,
the one-server TTFT queue (M/M/1; a pool's M/G/c queue is ``solvers.perf.queue``), the residency of agentic
sessions' KV caches and the KV transfer between pools (MODEL.md 3.4, 6, 7, 9.6). The engine's hot loop, ``estimate``, the frontier and ``planner check`` all call these; the plain-Python
twins are in ``solvers.perf.twin``.
"""

from __future__ import annotations

import math

from solvers.jit import njit
from solvers.perf import queue
from solvers.perf.kernels import kv_bytes_per_chip, loaded_power_w, replica_power_w  # noqa: F401 - serving figures too
from solvers.perf.queue import MAX_PREFILL_UTILIZATION  # noqa: F401 - a serving figure too
from solvers.perf.slots import H_SO_BW, H_SO_LAT


@njit
def spec_tokens(draft_tokens, acceptance):
    """(query tokens per step, accepted tokens per step) for speculative decoding with ``draft_tokens`` drafted
    tokens each accepted with probability ``acceptance``, stopping at the first rejection (MODEL.md 3.4):
    accepted = (1 - a^(K+1)) / (1 - a)."""
    if draft_tokens <= 0:
        return 1.0, 1.0
    if acceptance >= 1.0:
        return draft_tokens + 1.0, draft_tokens + 1.0
    return draft_tokens + 1.0, (1.0 - acceptance ** (draft_tokens + 1)) / (1.0 - acceptance)


@njit
def decode_tokens_per_s(streams, accepted_tokens, interval_s):
    """Output tokens/s of a replica decoding ``streams`` streams, each keeping ``accepted_tokens`` per interval."""
    return streams * accepted_tokens / interval_s


@njit
def colocated_request_s(output_tokens, interval_s, streams, accepted_tokens, prefill_s):
    """Replica seconds one request costs when the replica also prefills it (MODEL.md 6): its ``output_tokens``
    decoded at ``streams * accepted_tokens / interval_s`` tokens/s, plus ``prefill_s`` of prefill."""
    return output_tokens * interval_s / (streams * accepted_tokens) + prefill_s


@njit
def decode_seconds(output_tokens, accepted_tokens, interval_s, quantile):
    """Seconds a disaggregated stream of ``output_tokens`` takes from its first token to its last at ``quantile``
    (OPTIMIZER.md 18): its whole steps, ceil(O / a), and the part of the step in progress it waits to join a running
    batch at (uniform over a step, so ``quantile`` of one). 60-token completions at 208 tok/s per user keeping 2.8 a
    step take 22 steps, 296 ms of the 300 the 200 tier allows; the join's 12 ms at p90 left them at 194."""
    return (math.ceil(output_tokens / accepted_tokens - 1e-9) + quantile) * interval_s


# Below this many prompts met on average, a colocated stream's count of them is summed term by term (Poisson); at
# and above it, the compound count is taken as normal (``prompts_beyond_share``).
POISSON_TERMS_BELOW = 50.0


@njit
def normal_tail(x):
    """P(N(0, 1) > x)."""
    return 0.5 * math.erfc(x / math.sqrt(2.0))


@njit
def prompts_beyond_share(mean_prompts, room_prompts, scv):
    """P(the prefill work a stream meets exceeds ``room_prompts`` mean prompts' worth), the prompts met a Poisson
    count of mean ``mean_prompts``, each a mean prompt's work times a length of squared coefficient of variation
    ``scv`` (MODEL.md 9.2): term by term below POISSON_TERMS_BELOW, n prompts' work normal (n, n scv), or exactly n
    at scv 0; beyond it the compound count's normal approximation (mean m, variance m (1 + scv))."""
    if room_prompts < 0.0:
        return 1.0
    m = mean_prompts
    if m <= 0.0:
        return 0.0
    if m >= POISSON_TERMS_BELOW:
        return normal_tail((room_prompts - m) / math.sqrt(m * (1.0 + scv)))
    total = 0.0
    last = int(m + 12.0 * math.sqrt(m) + 12.0)  # past it the Poisson weights are below 1e-12
    for n in range(1, last + 1):
        weight = math.exp(n * math.log(m) - m - math.lgamma(n + 1.0))
        if scv > 0.0:
            total += weight * normal_tail((room_prompts - n) / math.sqrt(n * scv))
        elif n > room_prompts:
            total += weight
    return min(total, 1.0)


@njit
def colocated_miss_share(output_tokens, interval_s, streams, accepted_tokens, prefill_s, scv, tier, shares):
    """The share of requests on a colocated replica of ``streams`` streams that see fewer than ``tier`` tokens/s
    (MODEL.md 9.2): a request of O tokens decodes in ceil(O / a) steps of ``interval_s`` and meets the prefill
    chunks of the prompts its replica takes meanwhile, streams x O / mean on average (a full batch turns over once
    per mean lifetime, the mean time share of ``colocated_request_s``), each ``prefill_s`` times a length of
    squared coefficient of variation ``scv``; it misses the tier when their work passes what O / tier leaves. The
    requests' lengths are ``shares`` x ``output_tokens`` (equal weights: quantile points of the output lengths;
    [1] for a fixed length). Short requests miss most: one long prompt's chunk is a larger part of their time."""
    total = 0.0
    for k in range(shares.shape[0]):
        o = max(shares[k] * output_tokens, 1.0)
        room_s = o / tier - math.ceil(o / accepted_tokens - 1e-9) * interval_s
        if room_s < -1e-9 * o / tier:
            total += 1.0  # its steps alone miss the tier
        elif prefill_s > 0.0:
            total += prompts_beyond_share(streams * o / output_tokens, max(room_s, 0.0) / prefill_s, scv)
    return total / shares.shape[0]


@njit
def wait_quantile_s(utilization, service_s, quantile):
    """The ``quantile`` (0..1) of the queueing wait of one M/M/1 server with mean service ``service_s`` at
    ``utilization``: the M/G/c queue of ``solvers.perf.queue`` at c = 1, scv = 1, where P(W > t) = rho exp(-(1 -
    rho) t / s), so t_q = s ln(rho / (1 - q)) / (1 - rho) when rho > 1 - q, else 0."""
    return queue.wait_quantile_s(1.0, utilization, service_s, 1.0, quantile)


@njit
def max_prefill_utilization(ttft_target_s, fixed_s, service_s, quantile):
    """The highest utilization of one M/M/1 prefill server at which fixed time + wait quantile stays within the
    target (``solvers.perf.queue.max_utilization`` at c = 1, scv = 1). 0 if even an idle server misses the target;
    at most MAX_PREFILL_UTILIZATION."""
    return queue.max_utilization(ttft_target_s, fixed_s, service_s, quantile, 1.0, 1.0)


@njit
def resident_share(resident_s_per_token, tps_per_user):
    """KV caches held per decoding stream: its own plus the agentic sessions waiting on a tool call that it
    brings along, by Little's law on the wait (MODEL.md 9.6): 1 + wait per token x tokens/s. 1 for chat."""
    return 1.0 + resident_s_per_token * tps_per_user


@njit
def kv_fits(held_weight_bytes, kv_bytes_per_stream, streams, resident, usable_bytes):
    """True when the weights and the KV caches of ``streams`` streams, each ``resident`` times over, fit."""
    return held_weight_bytes + kv_bytes_per_stream * streams * resident <= usable_bytes


@njit
def kv_transfer_s(model, hw, chips, prompt_tokens):
    """Seconds to move one prompt's KV cache (every layer) from a prefill replica of ``chips`` chips to a decode
    replica over scale-out, at the prefill replica's aggregate scale-out bandwidth (MODEL.md 7)."""
    nbytes = kv_bytes_per_chip(model, hw, 1.0, 1.0, 0.0, 1.0, prompt_tokens)
    return hw[H_SO_LAT] + nbytes / (chips * hw[H_SO_BW])
