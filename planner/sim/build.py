"""A plan's pools as the simulator's arrays (docs/MODEL.md 16.2): per workload, one row per allocation row, its
servers (a fractional replica count is one more server at that fraction of the speed), and its timings from the
same performance kernels ``solve`` and ``check`` use: a decode step at every batch up to the row's, a prompt's
prefill (alone, and the loaded replica's rate) at prompt lengths across the workload's range, the KV transfer.
"""

from __future__ import annotations

import dataclasses

import math
from dataclasses import dataclass

import numpy as np

from planner.fleet.check import Inputs
from planner.fleet.demand import Demand
from planner.fleet.options import drafter, efficiency_of, pool_key
from planner.fleet.queues import routing_share
from planner.lengths import FIXED, Lengths
from planner.perf.grid import MICRO_BATCHES
from planner.perf.pack import hardware_vector, model_vector, split_model_vectors
from planner.vocabulary import API_KIND
from solvers.perf import slots as L
from solvers.perf.kernels import prefill_breakdown, speculative_decode_breakdown
from solvers.perf.serving import kv_transfer_s, spec_tokens
from solvers.perf.split import split_decode_breakdown
from solvers.sim import engine as E

ROLE_CODES = {"prefill": E.PREFILL, "decode": E.DECODE, "attention": E.DECODE, "colocated": E.COLOCATED,
              API_KIND: E.API}
PREFILL_POINTS = 40  # prompt lengths at which a prefill row's timings are tabulated (log-spaced)
QUANTILE_POINTS = 1024  # points of a length distribution's inverse CDF (its top one the 0.9995 quantile)
MAX_DRAWN = 4096  # prompt lengths tabulated exactly per prefilling row


@dataclass
class Pools:
    """One workload's rows as arrays for ``solvers.sim.engine.simulate_workload``."""

    demand: Demand
    rows: list  # the allocation rows, in the order of rp/rw
    rp: np.ndarray
    rw: np.ndarray
    server_speed: np.ndarray
    step_s: np.ndarray
    pre_n: np.ndarray
    pre_lone_s: np.ndarray
    pre_rate: np.ndarray
    in_q: np.ndarray
    out_q: np.ndarray
    source: list  # the allocation row (index into ``rows``) of each simulator row
    prefill_points: int = 1  # prompt lengths tabulated per prefilling row (every row of a workload alike)

    @property
    def prefill_share(self) -> float:
        return prefill_share_of(self.demand)


def prefill_share_of(d: Demand) -> float:
    """The share of each prompt prefilled (the rest is the prefix cache's)."""
    return d.prefill_tokens / d.input_tokens if d.input_tokens > 0 else 1.0


def quantile_table(dist: Lengths) -> np.ndarray:
    """The inverse CDF of a length distribution at (k + 0.5) / K, K = QUANTILE_POINTS (one point if fixed)."""
    if dist.kind == FIXED:
        return np.array([max(1.0, float(dist.mean))])
    u = (np.arange(QUANTILE_POINTS) + 0.5) / QUANTILE_POINTS
    return np.maximum(1.0, np.array([float(dist.quantile(float(q))) for q in u]))


def length_tables(d: Demand) -> tuple[np.ndarray, np.ndarray]:
    """The quantile tables of a session's first prompt (a call's where calls stand alone) and of a call's output."""
    first = d.first_turn_length_dist() if d.turns > 1 else d.input_length_dist()
    return quantile_table(first), quantile_table(d.output_length_dist())


def prompts_drawn(d: Demand, in_q: np.ndarray) -> np.ndarray:
    """The prompt tokens the simulator prefills: each quantile point of the first prompt at every turn of a
    session (the k-th call's prompt grown by k turn_growth_tokens), at most MAX_DRAWN of them (evenly by rank)."""
    turns = np.arange(d.turns) * d.turn_growth_tokens
    drawn = np.unique((in_q[:, None] + turns[None, :]).ravel()) * prefill_share_of(d)
    if len(drawn) > MAX_DRAWN:
        drawn = drawn[np.linspace(0, len(drawn) - 1, MAX_DRAWN).astype(int)]
    return drawn


def servers_of(replicas: float) -> tuple[int, float]:
    """Servers of a row of ``replicas`` replicas, and the share of a replica the last one stands for: 2.3
    replicas are three servers, the third standing for 0.3 of a replica."""
    if replicas <= 1e-9:
        return 0, 1.0
    c = int(math.ceil(replicas - 1e-9))
    return c, replicas - (c - 1)


def decode_steps(row: dict, d: Demand, inputs: Inputs) -> tuple[np.ndarray, float, float]:
    """A decode step's seconds at every batch 1..B of the row, the output tokens each stream keeps a step, and the
    KV tokens a replica holds (``kv_cap_tokens``)."""
    batch = max(1, int(round(float(row["batch"]))))
    model = inputs.models[d.model]
    _, kept = spec_tokens(float(row["draft_tokens"]), float(row["acceptance"]))
    wl = d.workload_vector()
    planned = batch * float(wl[L.W_CONTEXT_MAX])  # the plan fits B streams at the mean context
    if row.get("source") == "measured":  # a measured point: its speed at its concurrency, at every batch
        return np.full(batch, kept / float(row["tps_per_user"])), kept, planned
    k = float(row["draft_tokens"])
    steps = np.empty(batch)
    if row["role"] == "attention":
        hw_a, hw_f = inputs.hardware[row["hardware"]], inputs.hardware[row["ffn_hardware"]]
        attn, ffn = split_model_vectors(model)
        ha = hardware_vector(hw_a, row["precision"], efficiency_of(inputs.efficiency, hw_a))
        hf = hardware_vector(hw_f, row["ffn_precision"], efficiency_of(inputs.efficiency, hw_f))
        out, side = np.zeros(L.N_SPLIT), np.zeros(L.N_BREAKDOWN)
        draft = drafter(d, model, inputs.models)
        for b in range(1, batch + 1):
            split_decode_breakdown(attn, ffn, draft, ha, hf, float(row["chips_per_replica"]), float(row["ffn_chips"]),
                                   float(int(row["expert_parallel"])), float(b), wl[L.W_CONTEXT_AVG],
                                   wl[L.W_CONTEXT_MAX], k, kept, MICRO_BATCHES, side, out)
            steps[b - 1] = kept / out[L.S_TPS_PER_USER]
        return steps, kept, planned
    hw = inputs.hardware[row["hardware"]]
    mv, hv = model_vector(model), hardware_vector(hw, row["precision"], efficiency_of(inputs.efficiency, hw))
    layout = (float(row["tensor_parallel"]), float(row["pipeline_parallel"]), float(int(row["expert_parallel"])))
    draft = drafter(d, model, inputs.models)
    out, scratch = np.zeros(L.N_BREAKDOWN), np.zeros(L.N_BREAKDOWN)
    for b in range(1, batch + 1):
        speculative_decode_breakdown(mv, draft, hv, *layout, float(b), wl[L.W_CONTEXT_AVG], wl[L.W_CONTEXT_MAX], k,
                                     kept, scratch, out)
        steps[b - 1] = out[L.B_TIME_S]
    return steps, kept, kv_cap_tokens(planned, out)


def kv_cap_tokens(planned: float, out: np.ndarray) -> float:
    """The KV tokens a replica holds: all its memory past the weights (a serving engine's KV pool), ``planned``
    (B streams at the mean context, which the plan fits) scaled by the memory free over what they take; at least
    ``planned``. Capped at B mean contexts, a replica whose batch the tier limits, not its memory, turned a long
    prompt away until it emptied, and that prompt held every other behind it (a premium pool's p99 TTFT 31 s
    against 1)."""
    kv = float(out[L.B_KV_BYTES_PER_CHIP])
    free = float(out[L.B_USABLE_BYTES_PER_CHIP] - out[L.B_WEIGHT_BYTES_PER_CHIP])
    return planned * max(1.0, free / kv) if kv > 0 else planned


def prefill_tables(row: dict, d: Demand, inputs: Inputs, longest: float, drawn: np.ndarray) -> tuple:
    """At PREFILL_POINTS prompt lengths up to ``longest`` and at every length ``drawn`` (the prefill tokens of the
    length distribution's quantile points: the loaded rate steps where the prompts a pass holds change, so the
    lengths drawn are tabulated exactly): a lone prompt's prefill seconds and the loaded replica's prompt tokens/s
    (MODEL.md 4, 4.2); the KV transfer's latency and seconds per prompt token (MODEL.md 7); the prompt tokens a
    colocated step carries (the stack's pass budget)."""
    hw = inputs.hardware[row["hardware"]]
    model = inputs.models[d.model]
    mv, hv = model_vector(model), hardware_vector(hw, row["precision"], efficiency_of(inputs.efficiency, hw))
    layout = (float(row["tensor_parallel"]), float(row["pipeline_parallel"]), float(int(row["expert_parallel"])))
    n = np.unique(np.concatenate([np.geomspace(1.0, max(2.0, longest), PREFILL_POINTS), drawn]))
    lone, rate, out = np.empty_like(n), np.empty_like(n), np.zeros(L.N_BREAKDOWN)
    for k, tokens in enumerate(n):
        prefill_breakdown(mv, hv, *layout, float(tokens), out)
        lone[k], rate[k] = out[L.B_TIME_S], out[L.B_TOKENS_PER_S]
    chips = float(row["chips_per_replica"])
    kv_lat = kv_transfer_s(mv, hv, chips, 0.0) if row["role"] == "prefill" else 0.0
    kv_per_token = (kv_transfer_s(mv, hv, chips, 1000.0) - kv_lat) / 1000.0 if row["role"] == "prefill" else 0.0
    chunk = hv[L.H_PREFILL_TOKENS_PER_PASS] or d.prefill_tokens
    return n, lone, rate, kv_lat, kv_per_token, chunk


def pools_of(plan: dict, inputs: Inputs) -> list[Pools]:
    """Every workload the plan serves with the rows that serve it, the rows of one pool (``pool_key``: their
    prompts share one queue, MODEL.md 9.2) merged into one. A workload the plan serves in part (its
    ``served_share``: a fleet-only plan, max_served, max_revenue) arrives at that share of its peak, the rest turned
    away at the door as the plan says; one it does not serve at all is not simulated."""
    shares = {w["workload"]: w.get("served_share") for w in plan.get("workloads") or []}
    out = []
    for workload in inputs.demands:
        share = shares.get(workload.name)
        if share is not None and float(share) < 1.0 - 1e-9:
            if float(share) <= 1e-9:
                continue
            workload = dataclasses.replace(workload, calls_per_s=workload.calls_per_s * float(share),
                                           output_tokens_per_s=workload.output_tokens_per_s * float(share),
                                           prefill_tokens_per_s=workload.prefill_tokens_per_s * float(share))
        rows = [r for r in plan["allocation"] if r["workload"] == workload.name and r["role"] in ROLE_CODES
                and float(r["replicas"]) > 1e-12]
        out.append(pools_for(workload, merged_pools(rows), inputs))
    return out


def merged_pools(rows: list[dict]) -> list[dict]:
    """Rows of one pool as one row: replicas and served tokens/s summed; other rows as they are."""
    merged: dict = {}
    out = []
    for row in rows:
        key = pool_key(row)
        if key is None:
            out.append(row)
        elif key in merged:
            into = merged[key]
            for col in ("replicas", "output_tokens_per_s", "prefill_tokens_per_s"):
                into[col] = float(into.get(col) or 0.0) + float(row.get(col) or 0.0)
        else:
            merged[key] = dict(row)
            out.append(merged[key])
    return out


def pools_for(workload: Demand, rows: list[dict], inputs: Inputs) -> Pools:
    """The simulator's rows for one workload's allocation rows. A fractional replica is deployed as a whole one
    held to its share (the plan pays for that share of its chips; its racks are whole): a prefill row's last server
    takes its share of the row's prompts at full speed, and a decode or colocated row's share f of a replica is one
    more simulator row of one replica that holds at most f x B streams (its share of the row's traffic)."""
    in_q, out_q = length_tables(workload)
    longest = float(in_q.max() + (workload.turns - 1) * workload.turn_growth_tokens) * 1.01
    sim_rows, source = [], []
    tables = {"steps": [], "pre_n": [], "pre_lone": [], "pre_rate": [], "in_q": in_q}
    for k, row in enumerate(rows):
        for servers, batch_share, weight_share in row_parts(row):
            sim_rows.append(sim_row(row, workload, inputs, servers, batch_share, weight_share, longest, tables))
            source.append(k)
    rp = np.array([r[0] for r in sim_rows], np.int64).reshape(-1, E.N_RP)
    rw = np.array([r[1] for r in sim_rows], float).reshape(-1, E.N_RW)
    rw[:, E.RW_WEIGHT] = routing_weights(rp[:, E.RP_ROLE], rw[:, E.RW_WEIGHT], workload.output_tokens_per_s)
    offset = 0
    for r in range(len(rp)):  # servers are numbered row after row
        rp[r, E.RP_C0] = offset
        offset += rp[r, E.RP_C]
    return Pools(workload, rows, rp, rw, np.ones(offset), joined(tables["steps"]), joined(tables["pre_n"]),
                 joined(tables["pre_lone"]), joined(tables["pre_rate"]), in_q, out_q, source,
                 len(tables["pre_n"][0]) if tables["pre_n"] else 1)


def routing_weights(roles: np.ndarray, usable: np.ndarray, peak: float) -> np.ndarray:
    """The router's weights: prefill rows by their prompt capacity; colocated rows by their usable capacity, and
    the other decode-side rows (decode, a split's attention, a hosted API) by theirs scaled to the peak the
    colocated rows leave them. Colocated rows prefill their own streams, and the plan's prefill pools are sized for
    the prompts of the rest (the MILP covers P less the colocated rows' share of it), so that is the split the
    router keeps; split by usable capacity alone, a plan with room on its decode rows sent its prefill pool more
    prompts than it was sized for (bank-2mw's code completion: a 12-server pool at a p90 TTFT 13% over its closed
    form)."""
    out = np.asarray(usable, dtype=float).copy()
    colocated = roles == E.COLOCATED
    others = (roles != E.PREFILL) & ~colocated
    held, rest = float(out[colocated].sum()), float(out[others].sum())
    if held > 0 and rest > 0:
        out[others] *= max(peak - held, 0.0) / rest
    return out


def joined(parts: list) -> np.ndarray:
    return np.concatenate(parts) if parts else np.ones(1)


def row_parts(row: dict) -> list[tuple[int, float, float]]:
    """(servers, share of the batch each may hold, share of the row's traffic) for the simulator rows of one
    allocation row: whole replicas, then a decode or colocated row's fraction as one replica of a smaller batch."""
    replicas = float(row["replicas"])
    if row["role"] == API_KIND:
        return [(0, 1.0, 1.0)]
    c, last = servers_of(replicas)
    if row["role"] == "prefill" or last >= 1.0 - 1e-9:
        return [(c, 1.0, 1.0)]
    whole = c - 1
    parts = [(whole, 1.0, whole / replicas)] if whole else []
    return parts + [(1, last, last / replicas)]


def sim_row(row: dict, workload: Demand, inputs: Inputs, servers: int, batch_share: float, weight_share: float,
            longest: float, tables: dict) -> tuple[list, list]:
    """One simulator row (RP_*, RW_*; RP_C0 set by the caller), its tables appended to ``tables``."""
    role = ROLE_CODES[row["role"]]
    rp = [role, 0, servers, 0, sum(map(len, tables["steps"])), sum(map(len, tables["pre_n"]))]
    in_q = tables["in_q"]
    rw = [0.0] * E.N_RW
    weight = (row.get("prefill_tokens_per_s") if role == E.PREFILL
              # streams routed by usable capacity: a queued row's times its rho*(c) (OPTIMIZER.md 18)
              else float(row.get("output_tokens_per_s") or 0.0) * routing_share(workload, row))
    rw[E.RW_WEIGHT] = float(weight or 0.0) * weight_share
    rw[E.RW_TOKENS_PER_STEP] = 1.0
    if role == E.API:
        return rp, rw
    d = workload.for_row(row.get("speculative"))
    if role in (E.DECODE, E.COLOCATED):
        table, kept, kv_cap = decode_steps(row, d, inputs)
        batch = max(1, int(round(len(table) * batch_share)))
        rp[E.RP_BATCH] = batch
        # a replica's share f holds round(f B) slots, and takes the traffic of those: routed f B's, a share rounded
        # down ran over the rho* the plan priced (up to half a slot's worth: 3% of a 15-slot share)
        rw[E.RW_WEIGHT] *= batch / (len(table) * batch_share)
        rw[E.RW_TOKENS_PER_STEP] = kept
        rw[E.RW_KV_CAP_TOKENS] = kv_cap * batch / len(table)  # a share of a replica holds that share of its KV
        tables["steps"].append(table[:batch])
    if role in (E.PREFILL, E.COLOCATED):
        n, lone, rate, kv_lat, kv_per_token, chunk = prefill_tables(row, d, inputs, longest,
                                                                    prompts_drawn(workload, in_q))
        tables["pre_n"].append(n)
        tables["pre_lone"].append(lone)
        tables["pre_rate"].append(rate)
        rw[E.RW_KV_LAT_S], rw[E.RW_KV_S_PER_TOKEN], rw[E.RW_CHUNK] = kv_lat, kv_per_token, chunk
    return rp, rw
