"""``simulate``: a plan's pools run through the discrete-event simulator (docs/MODEL.md 16; interface: ``planner
simulate``). Each workload arrives at its peak rate (Poisson, or a trace's arrivals scaled to that rate), its
lengths drawn from its distributions; the report gives TTFT and time per output token at p50/p90/p99, the share
of requests that met both targets, the utilization of each pool, and whether each workload's targets hold.
"""

from __future__ import annotations

import json
import math
import os
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

import numpy as np

from planner.errors import InputError
from planner.fleet.check import Inputs, plan_dict
from planner.fleet.rows import read_rows
from planner.sim.build import Pools, pools_of
from planner.traces import Trace, fit_trace, read_trace
from solvers.jit import thread_count
from solvers.sim import engine as E

HIST_LO_LOG10 = -6.0  # 1 microsecond
HIST_DECADES = 12
HIST_BINS_PER_DECADE = 500  # a percentile read from the histogram is within 0.46% of the sample's
MAX_SEED = 2 ** 63  # seeds are the simulator's int64
TOLERANCE = 0.02  # a target holds within this share: the histogram's resolution and the sampling error at p99
DEFAULT_WINDOW_S = 240.0  # seconds of statistics a default run gathers, unless ENOUGH_CALLS come sooner
MIN_WARMUP_S = 10.0
MIN_WINDOW_S = 20.0
ENOUGH_CALLS = 3_000_000  # a default run's window closes once the workload has made these
# a build-out's plan is up to periods x demand scenarios plans: each of its runs closes its window at a third of that
# (the p99 still read from 10,000 calls above it)
BUILDOUT_ENOUGH_CALLS = 1_000_000
MAX_REQUESTS_PER_WORKLOAD = 100_000_000
# The quick run ``planner solve`` makes of every plan it finds (``quick=True``; docs/MODEL.md 16.7): the pools warm
# up until they hold QUICK_FILL of their stationary streams (``fill_time_s``), then a window of QUICK_CALLS calls,
# no shorter than one request's time or QUICK_MIN_S and no longer than DEFAULT_WINDOW_S.
QUICK_FILL = 0.95
QUICK_CALLS = 100_000
QUICK_MIN_S = 2.0
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
    duration_s: float = 0.0  # seconds of arrivals simulated for this workload
    warmup_s: float = 0.0  # its statistics start after these
    concurrent_streams: float = 1.0  # its streams in service at the peak (the repair's square-root staffing)

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
                "duration_s": self.duration_s, "warmup_s": self.warmup_s,
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


def fill_time_s(pools: Pools, share: float = QUICK_FILL) -> float:
    """How long the pools take from empty to hold ``share`` of their stationary streams. Streams arrive at rate
    lambda and each stays S (its TTFT and its output at the tier's speed, over the output-length table); t after
    an empty start lambda E[min(S, t)] are in service (M/G/inf), against lambda E[S] for good, so the answer is
    the t where E[min(S, t)] = share E[S]: share x S for fixed lengths, -ln(1 - share) E[S] (3.0 E[S] at 95%)
    for exponential ones."""
    d = pools.demand
    s = np.sort(d.ttft_s + np.asarray(pools.out_q, float) / d.min_tps_per_user)
    n = len(s)
    capped = (np.cumsum(s) + s * (n - np.arange(1, n + 1))) / n  # E[min(S, s_k)]: the table's points equally likely
    target = share * float(s.mean())
    k = int(np.searchsorted(capped, target))
    if k == 0:  # below the shortest stream: min(S, t) = t for every one
        return float(target)
    if k >= n:
        return float(s[-1])
    slope = (n - k) / n  # d E[min(S, t)] / dt between s[k-1] and s[k]: the share of streams still longer
    return float(s[k - 1] + (target - capped[k - 1]) / slope)


def quick_windows(pools: Pools) -> tuple[float, float, float]:
    """(duration, warm-up, drain) of the quick run: warm until the pools hold QUICK_FILL of their stationary
    streams (an agentic session's time where longer: its calls reach the rate only then), then QUICK_CALLS calls'
    time, at least one request's time and QUICK_MIN_S, at most DEFAULT_WINDOW_S."""
    longest = request_s(pools)
    session = session_s(pools) if pools.demand.turns > 1 else 0.0
    settle = max(QUICK_MIN_S, fill_time_s(pools), session)
    window = max(QUICK_MIN_S, longest, min(DEFAULT_WINDOW_S, QUICK_CALLS / max(pools.demand.calls_per_s, 1e-9)))
    return settle + window, settle, max(120.0, 10.0 * longest)


def windows(pools: Pools, duration_s: float | None, enough_calls: int = ENOUGH_CALLS) -> tuple[float, float, float]:
    """(duration, warm-up, drain) of one workload's run (each workload's pools are its own, so each runs for as
    long as it needs). The warm-up lets the pools fill: three requests' time, or one session's where longer (the
    calls a second reach the workload's rate only once the first sessions have run that long), at least
    MIN_WARMUP_S. The window after it is DEFAULT_WINDOW_S, 15 requests' time or three sessions' where longer, but
    no longer than the workload takes to make ``enough_calls`` calls (its p99 is then read to well under 1%), and
    never shorter than five requests' time or MIN_WINDOW_S. The requests of the window may finish for ten
    requests' time after it closes. A given duration keeps at most a quarter of itself for the warm-up."""
    longest, session = request_s(pools), session_s(pools)
    settle = max(MIN_WARMUP_S, 3.0 * longest, session)
    drain = max(120.0, 10.0 * longest)
    if duration_s is not None:
        return float(duration_s), min(float(duration_s) / 4.0, settle), drain
    window = max(MIN_WINDOW_S, 5.0 * longest, min(max(DEFAULT_WINDOW_S, 15.0 * longest, 3.0 * session),
                                                  enough_calls / max(pools.demand.calls_per_s, 1e-9)))
    return settle + window, settle, drain


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
    result = workload_result(pools, counts, hist_ttft, hist_tpot)
    result.duration_s, result.warmup_s = duration_s, warmup_s
    return result, pool_rows(pools, busy, hist_rows, duration_s - warmup_s)


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
    if d.output_tokens_per_s > 0 and not any(r.get("role") != "prefill" for r in pools.rows):
        # no replica decodes it (its rows removed, or at 0, NaN or negative replicas): the router counted its
        # requests as sent elsewhere, and "holds" with none simulated (issue 43)
        failures.append(f"no replica serves its {d.output_tokens_per_s:.6g} output tokens/s at peak: the plan has "
                        f"no decode, colocated or hosted row for it with replicas above 0")
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
                          distribution(hist_tpot), concurrent_streams=d.concurrent_streams)


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


def check_seed(seed) -> None:
    """InputError naming --seed unless ``seed`` is a whole number the simulator's 64-bit generator takes (2^70 was
    a numba traceback, issue 43)."""
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or not 0 <= int(seed) < MAX_SEED:
        raise InputError(f"expected a whole number from 0 to 2^63 - 1, got {seed!r}", field="--seed")


MAX_SLOTS = 10_000_000  # batch slots the simulator holds at once over all rows (memory: a few arrays of each)


def check_work(rows: list[dict]) -> None:
    """InputError, before any array is made, where the plan's replicas x batch (the simulator's slots) pass
    MAX_SLOTS: 10^9 replicas hung it, 10^18 asked for exabytes (issue 43)."""
    slots = sum(math.ceil(float(r["replicas"]) - 1e-9) * int(r.get("batch") or 1) for r in rows
                if r.get("role") in ("prefill", "decode", "colocated", "attention"))
    if slots > MAX_SLOTS:
        raise InputError(f"the plan's replicas x batch come to {slots:,} slots; the simulator holds at most "
                         f"{MAX_SLOTS:,}", field="allocation")


def check_duration(duration_s, option: str = "--duration") -> None:
    """InputError naming ``option`` (the name the user typed: simulate's --duration, solve's --sim-duration) unless
    ``duration_s`` is None or a positive finite number of seconds (issue 43: solve's errors named --duration)."""
    if duration_s is None:
        return
    if isinstance(duration_s, bool) or not isinstance(duration_s, (int, float, np.integer, np.floating)) or not (
            math.isfinite(duration_s) and duration_s > 0):
        raise InputError(f"expected a positive number of seconds, got {duration_s!r}", field=option)


TRACE_ARRAYS = ("arrival_s", "input_tokens", "output_tokens")


def trace_of(trace):
    """The trace a simulation follows: None (Poisson arrivals), a ``Trace`` or anything with its arrays, or a
    shipped trace's name or a trace file's path (read by ``planner.traces.read_trace``); InputError naming
    ``trace`` otherwise (an int was an AttributeError from inside the fit, issue 43)."""
    if trace is None or isinstance(trace, Trace) or all(hasattr(trace, a) for a in TRACE_ARRAYS):
        return trace
    if isinstance(trace, (str, os.PathLike)):
        return read_trace(trace)
    raise InputError(f"expected a Trace (planner.traces.read_trace), a shipped trace's name or a trace file's path, "
                     f"or None; got {type(trace).__name__}", field="trace")


def simulate(plan, trace=None, duration_s: float | None = None, seed: int = 0, period: str | None = None,
             demand_scenario: str | None = None, quick: bool = False):
    """Simulate a plan (a Plan, a plan dict or a path to plan.json). ``trace``: arrays (arrival_s, input_tokens,
    output_tokens) whose shape of traffic every workload follows at its own rate and mean lengths, or None for
    Poisson arrivals and the workloads' length distributions. A build-out's plan is simulated period by period
    (``BuildOutSimResult``), every period of every demand scenario unless ``period`` (a start date) or
    ``demand_scenario`` (a name) picks some. ``quick``: the short seeded run ``planner solve`` makes of every plan
    (``quick_windows``) unless ``duration_s`` is given."""
    check_seed(seed)
    check_duration(duration_s)
    trace = trace_of(trace)
    d = plan_dict(plan)
    if "first_period_order" in d:
        return simulate_buildout(d, trace, duration_s, seed, period, demand_scenario, quick)
    if period is not None or demand_scenario is not None:
        raise InputError("--period and --demand-scenario pick periods of a build-out's plan; this plan has one period")
    return simulate_single(d, trace, duration_s, seed, quick=quick)


def simulate_single(d: dict, trace, duration_s: float | None, seed: int,
                    enough_calls: int = ENOUGH_CALLS, quick: bool = False) -> SimResult:
    """A single-period plan's dict simulated: each workload's pools for as long as ``windows`` says."""
    if d.get("status") not in ("optimal", "feasible", "time_limit"):
        raise InputError(f"the plan's status is {d.get('status')!r}: there is no fleet to simulate")
    hardware = d["inputs"].get("hardware") if isinstance(d.get("inputs"), dict) else None
    check_work(read_rows(d.get("allocation"), hardware=hardware if isinstance(hardware, dict) else {}))
    inputs = Inputs(d["inputs"])
    pools = pools_of(d, inputs)
    spans = [quick_windows(p) if quick and duration_s is None else windows(p, duration_s, enough_calls) for p in pools]
    arrivals = [scaled_trace(trace, p, w[0]) if trace is not None else None for p, w in zip(pools, spans)]
    with ThreadPoolExecutor(max_workers=max(1, min(len(pools), thread_count()))) as ex:  # the kernel drops the GIL
        results = list(ex.map(lambda k: simulate_pools(pools[k], seed, *spans[k], arrivals[k]), range(len(pools))))
    workloads = [w for w, _ in results]
    pool_table = [row for _, rows in results for row in rows]
    name = d["inputs"]["scenario"].get("name") if isinstance(d["inputs"].get("scenario"), dict) else None
    duration, warmup, _ = max(spans, default=(0.0, 0.0, 0.0))
    return SimResult(name or "", int(seed), duration, warmup, getattr(trace, "name", None) if trace is not None
                     else None, workloads, pool_table)


@dataclass
class BuildOutSimResult:
    """A build-out's plan simulated period by period: ``runs`` of (demand scenario, period start, SimResult)."""

    scenario: str
    seed: int
    runs: list

    @property
    def holds(self) -> bool:
        return all(r.holds for _, _, r in self.runs)

    @property
    def failures(self) -> list[str]:
        return [f"{date}{' ' + name if name else ''}: {f}" for name, date, r in self.runs for f in r.failures]

    @property
    def workloads(self) -> list[WorkloadResult]:
        """Each workload's result in the run where it fares worst (a failing one where any fails), for the repair
        (``planner.sim.verify``)."""
        worst: dict = {}
        for _, _, r in self.runs:
            for w in r.workloads:
                key = (w.holds, -(w.ttft_s.get(f"p{w.ttft_percentile:g}") or 0.0) / w.ttft_target_s)
                if w.workload not in worst or key < worst[w.workload][0]:
                    worst[w.workload] = (key, w)
        return [w for _, w in worst.values()]

    def to_dict(self) -> dict:
        return {"scenario": self.scenario, "seed": self.seed, "tolerance": TOLERANCE, "holds": self.holds,
                "failures": self.failures,
                "periods": [{"demand_scenario": name, "start_date": date, **r.to_dict()} for name, date, r in self.runs]}


def simulate_buildout(d: dict, trace, duration_s: float | None, seed: int, period: str | None,
                      demand_scenario: str | None, quick: bool = False) -> BuildOutSimResult:
    """Every period of every demand scenario of a build-out's plan (or those picked) as a single-period plan: its
    allocation in that period, the period's demands, the plan's catalog figures."""
    inputs = d.get("inputs") or {}
    scenarios = d.get("scenarios") or [{"name": None, "periods": d.get("periods") or []}]
    if "period_demands" not in inputs or any("allocation" not in p for s in scenarios for p in s["periods"]):
        raise InputError("this build-out's plan has no allocation per period (it was written before planner "
                         "simulate read build-outs): solve the scenario again")
    names = [s["name"] for s in scenarios]
    dates = [p["start_date"] for p in scenarios[0]["periods"]]
    if demand_scenario is not None and demand_scenario not in names:
        known = ", ".join(n for n in names if n)
        raise InputError(f"--demand-scenario {demand_scenario!r} is not one of the plan's "
                         + (f"({known})" if known else "(it has no demand scenarios)"))
    if period is not None and period not in dates:
        raise InputError(f"--period {period!r} is not a period of the plan; its periods start on "
                         + ", ".join(dates))
    runs, done = [], {}
    for s, spec in enumerate(scenarios):
        if demand_scenario is not None and spec["name"] != demand_scenario:
            continue
        for t, per in enumerate(spec["periods"]):
            if period is not None and per["start_date"] != period:
                continue
            single = {"status": d.get("status"), "allocation": per["allocation"],
                      "inputs": {**inputs["plan"], "demands": inputs["period_demands"][s][t]}}
            # the first period is every demand scenario's alike (the multipliers start after it): simulated once
            key = json.dumps([per["allocation"], inputs["period_demands"][s][t]], sort_keys=True)
            if key not in done:
                done[key] = simulate_single(single, trace, duration_s, seed, BUILDOUT_ENOUGH_CALLS, quick)
            runs.append((spec["name"], per["start_date"], done[key]))
    return BuildOutSimResult(d.get("scenario") or "", int(seed), runs)


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
