"""The plain-Python twin of ``solvers.sim.engine``: the same pools, router and rules, written the slow and plain
way. Every decode step is an event and every stream counts its own remaining steps (the engine jumps over steps
and keeps finish steps in a heap); each prefill pool is one central queue served first come, first served by
whichever server frees first (the engine routes each prompt at arrival to the server with the least work left).
Both draw the same requests (``solvers.sim.rng``), so on small cases they agree request by request."""

from __future__ import annotations

import heapq
import math

import numpy as np

from solvers.sim import engine as E
from solvers.sim.rng import DRAWS_PER_REQUEST, exponential_py, from_quantiles_py, uniform_py


def interp_log_py(xs, ys, x: float) -> float:
    if x <= xs[0]:
        return float(ys[0])
    if x >= xs[-1]:
        return float(ys[-1])
    k = int(np.searchsorted(xs, x, side="right")) - 1
    w = (math.log(x) - math.log(xs[k])) / (math.log(xs[k + 1]) - math.log(xs[k]))
    return float(ys[k] + w * (ys[k + 1] - ys[k]))


def sessions_py(seed, rate_per_s, duration_s, in_q, max_sessions, turns):
    """The sessions the engine draws: (arrival of the first call, its prompt) in arrival order; session s's calls
    are numbered s * turns + k."""
    out, t = [], 0.0
    for s in range(max_sessions):
        num = s * turns
        t += exponential_py(uniform_py(seed, num * DRAWS_PER_REQUEST + E.U_GAP)) / rate_per_s
        if s > 0 and t >= duration_s:
            break
        out.append((t, max(1.0, from_quantiles_py(in_q, uniform_py(seed, num * DRAWS_PER_REQUEST + E.U_INPUT)))))
    return out


def pick_row_py(weights, roles, prefill_side: bool, u: float) -> int:
    rows = [r for r in range(len(weights)) if (roles[r] == E.PREFILL) == prefill_side]
    total = sum(weights[r] for r in rows)
    acc, last = 0.0, -1
    for r in rows:
        if weights[r] > 0:
            acc += weights[r]
            last = r
            if u * total < acc:
                return r
    return last


class Replica:
    def __init__(self, row, speed):
        self.row, self.speed = row, speed
        self.active = {}  # request -> steps left
        self.pending, self.prompts = [], []  # joining streams; colocated prompts [request, tokens left]
        self.busy, self.step_tok, self.version, self.step_end = False, 0.0, 0, 0.0
        self.kv_tokens = 0.0  # reserved for the whole context of every stream held or joining

    def load(self):
        return len(self.active) + len(self.pending) + len(self.prompts)


def simulate_py(seed, rate_per_s, params, drain_s, in_q, out_q,  # noqa: C901 - the jitted loop, line by line
                prefill_share, rp, rw, server_speed, step_s, pre_n,
                pre_lone, pre_rate, n_points, max_requests):
    """Per call [arrival, input, prefill, output, -, first token, done, ...] (RF_* columns, NaN where none), row
    s * turns + k for session s's call k."""
    turns = max(1, int(params[E.P_TURNS]))
    duration = params[E.P_DURATION_S]
    sessions = sessions_py(seed, rate_per_s, duration, in_q, max(1, max_requests // turns), turns)
    res = np.full((len(sessions) * turns, E.N_RF), np.nan)

    def begin(num, t, prompt):
        """Call ``num`` arrives at ``t`` with ``prompt`` tokens: the engine's begin_call."""
        base = num * DRAWS_PER_REQUEST
        res[num, E.RF_ARRIVE], res[num, E.RF_IN], res[num, E.RF_PREFILL] = t, prompt, prompt * prefill_share
        res[num, E.RF_OUT] = max(1.0, from_quantiles_py(out_q, uniform_py(seed, base + E.U_OUTPUT)))
        res[num, E.RF_TOOL_S] = -params[E.P_TOOL_GAP_S] * math.log(uniform_py(seed, base + E.U_TOOL))
        res[num, E.RF_FIRST_PROMPT] = res[num - num % turns, E.RF_FIRST_PROMPT] if num % turns else prompt
        push(t, "arrive", num)

    def done(i, t):
        """Call ``i`` finished at ``t``: its session's next call follows its tool wait, within the window."""
        res[i, E.RF_DONE] = t
        nxt_t = t + res[i, E.RF_TOOL_S]
        if (i + 1) % turns and nxt_t < duration:
            begin(i + 1, nxt_t, res[i, E.RF_FIRST_PROMPT] + ((i + 1) % turns) * params[E.P_TURN_GROWTH])
    roles, weights = rp[:, E.RP_ROLE], rw[:, E.RW_WEIGHT]
    replicas = {s: Replica(int(r), float(server_speed[s])) for r in range(len(rp))
                for s in range(rp[r, E.RP_C0], rp[r, E.RP_C0] + rp[r, E.RP_C]) if roles[r] != E.PREFILL}
    free = {r: [0.0] * int(rp[r, E.RP_C]) for r in range(len(rp)) if roles[r] == E.PREFILL}
    row_queue: dict[int, list[int]] = {r: [] for r in range(len(rp))}
    horizon = params[E.P_DURATION_S] + drain_s
    events: list[tuple[float, int, str, int, int]] = []  # (time, order pushed, kind, call or server, version)
    seq = 0

    def push(t, kind, ident, ver=0):
        nonlocal seq
        heapq.heappush(events, (t, seq, kind, ident, ver))
        seq += 1

    def need(i):
        return res[i, E.RF_IN] + res[i, E.RF_OUT]

    def has_room(s, i):
        rep = replicas[s]
        held = len(rep.active) + len(rep.pending)
        if held >= rp[rep.row, E.RP_BATCH]:
            return False
        return held == 0 or rep.kv_tokens + need(i) <= rw[rep.row, E.RW_KV_CAP_TOKENS] * (1 + 1e-12)

    def prompt_room(s):  # a slot for one more prompt: streams, joining and prefilling fewer than the batch
        return replicas[s].load() < rp[replicas[s].row, E.RP_BATCH]

    def admissible(s):  # the prompts at the head of the queue that each find a slot and KV room, in turn
        rep = replicas[s]
        held, kv, tokens = len(rep.active) + len(rep.pending), rep.kv_tokens, 0.0
        cap = rw[rep.row, E.RW_KV_CAP_TOKENS] * (1 + 1e-12)
        for i, left in rep.prompts:
            if held >= rp[rep.row, E.RP_BATCH] or (held and kv + need(i) > cap):
                break
            tokens, held, kv = tokens + left, held + 1, kv + need(i)
        return tokens

    def table(r, x, ys):
        off = rp[r, E.RP_PRE_OFF]
        return interp_log_py(pre_n[off:off + n_points], ys[off:off + n_points], x)

    def start_step(s, t):
        rep = replicas[s]
        r = rep.row
        batch = rp[r, E.RP_BATCH]
        for i in list(rep.pending):
            if len(rep.active) >= batch:
                break
            rep.pending.remove(i)
            rep.active[i] = E.steps_for.py_func(res[i, E.RF_OUT], rw[r, E.RW_TOKENS_PER_STEP])
        while roles[r] == E.COLOCATED and row_queue[r] and prompt_room(s):
            i = row_queue[r].pop(0)
            rep.prompts.append([i, res[i, E.RF_PREFILL]])
        while roles[r] != E.COLOCATED and row_queue[r] and has_room(s, row_queue[r][0]):
            i = row_queue[r].pop(0)
            rep.kv_tokens += need(i)
            rep.active[i] = E.steps_for.py_func(res[i, E.RF_OUT], rw[r, E.RW_TOKENS_PER_STEP])
        b = len(rep.active)
        tok = 0.0
        if roles[r] == E.COLOCATED and rep.prompts:
            tok = min(rw[r, E.RW_CHUNK], admissible(s))
        rep.version += 1
        if b == 0 and tok <= 0:
            rep.busy = False
            return
        dt = step_s[rp[r, E.RP_STEP_OFF] + b - 1] if b else 0.0
        if tok > 0:
            dt += tok / table(r, res[rep.prompts[0][0], E.RF_PREFILL], pre_rate)
        dt /= rep.speed
        rep.busy, rep.step_tok, rep.step_end = True, tok, t + dt
        push(t + dt, "step", s, rep.version)

    def end_step(s, t):
        rep = replicas[s]
        for i in list(rep.active):
            rep.active[i] -= 1
            if rep.active[i] == 0:
                del rep.active[i]
                rep.kv_tokens -= need(i)
                done(i, t)
        budget = rep.step_tok
        while budget > 1e-9 and rep.prompts:
            take = min(budget, rep.prompts[0][1])
            rep.prompts[0][1] -= take
            budget -= take
            if rep.prompts[0][1] <= 1e-9:
                i = rep.prompts.pop(0)[0]
                res[i, E.RF_FIRST] = t
                rep.pending.append(i)
                rep.kv_tokens += need(i)
        start_step(s, t)

    def choose(r, i):
        base = i * DRAWS_PER_REQUEST
        c0, c = rp[r, E.RP_C0], rp[r, E.RP_C]
        a = c0 + min(int(uniform_py(seed, base + E.U_REPLICA_A) * c), c - 1)
        b = c0 + min(int(uniform_py(seed, base + E.U_REPLICA_B) * c), c - 1)
        la, lb = replicas[a].load(), replicas[b].load()
        return b if (lb < la or (lb == la and b < a)) else a

    def to_decode(i, r, t):
        s = choose(r, i)
        if row_queue[r] or not has_room(s, i):
            room = [k for k in range(rp[r, E.RP_C0], rp[r, E.RP_C0] + rp[r, E.RP_C]) if has_room(k, i)]
            if row_queue[r] or not room:  # first come, first served: none passes the row's queue
                row_queue[r].append(i)
                return
            s = room[0]
        replicas[s].kv_tokens += need(i)
        replicas[s].pending.append(i)
        if not replicas[s].busy:
            start_step(s, t)

    for s, (t, prompt) in enumerate(sessions):
        begin(s * turns, t, prompt)
    while events:
        t, _, kind, ident, ver = heapq.heappop(events)
        if t > horizon:
            break
        if kind == "arrive":
            i = ident
            base = i * DRAWS_PER_REQUEST
            r = pick_row_py(weights, roles, False, uniform_py(seed, base + E.U_DECODE_ROW))
            if r < 0 or roles[r] == E.API:
                continue
            if roles[r] == E.COLOCATED:
                s = choose(r, i)
                if row_queue[r] or not prompt_room(s):
                    room = [k for k in range(rp[r, E.RP_C0], rp[r, E.RP_C0] + rp[r, E.RP_C]) if prompt_room(k)]
                    if row_queue[r] or not room:  # every slot taken: the row's queue, first come first served
                        row_queue[r].append(i)
                        continue
                    s = room[0]
                replicas[s].prompts.append([i, res[i, E.RF_PREFILL]])
                if not replicas[s].busy:
                    start_step(s, t)
                continue
            p = pick_row_py(weights, roles, True, uniform_py(seed, base + E.U_PREFILL_ROW))
            # the central queue: the prompt waits for the pool's earliest free server
            servers = free[p]
            k = min(range(len(servers)), key=lambda j: servers[j])
            speed = server_speed[rp[p, E.RP_C0] + k]
            start = max(t, servers[k])
            tokens = res[i, E.RF_PREFILL]
            service = tokens / table(p, tokens, pre_rate) / speed
            servers[k] = start + service
            ready = start + max(table(p, tokens, pre_lone) / speed, service) + rw[p, E.RW_KV_LAT_S] + \
                rw[p, E.RW_KV_S_PER_TOKEN] * res[i, E.RF_IN]
            res[i, E.RF_FIRST] = ready
            push(ready, "decode", i)
        elif kind == "decode":
            to_decode(ident, pick_row_py(weights, roles, False, uniform_py(seed, ident * DRAWS_PER_REQUEST +
                                                                               E.U_DECODE_ROW)), t)
        elif ver == replicas[ident].version:
            end_step(ident, t)
    return res
