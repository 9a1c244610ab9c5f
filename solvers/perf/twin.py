"""Plain-Python twin of ``solvers.perf.kernels``: the same model written a second time, readably and slowly.

Tests compare the two on random inputs. It reads the same vectors (``solvers.perf.slots``) but shares no code with the
jitted kernels, so a slip in one shows up as a disagreement.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from statistics import NormalDist

from solvers.perf import slots as L


@dataclass
class Replica:
    """Plain names for the model and hardware vectors, and the layout of one replica."""

    m: list
    h: list
    tp: float
    pp: float
    ep: float

    @property
    def stage_share(self) -> float:
        """Byte-balanced stages: the largest holds 1/pp of the model, or its largest unsplittable piece."""
        m = self.m
        if self.pp <= 1:
            return 1.0
        pieces = [m[L.M_LM_HEAD_PARAMS], m[L.M_EMBED_PARAMS] - m[L.M_LM_HEAD_PARAMS]]
        sizes = {"dense": m[L.M_ATTN_PARAMS] + m[L.M_DENSE_FFN_PARAMS],
                 "moe": m[L.M_ATTN_PARAMS] + m[L.M_SHARED_PARAMS] + m[L.M_EXPERTS] * m[L.M_EXPERT_PARAMS]}
        counts = {"dense": m[L.M_DENSE_LAYERS], "moe": m[L.M_MOE_LAYERS]}
        pieces += [sizes[k] for k in sizes if counts[k] > 0]
        total = sum(counts[k] * sizes[k] for k in sizes) + m[L.M_EMBED_PARAMS]
        if total <= 0:
            return 1.0 / self.pp
        return min(1.0, max(1.0 / self.pp, max(pieces) / total))

    @property
    def layers_per_stage(self) -> float:
        return self.m[L.M_LAYERS] * self.stage_share

    @property
    def data_parallel_attention(self) -> bool:
        return self.ep > 0

    def attention_weights_per_chip(self) -> float:
        whole = self.layers_per_stage * self.m[L.M_ATTN_PARAMS]
        return whole if self.data_parallel_attention else whole / self.tp

    def weights_held(self) -> float:
        m = self.m
        split = self.stage_share * m[L.M_DENSE_LAYERS] * m[L.M_DENSE_FFN_PARAMS]
        split += self.stage_share * m[L.M_MOE_LAYERS] * (m[L.M_SHARED_PARAMS] + m[L.M_EXPERTS] * m[L.M_EXPERT_PARAMS])
        split += self.stage_share * m[L.M_EMBED_PARAMS]
        return (split / self.tp + self.attention_weights_per_chip()) * self.h[L.H_WEIGHT_BYTES]

    def touched(self, tokens: float) -> float:
        e, k = self.m[L.M_EXPERTS], self.m[L.M_EXPERTS_PER_TOKEN]
        if e == 0:
            return 0.0
        miss_one = 1.0 - k / e  # chance that one token does not pick a given expert
        return e * (1.0 - miss_one**tokens)

    @property
    def expert_groups(self) -> float:
        """Under expert parallelism min(tp, E) groups of whole experts; otherwise every chip holds a slice of each."""
        e = self.m[L.M_EXPERTS]
        return max(1.0, min(self.tp, e)) if self.ep > 0 and e > 0 else 1.0

    def busiest(self, mean: float, variance: float, cap: float) -> float:
        """Normal approximation of the busiest group: mean + E[max of R normals] x sd (Blom, Tukey lambda)."""
        r = self.expert_groups
        if r <= 1:
            return mean
        p = (r - 0.375) / (r + 0.25)
        z = 4.91 * (p**0.14 - (1 - p) ** 0.14)
        return min(cap, max(mean + z * math.sqrt(variance), min(1.0, cap)))  # at least one unit lands

    def touched_busiest(self, tokens: float) -> float:
        """Experts the busiest group touches, times the groups: uniform routing, binomial within a group."""
        t, e, r = self.touched(tokens), self.m[L.M_EXPERTS], self.expert_groups
        if r <= 1 or e == 0:
            return t
        mean = t / r
        return r * self.busiest(mean, mean * (1 - t / e), min(e / r, t))

    def assignments_busiest(self, tokens: float) -> float:
        """Token-expert assignments of the busiest group, times the groups: multinomial over the groups."""
        a, r = tokens * self.m[L.M_EXPERTS_PER_TOKEN], self.expert_groups
        if r <= 1:
            return a
        return r * self.busiest(a / r, a / r * (1 - 1 / r), a)

    def matmul_groups(self, tokens: float, head_tokens: float, seconds_per_weight_byte: float) -> list:
        """(read seconds, matmul seconds) of each kernel group on the busiest chip: the weights split over tp (their
        rows the tokens, the LM head's ``head_tokens``), attention's weights replicated under data-parallel
        attention (rows: the chip's own tokens), the routed experts at the busiest group's touched experts and
        assignments (grouped matmuls at their factor of the dense rate)."""
        m, h = self.m, self.h
        rate = h[L.H_PEAK_FLOPS] * h[L.H_FLOPS_EFF]
        byte_s = h[L.H_WEIGHT_BYTES] * seconds_per_weight_byte
        head = self.stage_share * m[L.M_LM_HEAD_PARAMS]
        attention = self.layers_per_stage * m[L.M_ATTN_PARAMS]
        ffn = self.stage_share * (m[L.M_DENSE_LAYERS] * m[L.M_DENSE_FFN_PARAMS]
                                  + m[L.M_MOE_LAYERS] * m[L.M_SHARED_PARAMS])
        experts = self.stage_share * m[L.M_MOE_LAYERS] * m[L.M_EXPERT_PARAMS] / self.tp
        if self.data_parallel_attention:
            split_params, replicated = ffn, (attention * byte_s, 2 * attention * tokens / self.tp / rate)
        else:
            split_params, replicated = ffn + attention, (0.0, 0.0)
        split = ((split_params + head) / self.tp * byte_s,
                 2 * (split_params * tokens + head * head_tokens) / self.tp / rate)
        routed = (experts * self.touched_busiest(tokens) * byte_s,
                  2 * experts * self.assignments_busiest(tokens) / (rate * h[L.H_GROUPED_GEMM_FACTOR]))
        return [split, replicated, routed]

    def attention_seconds(self, pairs: float, flops_per_pair: float, other_flops: float = 0.0) -> float:
        """Matmuls at the attention peak, or one exponential per head per pair where the chip states their rate:
        the slower; then ``other_flops`` (indexer, linear layers: no exponentials) at the attention peak."""
        h = self.h
        rate = h[L.H_ATTN_PEAK_FLOPS] * h[L.H_FLOPS_EFF]
        seconds = pairs * flops_per_pair / rate
        if h[L.H_EXP_PER_S] > 0:
            seconds = max(seconds, pairs * self.m[L.M_ATTN_HEADS] / h[L.H_EXP_PER_S])
        return seconds + (other_flops / rate if other_flops > 0 else 0.0)

    def stream_seconds(self, streams: float) -> float:
        """Each stream's fixed attention time in every layer, on the chips that hold it."""
        if self.m[L.M_ATTN_KERNELS] <= 0:
            return 0.0
        per_chip = streams / self.tp if self.data_parallel_attention else streams
        return per_chip * self.layers_per_stage * self.h[L.H_ATTN_STREAM_S]

    def stream_cap(self) -> float:
        ranks = self.pp * (self.tp if self.data_parallel_attention else 1.0)
        return self.h[L.H_MAX_STREAMS_PER_RANK] * ranks

    def layer_kinds(self) -> tuple[float, float, float]:
        """(full-attention, sliding-window, linear-attention) layers of the stage."""
        m = self.m
        n_window = m[L.M_WINDOW_LAYERS] * self.stage_share
        n_linear = m[L.M_LINEAR_LAYERS] * self.stage_share
        return self.layers_per_stage - n_window - n_linear, n_window, n_linear

    def attended_layers(self, context: float, held: bool = False) -> float:
        """Layers of the stage weighted by how much of ``context`` each attends to (``held``: holds): a window
        layer its window, a sparse full-attention layer its top k (but it holds all), a linear layer nothing."""
        m = self.m
        if context <= 0 or self.layers_per_stage <= 0:
            return 0.0
        n_full, n_window, _ = self.layer_kinds()
        frac = min(context, m[L.M_WINDOW_TOKENS]) / context if m[L.M_WINDOW_LAYERS] > 0 else 0.0
        top = min(context, m[L.M_TOPK]) / context if m[L.M_TOPK] > 0 and not held else 1.0
        return n_full * top + n_window * frac

    def indexed_layers(self) -> float:
        """Full-attention layers with a sparse-attention indexer, which holds and reads a key per token."""
        return self.layer_kinds()[0] if self.m[L.M_INDEX_ELEMS] > 0 and self.layers_per_stage > 0 else 0.0

    def state_bytes(self, streams: float) -> float:
        """The streams' linear-attention states on one chip, split by head as far as the heads go."""
        m = self.m
        if m[L.M_LINEAR_LAYERS] <= 0:
            return 0.0
        shards = self.tp if self.data_parallel_attention else max(1.0, min(self.tp, m[L.M_STATE_HEADS]))
        return streams * self.layer_kinds()[2] * m[L.M_STATE_BYTES] / shards

    def kv_bytes(self, streams: float, context: float, read: bool = False) -> float:
        """KV bytes one chip holds for the streams (``read``: reads in one decode step, the states read and written
        back)."""
        m, kv = self.m, self.h[L.H_KV_BYTES]
        per_token = m[L.M_KV_ELEMS] * kv * self.attended_layers(context, held=not read)
        per_token += m[L.M_INDEX_ELEMS] * kv * self.indexed_layers()
        shards = self.tp if self.data_parallel_attention else max(1.0, min(self.tp, m[L.M_KV_HEADS]))
        return streams * context * per_token / shards + (2.0 if read else 1.0) * self.state_bytes(streams)

    def context_free_flops(self, tokens: float, context: float) -> float:
        """Per chip: the indexer's scores of every cached key and the linear layers' state updates."""
        m = self.m
        if self.layers_per_stage <= 0:
            return 0.0
        flops = tokens * context * self.indexed_layers() * m[L.M_INDEX_FLOPS]
        flops += tokens * self.layer_kinds()[2] * m[L.M_LINEAR_FLOPS]
        return flops / self.tp

    def usable(self) -> float:
        n = int(self.h[L.H_SERVING_TIERS])  # capacity-only tiers stream overflow, they never make a fit
        return sum(self.h[L.H_CAP + i] for i in range(n)) * self.h[L.H_MEM_USABLE]

    def byte_seconds(self, held_w, held_kv) -> tuple[float, float]:
        """Seconds per weight byte and per KV byte read: weights in the fastest tiers first, KV after them, each byte
        read from the tiers in proportion to what they hold; the overflow at the slowest tier."""
        h = self.h
        n = int(h[L.H_N_TIERS])
        rooms = [h[L.H_CAP + i] * h[L.H_MEM_USABLE] for i in range(n)]
        w_in, kv_in = [], []
        w_rest, kv_rest = held_w, held_kv
        for room in rooms:
            w = min(w_rest, room)
            kv = min(kv_rest, room - w)
            w_in.append(w)
            kv_in.append(kv)
            w_rest -= w
            kv_rest -= kv
        w_in[-1] += w_rest  # overflow is read at the slowest tier's speed
        kv_in[-1] += kv_rest
        per_w = per_kv = 0.0
        for i in range(n):
            speed = h[L.H_BW + i] * h[L.H_BW_EFF]
            per_w += (w_in[i] / held_w if held_w else 0.0) / speed
            per_kv += (kv_in[i] / held_kv if held_kv else 0.0) / speed
        return per_w, per_kv

    def comm_seconds(self, tokens: float) -> float:
        m, h, tp = self.m, self.h, self.tp
        msg = tokens * m[L.M_HIDDEN] * h[L.H_ACT_BYTES]
        domain = min(tp, h[L.H_SU_DOMAIN])
        nodes = tp / domain  # scale-up domains the group spans (wide expert parallelism)
        allreduce = 0.0 if tp <= 1 else h[L.H_COLL_LAT_S] + 2 * (domain - 1) / domain * msg / h[L.H_SU_BW]
        if nodes > 1:  # hierarchical: each chip's 1/D share rings across the domains over scale-out
            allreduce += h[L.H_SO_LAT] + 2 * (nodes - 1) / nodes * (msg / domain) / h[L.H_SO_BW]
        dense = self.stage_share * m[L.M_DENSE_LAYERS]
        moe = self.stage_share * m[L.M_MOE_LAYERS]
        if self.ep > 0 and tp > 1:
            received = msg * m[L.M_EXPERTS_PER_TOKEN] / tp
            from_domain = received * (domain - 1) / tp / h[L.H_SU_BW]
            from_others = received * (tp - domain) / tp / h[L.H_SO_BW]  # 0 inside one domain
            alltoall = h[L.H_COLL_LAT_S] + (h[L.H_SO_LAT] if nodes > 1 else 0.0) + max(from_domain, from_others)
            total = dense * allreduce + moe * 2 * alltoall
        else:
            total = (dense + moe) * 2 * allreduce
        return total + self.hop_seconds(tokens)

    def hop_seconds(self, tokens: float) -> float:
        h = self.h
        if self.pp <= 1:
            return 0.0
        msg = tokens * self.m[L.M_HIDDEN] * h[L.H_ACT_BYTES]
        if self.tp * self.pp <= h[L.H_SU_DOMAIN]:
            return h[L.H_SU_LAT] + msg / h[L.H_SU_BW]
        return h[L.H_SO_LAT] + msg / h[L.H_SO_BW]


def _finish(r: Replica, memory, compute, roofline, comm, streams, kernel_slot=L.H_KERNEL_S):
    m = r.m
    kernels = (r.layers_per_stage * m[L.M_ATTN_KERNELS] + r.stage_share * m[L.M_DENSE_LAYERS] * m[L.M_DENSE_FFN_KERNELS]
               + r.stage_share * m[L.M_MOE_LAYERS] * m[L.M_MOE_KERNELS])
    # the step overhead is paid once per token interval of pp stage steps; a prompt pass's kernels at their own latency
    floor = kernels * r.h[kernel_slot] + m[L.M_SAMPLES] * r.h[L.H_STEP_S] / r.pp + r.stream_seconds(streams)
    terms = [memory, compute, comm, floor]
    bound = max(range(4), key=lambda i: (terms[i], -i))
    step = roofline + comm + floor
    return step, floor, bound


def _step_terms(r: Replica, tokens, head_tokens, held_w, held_kv, read_kv, pairs, flops_per_pair, other_flops):
    """(memory, compute, roofline) of one stage step: the matmul groups' and attention's, each group's roofline its
    own max."""
    per_w, per_kv = r.byte_seconds(held_w, held_kv)
    groups = r.matmul_groups(tokens, head_tokens, per_w)
    groups.append((read_kv * per_kv, r.attention_seconds(pairs, flops_per_pair, other_flops)))
    return sum(g[0] for g in groups), sum(g[1] for g in groups), sum(max(g) for g in groups)


def decode(m, h, tp, pp, ep, streams, context_avg, context_max, query_tokens, accepted_tokens) -> dict:
    r = Replica(list(m), list(h), tp, pp, ep)
    b = max(streams / pp, 1.0)
    tokens = b * query_tokens
    held_w = r.weights_held()
    held_kv, read_kv = r.kv_bytes(streams, context_max), r.kv_bytes(b, context_avg, read=True)
    pairs = tokens * context_avg * r.attended_layers(context_avg) / tp
    memory, compute, roofline = _step_terms(r, tokens, tokens, held_w, held_kv, read_kv, pairs, m[L.M_ATTN_FLOPS],
                                            r.context_free_flops(tokens, context_avg))
    comm = r.comm_seconds(tokens)
    step, floor, bound = _finish(r, memory, compute, roofline, comm, b)
    interval = pp * step
    return {
        "time_s": interval, "memory_s": pp * memory, "compute_s": pp * compute, "roofline_s": pp * roofline,
        "comm_s": pp * comm,
        "floor_s": pp * floor, "tps_per_user": accepted_tokens / interval,
        "tokens_per_s": streams * accepted_tokens / interval,
        "fits": held_w + held_kv <= r.usable() and streams <= r.stream_cap(),
        "bound": bound, "power_w": replica_power_w(h, tp * pp) * draw_share(h, memory, compute, step),
    }


def loaded_prefill(m, h, tp, pp, ep, input_tokens) -> dict:
    """Twin of ``prefill_breakdown``: the lone prompt's times, and the rate of passes of as many prompts as the
    stack's token budget per pass holds."""
    out = prefill(m, h, tp, pp, ep, input_tokens)
    prompts = max(1.0, math.floor(h[L.H_PREFILL_TOKENS_PER_PASS] / input_tokens)) if input_tokens > 0 else 1.0
    if prompts > 1.0:
        loaded = prefill(m, h, tp, pp, ep, input_tokens, prompts)
        out["tokens_per_s"], out["power_w"] = loaded["tokens_per_s"], loaded["power_w"]
    return out


def prefill_over_lengths(m, h, layout, tokens, weights, tokens_at_quantile) -> tuple[float, float, float]:
    """Twin of ``sweep.prefill_over_lengths`` for one layout: (mean prompt tokens/s over the prompts, the lone
    prefill time at the quantile length, the draw at the mean length)."""
    tp, pp, ep = layout
    mean = sum(w * n for n, w in zip(tokens, weights))
    points = [loaded_prefill(m, h, tp, pp, ep, n) for n in tokens]
    at_mean = loaded_prefill(m, h, tp, pp, ep, mean)
    busy_s = sum(w * n / p["tokens_per_s"] for n, w, p in zip(tokens, weights, points))
    fits = all(p["fits"] for p in points) and at_mean["fits"]
    return (mean / busy_s if fits else 0.0, loaded_prefill(m, h, tp, pp, ep, tokens_at_quantile)["time_s"],
            at_mean["power_w"])


def prefill(m, h, tp, pp, ep, input_tokens, prompts=1.0) -> dict:
    """Twin of ``batch_prefill_breakdown``."""
    r = Replica(list(m), list(h), tp, pp, ep)
    n = input_tokens
    tokens = prompts * n
    held_w = r.weights_held()
    kv = r.kv_bytes(prompts, n)
    pairs = prompts * n * (n / 2.0) * r.attended_layers(n / 2.0) / tp  # each prompt attends to itself alone
    # only each prompt's last token needs logits
    memory, compute, roofline = _step_terms(r, tokens, prompts, held_w, kv, kv, pairs, m[L.M_PREFILL_ATTN_FLOPS],
                                            r.context_free_flops(tokens, n / 2.0))
    comm = r.comm_seconds(tokens)
    step, floor, bound = _finish(r, memory, compute, roofline, comm, prompts, L.H_PREFILL_KERNEL_S)
    last_hop = r.hop_seconds(tokens)  # nothing follows the last stage
    return {
        "time_s": pp * step - last_hop, "memory_s": pp * memory, "compute_s": pp * compute,
        "comm_s": pp * comm - last_hop,
        "floor_s": pp * floor, "tokens_per_s": tokens / step, "fits": held_w + kv <= r.usable(), "bound": bound,
        "power_w": replica_power_w(h, tp * pp) * draw_share(h, memory, compute, step),
    }


def speculative_decode(m, draft, h, tp, pp, ep, streams, context_avg, context_max, draft_tokens, accepted) -> dict:
    """Twin of ``speculative_decode_breakdown``: the target verifies K + 1 tokens a step; the drafter's K one-token
    steps, at each micro-batch of the last stage, lengthen the interval; its weights and KV are held too."""
    out = decode(m, h, tp, pp, ep, streams, context_avg, context_max, draft_tokens + 1.0, accepted)
    out["draft_s"] = 0.0
    if draft_tokens <= 0:
        return out
    micro = max(streams / pp, 1.0)
    d = decode(draft, h, tp, 1.0, ep, micro, context_avg, context_max, 1.0, 1.0)
    target, drafter = Replica(list(m), list(h), tp, pp, ep), Replica(list(draft), list(h), tp, 1.0, ep)
    held = (target.weights_held() + drafter.weights_held() + target.kv_bytes(streams, context_max)
            + drafter.kv_bytes(streams, context_max))
    out["draft_s"] = pp * (draft_tokens * d["time_s"] + micro * h[L.H_SPEC_STREAM_S])
    drafter_share = d["power_w"] / replica_power_w(h, tp)  # the drafter's draw, on the same chips
    out["power_w"] = (out["power_w"] * out["time_s"] + replica_power_w(h, tp * pp) * drafter_share * out["draft_s"]) / (
        out["time_s"] + out["draft_s"])
    out["time_s"] += out["draft_s"]
    out["tps_per_user"] = accepted / out["time_s"]
    out["tokens_per_s"] = streams * accepted / out["time_s"]
    out["fits"] = held <= target.usable() and streams <= target.stream_cap()
    return out


def split_decode(attn, ffn, ha, hf, chips_a, chips_f, ep_a, streams, context_avg, context_max, draft_tokens,
                 accepted_tokens, micro_batches, draft=None) -> dict:
    """Twin of ``solvers.perf.split.split_decode_breakdown``: attention part on A, FFN part on F (MODEL.md 10);
    the drafter, if any, runs on A."""
    b = max(streams / micro_batches, 1.0)
    query_tokens = draft_tokens + 1.0
    a_side = decode(attn, ha, chips_a, 1.0, ep_a, b, context_avg, context_max, query_tokens, 1.0)
    busy_a = a_side["power_w"] * a_side["time_s"]  # joules of one turn, divided by its length below
    if draft_tokens > 0:
        d = decode(draft, ha, chips_a, 1.0, ep_a, b, context_avg, context_max, 1.0, 1.0)
        t_draft = draft_tokens * d["time_s"] + b * ha[L.H_SPEC_STREAM_S]
        a_side["time_s"] += t_draft
        busy_a += d["power_w"] * t_draft
    busy_a /= a_side["time_s"]
    a_all = decode(attn, ha, chips_a, 1.0, ep_a, streams, context_avg, context_max, query_tokens, 1.0)
    f_side = decode(ffn, hf, chips_f, 1.0, 1.0, b, context_avg, context_max, query_tokens, 1.0)
    t_attn = a_side["time_s"]
    t_ffn = f_side["roofline_s"] + f_side["floor_s"]
    nbytes = b * query_tokens * attn[L.M_HIDDEN] * ha[L.H_ACT_BYTES]
    link = min(chips_a * ha[L.H_SO_BW], chips_f * hf[L.H_SO_BW])
    t_cross = 2 * attn[L.M_LAYERS] * ((ha[L.H_SO_LAT] + hf[L.H_SO_LAT]) / 2 + nbytes / link)  # half a path at each end
    cycle = max(t_attn + t_ffn + t_cross, micro_batches * max(t_attn, t_ffn, t_cross / 2))
    return {
        "time_s": cycle, "attention_s": t_attn, "ffn_s": t_ffn, "crossing_s": t_cross,
        "tps_per_user": accepted_tokens / cycle, "tokens_per_s": streams * accepted_tokens / cycle,
        "fits": a_side["fits"] and a_all["fits"] and f_side["fits"],
        "power_w": loaded_power_w(idle_power_w(ha, chips_a), busy_a, micro_batches * t_attn / cycle)
        + loaded_power_w(idle_power_w(hf, chips_f), f_side["power_w"], micro_batches * t_ffn / cycle),
    }


# ---- serving formulas (twins of solvers.perf.serving) ----------------------------------------------------------
def spec_tokens(draft_tokens, acceptance) -> tuple[float, float]:
    """Accepted tokens per step: sum over i = 0..K of acceptance^i (a draft token is kept while all before it were)."""
    if draft_tokens <= 0:
        return 1.0, 1.0
    return draft_tokens + 1.0, sum(acceptance**i for i in range(int(draft_tokens) + 1))


def replica_power_w(h, chips) -> float:
    return h[L.H_RACK_POWER_W] * (chips / h[L.H_CHIPS_PER_RACK])


def idle_power_w(h, chips) -> float:
    return replica_power_w(h, chips) * h[L.H_IDLE_POWER_SHARE]


def draw_share(h, memory, compute, step) -> float:
    """Twin of ``kernels.draw_share`` (MODEL.md 14)."""
    if step <= 0:
        return h[L.H_IDLE_POWER_SHARE]
    return min(1.0, h[L.H_IDLE_POWER_SHARE] + (h[L.H_MEMORY_POWER_SHARE] * memory
                                              + h[L.H_COMPUTE_POWER_SHARE] * compute) / step)


def loaded_power_w(idle_w, busy_w, busy_share) -> float:
    return idle_w + (busy_w - idle_w) * min(1.0, max(0.0, busy_share))


def colocated_tokens_per_s(output_tokens, interval_s, streams, accepted_tokens, prefill_s) -> float:
    """Output tokens/s when every request costs its decode (its tokens at the replica's decode rate) plus its
    prefill: O / (O / decode rate + prefill seconds)."""
    decode_rate = streams * accepted_tokens / interval_s
    return output_tokens / (output_tokens / decode_rate + prefill_s)


def colocated_miss_share(output_tokens, interval_s, streams, accepted_tokens, prefill_s, scv, tier, shares) -> float:
    """The share of a colocated replica's requests under ``tier``: each length of ``shares`` x the mean decodes in
    whole steps and meets a Poisson count (mean streams x its share) of prompts, each ``prefill_s`` x a length of
    relative variance ``scv``; summed term by term below 50 prompts, the compound count taken as normal above."""
    tail = NormalDist().cdf
    misses = []
    for share in shares:
        o = max(share * output_tokens, 1.0)
        room_s = o / tier - math.ceil(o / accepted_tokens - 1e-9) * interval_s
        if room_s < -1e-9 * o / tier:
            misses.append(1.0)
            continue
        room, m = max(room_s, 0.0) / prefill_s, streams * o / output_tokens
        if m >= 50.0:
            misses.append(1.0 - tail((room - m) / math.sqrt(m * (1.0 + scv))))
            continue
        miss = 0.0
        for n in range(1, int(m + 12.0 * math.sqrt(m) + 12.0) + 1):
            weight = math.exp(n * math.log(m) - m - math.lgamma(n + 1.0))
            miss += weight * ((1.0 - tail((room - n) / math.sqrt(n * scv))) if scv > 0 else float(n > room))
        misses.append(min(miss, 1.0))
    return sum(misses) / len(misses)


def wait_quantile_s(utilization, service_s, quantile) -> float:
    """M/M/1 waiting time: P(W > t) = rho exp(-t (1 - rho) / s); the smallest t with P(W > t) <= 1 - q."""
    if utilization >= 1.0:
        return math.inf
    tail = 1.0 - quantile
    if utilization <= tail:
        return 0.0
    return -math.log(tail / utilization) * service_s / (1.0 - utilization)


def max_prefill_utilization(ttft_target_s, fixed_s, service_s, quantile, cap=0.95) -> float:
    """The largest utilization in [0, cap] meeting the target, found by a fine scan refined by halving."""
    if fixed_s > ttft_target_s:
        return 0.0
    return largest_meeting(lambda u: fixed_s + wait_quantile_s(u, service_s, quantile) <= ttft_target_s, cap)


def largest_meeting(meets, cap) -> float:
    """The largest utilization in [0, cap] for which ``meets`` holds (it holds below any that it holds at)."""
    if meets(cap):
        return cap
    lo, hi = 0.0, cap
    while hi - lo > 1e-15:
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if meets(mid) else (lo, mid)
    return lo


def erlang_b(servers: int, offered_load: float) -> float:
    """Erlang B by its recursion B(0) = 1, B(k) = a B(k-1) / (k + a B(k-1)): each step a probability, so stable."""
    b = 1.0
    for k in range(1, servers + 1):
        b = offered_load * b / (k + offered_load * b)
    return b


def erlang_c(servers, utilization) -> float:
    """Erlang C from Erlang B, C = B / (1 - rho (1 - B)); c below 1 is one server, a fractional c the linear blend
    of its two whole neighbours."""
    if utilization <= 0.0:
        return 0.0
    if utilization >= 1.0:
        return 1.0
    c = max(float(servers), 1.0)

    def whole(n: int) -> float:
        b = erlang_b(n, n * utilization)
        return b / (1.0 - utilization * (1.0 - b))

    lo = int(math.floor(c))
    f = c - lo
    return whole(lo) if f == 0.0 else (1.0 - f) * whole(lo) + f * whole(lo + 1)


def mgc_wait_quantile_s(servers, utilization, service_s, scv, quantile) -> float:
    """Allen-Cunneen: P(W > t) = C(c, rho) exp(-2 c (1 - rho) t / (s (1 + scv))); the smallest t with
    P(W > t) <= 1 - q."""
    if utilization >= 1.0:
        return math.inf
    if utilization <= 0.0:
        return 0.0
    c = max(float(servers), 1.0)
    waits = erlang_c(c, utilization)
    if waits <= 1.0 - quantile:
        return 0.0
    rate = 2.0 * c * (1.0 - utilization) / (service_s * (1.0 + scv))
    return math.log(waits / (1.0 - quantile)) / rate


def mgc_max_utilization(ttft_target_s, fixed_s, service_s, quantile, servers, scv, cap=0.95) -> float:
    """The largest utilization in [0, cap] at which c servers meet the target, by halving."""
    if fixed_s > ttft_target_s:
        return 0.0
    return largest_meeting(
        lambda u: fixed_s + mgc_wait_quantile_s(servers, u, service_s, scv, quantile) <= ttft_target_s, cap)


def servers_for_load(load, capacity_per_server, max_servers, most=100_000.0) -> float:
    if capacity_per_server <= 0.0:
        return 1.0
    return float(max(1.0, min(math.floor(load / capacity_per_server), max_servers, most)))


def prefill_pool_servers(load, rate, ttft_target_s, fixed_s, service_s, quantile, scv, max_servers) -> float:
    """The largest whole c (at least 1, at most ``max_servers``) with c rho*(c) rate <= load, by counting up."""
    if rate <= 0.0 or mgc_max_utilization(ttft_target_s, fixed_s, service_s, quantile, 1, scv) <= 0.0:
        return 1.0  # no utilization meets the target: no pool of any size serves anything
    c = 1
    while c + 1 <= min(max_servers, 100_000.0) and (c + 1) * mgc_max_utilization(
            ttft_target_s, fixed_s, service_s, quantile, c + 1, scv) * rate <= load:
        c += 1
    return float(c)


def kv_transfer_s(m, h, chips, prompt_tokens) -> float:
    """One prompt's KV cache over every layer, from a prefill replica's scale-out links."""
    r = Replica(list(m), list(h), 1.0, 1.0, 0.0)
    return h[L.H_SO_LAT] + r.kv_bytes(1.0, prompt_tokens) / (chips * h[L.H_SO_BW])


def best_batch(m, h, wl, layout, batches, draft_tokens, accepted, prefill_rate=math.inf, prefill_single_s=0.0,
               draft=None, load=0.0, scv=1.0, max_servers=1.0, output_shares=(1.0,)):
    """Twin of the engine's reduction for one (layout, speculative setting): every batch through
    ``speculative_decode`` and the serving formulas above, the best output tokens/s that fits (the drafter and
    agentic residency included), reaches the tier and, colocated (finite ``prefill_rate``), meets the TTFT target
    with its prompts queued in a pool of servers sized for ``load`` output tokens/s (at most ``max_servers``).
    Returns (tokens/s, batch, tps, ttft)."""
    tp, pp, ep = layout
    prefill_s = wl[L.W_PREFILL_TOKENS] / prefill_rate
    best = (0.0, batches[0], 0.0, prefill_single_s)
    for b in batches:
        d = speculative_decode(m, draft, h, tp, pp, ep, b, wl[L.W_CONTEXT_AVG], wl[L.W_CONTEXT_MAX], draft_tokens,
                               accepted)
        ttft = prefill_single_s
        if prefill_s > 0:
            served = colocated_tokens_per_s(wl[L.W_OUTPUT_TOKENS], d["time_s"], b, accepted, prefill_s)
            share = prefill_s * served / wl[L.W_OUTPUT_TOKENS]
            servers = servers_for_load(load, served, max_servers)
            ttft += mgc_wait_quantile_s(servers, share, prefill_s, scv, wl[L.W_TTFT_QUANTILE])
        else:
            served = d["tokens_per_s"]
        tps = served / b
        out, tier = wl[L.W_OUTPUT_TOKENS], wl[L.W_MIN_TPS_PER_USER]
        if prefill_s == 0:  # whole steps of a mean answer and the join to a running batch at the percentile
            steps = math.ceil(out / accepted - 1e-9) + wl[L.W_TTFT_QUANTILE]
            held_tier = steps * d["time_s"] <= out / tier * (1 + 1e-9)
        else:  # the requests under the tier past the prefill chunks they meet
            miss = colocated_miss_share(out, d["time_s"], b, accepted, prefill_s, scv, tier, output_shares)
            held_tier = miss <= (1.0 - wl[L.W_TTFT_QUANTILE]) * (1.0 + 1e-9)
        r = Replica(list(m), list(h), tp, pp, ep)
        weights, kv = r.weights_held(), r.kv_bytes(b, wl[L.W_CONTEXT_MAX])
        if draft_tokens > 0:
            dr = Replica(list(draft), list(h), tp, 1.0, ep)
            weights, kv = weights + dr.weights_held(), kv + dr.kv_bytes(b, wl[L.W_CONTEXT_MAX])
        held = weights + kv * (1.0 + wl[L.W_RESIDENT_S_PER_TOKEN] * tps)
        ok = (held <= r.usable() and tps >= wl[L.W_MIN_TPS_PER_USER] and held_tier
              and (prefill_s == 0 or ttft <= wl[L.W_TTFT_S]))
        ok = ok and b <= r.stream_cap()
        if ok and served > best[0]:
            best = (served, b, tps, ttft)
    return best
