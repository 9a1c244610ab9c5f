"""Deployment options for each workload: the columns of the fleet MILP (docs/OPTIMIZER.md, docs/MODEL.md 7).

For every workload and every system that may serve it, the engine scores every layout (tensor x pipeline x expert
parallel), speculative setting, batch and precision, and keeps per system the Pareto-optimal options: the most
capacity for each replica size, dropping sizes that a smaller replica beats. The kinds of option are a registry
(``KINDS``); each kind has its generator (the engine, fast) and its re-scorer (the full kernels, one allocation at
a time, for ``check``):

* ``decode``: decode only; prompts are prefilled elsewhere (capacity in output tokens/s).
* ``colocated``: both on the same replicas; capacity in output tokens/s, covering the prefill of its own requests.
* ``prefill``: prefill only, run at the utilization that keeps the TTFT percentile (capacity in prompt tokens/s).
* ``split``: attention and the KV cache on one system, the FFN on another (MODEL.md 10); allocation rows
  ``attention`` and ``ffn``.
"""

from __future__ import annotations

import concurrent.futures
import dataclasses
import functools
import math
import time
from dataclasses import dataclass, field
from typing import Callable

import numpy as np

from planner.catalog import Hardware, Model, runnable_precisions, runs_precision
from planner.errors import PlannerError
from planner.fleet.demand import Demand
from planner.perf.grid import BATCHES, MICRO_BATCHES, Layouts
from planner.perf.pack import efficiency_of, hardware_vector, model_vector, split_model_vectors
from planner.perf.speculative import draft_vector
from planner.vocabulary import API_KIND
from solvers.jit import thread_count
from solvers.perf import slots as L, sweep
from solvers.perf.kernels import idle_power_w, loaded_power_w, speculative_decode_breakdown
from solvers.perf.queue import servers_for_load, wait_quantile_s
from solvers.perf.serving import (colocated_miss_share, colocated_request_s, decode_seconds, kv_fits, kv_transfer_s,
                                  replica_power_w, resident_share, spec_tokens)
from solvers.perf.split import split_decode_breakdown
from solvers.perf.sweep import split_decode_sweep

COLUMNS = ("workload", "kind", "hardware", "precision", "tensor_parallel", "pipeline_parallel", "expert_parallel",
           "speculative", "draft_tokens", "acceptance", "batch", "chips", "tps_per_user", "ttft_s", "output_tokens_per_s",
           "prefill_tokens_per_s", "prefill_share", "power_w", "ffn_hardware", "ffn_chips", "ffn_precision",
           "ttft_fixed_s", "prefill_service_s", "servers", "source", "measurement")
# Defaults for columns only some kinds fill: the FFN side of a split, and the parts of a TTFT that queues
# (fixed time before any wait, one prompt's service time, and the servers of the pool the option was sized for:
# its c_assumed, MODEL.md 9.2) for prefill and colocated options.
NOT_SPLIT = {"ffn_hardware": "", "ffn_chips": 0, "ffn_precision": "", "ttft_fixed_s": float("nan"),
             "prefill_service_s": float("nan"), "servers": float("nan"), "source": "model", "measurement": ""}
POOL_ROLES = ("prefill", "colocated")  # the roles whose prompts queue in a pool (MODEL.md 9.2)
SPLIT_KEEP = 12  # attention/FFN options kept per workload and pair, ranked by capex per unit of capacity
TTFT_PERCENTILES = (50, 90, 99)


def systems_of(cols: dict, j: int) -> list[tuple[str, str, int, str]]:
    """The systems option ``j`` runs on, each as (hardware, precision, chips per replica, role): one for most kinds,
    the attention and the FFN side of a split. The one place an option's systems are read from its columns, so
    that the chips a column holds, and the filters on systems, follow a mode over more systems (docs/ARCHITECTURE.md)."""
    kind = str(cols["kind"][j])
    if kind == API_KIND:
        return []
    main = (str(cols["hardware"][j]), str(cols["precision"][j]), int(cols["chips"][j]), KINDS[kind].role)
    if not cols["ffn_hardware"][j]:
        return [main]
    return [main, (str(cols["ffn_hardware"][j]), str(cols["ffn_precision"][j]), int(cols["ffn_chips"][j]), "ffn")]


def spec_settings(demand: Demand) -> tuple[list, np.ndarray, np.ndarray]:
    """The workload's speculative settings [(K, acceptance)], and as arrays K and accepted tokens per step."""
    settings = demand.speculation().settings()
    return (settings, np.array([float(k) for k, _ in settings]),
            np.array([spec_tokens(float(k), float(a))[1] for k, a in settings]))


class PastDeadline(Exception):
    """A scoring job found the run's deadline passed (``options_for`` says how many workloads were done)."""


@dataclass
class Options:
    """Columns for the MILP, one row per option, as numpy arrays (see ``COLUMNS``)."""

    rows: dict[str, list] = field(default_factory=lambda: {c: [] for c in COLUMNS})
    candidates_scored: int = 0

    def add(self, **values) -> None:
        values = {**NOT_SPLIT, **values}
        for c in COLUMNS:
            self.rows[c].append(values[c])

    def extend(self, other: Options) -> None:
        for c in COLUMNS:
            self.rows[c].extend(other.rows[c])
        self.candidates_scored += other.candidates_scored

    def arrays(self) -> dict[str, np.ndarray]:
        return {c: np.asarray(v) for c, v in self.rows.items()}

    def __len__(self) -> int:
        return len(self.rows["workload"])

    def pareto_across_precisions(self) -> Options:
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


def serves(hw: Hardware, model: Model, role: str) -> bool:
    return role in hw.roles and hw.model_lock in (None, model.id)


def precisions_for(hw: Hardware, demand: Demand, model: Model) -> list[str]:
    """The precisions a workload's options are searched at on ``hw``: its own where it pins one the system runs,
    else every precision the system runs the model at (``catalog.runnable_precisions``)."""
    if demand.precision:
        return [demand.precision] if runs_precision(hw, model, demand.precision) else []
    return runnable_precisions(hw, model)


def pareto_by_chips(chips: np.ndarray, capacity: np.ndarray) -> np.ndarray:
    """Indices of the options worth a column: from the smallest replica up, each must serve more per chip than
    every smaller one. A larger replica that serves less per chip is never needed, since smaller replicas cover
    the same demand with fewer chips; smaller, less efficient ones stay for packing into racks."""
    per_chip = (capacity / chips).tolist()  # Python floats: the same doubles, compared without numpy's scalars
    keep, best = [], 0.0
    for i in np.lexsort((-capacity, chips)).tolist():
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
    wl: np.ndarray  # the workload vector (slots W_*)
    prefill: np.ndarray  # (layouts, 3): prompt tokens/s (0 if it does not fit), one prompt's prefill seconds, draw W
    pps: np.ndarray  # the grid's distinct pipeline depths
    touched: np.ndarray  # experts touched per (depth, speculative setting, batch): sweep.touched_experts_table
    draft: np.ndarray  # the drafter's model vector (zeros without speculation)
    draft_touched: np.ndarray  # the drafter's experts touched per (depth, 1, batch), one query token
    kinds: frozenset = frozenset()  # the kinds of option to be generated on it (``decode_rows`` scores two at once)
    rows: dict = field(default_factory=dict)  # the engine's rows scored for a kind not generated yet, by (colocated,
    # max_servers)


def system_for(demand: Demand, model: Model, hw: Hardware, precision: str, draft: np.ndarray,
               efficiency: dict | None = None, layouts: Layouts = Layouts(), only: tuple | None = None,
               known: dict | None = None, lengths: tuple | None = None, kinds: frozenset = frozenset()) -> System:
    """``only``: one (tp, pp, ep) layout of the grid instead of all of them (an option generated again). ``known``:
    the kernels' tables already computed, by their arguments (``computed``): a workload's drafters share the
    prefill, and systems of one depth the touched experts. ``lengths``: ``demand.prefill_lengths()``, if known.
    ``kinds``: the names of the kinds of option to be generated on it."""
    grid = layouts.grid(hw, model)
    if only is not None:
        grid = grid[np.all(grid == np.asarray(only, dtype=grid.dtype), axis=1)]
    mv, hv = model_vector(model), hardware_vector(hw, precision, efficiency)
    pps = np.unique(grid[:, 1])
    _, ks, _ = spec_settings(demand)
    lengths = demand.prefill_lengths() if lengths is None else lengths
    return System(hw, precision, grid, mv, hv, demand.workload_vector(),
                  computed(known, sweep.prefill_over_lengths, mv, hv, grid, *lengths), pps,
                  computed(known, sweep.touched_experts_table, mv, pps, BATCHES, ks + 1.0), draft,
                  computed(known, sweep.touched_experts_table, draft, pps, BATCHES, np.ones(1)), frozenset(kinds))


def computed(known: dict | None, kernel: Callable, *args):
    """``kernel(*args)``, a pure function of arrays and numbers, read from ``known`` where it was computed for the
    same values (then stored there); computed afresh where ``known`` is None."""
    if known is None:
        return kernel(*args)
    key = (kernel.__name__,) + tuple((a.dtype.str, a.shape, a.tobytes()) if isinstance(a, np.ndarray) else a
                                     for a in args)
    if key not in known:
        known[key] = kernel(*args)
    return known[key]


# ---- generators: the engine's options of each kind ---------------------------------------------------------
def decode_options(demand: Demand, model: Model, sys: System, opts: Options, colocated: bool = False,
                   max_servers: float = math.inf) -> None:
    """Score every layout x speculative setting x batch of one system; add the Pareto options. Colocated, each
    batch's prompts queue in a pool of the replicas that serve the workload's whole sized demand at that batch
    (``solvers.perf.queue.servers_for_load``, at most ``max_servers``; MODEL.md 9.2)."""
    grid, hw, precision = sys.grid, sys.hw, sys.precision
    rate, single = prefill_of_serving(sys, colocated)
    settings = spec_settings(demand)[0]
    load = demand.sized_output_tokens_per_s
    res = decode_rows(demand, sys, colocated, max_servers)
    opts.candidates_scored += len(grid) * len(settings) * len(BATCHES)
    layout_of = np.repeat(np.arange(len(grid)), len(settings))
    spec_of = np.tile(np.arange(len(settings)), len(grid))
    chips = grid[layout_of, 0] * grid[layout_of, 1]
    ok = np.flatnonzero(res[:, L.E_TOKENS_PER_S] > 0)
    for i in ok[pareto_by_chips(chips[ok], res[ok, L.E_TOKENS_PER_S])]:
        g = grid[layout_of[i]]
        served = res[i, L.E_TOKENS_PER_S]
        draft, acceptance = settings[spec_of[i]]
        opts.add(
            workload=demand.name, kind="colocated" if colocated else "decode", hardware=hw.id, precision=precision,
            tensor_parallel=int(g[0]), pipeline_parallel=int(g[1]), expert_parallel=bool(g[2]),
            speculative=demand.drafter_of(draft), draft_tokens=draft, acceptance=acceptance if draft else 0.0,
            batch=int(res[i, L.E_BATCH]),
            chips=int(chips[i]), tps_per_user=float(res[i, L.E_TPS_PER_USER]),
            ttft_s=float(res[i, L.E_TTFT_S]) if colocated else float("nan"), output_tokens_per_s=float(served),
            prefill_tokens_per_s=float(served * demand.prefill_tokens / demand.output_tokens) if colocated else 0.0,
            prefill_share=float(res[i, L.E_PREFILL_SHARE]),
            power_w=decode_draw_w(sys, layout_of[i], float(res[i, L.E_BATCH]), draft, acceptance,
                                  float(res[i, L.E_PREFILL_SHARE]) if colocated else 0.0),
            ttft_fixed_s=float(single[layout_of[i]]) if colocated else float("nan"),
            prefill_service_s=float(demand.prefill_tokens / rate[layout_of[i]]) if colocated else float("nan"),
            servers=float(servers_for_load(load, served, float(max_servers))) if colocated else float("nan"),
        )


def prefill_of_serving(sys: System, colocated: bool) -> tuple[np.ndarray, np.ndarray]:
    """Per layout, (prompt tokens/s, one prompt's prefill seconds) of a replica that prefills its own prompts
    (colocated), or (inf, 0) for one whose prompts are prefilled elsewhere (decode only)."""
    if not colocated:
        return np.full(len(sys.grid), np.inf), np.zeros(len(sys.grid))
    rate, single = sys.prefill[:, 0].copy(), sys.prefill[:, 1].copy()
    rate[rate <= 0] = 1e-30  # a layout whose prefill does not fit cannot serve colocated
    return rate, single


def decode_rows(demand: Demand, sys: System, colocated: bool, max_servers: float) -> np.ndarray:
    """The engine's rows (``sweep.best_decode_per_layout``) of one system, decode only or colocated. Where the system
    is to generate both kinds, the first asked scores both in one call (they share each layout's coefficients and
    token intervals) and keeps the other's rows on the system for it."""
    key = (colocated, max_servers)
    if key in sys.rows:
        return sys.rows.pop(key)
    ways = (False, True) if {"decode", "colocated"} <= sys.kinds else (colocated,)
    rates, singles = zip(*(prefill_of_serving(sys, c) for c in ways))
    _, ks, accepted = spec_settings(demand)
    grid = sys.grid
    res = sweep.best_decode_per_layout(sys.mv, sys.draft, sys.hv, sys.wl, grid, np.searchsorted(sys.pps, grid[:, 1]),
                                       sys.touched, sys.draft_touched, BATCHES, ks, accepted, np.array(rates),
                                       np.array(singles), demand.sized_output_tokens_per_s, demand.prefill_scv,
                                       np.full((len(ways), len(grid)), float(max_servers)), demand.output_shares())
    sys.rows.update({(c, max_servers): r for c, r in zip(ways, res)})
    return sys.rows.pop(key)


def decode_draw_w(sys: System, row: int, batch: float, draft_tokens: int, acceptance: float,
                  prefill_share: float) -> float:
    """What one replica draws at its operating point (MODEL.md 14): the decode breakdown's draw at its batch, and
    for the ``prefill_share`` of its time a colocated replica spends prefilling, its prefill pass's draw."""
    tp, pp, ep = (float(v) for v in sys.grid[row])
    _, a = spec_tokens(float(draft_tokens), acceptance)
    dec, scratch = np.zeros(L.N_BREAKDOWN), np.zeros(L.N_BREAKDOWN)
    speculative_decode_breakdown(sys.mv, sys.draft, sys.hv, tp, pp, ep, batch, sys.wl[L.W_CONTEXT_AVG],
                                 sys.wl[L.W_CONTEXT_MAX], float(draft_tokens), a, scratch, dec)
    return float(loaded_power_w(float(dec[L.B_POWER_W]), float(sys.prefill[row, 2]), prefill_share))


def colocated_options(demand: Demand, model: Model, sys: System, opts: Options, max_servers: float = math.inf) -> None:
    decode_options(demand, model, sys, opts, colocated=True, max_servers=max_servers)


def prefill_options(demand: Demand, model: Model, sys: System, opts: Options, max_servers: float = math.inf) -> None:
    """Prefill-only replicas of every layout, each run at the highest utilization that keeps the TTFT percentile
    (including the KV transfer to the decode pool) in an M/G/c pool of the replicas that serve the workload's whole
    sized prefill demand at that utilization (at most ``max_servers``; MODEL.md 9.2)."""
    grid, pre, hw, precision = sys.grid, sys.prefill, sys.hw, sys.precision
    opts.candidates_scored += len(grid)
    chips = grid[:, 0] * grid[:, 1]
    prompt = demand.input_tokens_at_ttft_quantile  # a bisection over the turns' mixture: once, not per layout
    sizes, size_of = np.unique(chips, return_inverse=True)  # the transfer depends on the replica's chips alone
    transfer = np.array([kv_transfer_s(sys.mv, sys.hv, c, prompt) for c in sizes])[size_of]
    util, capacity, ttft, servers = sweep.prefill_capacity(
        pre, transfer, demand.prefill_tokens, demand.ttft_s, demand.ttft_quantile, demand.sized_prefill_tokens_per_s,
        demand.prefill_scv, np.full(len(grid), float(max_servers))).T
    ok = np.flatnonzero(capacity > 0)
    for i in ok[pareto_by_chips(chips[ok], capacity[ok])]:
        opts.add(
            workload=demand.name, kind="prefill", hardware=hw.id, precision=precision,
            tensor_parallel=int(grid[i, 0]), pipeline_parallel=int(grid[i, 1]), expert_parallel=bool(grid[i, 2]),
            speculative="none", draft_tokens=0, acceptance=0.0, batch=1, chips=int(chips[i]), tps_per_user=float("nan"),
            ttft_s=float(ttft[i]), output_tokens_per_s=0.0, prefill_tokens_per_s=float(capacity[i]),
            prefill_share=float(util[i]),  # busy util[i] of the time at its pass's draw, idle the rest
            power_w=float(loaded_power_w(idle_power_w(sys.hv, float(chips[i])), pre[i, 2], util[i])),
            ttft_fixed_s=float(pre[i, 1] + transfer[i]), prefill_service_s=float(demand.prefill_tokens / pre[i, 0]),
            servers=float(servers[i]),
        )


def split_precisions(demand: Demand, hw_a: Hardware, hw_f: Hardware) -> tuple[str, str]:
    """The workload's precision on each side where that side runs it, else the side's fastest."""
    prec_a = demand.precision if demand.precision in hw_a.precisions else hw_a.precision_or_best(None)
    prec_f = demand.precision if demand.precision in hw_f.precisions else hw_f.precision_or_best(None)
    return prec_a, prec_f


def split_options(demand: Demand, model: Model, hw_a: Hardware, hw_f: Hardware, opts: Options,
                  draft: np.ndarray, efficiency: dict | None = None, layouts: Layouts = Layouts()) -> None:
    """Attention on A, FFN on F (MODEL.md 10): every (attention chips, FFN chips, attention mode, speculative
    setting, batch); per layout the best batch meeting the tier; the options cheapest in capex per unit of
    capacity kept (both systems' chips count, so a one-dimensional Pareto rule does not apply)."""
    prec_a, prec_f = split_precisions(demand, hw_a, hw_f)
    attn, ffn = split_model_vectors(model)
    eff = efficiency or {}
    ha, hf = hardware_vector(hw_a, prec_a, efficiency_of(eff, hw_a)), hardware_vector(hw_f, prec_f, efficiency_of(eff, hw_f))
    grid = layouts.split(hw_a, hw_f, model)
    wl = demand.workload_vector()
    nb = len(BATCHES)
    capex_a = hw_a.rack.capex_usd.value / hw_a.chips_per_rack
    capex_f = hw_f.rack.capex_usd.value / hw_f.chips_per_rack
    found = []
    settings, ks, accepted = spec_settings(demand)
    for (k, acceptance), acc in zip(settings, accepted):
        # Layouts whose first batch neither fits nor reaches the tier have no batch that does (the KV and the step
        # only grow with the batch): the full sweep scores the others alone.
        first = split_decode_sweep(attn, ffn, draft, ha, hf, grid[:, 0], grid[:, 1], grid[:, 2],
                                   np.full(len(grid), BATCHES[0]), wl[L.W_CONTEXT_AVG], wl[L.W_CONTEXT_MAX],
                                   float(k), acc, MICRO_BATCHES)
        live = grid[split_ok(first, demand.min_tps_per_user)]
        ca, cf, ep = (np.repeat(live[:, j], nb) for j in range(3))
        streams = np.tile(BATCHES, len(live))
        res = split_decode_sweep(attn, ffn, draft, ha, hf, ca, cf, ep, streams, wl[L.W_CONTEXT_AVG],
                                 wl[L.W_CONTEXT_MAX], float(k), acc, MICRO_BATCHES)
        opts.candidates_scored += len(grid) + len(streams)
        tput = np.where(split_ok(res, demand.min_tps_per_user), res[:, L.S_TOKENS_PER_S], 0.0).reshape(len(live), nb)
        best = tput.argmax(axis=1) if len(live) else np.zeros(0, dtype=int)
        for i, b in enumerate(best):
            if tput[i, b] > 0:
                found.append((tput[i, b], live[i], BATCHES[b], k, acceptance,
                              res[i * nb + b, L.S_TPS_PER_USER], res[i * nb + b, L.S_POWER_W]))
    found.sort(key=lambda f: (f[1][0] * capex_a + f[1][1] * capex_f) / f[0])
    for served, g, batch, tokens, acceptance, tps, power in found[:SPLIT_KEEP]:  # tokens: K, drafted per step
        opts.add(
            workload=demand.name, kind="split", hardware=hw_a.id, precision=prec_a, tensor_parallel=int(g[0]),
            pipeline_parallel=1, expert_parallel=bool(g[2]), speculative=demand.drafter_of(tokens),
            draft_tokens=tokens, acceptance=acceptance if tokens else 0.0, batch=int(batch), chips=int(g[0]),
            tps_per_user=float(tps),
            ttft_s=float("nan"), output_tokens_per_s=float(served), prefill_tokens_per_s=0.0, prefill_share=0.0,
            power_w=float(power), ffn_hardware=hw_f.id, ffn_chips=int(g[1]), ffn_precision=prec_f,
        )


def split_ok(res: np.ndarray, min_tps_per_user: float) -> np.ndarray:
    """Rows of a split sweep whose attention and FFN sides fit and that reach the tier."""
    return (res[:, L.S_FITS_ATTENTION] > 0.5) & (res[:, L.S_FITS_FFN] > 0.5) & (
        res[:, L.S_TPS_PER_USER] >= min_tps_per_user)


# ---- re-scorers: one allocation row through the full kernels, for check ------------------------------------
@dataclass(frozen=True)
class Rescore:
    """What the full kernels say of one allocation row's option (per replica)."""

    fits: bool
    tps_per_user: float | None
    output_tokens_per_s: float  # per replica
    prefill_tokens_per_s: float  # per replica, at the row's utilization (prefill) or load (colocated)
    power_w: float  # per replica, both sides of a split
    ttft: dict = field(default_factory=dict)  # ttft_s at the target percentile and ttft_p50/p90/p99_s; empty when
    # the row's prompts are prefilled elsewhere
    share: float | None = None  # colocated: share of the replica's time spent prefilling
    miss_share: float | None = None  # colocated: the share of requests under the tier past the prefill chunks they
    # meet (``serving.colocated_miss_share``); elsewhere a stream is at tps_per_user once it has its first token


def ttft_at(fixed_s: float, service_s: float, utilization: float, quantile: float, servers: float,
            scv: float) -> float:
    """TTFT at ``quantile``: fixed time + the wait quantile of an M/G/c pool of ``servers`` at ``utilization``
    with service scv ``scv`` (``solvers.perf.queue.wait_quantile_s``, the kernel the engine sized the option with)."""
    return float(fixed_s + wait_quantile_s(float(servers), float(utilization), float(service_s), float(scv),
                                           float(quantile)))


def ttft_percentiles(fixed_s: float, service_s: float, utilization: float, quantile: float, servers: float,
                     scv: float) -> dict:
    """TTFT at the workload's own percentile and at p50, p90 and p99 (MODEL.md 9.2) in a pool of ``servers``;
    {} when the row does not prefill (NaN fixed time)."""
    if not math.isfinite(fixed_s):
        return {}
    out = {"ttft_s": ttft_at(fixed_s, service_s, utilization, quantile, servers, scv)}
    out.update({f"ttft_p{p}_s": ttft_at(fixed_s, service_s, utilization, p / 100.0, servers, scv)
                for p in TTFT_PERCENTILES})
    return out


# ---- pools: the replicas whose prompts share one queue ----------------------------------------------------------
def pool_key(row: dict) -> tuple | None:
    """The pool of an allocation row (MODEL.md 9.2): rows of one workload, role, system, layout, precision and
    drafter share one queue of prompts; None for a row that queues none (decode, split, API, measured)."""
    if row.get("role") not in POOL_ROLES or row.get("source", "model") != "model":
        return None
    return (row["workload"], row["role"], row["hardware"], int(row["tensor_parallel"]), int(row["pipeline_parallel"]),
            bool(row["expert_parallel"]), row["precision"], row["speculative"])


def row_utilization(row: dict) -> float:
    """The share of its time one replica of the row prefills: a prefill row's utilization, a colocated row's
    prefill share."""
    return float(row["utilization"] if row["role"] == "prefill" else row["prefill_share"])


def pools(rows: list[dict]) -> dict[tuple, tuple[float, float]]:
    """Each pool's (servers c, utilization): c = its replicas, counted as servers even where fractional (a
    fraction is a server at that share of the speed; ``solvers.perf.queue.erlang_c`` interpolates), at least 1;
    the utilization is its replicas' mean (weighted by replicas)."""
    count: dict[tuple, list[float]] = {}
    for r in rows:
        key = pool_key(r)
        if key is None:
            continue
        n = float(r["replicas"])
        acc = count.setdefault(key, [0.0, 0.0])
        acc[0] += n
        acc[1] += n * row_utilization(r)
    return {k: (max(1.0, n), busy / n if n > 0 else 0.0) for k, (n, busy) in count.items()}


def _vectors(row: dict, model: Model, hw: Hardware, efficiency: dict | None):
    layout = (float(row["tensor_parallel"]), float(row["pipeline_parallel"]), float(int(row["expert_parallel"])))
    return model_vector(model), hardware_vector(hw, row["precision"], efficiency), layout


def drafter(d: Demand, model: Model, models: dict | None) -> np.ndarray:
    return draft_vector(model, d.speculation(), models)


def rescore_decode(row: dict, d: Demand, model: Model, hardware: dict, efficiency: dict,
                   models: dict | None = None, pool: tuple | None = None) -> Rescore:
    """A decode or colocated row: decode and prefill breakdowns of its layout at its batch and speculative setting,
    the colocated time share, the TTFT queue of its ``pool`` ((servers, utilization), ``pools``; alone: one server
    at its own share), the residency of agentic sessions (MODEL.md 3, 6, 7, 9.2, 9.6)."""
    hw = hardware[row["hardware"]]
    mv, hv, layout = _vectors(row, model, hw, efficiency_of(efficiency, hw))
    wl = d.workload_vector()
    k = float(row["draft_tokens"])
    _, a = spec_tokens(k, float(row["acceptance"]))
    batch = float(row["batch"])
    dec, scratch = np.zeros(L.N_BREAKDOWN), np.zeros(L.N_BREAKDOWN)
    speculative_decode_breakdown(mv, drafter(d, model, models), hv, *layout, batch, wl[L.W_CONTEXT_AVG],
                                 wl[L.W_CONTEXT_MAX], k, a, scratch, dec)
    served, ttft, share, prefilled = float(dec[L.B_TOKENS_PER_S]), {}, None, 0.0
    power = float(dec[L.B_POWER_W])
    if row["role"] == "colocated":
        rate, lone_s, prefill_w = prefill_of_row(mv, hv, layout, d)
        prefill_s = d.prefill_tokens / rate if rate > 0 else math.inf
        request_s = colocated_request_s(d.output_tokens, float(dec[L.B_TIME_S]), batch, a, prefill_s)
        served = d.output_tokens / request_s
        share = prefill_s * served / d.output_tokens
        prefilled = served * d.prefill_tokens / d.output_tokens
        servers, busy = pool if pool is not None else (1.0, share)
        ttft = ttft_percentiles(lone_s, prefill_s, busy, d.ttft_quantile, servers, d.prefill_scv)
        power = float(loaded_power_w(power, prefill_w, share))
        miss = float(colocated_miss_share(d.output_tokens, float(dec[L.B_TIME_S]), batch, a, prefill_s,
                                          d.prefill_scv, d.min_tps_per_user, d.output_shares()))
    tps = served / batch
    kv_per_stream = float(dec[L.B_KV_BYTES_PER_CHIP]) / batch
    fits = bool(kv_fits(float(dec[L.B_WEIGHT_BYTES_PER_CHIP]), kv_per_stream, batch,
                        resident_share(d.resident_s_per_token, tps), float(dec[L.B_USABLE_BYTES_PER_CHIP]) * (1 + 1e-9)))
    return Rescore(fits, tps, served, prefilled, power, ttft, share, miss if row["role"] == "colocated" else None)


def rescore_prefill(row: dict, d: Demand, model: Model, hardware: dict, efficiency: dict,
                    models: dict | None = None, pool: tuple | None = None) -> Rescore:
    """A prefill row at its utilization: the prompt's prefill on its layout, the KV transfer to the decode pool,
    and the wait in its ``pool``'s queue ((servers, utilization), ``pools``; alone: one server at the row's
    utilization) (MODEL.md 4, 7, 9.2)."""
    hw = hardware[row["hardware"]]
    mv, hv, layout = _vectors(row, model, hw, efficiency_of(efficiency, hw))
    rate, lone_s, prefill_w = prefill_of_row(mv, hv, layout, d)
    fixed = lone_s + kv_transfer_s(mv, hv, float(row["chips_per_replica"]), d.input_tokens_at_ttft_quantile)
    util = float(row["utilization"])
    servers, busy = pool if pool is not None else (1.0, util)
    ttft = ttft_percentiles(fixed, d.prefill_tokens / rate if rate > 0 else math.inf, busy, d.ttft_quantile,
                            servers, d.prefill_scv)
    power = loaded_power_w(idle_power_w(hv, float(row["chips_per_replica"])), prefill_w, util)
    return Rescore(rate > 0, None, 0.0, rate * util, float(power), ttft)


def prefill_of_row(mv, hv, layout, d: Demand) -> tuple[float, float, float]:
    """(prompt tokens/s over the workload's prompt lengths, the lone prefill at its TTFT percentile's length, the
    draw) of one layout: the engine's ``sweep.prefill_over_lengths``, so check re-scores what the options priced."""
    rate, lone_s, power_w = sweep.prefill_over_lengths(mv, hv, np.array([layout], dtype=float),
                                                       *d.prefill_lengths())[0]
    return float(rate), float(lone_s), float(power_w)


def rescore_split(row: dict, d: Demand, model: Model, hardware: dict, efficiency: dict,
                  models: dict | None = None, pool: tuple | None = None) -> Rescore:
    """An attention row of an attention/FFN split with its FFN side (MODEL.md 10)."""
    hw_a, hw_f = hardware[row["hardware"]], hardware[row["ffn_hardware"]]
    attn, ffn = split_model_vectors(model)
    wl = d.workload_vector()
    k = float(row["draft_tokens"])
    _, a = spec_tokens(k, float(row["acceptance"]))
    out, side = np.zeros(L.N_SPLIT), np.zeros(L.N_BREAKDOWN)
    split_decode_breakdown(attn, ffn, drafter(d, model, models),
                           hardware_vector(hw_a, row["precision"], efficiency_of(efficiency, hw_a)),
                           hardware_vector(hw_f, row["ffn_precision"], efficiency_of(efficiency, hw_f)),
                           float(row["chips_per_replica"]), float(row["ffn_chips"]), float(int(row["expert_parallel"])),
                           float(row["batch"]), wl[L.W_CONTEXT_AVG], wl[L.W_CONTEXT_MAX], k, a, MICRO_BATCHES,
                           side, out)
    fits = bool(out[L.S_FITS_ATTENTION] > 0.5 and out[L.S_FITS_FFN] > 0.5)
    return Rescore(fits, float(out[L.S_TPS_PER_USER]), float(out[L.S_TOKENS_PER_S]), 0.0, float(out[L.S_POWER_W]))


# ---- the registry -----------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Kind:
    """One kind of option: the role of its allocation row, what it covers, the hardware roles it needs (one
    system, or attention on A and ffn on F), its generator and its re-scorer."""

    name: str
    role: str
    covers_decode: bool
    covers_prefill: bool
    needs: tuple[str, ...]  # hardware roles: one system needs all of them; a pair needs A: needs[0], F: needs[1]
    pair: bool
    generate: Callable
    rescore: Callable


KINDS: dict[str, Kind] = {k.name: k for k in (
    Kind("decode", "decode", True, False, ("decode",), False, decode_options, rescore_decode),
    Kind("colocated", "colocated", True, True, ("decode", "prefill"), False, colocated_options, rescore_decode),
    Kind("prefill", "prefill", False, True, ("prefill",), False, prefill_options, rescore_prefill),
    Kind("split", "attention", True, False, ("attention", "ffn"), True, split_options, rescore_split),
)}
KIND_OF_ROLE = {k.role: k for k in KINDS.values()}  # the ffn row of a split is checked with its attention row
DECODE_KINDS = tuple(k.name for k in KINDS.values() if k.covers_decode)
PREFILL_KINDS = tuple(k.name for k in KINDS.values() if k.covers_prefill)


def measured_options(demand: Demand, model: Model, hw: Hardware, kinds, measurements, headroom: float,
                     opts: Options, efficiency: dict | None = None) -> set[str]:
    """The options of ``demand`` on ``hw`` that measurements give (planner.measurements.curves), added to
    ``opts``; returns the precisions they speak for. A measured (workload, system, precision) takes every option
    from its measurements: the model's options there are left out, of the measured roles and of the others (a
    colocated server measured at half the model's speed says nothing good of the model's disaggregated options on
    the same stack), and whether or not a measured point reaches the tier (a measured miss removes the option)."""
    from planner.measurements.curves import curves_for, operating_point

    names = {k.name for k in kinds}
    covered = set()
    for curve in curves_for(demand, model, hw, measurements, precisions_for(hw, demand, model), efficiency):
        if curve.role not in names:
            continue
        covered.add(curve.precision)
        point = operating_point(curve, measured_tier(demand, curve.role), demand.ttft_s)
        if point is None:
            continue
        keep = 1.0 - headroom
        prefill = curve.role == "prefill"
        served = 0.0 if prefill else point.output_tokens_per_s * keep
        prompts = (point.input_tokens_per_s * keep if prefill else
                   served * demand.prefill_tokens / demand.output_tokens if curve.role == "colocated" else 0.0)
        tp, pp, ep = curve.layout
        opts.add(
            workload=demand.name, kind=curve.role, hardware=hw.id, precision=curve.precision, tensor_parallel=tp,
            pipeline_parallel=pp, expert_parallel=ep, speculative=demand.speculative, draft_tokens=0, acceptance=0.0,
            batch=point.batch,
            chips=curve.chips, tps_per_user=float("nan") if prefill else point.tps_per_user,
            ttft_s=point.ttft_s if curve.role != "decode" else float("nan"), output_tokens_per_s=served,
            prefill_tokens_per_s=prompts, prefill_share=float("nan"),
            power_w=float(replica_power_w(hardware_vector(hw, curve.precision), curve.chips)),
            source="measured", measurement=curve.describe() + f", read at concurrency {point.concurrency:g}",
        )
    return covered


def measured_tier(demand: Demand, role: str) -> float:
    """The speed a measured curve must reach at its operating point: the tier, and for a decode curve so much more
    that a mean answer's tokens, one a step, and its join to a running batch at the workload's percentile fit the
    tier's time (``serving.decode_seconds``, ``queues.slack_s``): read at exactly 100 tok/s per user, a 300-token
    answer's join left its batch slots no wait at all and the option unusable."""
    if role != "decode":
        return demand.min_tps_per_user
    out = demand.output_tokens
    return demand.min_tps_per_user * float(decode_seconds(out, 1.0, 1.0, demand.ttft_quantile)) / out


def single_kinds(d: Demand, model: Model, hardware: dict[str, Hardware], singles) -> dict[str, list]:
    """The one-system kinds of option each system the workload may use can serve for its model."""
    out = {}
    for hw in hardware.values():
        kinds = [k for k in singles if all(serves(hw, model, r) for r in k.needs)]
        if kinds and not (d.allow_hardware and hw.id not in d.allow_hardware):
            out[hw.id] = kinds
    return out


def workload_jobs(d: Demand, models: dict[str, Model], hardware: dict[str, Hardware], singles, pairs, measurements,
                  headroom: float, efficiency: dict | None, layouts: Layouts) -> tuple[Options, list, list]:
    """The options of one workload in pieces: those its measurements give, for each drafter it considers
    (``variants``), scored here; then the model's, as jobs to run anywhere: one per system (every drafter on it, on
    every precision no measurement speaks for: a measured system and precision takes every option from its
    measurements, whichever drafter) and one per drafter for the pairs. Returns (measured, system jobs, pair jobs);
    ``assembled`` puts their parts in order."""
    model = models[d.model]
    systems = single_kinds(d, model, hardware, singles)
    variants = d.variants()
    measured = Options()
    covered: dict[str, set] = {h: set() for h in systems}
    for v in (variants if measurements else ()):
        for h, kinds in systems.items():
            covered[h] |= measured_options(v, model, hardware[h], kinds, measurements, headroom, measured, efficiency)
    known: dict = {}  # the kernels' tables by their arguments, shared by the drafters and systems (system_for)
    system_jobs = [functools.partial(system_options, variants, model, models, hardware[h], kinds, covered[h],
                                     efficiency, layouts, known) for h, kinds in systems.items()]
    pair_jobs = [functools.partial(pair_options, v, model, models, hardware, pairs, efficiency, layouts)
                 for v in variants] if pairs else []
    return measured, system_jobs, pair_jobs


def assembled(measured: Options, system_parts: list[list[Options]], pair_parts: list[Options]) -> Options:
    """A workload's options in the order of one drafter at a time: its measured ones, then per drafter its options
    on each system and then on the pairs (the columns the MILP sees, whichever job finished first)."""
    out = Options()
    out.extend(measured)
    for i in range(max(len(pair_parts), max((len(p) for p in system_parts), default=0))):
        for parts in system_parts:
            out.extend(parts[i])
        if pair_parts:
            out.extend(pair_parts[i])
    return out


def system_options(variants: list[Demand], model: Model, models: dict[str, Model], hw: Hardware, kinds: list,
                   covered: set, efficiency: dict | None, layouts: Layouts, known: dict) -> list[Options]:
    """The model's options of one workload on one system, one Options per drafter (``variants``); the kinds that
    decode nothing (prefill pools) only for the first, since no drafter changes them; the precisions in
    ``covered`` (measured) left out. ``known``: tables computed before (``system_for``)."""
    lengths = variants[0].prefill_lengths()  # the same for every drafter
    parts = []
    for i, d in enumerate(variants):
        opts = Options()
        draft = drafter(d, model, models)
        todo = [k for k in kinds if i == 0 or k.covers_decode]
        for prec in precisions_for(hw, d, model):
            if prec in covered or not todo:
                continue
            sys = system_for(d, model, hw, prec, draft, efficiency_of(efficiency, hw), layouts, known=known,
                             lengths=lengths, kinds=frozenset(k.name for k in todo))
            for kind in todo:
                kind.generate(d, model, sys, opts)
        parts.append(opts)
    return parts


def pair_options(d: Demand, model: Model, models: dict[str, Model], hardware: dict[str, Hardware], pairs,
                 efficiency: dict | None, layouts: Layouts) -> Options:
    """The model's options of one workload under one drafter (``d`` is one of its ``variants``) on every pair of
    systems that may serve the pair kinds' roles."""
    opts, draft = Options(), drafter(d, model, models)
    for kind in pairs:
        for hw_a in hardware.values():
            for hw_f in hardware.values():
                if hw_a.id != hw_f.id and serves(hw_a, model, kind.needs[0]) and serves(
                        hw_f, model, kind.needs[1]) and (
                        not d.allow_hardware or {hw_a.id, hw_f.id} <= set(d.allow_hardware)):
                    kind.generate(d, model, hw_a, hw_f, opts, draft, efficiency, layouts)
    return opts


def option_at_servers(cols: dict, j: int, demand: Demand, models: dict[str, Model], hardware: dict[str, Hardware],
                      efficiency: dict | None, layouts: Layouts, servers: float) -> dict | None:
    """Column ``j`` (a prefill or colocated option of ``demand``) generated again for a pool of at most ``servers``
    servers (MODEL.md 9.2, the repair of docs/OPTIMIZER.md 14): the same system, precision, layout, drafter and
    draft length; its utilization, batch and capacity as that pool allows. None when no such option meets the
    tier and TTFT any more."""
    kind = KINDS[str(cols["kind"][j])]
    d = demand.for_row(str(cols["speculative"][j]))
    k = int(cols["draft_tokens"][j])
    if kind.covers_decode and k:
        d = dataclasses.replace(d, draft_tokens=k)  # the column's one draft length, at the same acceptance
    model, hw = models[d.model], hardware[str(cols["hardware"][j])]
    layout = (float(cols["tensor_parallel"][j]), float(cols["pipeline_parallel"][j]),
              float(int(cols["expert_parallel"][j])))
    sys = system_for(d, model, hw, str(cols["precision"][j]), drafter(d, model, models), efficiency_of(efficiency, hw),
                     layouts, only=layout)
    if not len(sys.grid):
        return None
    opts = Options()
    kind.generate(d, model, sys, opts, max_servers=float(servers))
    found = [i for i in range(len(opts)) if opts.rows["draft_tokens"][i] == k]
    if not found:
        return None
    return {c: opts.rows[c][found[0]] for c in COLUMNS}


def options_for(demands: list[Demand], models: dict[str, Model], hardware: dict[str, Hardware],
                progress=None, deadline: float = math.inf, measurements=(), headroom: float = 0.0,
                efficiency: dict | None = None, layouts: Layouts = Layouts()) -> Options:
    """Every Pareto option of every workload on every system (or pair) that may serve it: from ``measurements``
    where they speak for a (workload, system, precision, kind), from the model elsewhere. ``progress(done,
    total, text)`` is called after each workload, if given; past ``deadline`` (``time.monotonic()``) between two
    workloads it raises PlannerError: the run's time limit covers the engine too. ``efficiency``: family ->
    parameters where a scenario sets its own (``efficiency:``), else each family's calibrated values; ``layouts``
    the layouts the scenario allows (its serving stack's engines', or any)."""
    singles = [k for k in KINDS.values() if not k.pair]
    pairs = [k for k in KINDS.values() if k.pair]
    opts = Options()

    def before_deadline(job):
        if time.monotonic() > deadline:
            raise PastDeadline
        return job()

    # Each workload's systems (and pairs) are scored as jobs on numba's threads at once: the kernels release the GIL
    # (nogil), so one job's kernels overlap another's Python, and jobs of one system balance the threads better than
    # whole workloads (installed-h100-site 0.28 -> 0.23 s). Merged in the workloads' order, the columns are those of
    # one job at a time.
    with concurrent.futures.ThreadPoolExecutor(max(1, thread_count())) as pool:
        futures = []
        for d in demands:
            measured, system_jobs, pair_jobs = workload_jobs(d, models, hardware, singles, pairs, measurements,
                                                             headroom, efficiency, layouts)
            futures.append((measured, [pool.submit(before_deadline, j) for j in system_jobs],
                            [pool.submit(before_deadline, j) for j in pair_jobs]))
        if progress and demands:
            progress(0, len(demands), f"scoring {demands[0].name}")
        for n, (measured, system_futures, pair_futures) in enumerate(futures):
            try:
                part = assembled(measured, [f.result() for f in system_futures], [f.result() for f in pair_futures])
            except PastDeadline:
                pool.shutdown(cancel_futures=True)
                raise PlannerError(f"the time limit ran out while scoring candidates ({n} of {len(demands)} "
                                   f"workloads done); raise --time-limit (or solver.time_limit_s)") from None
            opts.extend(part)
            if progress and n + 1 < len(demands):
                progress(n + 1, len(demands), f"scoring {demands[n + 1].name}")
    if progress:
        progress(len(demands), len(demands), f"{opts.candidates_scored:,} candidates scored")
    return opts.pareto_across_precisions()
