"""Attention/FFN disaggregated decode (MODEL.md 10): attention and the KV cache on one pool of chips (A), the
FFN and expert matmuls on another (F), activations crossing between them twice per layer.

Each side is costed with the same ``decode_breakdown`` as any replica, on the part of the model it holds: the
attention part (attention weights, embeddings and LM head, KV cache) on A, the FFN part (dense FFNs, shared and
routed experts) on F. ``m`` micro-batches ping-pong between the sides so both stay busy.
"""

from __future__ import annotations

from solvers.jit import njit
from solvers.perf import slots as L
from solvers.perf.kernels import decode_breakdown, idle_power_w, loaded_power_w


@njit
def crossing_time(model, hw_a, hw_f, chips_a, chips_f, tokens):
    """Activations of ``tokens`` tokens from A to F and back, every layer: 2 L (latency + bytes / bandwidth) over
    the slower side's aggregate scale-out bandwidth. Each catalog latency is a path between two ends of its own
    kind, half at each end, so a path from A to F takes the mean of the two (MODEL.md 10)."""
    nbytes = tokens * model[L.M_HIDDEN] * hw_a[L.H_ACT_BYTES]
    bw = min(chips_a * hw_a[L.H_SO_BW], chips_f * hw_f[L.H_SO_BW])
    lat = 0.5 * (hw_a[L.H_SO_LAT] + hw_f[L.H_SO_LAT])
    return 2.0 * model[L.M_LAYERS] * (lat + nbytes / bw)


@njit
def split_decode_breakdown(attn_model, ffn_model, draft, hw_a, hw_f, chips_a, chips_f, ep_a, streams, context_avg,
                           context_max, draft_tokens, accepted_tokens, micro_batches, side, out):
    """Decode of ``streams`` streams with attention on ``chips_a`` chips of A (tensor parallel, or data-parallel
    attention when ``ep_a``) and the FFN on ``chips_f`` chips of F (experts spread over them). With speculative
    decoding each step verifies ``draft_tokens`` + 1 query tokens per stream and the drafter (model vector
    ``draft``) runs its ``draft_tokens`` steps on A, per micro-batch, with A's per-stream speculative work. Writes ``out`` (slots S_*); ``side`` is a
    scratch breakdown of the caller's."""
    b = max(streams / micro_batches, 1.0)
    query_tokens = draft_tokens + 1.0
    t_draft = 0.0
    draft_w = 0.0
    if draft_tokens > 0.0:
        decode_breakdown(draft, hw_a, chips_a, 1.0, ep_a, b, context_avg, context_max, 1.0, 1.0, side)
        t_draft = draft_tokens * side[L.B_TIME_S] + b * hw_a[L.H_SPEC_STREAM_S]
        draft_w = side[L.B_POWER_W]
    decode_breakdown(attn_model, hw_a, chips_a, 1.0, ep_a, b, context_avg, context_max, query_tokens, 1.0, side)
    t_attn = side[L.B_TIME_S] + t_draft  # A also runs the drafter
    busy_a_w = (side[L.B_POWER_W] * side[L.B_TIME_S] + draft_w * t_draft) / t_attn
    fits_a = side[L.B_FITS]
    # every micro-batch's KV stays resident on A: the fit is for all streams
    decode_breakdown(attn_model, hw_a, chips_a, 1.0, ep_a, streams, context_avg, context_max, query_tokens, 1.0,
                     side)
    fits_a = min(fits_a, side[L.B_FITS])
    decode_breakdown(ffn_model, hw_f, chips_f, 1.0, 1.0, b, context_avg, context_max, query_tokens, 1.0, side)
    t_ffn = side[L.B_ROOFLINE_S] + side[L.B_FLOOR_S]
    busy_f_w = side[L.B_POWER_W]
    fits_f = side[L.B_FITS]
    t_cross = crossing_time(attn_model, hw_a, hw_f, chips_a, chips_f, b * query_tokens)
    round_trip = t_attn + t_ffn + t_cross
    busiest = micro_batches * max(t_attn, max(t_ffn, 0.5 * t_cross))
    cycle = max(round_trip, busiest)
    out[L.S_TIME_S] = cycle
    out[L.S_ATTENTION_S] = t_attn
    out[L.S_FFN_S] = t_ffn
    out[L.S_CROSSING_S] = t_cross
    out[L.S_TPS_PER_USER] = accepted_tokens / cycle
    out[L.S_TOKENS_PER_S] = streams * accepted_tokens / cycle
    out[L.S_FITS_ATTENTION] = fits_a
    out[L.S_FITS_FFN] = fits_f
    # each side works m micro-batches' turns a cycle and idles the rest (MODEL.md 14)
    out[L.S_POWER_W] = (loaded_power_w(idle_power_w(hw_a, chips_a), busy_a_w, micro_batches * t_attn / cycle)
                        + loaded_power_w(idle_power_w(hw_f, chips_f), busy_f_w, micro_batches * t_ffn / cycle))
    if round_trip >= busiest:
        out[L.S_BOUND] = 3
    elif t_attn >= t_ffn and t_attn >= 0.5 * t_cross:
        out[L.S_BOUND] = 0
    elif t_ffn >= 0.5 * t_cross:
        out[L.S_BOUND] = 1
    else:
        out[L.S_BOUND] = 2
