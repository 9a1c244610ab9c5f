"""Deployment options for each workload: the columns of the fleet MILP (docs/OPTIMIZER.md, docs/MODEL.md 7).

For every workload and every system that may serve it, the engine scores every layout (tensor x pipeline x expert
parallel), speculative setting, batch and precision, and keeps per system the Pareto-optimal options: the most
capacity for each replica size, dropping sizes that a smaller replica beats. Three kinds:

* ``decode``: decode only; prompts are prefilled elsewhere (capacity in output tokens/s).
* ``prefill``: prefill only, run at the utilization that keeps the TTFT percentile (capacity in prompt tokens/s).
* ``colocated``: both on the same replicas; capacity in output tokens/s, covering the prefill of its own requests.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from planner import performance
from planner.catalog import Hardware, Model
from solvers import layout as L

# Batches the engine tries per layout (streams in flight per replica): geometric from 1 to 8192.
ENGINE_BATCHES = np.unique(np.round(np.geomspace(1, 8192, 160))).astype(np.float64)
# Speculative decoding settings: (draft tokens, acceptance rate). Off, and a draft of 3 at 70% acceptance
# (MTP/EAGLE-class drafts; the draft model's own cost is not modelled, MODEL.md 3.4).
SPECULATIVE = ((0, 0.0), (3, 0.7))


@dataclass(frozen=True)
class Demand:
    """What one workload asks of the fleet at its peak (docs/MODEL.md 7)."""

    name: str
    model: str
    output_tokens_per_s: float  # decode demand: peak calls/s x generated tokens per call
    prefill_tokens_per_s: float  # prompt tokens/s to prefill after prefix-cache hits
    calls_per_s: float
    input_tokens: float  # mean prompt per call
    prefill_tokens: float  # mean prompt per call still to compute (after prefix-cache hits)
    output_tokens: float  # generated per call (output + reasoning)
    min_tps_per_user: float
    resident_s_per_token: float  # agentic: tool-call wait per generated token, during which the KV stays resident
    ttft_s: float
    ttft_quantile: float  # 0..1
    precision: str | None
    allow_hardware: tuple[str, ...] | None

    @property
    def context_avg(self) -> float:
        return self.input_tokens + self.output_tokens / 2.0

    @property
    def context_max(self) -> float:
        return self.input_tokens + self.output_tokens

    @property
    def concurrent_streams(self) -> float:
        """Little's law at the peak: calls/s x seconds each call spends decoding at the tier's speed."""
        return self.calls_per_s * self.output_tokens / self.min_tps_per_user

    @property
    def resident_sessions(self) -> float:
        """Agentic sessions waiting on a tool call with their KV cache resident (Little's law on the wait)."""
        return self.calls_per_s * self.output_tokens * self.resident_s_per_token


def demand_of(workload, model: Model) -> Demand:
    calls = workload.peak_calls_per_s
    generated = workload.generated_tokens_per_call
    prompt = workload.mean_input_tokens
    to_prefill = prompt * (1.0 - workload.prefix_cache_hit)
    return Demand(
        name=workload.name, model=model.id, output_tokens_per_s=calls * generated,
        prefill_tokens_per_s=calls * to_prefill, calls_per_s=calls, input_tokens=prompt,
        prefill_tokens=to_prefill, output_tokens=generated,
        min_tps_per_user=workload.resolved_min_tps_per_user,
        resident_s_per_token=workload.tool_call_gap_s / generated if workload.turns > 1 else 0.0,
        ttft_s=workload.ttft_s,
        ttft_quantile=workload.ttft_percentile / 100.0, precision=workload.precision,
        allow_hardware=tuple(workload.allow_hardware) if workload.allow_hardware else None,
    )


@dataclass
class Options:
    """Columns for the MILP, one row per option, as numpy arrays (see ``COLUMNS``)."""

    rows: dict[str, list] = field(default_factory=lambda: {c: [] for c in COLUMNS})
    candidates_scored: int = 0

    def add(self, **values) -> None:
        values = {**NOT_SPLIT, **values}
        for c in COLUMNS:
            self.rows[c].append(values[c])

    def arrays(self) -> dict[str, np.ndarray]:
        return {c: np.asarray(v) for c, v in self.rows.items()}

    def __len__(self) -> int:
        return len(self.rows["workload"])

    def pareto_across_precisions(self) -> "Options":
        """Keep, per (workload, system, kind), only the options on the chips/capacity frontier over every
        precision together (each call of the engine already filtered its own precision)."""
        a = self.arrays()
        if not len(self):
            return self
        capacity = np.where(a["kind"] == "prefill", a["prefill_tokens_per_s"], a["output_tokens_per_s"])
        groups: dict[tuple, list[int]] = {}
        for i, key in enumerate(zip(a["workload"].tolist(), a["hardware"].tolist(), a["kind"].tolist(),
                                    a["ffn_hardware"].tolist())):
            groups.setdefault(key, []).append(i)
        keep: list[int] = []
        for members in groups.values():
            idx = np.array(members)
            chips = a["chips"][idx].astype(float) + a["ffn_chips"][idx].astype(float)
            keep.extend(idx[pareto_by_chips(chips, capacity[idx])].tolist())
        out = Options(candidates_scored=self.candidates_scored)
        for i in sorted(keep):
            out.add(**{c: self.rows[c][i] for c in COLUMNS})
        return out


COLUMNS = ("workload", "kind", "hardware", "precision", "tensor_parallel", "pipeline_parallel", "expert_parallel",
           "draft_tokens", "batch", "chips", "tps_per_user", "ttft_s", "output_tokens_per_s",
           "prefill_tokens_per_s", "prefill_share", "power_w", "ffn_hardware", "ffn_chips", "ffn_precision", "ttft_fixed_s",
           "prefill_service_s")
# Defaults for columns only some kinds fill: the FFN side of a split, and the parts of a TTFT that queues
# (fixed time before any wait, and one prompt's service time) for prefill and colocated options.
NOT_SPLIT = {"ffn_hardware": "", "ffn_chips": 0, "ffn_precision": "", "ttft_fixed_s": float("nan"),
             "prefill_service_s": float("nan")}


def serves(hw: Hardware, model: Model, role: str) -> bool:
    return role in hw.roles and hw.model_lock in (None, model.id)


def precisions_for(hw: Hardware, demand: Demand) -> list[str]:
    if demand.precision:
        return [demand.precision] if demand.precision in hw.precisions else []
    return list(hw.precisions)


def pareto_by_chips(chips: np.ndarray, capacity: np.ndarray) -> np.ndarray:
    """Indices of the options worth a column: from the smallest replica up, each must serve more per chip than
    every smaller one. A larger replica that serves less per chip is never needed, since smaller replicas cover
    the same demand with fewer chips; smaller, less efficient ones stay for packing into racks."""
    per_chip = capacity / chips
    order = np.lexsort((-capacity, chips))
    keep, best = [], 0.0
    for i in order:
        if per_chip[i] > best * (1 + 1e-9):
            keep.append(i)
            best = per_chip[i]
    return np.asarray(keep, dtype=int)


@dataclass
class System:
    """One system at one precision for one workload: its layouts, vectors, and each layout's prefill of the
    workload's prompt (rate, one prompt's time), computed once and shared by every kind of option."""

    hw: Hardware
    precision: str
    grid: np.ndarray
    mv: np.ndarray
    hv: np.ndarray
    prefill: np.ndarray  # (layouts, 2): prompt tokens/s (0 if it does not fit), one prompt's prefill seconds
    pps: np.ndarray  # the grid's distinct pipeline depths
    touched: np.ndarray  # experts touched per (depth, speculative setting, batch): engine.touched_experts_table


# Query and accepted tokens per step of each SPECULATIVE setting.
SPEC_QUERY = np.array([performance.spec_tokens(d, a)[0] for d, a in SPECULATIVE])
SPEC_ACCEPTED = np.array([performance.spec_tokens(d, a)[1] for d, a in SPECULATIVE])


def system_for(demand: Demand, model: Model, hw: Hardware, precision: str) -> System:
    from solvers import engine

    grid = performance.parallel_grid(hw, model)
    mv, hv = performance.model_vector(model), performance.hardware_vector(hw, precision)
    pps = np.unique(grid[:, 1])
    return System(hw, precision, grid, mv, hv, engine.prefill_per_layout(mv, hv, grid, demand.prefill_tokens), pps,
                  engine.touched_experts_table(mv, pps, ENGINE_BATCHES, SPEC_QUERY))


def decode_options(demand: Demand, sys: System, colocated: bool, opts: Options):
    """Score every layout x speculative setting x batch of one system; add the Pareto options."""
    from solvers import engine

    grid, mv, hv, hw, precision = sys.grid, sys.mv, sys.hv, sys.hw, sys.precision
    if colocated:
        rate, single, target = sys.prefill[:, 0].copy(), sys.prefill[:, 1].copy(), demand.ttft_s
        rate[rate <= 0] = 1e-30  # a layout whose prefill does not fit cannot serve colocated
    else:
        rate, single, target = np.full(len(grid), np.inf), np.zeros(len(grid)), np.inf
    res = engine.best_decode_per_layout(
        mv, hv, grid, np.searchsorted(sys.pps, grid[:, 1]), sys.touched, ENGINE_BATCHES, SPEC_QUERY, SPEC_ACCEPTED,
        demand.context_avg, demand.context_max, demand.min_tps_per_user, rate, single, demand.prefill_tokens, demand.output_tokens,
        target, demand.ttft_quantile, demand.resident_s_per_token)
    opts.candidates_scored += len(grid) * len(SPECULATIVE) * len(ENGINE_BATCHES)
    layout_of = np.repeat(np.arange(len(grid)), len(SPECULATIVE))
    spec_of = np.tile(np.arange(len(SPECULATIVE)), len(grid))
    chips = grid[layout_of, 0] * grid[layout_of, 1]
    ok = np.flatnonzero(res[:, 0] > 0)
    for i in ok[pareto_by_chips(chips[ok], res[ok, 0])]:
        g = grid[layout_of[i]]
        served = res[i, 0]
        opts.add(
            workload=demand.name, kind="colocated" if colocated else "decode", hardware=hw.id, precision=precision,
            tensor_parallel=int(g[0]), pipeline_parallel=int(g[1]), expert_parallel=bool(g[2]),
            draft_tokens=SPECULATIVE[spec_of[i]][0], batch=int(res[i, 1]), chips=int(chips[i]),
            tps_per_user=float(res[i, 2]), ttft_s=float(res[i, 3]) if colocated else float("nan"),
            output_tokens_per_s=float(served),
            prefill_tokens_per_s=float(served * demand.prefill_tokens / demand.output_tokens) if colocated else 0.0,
            prefill_share=float(res[i, 4]), power_w=float(chips[i] * hw.rack_power_w / hw.chips_per_rack),
            ttft_fixed_s=float(single[layout_of[i]]) if colocated else float("nan"),
            prefill_service_s=float(demand.prefill_tokens / rate[layout_of[i]]) if colocated else float("nan"),
        )


def kv_transfer_s(model: Model, hw: Hardware, precision: str, chips: np.ndarray, prompt_tokens: float) -> np.ndarray:
    """Seconds to move one prompt's KV cache from a prefill replica to a decode replica over scale-out, at the
    prefill replica's aggregate scale-out bandwidth (MODEL.md 7)."""
    nbytes = prompt_tokens * model.kv_bytes_per_token(precision, int(prompt_tokens))
    link = hw.chip.scale_out
    return link.latency_s.value + nbytes / (chips * link.bandwidth_bytes_per_s.value)


def prefill_options(demand: Demand, model: Model, sys: System, opts: Options):
    """Prefill-only replicas of every layout, each run at the highest utilization that keeps the TTFT percentile
    (including the KV transfer to the decode pool)."""
    from solvers import engine

    grid, pre, hw, precision = sys.grid, sys.prefill, sys.hw, sys.precision
    opts.candidates_scored += len(grid)
    chips = grid[:, 0] * grid[:, 1]
    transfer = kv_transfer_s(model, hw, precision, chips, demand.input_tokens)
    util, capacity, ttft = engine.prefill_capacity(pre, transfer, demand.prefill_tokens, demand.ttft_s,
                                                   demand.ttft_quantile).T
    ok = np.flatnonzero(capacity > 0)
    for i in ok[pareto_by_chips(chips[ok], capacity[ok])]:
        opts.add(
            workload=demand.name, kind="prefill", hardware=hw.id, precision=precision,
            tensor_parallel=int(grid[i, 0]), pipeline_parallel=int(grid[i, 1]), expert_parallel=bool(grid[i, 2]),
            draft_tokens=0, batch=1, chips=int(chips[i]), tps_per_user=float("nan"), ttft_s=float(ttft[i]),
            output_tokens_per_s=0.0, prefill_tokens_per_s=float(capacity[i]), prefill_share=float(util[i]),
            power_w=float(chips[i] * hw.rack_power_w / hw.chips_per_rack),
            ttft_fixed_s=float(pre[i, 1] + transfer[i]), prefill_service_s=float(demand.prefill_tokens / pre[i, 0]),
        )


SPLIT_KEEP = 12  # attention/FFN options kept per workload and pair, ranked by capex per unit of capacity


def split_options(demand: Demand, model: Model, hw_a: Hardware, hw_f: Hardware, opts: Options) -> None:
    """Attention on A, FFN on F (MODEL.md 10): every (attention chips, FFN chips, attention mode, speculative
    setting, batch); per layout the best batch meeting the tier; the options cheapest in capex per unit of
    capacity kept (both systems' chips count, so a one-dimensional Pareto rule does not apply)."""
    from solvers.split_kernels import S_FITS_ATTENTION, S_FITS_FFN, S_TOKENS_PER_S, S_TPS_PER_USER, split_decode_sweep

    prec_a = demand.precision if demand.precision in hw_a.precisions else hw_a.precision_or_best(None)
    prec_f = demand.precision if demand.precision in hw_f.precisions else hw_f.precision_or_best(None)
    attn, ffn = performance.split_model_vectors(model)
    ha, hf = performance.hardware_vector(hw_a, prec_a), performance.hardware_vector(hw_f, prec_f)
    grid = performance.split_grid(hw_a, hw_f, model)
    nb = len(ENGINE_BATCHES)
    capex_a = hw_a.rack.capex_usd.value / hw_a.chips_per_rack
    capex_f = hw_f.rack.capex_usd.value / hw_f.chips_per_rack
    found = []
    for (draft, _), q, acc in zip(SPECULATIVE, SPEC_QUERY, SPEC_ACCEPTED):
        ca, cf, ep = (np.repeat(grid[:, j], nb) for j in range(3))
        streams = np.tile(ENGINE_BATCHES, len(grid))
        res = split_decode_sweep(attn, ffn, ha, hf, ca, cf, ep, streams, demand.context_avg, demand.context_max,
                                 q, acc, performance.MICRO_BATCHES)
        opts.candidates_scored += len(streams)
        ok = (res[:, S_FITS_ATTENTION] > 0.5) & (res[:, S_FITS_FFN] > 0.5) & (
            res[:, S_TPS_PER_USER] >= demand.min_tps_per_user)
        tput = np.where(ok, res[:, S_TOKENS_PER_S], 0.0).reshape(len(grid), nb)
        best = tput.argmax(axis=1)
        for i, k in enumerate(best):
            if tput[i, k] > 0:
                found.append((tput[i, k], grid[i], ENGINE_BATCHES[k], draft, res[i * nb + k, S_TPS_PER_USER]))
    found.sort(key=lambda f: (f[1][0] * capex_a + f[1][1] * capex_f) / f[0])
    for served, g, batch, draft, tps in found[:SPLIT_KEEP]:
        opts.add(
            workload=demand.name, kind="split", hardware=hw_a.id, precision=prec_a, tensor_parallel=int(g[0]),
            pipeline_parallel=1, expert_parallel=bool(g[2]), draft_tokens=draft, batch=int(batch), chips=int(g[0]),
            tps_per_user=float(tps), ttft_s=float("nan"), output_tokens_per_s=float(served), prefill_tokens_per_s=0.0,
            prefill_share=0.0,
            power_w=float(g[0] * hw_a.rack_power_w / hw_a.chips_per_rack + g[1] * hw_f.rack_power_w / hw_f.chips_per_rack),
            ffn_hardware=hw_f.id, ffn_chips=int(g[1]), ffn_precision=prec_f,
        )


def options_for(demands: list[Demand], models: dict[str, Model], hardware: dict[str, Hardware],
                progress=None) -> Options:
    """Every Pareto option of every workload on every system that may serve it. ``progress(done, total, text)``
    is called after each workload, if given."""
    opts = Options()
    for n, d in enumerate(demands):
        if progress:
            progress(n, len(demands), f"scoring {d.name}")
        model = models[d.model]
        for hw in hardware.values():
            if d.allow_hardware and hw.id not in d.allow_hardware:
                continue
            for prec in precisions_for(hw, d):
                if not (serves(hw, model, "decode") or serves(hw, model, "prefill")):
                    continue
                sys = system_for(d, model, hw, prec)
                if serves(hw, model, "decode"):
                    decode_options(d, sys, colocated=False, opts=opts)
                    if serves(hw, model, "prefill"):
                        decode_options(d, sys, colocated=True, opts=opts)
                if serves(hw, model, "prefill"):
                    prefill_options(d, model, sys, opts)
        for hw_a in hardware.values():
            for hw_f in hardware.values():
                if hw_a.id != hw_f.id and serves(hw_a, model, "attention") and serves(hw_f, model, "ffn") and (
                        not d.allow_hardware or {hw_a.id, hw_f.id} <= set(d.allow_hardware)):
                    split_options(d, model, hw_a, hw_f, opts)
    if progress:
        progress(len(demands), len(demands), f"{opts.candidates_scored:,} candidates scored")
    return opts.pareto_across_precisions()
