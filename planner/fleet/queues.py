"""Decode pools sized as queues of batch slots at the workload's percentile (docs/OPTIMIZER.md 18).

A decode replica of batch B is B servers: a stream takes a slot for its lifetime, its output at the row's speed in
whole steps and one step more (it joins and leaves a running batch at step boundaries). Streams that find every slot
of their row taken wait, and the wait is part of the time per output token a user sees: a request meets the tier
when its wait is at most the slack its row's speed leaves, O / tier less its slot time. Sized at 100% of peak, a
pool's slots are always full and most streams wait: the shipped sovereign plan simulated 173 tok/s per user at p90
against its 200 tier.

Each row is an M/G/c queue of c = replicas x B slots (``solvers.perf.queue``: Erlang C with the Allen-Cunneen
wait, the service's scv the output lengths'). Its largest utilization rho*(c) keeps the wait at the workload's
percentile within the slack, so only rho*(c) of its slots' stream capacity is usable (a slot serves a stream in
its whole steps and half a step's join on average: ``slot_share`` of the row's capacity): the MILP's decode coverage of
an option is its capacity times rho* times that share at the slots it assumes (a pool of that option alone serving
the workload: ``assumed_slots``),
and ``solve.size_decode_queues`` sizes again, with the slots it deploys, an option whose pool came out smaller (rho*
only falls as c does, so this ends). Streams are routed to rows in proportion to usable capacity (``routing_share``,
``planner.sim.build``), so each row runs at rho*(c) x peak / usable; ``check`` recomputes the usable capacity
("decode queue <workload>").

A colocated replica of batch B is B slots too, but it prefills a prompt only into a slot of its own, so its streams
wait for a slot before their first token: the wait at the percentile is held within what its row's TTFT leaves of
the target (``ttft_room_s``: the target less the row's TTFT at its percentile, a lone prefill and the pool's prompt
queue), not within the tier's slack (a stream that has its first token never waits again). Its prompts were priced
as a queue of prefill time alone (MODEL.md 9.2); sized at 100% of its peak, a colocated pool of 33 slots simulated
a p99 TTFT of 58 s against 1 s (issue 41).
"""

from __future__ import annotations

import math

import numpy as np

from planner.vocabulary import DECODE_ROLES
from solvers.perf.queue import wait_quantile_s
from solvers.perf.serving import decode_seconds, spec_tokens

# A decode pool's slots are never planned busier than this: at 0.999 the shipped sovereign plan's 89,000-slot pool
# queued without bound in simulation (a stream's extra step at joining is 0.5% more work), at 0.99 it holds.
MAX_DECODE_UTILIZATION = 0.99
# Rows whose streams queue for a batch slot: after their first token on a disaggregated decode pool's (a split's
# attention side too), before it on a colocated one; and the option kinds they come from.
DECODE_ROLES_QUEUED = ("decode", "attention", "colocated")
QUEUED_KINDS = ("decode", "split", "colocated")


def row_slots(row: dict) -> float:
    """Batch slots of an allocation row: its replicas x its batch, one at least where it has any (a share of a
    replica holds one stream at least, as the simulator deploys it)."""
    replicas = float(row["replicas"])
    return max(replicas * float(row["batch"]), 1.0) if replicas > 1e-9 else 0.0


def row_utilization_bound(demand, row: dict) -> float:
    """rho*(c) of an allocation row: its slots, speed and tokens kept a step (speculative decoding); a colocated
    row's within its TTFT's room."""
    _, kept = spec_tokens(float(row.get("draft_tokens") or 0.0), float(row.get("acceptance") or 0.0))
    if row.get("role") == "colocated":
        return max_colocated_utilization(demand, row_slots(row), float(row.get("tps_per_user") or 0.0), kept,
                                         row.get("ttft_s"))
    return max_decode_utilization(demand, row_slots(row), float(row.get("tps_per_user") or 0.0), kept)


def slot_seconds(demand, tps: float, kept: float) -> float:
    """How long a mean stream holds its slot on a row of ``tps`` tok/s per user keeping ``kept`` tokens a step:
    its whole steps, ceil(O / kept), and one more, the step in progress when it joins and the one it ends in (a
    stream joins and leaves a running batch at step boundaries)."""
    step = kept / tps
    return (math.ceil(demand.output_tokens / kept - 1e-9) + 1.0) * step


def slot_share(demand, kept: float) -> float:
    """The share of a queued row's output capacity (its slots x its tok/s per user) its slots deliver as streams
    (Little's law): a stream holds its slot for its whole steps, ceil(O / kept), and on average half the step in
    progress when it arrives (it joins a running batch at the step's end), (ceil(O / kept) + 1/2) steps of kept / tps
    carrying O tokens, so a slot serves O / (kept (ceil(O / kept) + 1/2)) of tps. The capacity counts O / kept steps
    a stream. 1 for long answers to within 1 / (2 O); 60-token completions keeping 2.79 tokens a step take 22 steps
    and the join, 0.956 of the capacity. Counted whole, a colocated pool loaded to 0.99 of that capacity had its
    slots over full and queued without bound (bank-2mw's code completion: a TTFT p90 of 1.2 s against 0.3 after 258 s
    of arrivals, 4.7 s after 480); routed 0.99 of this share, the same pool held (0.072 s after 480 s). (The
    percentile's wait, ``max_slot_utilization``, takes the whole join step: ``slot_seconds``.)"""
    if kept <= 0 or demand.output_tokens <= 0:
        return 0.0
    return demand.output_tokens / (kept * (math.ceil(demand.output_tokens / kept - 1e-9) + 0.5))


def slack_s(demand, tps: float, kept: float) -> float:
    """The wait a mean request may have for a slot and still meet its tier: O / tier less its whole steps and the
    join to a running batch at the workload's percentile (``serving.decode_seconds``); negative where those alone
    miss the tier (a 150-token answer at 1,002 tok/s keeping 3.08 tokens a step takes 49 steps of 3.07 ms, 150.7 ms
    against the ultra tier's 150)."""
    if demand.min_tps_per_user <= 0:
        return math.inf
    steps = decode_seconds(demand.output_tokens, kept, kept / tps, demand.ttft_quantile)
    room = demand.output_tokens / demand.min_tps_per_user - steps
    return 0.0 if abs(room) <= 1e-9 * steps else room  # an option at exactly the tier keeps it


def max_decode_utilization(demand, slots: float, tps: float, kept: float = 1.0) -> float:
    """rho*(c): the highest utilization of ``slots`` slots, each holding a stream for ``slot_seconds``, at which the
    wait at the workload's percentile stays within ``slack_s``, at most MAX_DECODE_UTILIZATION; 0 where the row has
    no slot or no speed, or its steps alone miss the tier."""
    room = slack_s(demand, tps, kept) if slots > 0 and tps > 0 and kept > 0 else -1.0
    return max_slot_utilization(demand, slots, tps, kept, room)


def ttft_room_s(demand, ttft_s) -> float:
    """What a colocated row's TTFT at the percentile (``ttft_s``: a lone prefill and its pool's prompt queue) leaves
    of the workload's target for the wait for a slot; the whole target where the row states none (a measured row
    with no TTFT), -1 where it misses the target already."""
    if ttft_s is None or not math.isfinite(float(ttft_s)):
        return float(demand.ttft_s)
    room = float(demand.ttft_s) - float(ttft_s)
    return 0.0 if abs(room) <= 1e-9 * float(demand.ttft_s) else room


def max_colocated_utilization(demand, slots: float, tps: float, kept: float, ttft_s) -> float:
    """rho*(c) of a colocated row: its streams wait for a slot before their first token, so within ``ttft_room_s``."""
    room = ttft_room_s(demand, ttft_s) if slots > 0 and tps > 0 and kept > 0 else -1.0
    return max_slot_utilization(demand, slots, tps, kept, room)


def max_slot_utilization(demand, slots: float, tps: float, kept: float, room: float) -> float:
    """The highest utilization of ``slots`` slots, each holding a stream for ``slot_seconds``, at which the wait at
    the workload's percentile stays within ``room`` seconds (bisection: the wait grows with utilization), at most
    MAX_DECODE_UTILIZATION; 0 where ``room`` is negative."""
    if room < 0:
        return 0.0
    service = slot_seconds(demand, tps, kept)
    scv, q = demand.output_length_dist().scv, demand.ttft_quantile
    lo, hi = 0.0, MAX_DECODE_UTILIZATION
    if wait_quantile_s(slots, hi, service, scv, q) <= room:
        return hi
    for _ in range(50):
        mid = 0.5 * (lo + hi)
        if wait_quantile_s(slots, mid, service, scv, q) <= room:
            lo = mid
        else:
            hi = mid
    return lo


def is_queued(row: dict, name: str) -> bool:
    """Whether an allocation row holds workload ``name``'s streams in batch slots (owned or rented, not a hosted
    API)."""
    return (row["workload"] == name and row["role"] in DECODE_ROLES_QUEUED and float(row["replicas"]) > 0
            and row.get("acquisition") != "api")


def queued_rows(rows: list[dict], name: str) -> list[dict]:
    """The workload's rows whose replicas hold its streams in batch slots."""
    return [r for r in rows if is_queued(r, name)]


def effective_capacity(demand, rows: list[dict], capacity=None) -> tuple[float, float]:
    """(the workload's decode capacity, the part of it its percentile lets it use): every decode-serving row's output
    tokens/s (``capacity``, where given, re-scored figures in the rows' order; a hosted API's and colocated rows'
    included), and the sum of each row's times its ``routing_share``. Streams are routed to rows in proportion to
    the usable part, so every queued row runs at rho*(c) x peak / usable: within its bound exactly when the peak is
    at most the usable capacity."""
    held = usable = 0.0
    for i, r in enumerate(rows):
        if r["workload"] != demand.name or r["role"] not in DECODE_ROLES:
            continue
        cap = float(r["output_tokens_per_s"] if capacity is None else capacity[i])
        held += cap
        usable += cap * routing_share(demand, r)
    return held, usable


def routing_share(demand, row: dict) -> float:
    """The share of a row's capacity its streams are routed by: rho*(c) of its slots' stream capacity for a queued
    row (``slot_share``), 1 for any other."""
    if not is_queued(row, demand.name):
        return 1.0
    _, kept = spec_tokens(float(row.get("draft_tokens") or 0.0), float(row.get("acceptance") or 0.0))
    return row_utilization_bound(demand, row) * slot_share(demand, kept)


def assumed_slots(cols: dict, demands: dict) -> np.ndarray:
    """[J] the slots a queued option's pool is assumed to have before a plan says: a pool of that option alone
    serving its workload's sized decode demand (its replicas, at least one, x its batch); 0 for other kinds."""
    out = np.zeros(len(cols["workload"]))
    for j in np.flatnonzero(np.isin(cols["kind"], QUEUED_KINDS)):
        cap = float(cols["output_tokens_per_s"][j])
        need = demands[str(cols["workload"][j])].sized_output_tokens_per_s
        out[j] = max(need / cap if cap > 0 else 1.0, 1.0) * float(cols["batch"][j])
    return out


def column_bounds(cols: dict, demands: dict, slots: np.ndarray) -> np.ndarray:
    """[J] rho* of each queued option at ``slots`` (its assumed pool) of its slots' stream capacity (``slot_share``),
    1 for other kinds: the share of its decode capacity the MILP counts (a colocated option's prompt capacity too:
    it prefills only the streams it decodes); ``routing_share`` of the row it deploys."""
    out = np.ones(len(cols["workload"]))
    for j in np.flatnonzero(np.isin(cols["kind"], QUEUED_KINDS)):
        _, kept = spec_tokens(float(cols["draft_tokens"][j]), float(cols["acceptance"][j]))
        d, tps = demands[str(cols["workload"][j])], float(cols["tps_per_user"][j])
        rho = (max_colocated_utilization(d, float(slots[j]), tps, kept, float(cols["ttft_s"][j]))
               if cols["kind"][j] == "colocated" else max_decode_utilization(d, float(slots[j]), tps, kept))
        out[j] = rho * slot_share(d, kept)
    return out
