"""``simulate``: a plan's pools run through the discrete-event simulator (docs/MODEL.md 16; interface: ``planner
simulate``). Each workload arrives at its peak rate (Poisson, or a trace's arrivals scaled to that rate), its
lengths drawn from its distributions; the report gives TTFT and time per output token at p50/p90/p99, the share
of requests that met both targets, the utilization of each pool, and whether each workload's targets hold.
"""

from __future__ import annotations

import math
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

import numpy as np

from planner.errors import InputError
from planner.fleet.check import Inputs, plan_dict
from planner.sim.build import Pools, pools_of
from planner.traces import fit_trace
from solvers.jit import thread_count
from solvers.sim import engine as E

HIST_LO_LOG10 = -6.0  # 1 microsecond
HIST_DECADES = 12
HIST_BINS_PER_DECADE = 500  # a percentile read from the histogram is within 0.46% of the sample's
TOLERANCE = 0.02  # a target holds within this share: the histogram's resolution and the sampling error at p99
DEFAULT_DURATION_S = 300.0
MIN_WARMUP_S = 20.0
MIN_DURATION_S = 60.0
ENOUGH_CALLS = 3_000_000  # a default run stops short of DEFAULT_DURATION_S where the busiest workload has made these
MAX_REQUESTS_PER_WORKLOAD = 100_000_000
DISTRIBUTION_PERCENTILES = (1, 2, 5, 10, 20, 30, 40, 50, 60, 70, 80, 90, 95, 98, 99, 99.5, 99.9)


@dataclass
class WorkloadResult:
    workload: str
    requests: int
    finished: int
    api_requests: int
    unfinished: int
    ttft_s: dict  # p50, p90, p99 and at the workload's own percentile
    tpot_s: dict
    slo_attainment: float
    ttft_target_s: float
    ttft_percentile: float
    min_tps_per_user: float
    analytic_ttft_s: float | None
    failures: list = field(default_factory=list)
    ttft_distribution_s: list = field(default_factory=list)  # [[percentile, seconds], ...]
    tpot_distribution_s: list = field(default_factory=list)

    @property
    def holds(self) -> bool:
        return not self.failures

    def to_dict(self) -> dict:
        q = f"p{self.ttft_percentile:g}"
        return {"workload": self.workload, "requests": self.requests, "finished": self.finished,
                "unfinished": self.unfinished, "api_requests": self.api_requests,
                "ttft_p50_s": self.ttft_s["p50"], "ttft_p90_s": self.ttft_s["p90"], "ttft_p99_s": self.ttft_s["p99"],
                "ttft_at_target_percentile_s": self.ttft_s[q], "ttft_target_s": self.ttft_target_s,
                "ttft_percentile": self.ttft_percentile, "analytic_ttft_s": self.analytic_ttft_s,
                "tpot_p50_s": self.tpot_s["p50"], "tpot_p90_s": self.tpot_s["p90"], "tpot_p99_s": self.tpot_s["p99"],
                "tps_per_user_p50": 1.0 / self.tpot_s["p50"] if self.tpot_s["p50"] else None,
                "tps_per_user_at_target_percentile": 1.0 / self.tpot_s[q] if self.tpot_s[q] else None,
                "min_tps_per_user": self.min_tps_per_user, "slo_attainment": self.slo_attainment,
                "holds": self.holds, "failures": list(self.failures),
                "ttft_distribution_s": self.ttft_distribution_s, "tpot_distribution_s": self.tpot_distribution_s}


@dataclass
class SimResult:
    scenario: str
    seed: int
    duration_s: float
    warmup_s: float
    trace: str | None
    workloads: list[WorkloadResult]
    pools: list[dict]

    @property
    def holds(self) -> bool:
        return all(w.holds for w in self.workloads)

    @property
    def failures(self) -> list[str]:
        return [f"{w.workload}: {f}" for w in self.workloads for f in w.failures]

    def to_dict(self) -> dict:
        return ({"scenario": self.scenario, "seed": self.seed, "duration_s": self.duration_s,
                          "warmup_s": self.warmup_s, "trace": self.trace, "tolerance": TOLERANCE,
                          "holds": self.holds, "failures": self.failures,
                          "workloads": [w.to_dict() for w in self.workloads], "pools": self.pools})


def percentile(hist: np.ndarray, q: float) -> float | None:
    """The ``q`` (0..1) quantile of the values histogrammed in log bins, linear within its bin."""
    total = int(hist.sum())
    if total == 0:
        return None
    rank = q * total
    cum = np.cumsum(hist)
    k = int(np.searchsorted(cum, rank, side="left"))
    k = min(k, len(hist) - 1)
    below = cum[k - 1] if k > 0 else 0
    frac = (rank - below) / hist[k] if hist[k] else 0.0
    lo = HIST_LO_LOG10 + k / HIST_BINS_PER_DECADE
    return float(10 ** (lo + min(max(frac, 0.0), 1.0) / HIST_BINS_PER_DECADE))


def request_s(pools: Pools) -> float:
    """A mean request's time in the system at its targets: its TTFT and its output at the tier's speed."""
    d = pools.demand
    return d.ttft_s + d.output_tokens / d.min_tps_per_user


def session_s(pools: Pools) -> float:
    """A mean session's time, its calls and the tool waits between them (one call: the request's time); the
    calls a second reach the workload's rate only once the first sessions have run this long."""
    d = pools.demand
    return d.turns * request_s(pools) + (d.turns - 1) * d.tool_call_gap_s


def windows(pools: list[Pools], duration_s: float | None) -> tuple[float, float, float]:
    """(duration, warm-up, drain): statistics start once the pools have filled (five requests' time, or one
    session's where longer, at least MIN_WARMUP_S, at most a quarter of the run) and the requests of the window may
    finish for ten requests' time after it closes. The default run is DEFAULT_DURATION_S, or 20 requests' time,
    or four sessions' time where longer, but no longer than the busiest workload takes to make ENOUGH_CALLS calls
    (their p99 is then read to well under 1%), and never shorter than the pools take to settle (MIN_DURATION_S, ten
    requests' time, three sessions')."""
    longest = max((request_s(p) for p in pools), default=1.0)
    session = max((session_s(p) for p in pools), default=1.0)
    busiest = max((p.demand.calls_per_s for p in pools), default=1.0)
    enough = max(MIN_DURATION_S, 10.0 * longest, 3.0 * session)  # below this the pools never settle
    duration = float(duration_s) if duration_s is not None else max(
        enough, min(max(DEFAULT_DURATION_S, 20.0 * longest, 4.0 * session), ENOUGH_CALLS / busiest))
    warmup = min(duration / 4.0, max(MIN_WARMUP_S, 5.0 * longest, session))
    return duration, warmup, max(120.0, 10.0 * longest)


def simulate_pools(pools: Pools, seed: int, duration_s: float, warmup_s: float, drain_s: float,
                   trace=None) -> tuple[WorkloadResult, list[dict]]:
    d = pools.demand
    nb = HIST_DECADES * HIST_BINS_PER_DECADE
    hist_ttft, hist_tpot = np.zeros(nb, np.int64), np.zeros(nb, np.int64)
    counts, busy = np.zeros(E.N_COUNTS, np.int64), np.zeros(len(pools.rp))
    hist_rows = np.zeros((len(pools.rp), nb), np.int64)
    turns = d.turns if trace is None else 1  # a trace's requests arrive as it recorded them
    params = np.array([warmup_s, duration_s, HIST_LO_LOG10, HIST_BINS_PER_DECADE, d.ttft_s * (1 + TOLERANCE),
                       (1 + TOLERANCE) / d.min_tps_per_user, turns, d.tool_call_gap_s, d.turn_growth_tokens])
    rate = d.calls_per_s / turns  # sessions a second
    if trace is not None:
        trace_t, trace_in, trace_out = trace
        max_requests = len(trace_t)
    else:
        trace_t = trace_in = trace_out = np.zeros(0)
        expected = rate * duration_s
        max_requests = int(expected + 8.0 * math.sqrt(expected) + 1000) * turns
    if max_requests > MAX_REQUESTS_PER_WORKLOAD:
        raise InputError(f"simulating {d.name!r} for {duration_s:g} s at {rate:.4g} requests/s is "
                         f"{max_requests:,} requests, over {MAX_REQUESTS_PER_WORKLOAD:,}; give a shorter --duration")
    E.simulate_workload(int(seed), float(rate), params, float(drain_s), pools.in_q, pools.out_q,
                        float(pools.prefill_share), trace_t, trace_in, trace_out, pools.rp, pools.rw,
                        pools.server_speed, pools.step_s, pools.pre_n, pools.pre_lone_s, pools.pre_rate,
                        pools.prefill_points, int(max_requests), slots_for(pools, max_requests), hist_ttft, hist_tpot,
                        hist_rows, counts, busy, np.zeros((0, E.N_RF)))
    return (workload_result(pools, counts, hist_ttft, hist_tpot),
            pool_rows(pools, busy, hist_rows, duration_s - warmup_s))


def slots_for(pools: Pools, max_requests: int) -> int:
    """Calls in flight the run keeps state for: twenty calls' time (a session's tool wait included) of arrivals at
    the peak (Little's law with room for queues), at least 100,000; a pool so far behind that more are in flight
    drops the rest (counted as unfinished: such a plan fails anyway)."""
    d = pools.demand
    return int(min(max_requests, d.calls_per_s * 20.0 * (request_s(pools) + d.tool_call_gap_s) + 100_000))


def workload_result(pools: Pools, counts, hist_ttft, hist_tpot) -> WorkloadResult:
    d = pools.demand
    q = round(d.ttft_quantile * 100, 6)
    levels = {"p50": 0.5, "p90": 0.9, "p99": 0.99, f"p{q:g}": d.ttft_quantile}
    ttft = {k: percentile(hist_ttft, v) for k, v in levels.items()}
    tpot = {k: percentile(hist_tpot, v) for k, v in levels.items()}
    arrived, finished, api = int(counts[E.C_ARRIVED]), int(counts[E.C_FINISHED]), int(counts[E.C_API])
    simulated = arrived - api
    unfinished = simulated - finished
    rows_ttft = [r.get("ttft_s") for r in pools.rows if r.get("ttft_s") is not None]
    failures = []
    if unfinished:
        failures.append(f"{unfinished:,} of {simulated:,} requests did not finish (the pools cannot keep up)")
    at = ttft[f"p{q:g}"]
    if at is not None and at > d.ttft_s * (1 + TOLERANCE):
        failures.append(f"TTFT p{q:g} {at:.3g} s over the target {d.ttft_s:g} s")
    slow = tpot[f"p{q:g}"]
    if slow is not None and slow * d.min_tps_per_user > 1 + TOLERANCE:
        failures.append(f"p{q:g} of requests at {1 / slow:.4g} tok/s/user, under the tier's {d.min_tps_per_user:g}")
    return WorkloadResult(d.name, simulated, finished, api, unfinished, ttft, tpot,
                          int(counts[E.C_MET]) / simulated if simulated else 1.0, d.ttft_s, q, d.min_tps_per_user,
                          max(rows_ttft) if rows_ttft else None, failures, distribution(hist_ttft),
                          distribution(hist_tpot))


def distribution(hist: np.ndarray) -> list:
    """[[percentile, value], ...] at DISTRIBUTION_PERCENTILES; empty when nothing finished."""
    if not hist.sum():
        return []
    return [[p, percentile(hist, p / 100.0)] for p in DISTRIBUTION_PERCENTILES]


def pool_rows(pools: Pools, busy: np.ndarray, hist_rows: np.ndarray, window_s: float) -> list[dict]:
    """Each allocation row's utilization over the window (a prefill pool's busy share of its servers' time, a
    decode or colocated pool's streams held over its slots) and, where it prefills, its requests' TTFT at the
    workload's percentile beside the plan's (the M/G/c closed form, MODEL.md 9.2)."""
    out = []
    q = pools.demand.ttft_quantile
    for k, row in enumerate(pools.rows):
        parts = [r for r, src in enumerate(pools.source) if src == k]
        role = pools.rp[parts[0], E.RP_ROLE]
        if role == E.API:
            continue
        servers = int(sum(pools.rp[r, E.RP_C] for r in parts))
        slots = sum(pools.rp[r, E.RP_C] * (1 if role == E.PREFILL else pools.rp[r, E.RP_BATCH]) for r in parts)
        hist = hist_rows[parts].sum(axis=0)
        prefills = role in (E.PREFILL, E.COLOCATED)
        out.append({"workload": pools.demand.name, "hardware": row["hardware"], "role": row["role"],
                    "replicas": float(row["replicas"]), "servers": servers,
                    "utilization": float(busy[parts].sum() / (slots * window_s)) if slots and window_s > 0 else None,
                    "requests": int(hist.sum()) if prefills else None,
                    "ttft_at_target_percentile_s": percentile(hist, q) if prefills else None,
                    "analytic_ttft_s": row.get("ttft_s") if prefills else None})
    return out


def simulate(plan, trace=None, duration_s: float | None = None, seed: int = 0) -> SimResult:
    """Simulate a plan (a Plan, a plan dict or a path to plan.json). ``trace``: arrays (arrival_s, input_tokens,
    output_tokens) whose shape of traffic every workload follows at its own rate and mean lengths, or None for
    Poisson arrivals and the workloads' length distributions."""
    d = plan_dict(plan)
    if "first_period_order" in d:
        raise InputError("planner simulate takes a single-period plan; a build-out's periods are separate plans")
    if d.get("status") not in ("optimal", "feasible", "time_limit"):
        raise InputError(f"the plan's status is {d.get('status')!r}: there is no fleet to simulate")
    if duration_s is not None and not (math.isfinite(duration_s) and duration_s > 0):
        raise InputError(f"--duration must be a positive number of seconds, got {duration_s!r}")
    inputs = Inputs(d["inputs"])
    pools = pools_of(d, inputs)
    duration, warmup, drain = windows(pools, duration_s)
    arrivals = [scaled_trace(trace, p, duration) if trace is not None else None for p in pools]
    with ThreadPoolExecutor(max_workers=max(1, min(len(pools), thread_count()))) as ex:  # the kernel drops the GIL
        results = list(ex.map(lambda k: simulate_pools(pools[k], seed, duration, warmup, drain, arrivals[k]),
                              range(len(pools))))
    workloads = [w for w, _ in results]
    pool_table = [row for _, rows in results for row in rows]
    name = d["inputs"]["scenario"].get("name") if isinstance(d["inputs"].get("scenario"), dict) else None
    return SimResult(name or "", int(seed), duration, warmup, getattr(trace, "name", None) if trace is not None
                     else None, workloads, pool_table)


def scaled_trace(trace, pools: Pools, duration_s: float):
    """A trace's arrivals scaled so that its busiest minute runs at the workload's peak rate, its lengths scaled to
    the workload's means, repeated until ``duration_s``: the trace gives the shape of the traffic (bursts, length
    mix), the plan its volume."""
    t = np.asarray(trace.arrival_s, float)
    n_in, n_out = np.asarray(trace.input_tokens, float), np.asarray(trace.output_tokens, float)
    if len(t) < 2 or t[-1] <= t[0]:
        raise InputError("the trace needs at least two requests at different times")
    d = pools.demand
    span = (t[-1] - t[0]) * len(t) / (len(t) - 1)
    scale = (len(t) / span) * fit_trace(trace).peak_to_mean / d.calls_per_s
    t = (t - t[0]) * scale
    period = span * scale
    reps = int(math.ceil(duration_s / period))
    times = np.concatenate([t + k * period for k in range(reps)])
    keep = times < duration_s
    ins = np.tile(n_in * (d.input_tokens / n_in.mean()), reps)[keep]
    outs = np.tile(n_out * (d.output_tokens / n_out.mean()), reps)[keep]
    return times[keep], np.maximum(ins, 1.0), np.maximum(outs, 1.0)
