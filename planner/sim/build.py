"""A plan's pools as the simulator's arrays (docs/MODEL.md 16.2): per workload, one row per allocation row, its
servers (a fractional replica count is one more server at that fraction of the speed), and its timings from the
same performance kernels ``solve`` and ``check`` use: a decode step at every batch up to the row's, a prompt's
prefill (alone, and the loaded replica's rate) at prompt lengths across the workload's range, the KV transfer.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from planner.fleet.check import Inputs
from planner.fleet.demand import Demand
from planner.fleet.options import drafter, efficiency_of
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

    @property
    def prefill_share(self) -> float:
        d = self.demand
        return d.prefill_tokens / d.input_tokens if d.input_tokens > 0 else 1.0


def quantile_table(dist, mean: float) -> np.ndarray:
    """The inverse CDF at (k + 0.5) / K of a length distribution (a ``planner.lengths.Lengths``, or None: fixed at
    ``mean``)."""
    if dist is None or getattr(dist, "spec", None) is None:
        return np.array([float(mean)])
    u = (np.arange(QUANTILE_POINTS) + 0.5) / QUANTILE_POINTS
    return np.maximum(1.0, np.array([float(dist.quantile(float(q))) for q in u]))


def length_tables(d: Demand) -> tuple[np.ndarray, np.ndarray]:
    inputs = getattr(d, "input_length_dist", None)
    outputs = getattr(d, "output_length_dist", None)
    return (quantile_table(inputs() if inputs else None, d.input_tokens),
            quantile_table(outputs() if outputs else None, d.output_tokens))


def servers_of(replicas: float) -> tuple[int, float]:
    """Servers of a row of ``replicas`` replicas and the speed of the last: 2.3 replicas are two servers and a
    third at 0.3 of the speed (a replica's time shared, as the MILP's continuous small replicas assume)."""
    if replicas <= 1e-9:
        return 0, 1.0
    c = int(math.ceil(replicas - 1e-9))
    return c, replicas - (c - 1)


def decode_steps(row: dict, d: Demand, inputs: Inputs) -> tuple[np.ndarray, float]:
    """A decode step's seconds at every batch 1..B of the row, and the output tokens each stream keeps a step."""
    batch = max(1, int(round(float(row["batch"]))))
    model = inputs.models[d.model]
    _, kept = spec_tokens(float(row["draft_tokens"]), float(row["acceptance"]))
    if row.get("source") == "measured":  # a measured point: its speed at its concurrency, at every batch
        return np.full(batch, kept / float(row["tps_per_user"])), kept
    wl = d.workload_vector()
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
        return steps, kept
    hw = inputs.hardware[row["hardware"]]
    mv, hv = model_vector(model), hardware_vector(hw, row["precision"], efficiency_of(inputs.efficiency, hw))
    layout = (float(row["tensor_parallel"]), float(row["pipeline_parallel"]), float(int(row["expert_parallel"])))
    draft = drafter(d, model, inputs.models)
    out, scratch = np.zeros(L.N_BREAKDOWN), np.zeros(L.N_BREAKDOWN)
    for b in range(1, batch + 1):
        speculative_decode_breakdown(mv, draft, hv, *layout, float(b), wl[L.W_CONTEXT_AVG], wl[L.W_CONTEXT_MAX], k,
                                     kept, scratch, out)
        steps[b - 1] = out[L.B_TIME_S]
    return steps, kept


def prefill_tables(row: dict, d: Demand, inputs: Inputs, longest: float) -> tuple:
    """At PREFILL_POINTS prompt lengths up to ``longest``: a lone prompt's prefill seconds and the loaded replica's
    prompt tokens/s (MODEL.md 4, 4.2); the KV transfer's latency and seconds per prompt token (MODEL.md 7); the
    prompt tokens a colocated step carries (the stack's pass budget)."""
    hw = inputs.hardware[row["hardware"]]
    model = inputs.models[d.model]
    mv, hv = model_vector(model), hardware_vector(hw, row["precision"], efficiency_of(inputs.efficiency, hw))
    layout = (float(row["tensor_parallel"]), float(row["pipeline_parallel"]), float(int(row["expert_parallel"])))
    n = np.geomspace(1.0, max(2.0, longest), PREFILL_POINTS)
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
    """Every workload of the plan with the rows that serve it."""
    out = []
    for workload in inputs.demands:
        rows = [r for r in plan["allocation"] if r["workload"] == workload.name and r["role"] in ROLE_CODES
                and float(r["replicas"]) > 1e-12]
        out.append(pools_for(workload, rows, inputs))
    return out


def pools_for(workload: Demand, rows: list[dict], inputs: Inputs) -> Pools:
    in_q, out_q = length_tables(workload)
    longest = float(in_q.max()) * 1.01
    rp = np.zeros((len(rows), E.N_RP), np.int64)
    rw = np.zeros((len(rows), E.N_RW))
    speeds, steps, pre_n, pre_lone, pre_rate = [], [], [], [], []
    for r, row in enumerate(rows):
        role = ROLE_CODES[row["role"]]
        c, last = servers_of(float(row["replicas"]))
        if role == E.API:
            c = 0
        rp[r] = (role, len(speeds), c, 0, sum(len(s) for s in steps), sum(len(p) for p in pre_n))
        speeds.extend([1.0] * (c - 1) + [last] if c else [])
        weight = row.get("prefill_tokens_per_s") if role == E.PREFILL else row.get("output_tokens_per_s")
        rw[r, E.RW_WEIGHT] = float(weight or 0.0)
        rw[r, E.RW_TOKENS_PER_STEP] = 1.0
        if role == E.API:
            continue
        d = workload.for_row(row.get("speculative"))
        if role in (E.DECODE, E.COLOCATED):
            table, kept = decode_steps(row, d, inputs)
            rp[r, E.RP_BATCH] = len(table)
            rw[r, E.RW_TOKENS_PER_STEP] = kept
            rw[r, E.RW_KV_CAP_TOKENS] = len(table) * d.context_max  # the plan fits B streams at the mean context
            steps.append(table)
        if role in (E.PREFILL, E.COLOCATED):
            n, lone, rate, kv_lat, kv_per_token, chunk = prefill_tables(row, d, inputs, longest)
            pre_n.append(n)
            pre_lone.append(lone)
            pre_rate.append(rate)
            rw[r, E.RW_KV_LAT_S], rw[r, E.RW_KV_S_PER_TOKEN], rw[r, E.RW_CHUNK] = kv_lat, kv_per_token, chunk
    cat = lambda parts: np.concatenate(parts) if parts else np.ones(1)  # noqa: E731 - a one-line helper
    return Pools(workload, rows, rp, rw, np.array(speeds, float), cat(steps), cat(pre_n), cat(pre_lone),
                 cat(pre_rate), in_q, out_q)
