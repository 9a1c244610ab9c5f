"""The simulator of one workload's pools (docs/MODEL.md 16), jitted: arrivals (Poisson, or a trace replayed),
a router, prefill pools as c servers fed in arrival order (each prompt to the server with the least work left,
which is an M/G/c first-come-first-served queue), decode replicas batching continuously, and colocated replicas
whose steps carry prefill chunks beside the decode batch.

Time advances by events. A decode replica's steps all last ``step_s[b]`` while its batch ``b`` does not change, so
it jumps from one change to the next: a stream finishing, a stream joining (at the end of the step in progress),
a prefill chunk (one step at a time). The twin (``solvers.sim.twin``) handles every step as an event and serves
each prefill pool from one central queue; both draw the same requests from ``solvers.sim.rng``.

Roles of a row: ``PREFILL``, ``DECODE`` (an attention row of a split is one too), ``COLOCATED``, ``API`` (served
off-site: counted, not simulated). Per request ``DRAWS_PER_REQUEST`` uniforms, slots ``U_*``.
"""

from __future__ import annotations

import math

import numpy as np

from solvers.jit import njit
from solvers.sim.heap import heap_pop, heap_push, heap_sift_down
from solvers.sim.rng import DRAWS_PER_REQUEST, from_quantiles, uniform

PREFILL, DECODE, COLOCATED, API = 0, 1, 2, 3
U_GAP, U_INPUT, U_OUTPUT, U_DECODE_ROW, U_PREFILL_ROW, U_REPLICA_A, U_REPLICA_B, U_TOOL = 0, 1, 2, 3, 4, 5, 6, 7
EV_ARRIVAL, EV_DECODE, EV_REPLICA, EV_TURN = 0, 1, 2, 3  # EV_TURN: a session's next call, after its tool
EV_SHIFT = 1 << 40  # an event's code: type * EV_SHIFT + the request or server it concerns
# counts[]
C_ARRIVED, C_FINISHED, C_API, C_CREATED, C_EVENTS, C_TRUNCATED, C_MET, C_DROPPED = 0, 1, 2, 3, 4, 5, 6, 7
N_COUNTS = 8


@njit
def interp_log(xs, ys, base, n, x):
    """ys at x, linear in log x between the ``n`` points ``xs[base:base+n]`` (ascending), flat beyond them."""
    if x <= xs[base]:
        return ys[base]
    if x >= xs[base + n - 1]:
        return ys[base + n - 1]
    lo, hi = 0, n - 1
    while hi - lo > 1:
        mid = (lo + hi) >> 1
        if xs[base + mid] <= x:
            lo = mid
        else:
            hi = mid
    x0, x1 = math.log(xs[base + lo]), math.log(xs[base + hi])
    w = (math.log(x) - x0) / (x1 - x0)
    return ys[base + lo] + w * (ys[base + hi] - ys[base + lo])


@njit
def hist_bin(nb, lo_log10, bins_per_decade, x):
    """The log bin of ``x`` among ``nb`` (the first and last take what falls outside)."""
    if x <= 0.0:
        return 0
    k = int(math.floor((math.log10(x) - lo_log10) * bins_per_decade))
    return min(max(k, 0), nb - 1)


@njit
def hist_add(hist, lo_log10, bins_per_decade, x):
    hist[hist_bin(hist.shape[0], lo_log10, bins_per_decade, x)] += 1


@njit
def pick_row(weights, roles, prefill_side, u):
    """The row of cumulative share ``u`` among the rows of one side (prefill rows, or the rows that decode)."""
    total = 0.0
    for r in range(weights.shape[0]):
        if (roles[r] == PREFILL) == prefill_side:
            total += weights[r]
    acc = 0.0
    last = -1
    for r in range(weights.shape[0]):
        if (roles[r] == PREFILL) == prefill_side and weights[r] > 0.0:
            acc += weights[r]
            last = r
            if u * total < acc:
                return r
    return last


@njit
def overlap(a, b, lo, hi):
    """Length of [a, b] within [lo, hi]."""
    x, y = max(a, lo), min(b, hi)
    return y - x if y > x else 0.0


# ---- state matrices: one row per server, request or row; these name their columns ------------------------------
# servers, floats
SF_CUR_START, SF_CUR_DT, SF_STEP_TOK, SF_LAST_T, SF_PQ_TOKENS, SF_SPEED, SF_KV_TOKENS = 0, 1, 2, 3, 4, 5, 6
N_SF = 7
# servers, ints
SI_ROW, SI_HBASE, SI_HSIZE, SI_CUR_K, SI_TARGET, SI_VERSION = 0, 1, 2, 3, 4, 5
SI_PEND_HEAD, SI_PEND_TAIL, SI_PEND_N, SI_PQ_HEAD, SI_PQ_TAIL, SI_PQ_N = 6, 7, 8, 9, 10, 11
N_SI = 12
# requests, floats and ints
RF_ARRIVE, RF_IN, RF_PREFILL, RF_OUT, RF_REM, RF_FIRST, RF_DONE, RF_FIRST_PROMPT, RF_TOOL_S = 0, 1, 2, 3, 4, 5, 6, 7, 8
N_RF = 9
RI_ROW, RI_NEXT, RI_NUM, RI_PREFILL_ROW, RI_TURN = 0, 1, 2, 3, 4  # RI_NUM: the call's number (its draws; -1: free)
N_RI = 5
# rows: parameters (ints, floats) and state
RP_ROLE, RP_C0, RP_C, RP_BATCH, RP_STEP_OFF, RP_PRE_OFF = 0, 1, 2, 3, 4, 5
N_RP = 6
RW_WEIGHT, RW_TOKENS_PER_STEP, RW_KV_LAT_S, RW_KV_S_PER_TOKEN, RW_CHUNK, RW_KV_CAP_TOKENS = 0, 1, 2, 3, 4, 5
N_RW = 6
RS_HEAD, RS_TAIL, RS_FREE = 0, 1, 2
N_RS = 3
# scalar parameters
P_WARMUP_S, P_DURATION_S, P_HIST_LO_LOG10, P_HIST_BINS_PER_DECADE, P_TTFT_TARGET_S, P_TPOT_TARGET_S = 0, 1, 2, 3, 4, 5
P_TURNS, P_TOOL_GAP_S, P_TURN_GROWTH = 6, 7, 8  # agentic sessions: calls each, the wait between, prompt growth a call
N_P = 9


@njit
def in_window(params, t):
    return params[P_WARMUP_S] <= t < params[P_DURATION_S]


@njit
def list_push(head, tail, nxt, owner, i):
    """Append request ``i`` to the list of ``owner`` whose head and tail are ``head[owner]``, ``tail[owner]``."""
    nxt[i] = -1
    if tail[owner] < 0:
        head[owner] = i
    else:
        nxt[tail[owner]] = i
    tail[owner] = i


@njit
def list_pop(head, tail, nxt, owner):
    i = head[owner]
    head[owner] = nxt[i]
    if head[owner] < 0:
        tail[owner] = -1
    nxt[i] = -1
    return i


@njit
def least_loaded(si, c0, c, ua, ub):
    """The less loaded (streams held, joining and queued for prefill) of two servers of a row drawn at random:
    the power of two choices that engines' routers use."""
    a = c0 + min(int(ua * c), c - 1)
    b = c0 + min(int(ub * c), c - 1)
    la = si[a, SI_HSIZE] + si[a, SI_PEND_N] + si[a, SI_PQ_N]
    lb = si[b, SI_HSIZE] + si[b, SI_PEND_N] + si[b, SI_PQ_N]
    if lb < la or (lb == la and b < a):
        return b
    return a


@njit
def kv_need(rf, i):
    """KV tokens a stream holds by its end: its prompt and its output."""
    return rf[i, RF_IN] + rf[i, RF_OUT]


@njit
def has_room(si, sf, rw, s, r, batch, need):
    """Replica ``s`` of row ``r`` can take a stream needing ``need`` KV tokens: a slot of its batch, and KV room
    (reserved for the stream's whole context at admission, so nothing is ever preempted; an empty replica takes
    any stream, however long)."""
    held = si[s, SI_HSIZE] + si[s, SI_PEND_N]
    if held >= batch:
        return False
    return held == 0 or sf[s, SF_KV_TOKENS] + need <= rw[r, RW_KV_CAP_TOKENS] * (1 + 1e-12)


@njit
def prompt_room(si, s, batch):
    """Colocated replica ``s`` has a slot for one more prompt: its streams, those joining and the prompts it
    prefills are fewer than its batch."""
    return si[s, SI_HSIZE] + si[s, SI_PEND_N] + si[s, SI_PQ_N] < batch


@njit
def place_prompt(i, s, r, rs, sf, si, rf, nxt):
    """Prompt ``i`` joins colocated replica ``s``'s prefill queue and takes one of its row's free slots."""
    list_push(si[:, SI_PQ_HEAD], si[:, SI_PQ_TAIL], nxt, s, i)
    si[s, SI_PQ_N] += 1
    sf[s, SF_PQ_TOKENS] += rf[i, RF_REM]
    rs[r, RS_FREE] -= 1


@njit
def admissible_prompt_tokens(si, sf, rw, rf, nxt, s, r, batch):
    """The prompt tokens colocated replica ``s`` may prefill in its next step: those of the prompts at the head of
    its queue that each find a slot and KV room once those ahead of them have theirs. A prompt prefilled has its
    first token and takes its slot, so a step that prefilled more prompts than the replica has slots for left the
    rest with a first token and nowhere to decode: their time per token held another stream's whole life (at batch
    1, 40% of requests at half their speed)."""
    held = si[s, SI_HSIZE] + si[s, SI_PEND_N]
    kv = sf[s, SF_KV_TOKENS]
    tokens = 0.0
    h = si[s, SI_PQ_HEAD]
    while h >= 0 and held < batch:
        need = kv_need(rf, h)
        if held > 0 and kv + need > rw[r, RW_KV_CAP_TOKENS] * (1 + 1e-12):
            break
        tokens += rf[h, RF_REM]
        held += 1
        kv += need
        h = nxt[h]
    return tokens


@njit
def steps_for(tokens, per_step):
    """Decode steps a stream of ``tokens`` output tokens takes at ``per_step`` kept tokens a step."""
    return max(1, int(math.ceil(tokens / per_step - 1e-9)))


@njit
def record(i, rf, ri, requests_out):
    """Call ``i``'s row copied out, where requests are recorded."""
    num = ri[i, RI_NUM]
    if num < requests_out.shape[0]:
        requests_out[num, :] = rf[i, :]


@njit
def release(i, rf, ri, requests_out, free_slots):
    """Request slot ``i`` is done with: its row recorded, the slot freed."""
    record(i, rf, ri, requests_out)
    ri[i, RI_NUM] = -1
    free_slots[0] += 1
    free_slots[free_slots[0]] = i


@njit
def finish(i, t, params, rf, ri, hists, counts, requests_out, free_slots, ev, n_ev):
    """Call ``i``'s last token at ``t``: its TTFT and time per token into the workload's histograms (and its TTFT
    into its prefill row's), if it arrived within the window; then its session's next call after the tool wait,
    if it has one that arrives within the window, keeps the slot; else the slot is freed. Returns the event heap's
    new size."""
    hist_ttft, hist_tpot, hist_row_ttft = hists
    rf[i, RF_DONE] = t
    if in_window(params, rf[i, RF_ARRIVE]):
        counts[C_FINISHED] += 1
        lo, bpd = params[P_HIST_LO_LOG10], params[P_HIST_BINS_PER_DECADE]
        ttft = rf[i, RF_FIRST] - rf[i, RF_ARRIVE]
        tpot = (t - rf[i, RF_FIRST]) / rf[i, RF_OUT]
        hist_add(hist_ttft, lo, bpd, ttft)
        hist_add(hist_tpot, lo, bpd, tpot)
        hist_row_ttft[ri[i, RI_PREFILL_ROW], hist_bin(hist_row_ttft.shape[1], lo, bpd, ttft)] += 1
        if ttft <= params[P_TTFT_TARGET_S] and tpot <= params[P_TPOT_TARGET_S]:
            counts[C_MET] += 1
    nxt_t = t + rf[i, RF_TOOL_S]
    if ri[i, RI_TURN] + 1 < params[P_TURNS] and nxt_t < params[P_DURATION_S]:
        record(i, rf, ri, requests_out)
        return schedule(ev, n_ev, nxt_t, EV_TURN, i, 0)
    release(i, rf, ri, requests_out, free_slots)
    return n_ev


@njit
def schedule(ev, n_ev, t, typ, ident, ver):
    ev_t, ev_code, ev_ver = ev
    return heap_push(ev_t, ev_code, ev_ver, 0, n_ev, t, typ * EV_SHIFT + ident, ver)


@njit
def boundary(s, t, idle, params, rp, rw, rs, sf, si, rf, ri, fin, step_s, pre, ev, n_ev, hists, counts, row_busy,
         requests_out, free_slots):
    """Replica ``s`` at the end of step ``si[s, SI_TARGET]`` (or, ``idle``, woken at ``t``): streams whose last
    step it was finish, the step's prefill chunk is counted (colocated: prompts it completes have their first token
    now), joining and queued streams take free slots, and the next step starts. Its event is the next step's end
    while something joins or prefills, else the end of the step in which the next stream finishes: every step
    between lasts the same. Returns the event heap's new size."""
    fin_key, fin_req, fin_pad = fin
    pre_n, pre_lone, pre_rate, n_points = pre
    r = si[s, SI_ROW]
    batch = rp[r, RP_BATCH]
    base = si[s, SI_HBASE]
    nxt = ri[:, RI_NEXT]
    j = si[s, SI_CUR_K] - 1 if idle else si[s, SI_TARGET]
    row_busy[r] += si[s, SI_HSIZE] * overlap(sf[s, SF_LAST_T], t, params[P_WARMUP_S], params[P_DURATION_S])
    sf[s, SF_LAST_T] = t
    while si[s, SI_HSIZE] > 0 and fin_key[base] <= j:
        i = fin_req[base]
        si[s, SI_HSIZE] = heap_pop(fin_key, fin_req, fin_pad, base, si[s, SI_HSIZE])
        rs[r, RS_FREE] += 1
        sf[s, SF_KV_TOKENS] -= kv_need(rf, i)
        n_ev = finish(i, t, params, rf, ri, hists, counts, requests_out, free_slots, ev, n_ev)
    budget = 0.0 if idle else sf[s, SF_STEP_TOK]
    sf[s, SF_STEP_TOK] = 0.0
    while budget > 1e-9 and si[s, SI_PQ_HEAD] >= 0:
        h = si[s, SI_PQ_HEAD]
        take = min(budget, rf[h, RF_REM])
        rf[h, RF_REM] -= take
        budget -= take
        sf[s, SF_PQ_TOKENS] -= take
        if rf[h, RF_REM] <= 1e-9:
            list_pop(si[:, SI_PQ_HEAD], si[:, SI_PQ_TAIL], nxt, s)
            si[s, SI_PQ_N] -= 1
            rf[h, RF_FIRST] = t
            list_push(si[:, SI_PEND_HEAD], si[:, SI_PEND_TAIL], nxt, s, h)
            si[s, SI_PEND_N] += 1  # its slot was taken when it joined the queue (place_prompt)
            sf[s, SF_KV_TOKENS] += kv_need(rf, h)
    per_step = rw[r, RW_TOKENS_PER_STEP]
    while si[s, SI_PEND_HEAD] >= 0 and si[s, SI_HSIZE] < batch:
        i = list_pop(si[:, SI_PEND_HEAD], si[:, SI_PEND_TAIL], nxt, s)
        si[s, SI_PEND_N] -= 1
        si[s, SI_HSIZE] = heap_push(fin_key, fin_req, fin_pad, base, si[s, SI_HSIZE],
                                    j + steps_for(rf[i, RF_OUT], per_step), i, 0)
    while rp[r, RP_ROLE] == COLOCATED and rs[r, RS_HEAD] >= 0 and prompt_room(si, s, batch):
        place_prompt(list_pop(rs[:, RS_HEAD], rs[:, RS_TAIL], nxt, r), s, r, rs, sf, si, rf, nxt)
    while rp[r, RP_ROLE] != COLOCATED and rs[r, RS_HEAD] >= 0 and has_room(si, sf, rw, s, r, batch,
                                                                            kv_need(rf, rs[r, RS_HEAD])):
        i = list_pop(rs[:, RS_HEAD], rs[:, RS_TAIL], nxt, r)
        rs[r, RS_FREE] -= 1
        sf[s, SF_KV_TOKENS] += kv_need(rf, i)
        si[s, SI_HSIZE] = heap_push(fin_key, fin_req, fin_pad, base, si[s, SI_HSIZE],
                                    j + steps_for(rf[i, RF_OUT], per_step), i, 0)
    # the next step: the batch's decode step, plus a prefill chunk while prompts wait and slots remain
    si[s, SI_CUR_K] = j + 1
    sf[s, SF_CUR_START] = t
    si[s, SI_VERSION] += 1
    b = si[s, SI_HSIZE]
    tok = 0.0
    if rp[r, RP_ROLE] == COLOCATED and si[s, SI_PQ_HEAD] >= 0:
        tok = min(rw[r, RW_CHUNK], admissible_prompt_tokens(si, sf, rw, rf, nxt, s, r, batch))
    if b == 0 and tok <= 0.0:
        sf[s, SF_CUR_DT] = 0.0
        return n_ev
    dt = step_s[rp[r, RP_STEP_OFF] + b - 1] if b > 0 else 0.0
    if tok > 0.0:
        h = si[s, SI_PQ_HEAD]
        dt += tok / interp_log(pre_n, pre_rate, rp[r, RP_PRE_OFF], n_points, rf[h, RF_PREFILL])
    dt /= sf[s, SF_SPEED]
    sf[s, SF_CUR_DT] = dt
    sf[s, SF_STEP_TOK] = tok
    if tok > 0.0 or si[s, SI_PEND_HEAD] >= 0:
        si[s, SI_TARGET] = j + 1
        return schedule(ev, n_ev, t + dt, EV_REPLICA, s, si[s, SI_VERSION])
    f = int(fin_key[base])
    si[s, SI_TARGET] = f
    return schedule(ev, n_ev, t + (f - j) * dt, EV_REPLICA, s, si[s, SI_VERSION])


@njit
def admit(i, r, t, seed, params, rp, rw, rs, sf, si, rf, ri, fin, step_s, pre, ev, n_ev, hists, counts, row_busy,
         requests_out, free_slots):
    """A prefilled stream reaches decode row ``r``: to the less loaded of two replicas, to any replica with room if
    both are full, else to the row's queue (first come, first served as slots free). A busy replica takes it at the
    end of its step in progress (its event moves there if it was later); an idle one at once."""
    nxt = ri[:, RI_NEXT]
    batch = rp[r, RP_BATCH]
    c0, c = rp[r, RP_C0], rp[r, RP_C]
    base = ri[i, RI_NUM] * DRAWS_PER_REQUEST
    need = kv_need(rf, i)
    s = least_loaded(si, c0, c, uniform(seed, base + U_REPLICA_A), uniform(seed, base + U_REPLICA_B))
    if rs[r, RS_HEAD] >= 0 or not has_room(si, sf, rw, s, r, batch, need):
        s = -1
        if rs[r, RS_HEAD] < 0 and rs[r, RS_FREE] > 0:  # first come, first served: none passes the row's queue
            for k in range(c0, c0 + c):
                if has_room(si, sf, rw, k, r, batch, need):
                    s = k
                    break
    if s < 0:
        list_push(rs[:, RS_HEAD], rs[:, RS_TAIL], nxt, r, i)
        return n_ev
    list_push(si[:, SI_PEND_HEAD], si[:, SI_PEND_TAIL], nxt, s, i)
    si[s, SI_PEND_N] += 1
    rs[r, RS_FREE] -= 1
    sf[s, SF_KV_TOKENS] += need
    return wake(s, t, params, rp, rw, rs, sf, si, rf, ri, fin, step_s, pre, ev, n_ev, hists, counts, row_busy,
                requests_out, free_slots)


@njit
def wake(s, t, params, rp, rw, rs, sf, si, rf, ri, fin, step_s, pre, ev, n_ev, hists, counts, row_busy,
         requests_out, free_slots):
    """Replica ``s`` has new work at ``t``: an idle one starts a step now; a busy one ends its step in progress at
    its usual time, and its event moves there if it was set later (a jump over several steps)."""
    if sf[s, SF_CUR_DT] == 0.0:
        return boundary(s, t, True, params, rp, rw, rs, sf, si, rf, ri, fin, step_s, pre, ev, n_ev, hists, counts,
                        row_busy, requests_out, free_slots)
    dt = sf[s, SF_CUR_DT]
    j = si[s, SI_CUR_K] + int(math.floor((t - sf[s, SF_CUR_START]) / dt))
    if j < si[s, SI_TARGET]:
        si[s, SI_TARGET] = j
        si[s, SI_VERSION] += 1
        n_ev = schedule(ev, n_ev, sf[s, SF_CUR_START] + (j - si[s, SI_CUR_K] + 1) * dt, EV_REPLICA, s,
                        si[s, SI_VERSION])
    return n_ev


@njit
def colocated_replica(rp, rs, si, r, ua, ub):
    """Where a prompt for colocated row ``r`` goes: the less loaded of two replicas if it has a slot, else any
    replica with one, else none (-1: the row's queue), and none while the row's queue holds an earlier prompt. A
    prompt left on a full replica waited for that replica alone (at batch 1, 12 replicas: a p99 TTFT of 1.36 s
    against the 1 s the pool's queue of slots gives)."""
    batch = rp[r, RP_BATCH]
    if rs[r, RS_HEAD] >= 0:
        return -1
    s = least_loaded(si, rp[r, RP_C0], rp[r, RP_C], ua, ub)
    if prompt_room(si, s, batch):
        return s
    if rs[r, RS_FREE] > 0:
        for k in range(rp[r, RP_C0], rp[r, RP_C0] + rp[r, RP_C]):
            if prompt_room(si, k, batch):
                return k
    return -1


@njit
def arrive(i, t, seed, params, rp, rw, rs, sf, si, rf, ri, fin, step_s, pre, ev, n_ev, hists, counts, row_busy,
           requests_out, free_slots, free_at, free_srv, free_pad):
    """Request ``i`` arrives: the router draws its decode-side row by the rows' shares (an API row: counted, gone);
    a colocated row prefills it on a replica with a slot for it (``colocated_replica``), or queues it; otherwise a prefill row drawn by share serves it
    on the server that is free first (so the pool is one first-come-first-served queue), and its KV reaches the
    decode row after the prompt's prefill and the transfer."""
    pre_n, pre_lone, pre_rate, n_points = pre
    nxt = ri[:, RI_NEXT]
    base = ri[i, RI_NUM] * DRAWS_PER_REQUEST
    window = in_window(params, t)
    r = pick_row(rw[:, RW_WEIGHT], rp[:, RP_ROLE], False, uniform(seed, base + U_DECODE_ROW))
    ri[i, RI_ROW] = r
    if r < 0 or rp[r, RP_ROLE] == API:
        if window:
            counts[C_API] += 1
        release(i, rf, ri, requests_out, free_slots)
        return n_ev
    tokens = rf[i, RF_PREFILL]
    if rp[r, RP_ROLE] == COLOCATED:
        rf[i, RF_REM] = tokens
        ri[i, RI_PREFILL_ROW] = r
        s = colocated_replica(rp, rs, si, r, uniform(seed, base + U_REPLICA_A), uniform(seed, base + U_REPLICA_B))
        if s < 0:  # every slot taken: the row's queue, first come first served, as slots free (boundary)
            list_push(rs[:, RS_HEAD], rs[:, RS_TAIL], nxt, r, i)
            return n_ev
        place_prompt(i, s, r, rs, sf, si, rf, nxt)
        return wake(s, t, params, rp, rw, rs, sf, si, rf, ri, fin, step_s, pre, ev, n_ev, hists, counts, row_busy,
                    requests_out, free_slots)
    p = pick_row(rw[:, RW_WEIGHT], rp[:, RP_ROLE], True, uniform(seed, base + U_PREFILL_ROW))
    if p < 0:
        release(i, rf, ri, requests_out, free_slots)
        return n_ev
    ri[i, RI_PREFILL_ROW] = p
    b0 = rp[p, RP_C0]
    s = free_srv[b0]
    start = max(t, free_at[b0])
    speed = sf[s, SF_SPEED]
    service = tokens / interp_log(pre_n, pre_rate, rp[p, RP_PRE_OFF], n_points, tokens) / speed
    lone = interp_log(pre_n, pre_lone, rp[p, RP_PRE_OFF], n_points, tokens) / speed
    free_at[b0] = start + service
    heap_sift_down(free_at, free_srv, free_pad, b0, rp[p, RP_C], 0)
    if window:
        row_busy[p] += service
    ready = start + max(lone, service) + rw[p, RW_KV_LAT_S] + rw[p, RW_KV_S_PER_TOKEN] * rf[i, RF_IN]
    rf[i, RF_FIRST] = ready
    return schedule(ev, n_ev, ready, EV_DECODE, i, 0)


@njit
def begin_call(i, num, t, prompt, out, seed, params, out_q, prefill_share, rf, ri, counts):
    """Slot ``i`` holds call ``num`` from ``t``: its prompt, its output (``out``, or drawn where negative), the
    tokens it prefills; counted if it arrives within the window."""
    ri[i, RI_NUM] = num
    ri[i, RI_NEXT] = -1
    rf[i, RF_ARRIVE] = t
    rf[i, RF_IN] = prompt
    rf[i, RF_OUT] = out if out >= 0.0 else max(1.0, from_quantiles(out_q, uniform(seed, num * DRAWS_PER_REQUEST +
                                                                                      U_OUTPUT)))
    rf[i, RF_PREFILL] = prompt * prefill_share
    # the tool call after it: exponential about the mean wait (tool latencies spread; Little's law needs the mean)
    rf[i, RF_TOOL_S] = -params[P_TOOL_GAP_S] * math.log(uniform(seed, num * DRAWS_PER_REQUEST + U_TOOL))
    rf[i, RF_REM] = 0.0
    rf[i, RF_FIRST] = np.nan
    rf[i, RF_DONE] = np.nan
    if in_window(params, t):
        counts[C_ARRIVED] += 1


@njit
def simulate_workload(seed, rate_per_s, params, drain_s, in_q, out_q, prefill_share, trace_t, trace_in, trace_out,
                      rp, rw, server_speed, step_s, pre_n, pre_lone, pre_rate, n_points, max_requests, n_slots,
                      hist_ttft, hist_tpot, hist_row_ttft, counts, row_busy, requests_out):
    """Simulate one workload: arrivals for ``params[P_DURATION_S]`` (sessions Poisson at ``rate_per_s``, each of
    ``params[P_TURNS]`` calls, the next ``params[P_TOOL_GAP_S]`` after the last finishes with its prompt grown by
    ``params[P_TURN_GROWTH]``, lengths from the quantile tables (``in_q``: the first call's prompt); or a trace's
    requests; at most ``max_requests`` calls), statistics of the calls that arrive from ``params[P_WARMUP_S]`` on,
    then at most ``drain_s`` for what is in flight to finish. Rows ``rp``/``rw`` (RP_*, RW_*), each of ``RP_C``
    servers from ``RP_C0`` on, of speeds ``server_speed``; ``step_s[RP_STEP_OFF + b - 1]`` a decode step at batch
    b; prefill tables of ``n_points`` prompt lengths from ``RP_PRE_OFF`` on. At most ``n_slots`` calls are in
    flight at once (a session keeps its slot through its tool waits; slots are reused as sessions end; an arrival
    finding none free is dropped and counted, C_DROPPED). Writes the histograms of TTFT and of seconds per output
    token (and of TTFT per prefill or colocated row, ``hist_row_ttft[row]``), ``counts`` (C_*), ``row_busy``
    (prefill rows: server-seconds; decode and colocated rows: stream-seconds held) and, for call numbers below
    ``requests_out``'s rows, each call (RF_*)."""
    n_rows = rp.shape[0]
    n_servers = server_speed.shape[0]
    replay = trace_t.shape[0] > 0
    horizon = params[P_DURATION_S] + drain_s
    si = np.zeros((n_servers, N_SI), np.int64)
    sf = np.zeros((n_servers, N_SF), np.float64)
    sf[:, SF_SPEED] = server_speed
    for col in (SI_PEND_HEAD, SI_PEND_TAIL, SI_PQ_HEAD, SI_PQ_TAIL):
        si[:, col] = -1
    rs = np.zeros((n_rows, N_RS), np.int64)
    rs[:, RS_HEAD] = -1
    rs[:, RS_TAIL] = -1
    free_at = np.zeros(max(n_servers, 1), np.float64)
    free_srv = np.zeros(max(n_servers, 1), np.int64)
    free_pad = np.zeros(max(n_servers, 1), np.int64)
    slots = 0
    for r in range(n_rows):
        decodes = rp[r, RP_ROLE] == DECODE or rp[r, RP_ROLE] == COLOCATED
        if decodes:
            rs[r, RS_FREE] = rp[r, RP_C] * rp[r, RP_BATCH]
        for s in range(rp[r, RP_C0], rp[r, RP_C0] + rp[r, RP_C]):
            si[s, SI_ROW] = r
            si[s, SI_HBASE] = slots
            free_srv[s] = s
            free_at[s] = s - rp[r, RP_C0] - rp[r, RP_C]  # idle since before 0, the lowest index first
            if decodes:
                slots += rp[r, RP_BATCH]
    fin = (np.zeros(max(slots, 1), np.float64), np.zeros(max(slots, 1), np.int64), np.zeros(max(slots, 1), np.int64))
    rf = np.zeros((n_slots, N_RF), np.float64)
    ri = np.full((n_slots, N_RI), -1, np.int64)
    free_slots = np.empty(n_slots + 1, np.int64)  # a stack: [0] its size, then free slots, the lowest on top
    free_slots[0] = n_slots
    for k in range(n_slots):
        free_slots[k + 1] = n_slots - 1 - k
    cap = n_slots + n_servers + 8
    ev = (np.zeros(cap, np.float64), np.zeros(cap, np.int64), np.zeros(cap, np.int64))
    pre = (pre_n, pre_lone, pre_rate, n_points)
    hists = (hist_ttft, hist_tpot, hist_row_ttft)
    turns = max(1, int(params[P_TURNS]))
    sessions = max(1, max_requests // turns)
    t0 = trace_t[0] if replay else -math.log(uniform(seed, U_GAP)) / rate_per_s
    n_ev = schedule(ev, 0, t0, EV_ARRIVAL, 0, 0)
    created = 0
    while n_ev > 0:
        ev_t, ev_code, ev_ver = ev
        t, code, ver = ev_t[0], ev_code[0], ev_ver[0]
        n_ev = heap_pop(ev_t, ev_code, ev_ver, 0, n_ev)
        if t > horizon:
            break
        counts[C_EVENTS] += 1
        typ = code // EV_SHIFT
        ident = code - typ * EV_SHIFT
        if typ == EV_ARRIVAL:  # a session (one call unless agentic) or a trace's request
            session = created
            created += 1
            num = session * turns
            if created < sessions:
                if replay:
                    if created < trace_t.shape[0] and trace_t[created] < params[P_DURATION_S]:
                        n_ev = schedule(ev, n_ev, trace_t[created], EV_ARRIVAL, 0, 0)
                else:
                    nt = t - math.log(uniform(seed, created * turns * DRAWS_PER_REQUEST + U_GAP)) / rate_per_s
                    if nt < params[P_DURATION_S]:
                        n_ev = schedule(ev, n_ev, nt, EV_ARRIVAL, 0, 0)
            else:
                counts[C_TRUNCATED] += 1
            if free_slots[0] == 0:
                if in_window(params, t):
                    counts[C_ARRIVED] += 1
                    counts[C_DROPPED] += 1
                continue
            i = free_slots[free_slots[0]]
            free_slots[0] -= 1
            if replay:
                prompt, out = trace_in[session], trace_out[session]
            else:
                prompt = max(1.0, from_quantiles(in_q, uniform(seed, num * DRAWS_PER_REQUEST + U_INPUT)))
                out = -1.0
            rf[i, RF_FIRST_PROMPT] = prompt
            ri[i, RI_TURN] = 0
            begin_call(i, num, t, prompt, out, seed, params, out_q, prefill_share, rf, ri, counts)
            n_ev = arrive(i, t, seed, params, rp, rw, rs, sf, si, rf, ri, fin, step_s, pre, ev, n_ev, hists, counts,
                          row_busy, requests_out, free_slots, free_at, free_srv, free_pad)
        elif typ == EV_TURN:  # the session's next call, its prompt grown by the last call's
            i = ident
            ri[i, RI_TURN] += 1
            prompt = rf[i, RF_FIRST_PROMPT] + ri[i, RI_TURN] * params[P_TURN_GROWTH]
            begin_call(i, ri[i, RI_NUM] + 1, t, prompt, -1.0, seed, params, out_q, prefill_share, rf, ri, counts)
            n_ev = arrive(i, t, seed, params, rp, rw, rs, sf, si, rf, ri, fin, step_s, pre, ev, n_ev, hists, counts,
                          row_busy, requests_out, free_slots, free_at, free_srv, free_pad)
        elif typ == EV_DECODE:
            n_ev = admit(ident, ri[ident, RI_ROW], t, seed, params, rp, rw, rs, sf, si, rf, ri, fin, step_s, pre, ev,
                         n_ev, hists, counts, row_busy, requests_out, free_slots)
        elif ver == si[ident, SI_VERSION]:
            n_ev = boundary(ident, t, False, params, rp, rw, rs, sf, si, rf, ri, fin, step_s, pre, ev, n_ev, hists,
                            counts, row_busy, requests_out, free_slots)
    counts[C_CREATED] = created * turns if not replay else created
    for i in range(n_slots):  # requests still in flight
        num = ri[i, RI_NUM]
        if 0 <= num < requests_out.shape[0]:
            requests_out[num, :] = rf[i, :]
