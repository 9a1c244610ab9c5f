"""A workload fitted to a trace: the mean rate, the busiest window's rate over it, the prompt and output lengths
as the scenario's length specs (lognormal from mean and p99, or an empirical table), and the prefix-cache hit.

Definitions (docs/MODEL.md):
  requests_per_s = (N - 1) / span, span = last arrival - first: one over the mean gap between arrivals.
  peak_to_mean   = max over i of #{j : t_i <= t_j < t_i + w} / w, over requests_per_s, floored at 1; the busiest
                   window starts at an arrival (sliding one's start to the next arrival never loses a request).
  lognormal      = {mean: M, p99: P}: M the sample mean, P the linear-interpolated 99th percentile. The lognormal
                   with that mean and p99 has sigma = z - sqrt(z^2 - 2 ln(P/M)), mu = ln M - sigma^2 / 2,
                   z = 2.3263 (the normal's 99th percentile); it exists for 1 < P/M <= exp(z^2 / 2) = 14.97.
  table          = 32 bins of the sorted lengths, finer in the tail (edges at quantiles 0, 0.0375, ..., 0.9,
                   0.925, 0.95, 0.97, 0.98, 0.99, 0.995, 0.999, 1): each bin's mean length weighted by its count,
                   so the table's mean is the sample's.
  prefix_cache_hit = sum of cached prompt tokens / sum of prompt tokens.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import yaml

from planner.errors import InputError
from planner.traces.read import Trace

Z99 = 2.3263478740408408  # the standard normal's 99th percentile
MAX_P99_RATIO = math.exp(Z99 * Z99 / 2)  # P/M above this: no lognormal has that mean and p99
P99_RATIO_KEPT = 0.99 * MAX_P99_RATIO  # where a heavier tail is clipped to, clear of the sqrt's zero
TABLE_EDGES = np.concatenate([np.linspace(0.0, 0.9, 25), [0.925, 0.95, 0.97, 0.98, 0.99, 0.995, 0.999, 1.0]])
KINDS = ("chat", "agentic")
LENGTHS = ("lognormal", "table")
MAX_SHARE = 0.999  # the scenario's prefix_cache_hit is a share in [0, 1)


@dataclass(frozen=True)
class LengthFit:
    """One length column: its figures and the two length specs the scenario accepts."""

    mean: float
    p50: float
    p90: float
    p99: float
    max: float
    lognormal: dict | float  # {"mean": M, "p99": P}; the mean alone where every length is the same
    table: dict  # {"table": [[tokens, requests], ...]}

    def spec(self, lengths: str = "lognormal"):
        return self.lognormal if lengths == "lognormal" else self.table


@dataclass(frozen=True)
class TraceFit:
    name: str
    source: str
    requests: int
    duration_s: float
    requests_per_s: float
    window_s: float
    peak_to_mean: float
    peak_start_s: float
    input_tokens: LengthFit
    output_tokens: LengthFit
    prefix_cache_hit: float
    notes: tuple[str, ...] = ()

    def to_workload(self, kind: str = "chat", lengths: str = "lognormal") -> dict:
        """The scenario workload fields this fit gives (add name, model and tier). For ``kind: agentic`` each
        traced request counts as a one-call session: a trace rarely says which calls share a session."""
        if kind not in KINDS:
            raise InputError(f"expected one of {', '.join(KINDS)}, got {kind!r}", field="kind")
        if lengths not in LENGTHS:
            raise InputError(f"expected one of {', '.join(LENGTHS)}, got {lengths!r}", field="lengths")
        return {
            "kind": kind,
            "requests_per_s": _sig(self.requests_per_s),
            "peak_to_mean": max(1.0, _sig(self.peak_to_mean)),
            "input_tokens": self.input_tokens.spec(lengths),
            "output_tokens": self.output_tokens.spec(lengths),
            "prefix_cache_hit": min(MAX_SHARE, round(self.prefix_cache_hit, 4)),
        }


def fit_trace(trace: Trace, window_s: float = 60.0) -> TraceFit:
    """The workload of ``trace``; ``window_s`` is the peak window (clipped to the trace's span, with a note)."""
    if not (isinstance(window_s, (int, float)) and math.isfinite(window_s) and window_s > 0):
        raise InputError(f"expected seconds > 0, got {window_s!r}", field="window_s")
    span = trace.duration_s
    if trace.requests < 2 or span <= 0:
        raise InputError("has no rate: a fit needs requests at two or more distinct times", file=trace.source,
                         field="arrival_s")
    notes = list(trace.notes)
    window = float(window_s)
    if window > span:
        notes.append(f"the peak window ({window:g} s) is longer than the trace ({span:g} s): the span is used")
        window = span
    rate = (trace.requests - 1) / span
    peak, start = busiest_window(trace.arrival_s, window)
    inputs, outputs = length_fit(trace.input_tokens), length_fit(trace.output_tokens)
    for field, fit in (("input_tokens", inputs), ("output_tokens", outputs)):
        if fit.p99 > fit.mean * P99_RATIO_KEPT:
            notes.append(f"{field}: p99 / mean = {fit.p99 / fit.mean:.1f} exceeds what a lognormal can hold "
                         f"({MAX_P99_RATIO:.2f}); its lognormal p99 is cut to {fit.lognormal['p99']:g} (the table "
                         f"keeps the tail)")
    return TraceFit(
        name=trace.name, source=trace.source, requests=trace.requests, duration_s=span, requests_per_s=rate,
        window_s=window, peak_to_mean=max(1.0, peak / window / rate), peak_start_s=start,
        input_tokens=inputs, output_tokens=outputs,
        prefix_cache_hit=float(trace.cached_tokens.sum() / trace.input_tokens.sum()), notes=tuple(notes),
    )


def busiest_window(arrival_s: np.ndarray, window_s: float) -> tuple[int, float]:
    """The most arrivals in any half-open window [t, t + window_s) and where the first such window starts."""
    counts = np.searchsorted(arrival_s, arrival_s + window_s, side="left") - np.arange(arrival_s.size)
    i = int(np.argmax(counts))
    return int(counts[i]), float(arrival_s[i])


def lognormal_params(mean: float, p99: float) -> tuple[float, float]:
    """(mu, sigma) of the lognormal with this mean and 99th percentile: ln P - ln M = z sigma - sigma^2 / 2, the
    smaller root sigma = z - sqrt(z^2 - 2 ln(P/M)); mu = ln M - sigma^2 / 2."""
    ratio = p99 / mean
    if not (1 < ratio <= MAX_P99_RATIO):
        raise InputError(f"expected 1 < p99 / mean <= {MAX_P99_RATIO:.2f}, got {ratio:g}", field="p99")
    sigma = Z99 - math.sqrt(max(0.0, Z99 * Z99 - 2 * math.log(ratio)))
    return math.log(mean) - sigma * sigma / 2, sigma


def length_fit(tokens: np.ndarray) -> LengthFit:
    mean = float(tokens.mean())
    p50, p90, p99 = (float(v) for v in np.percentile(tokens, [50, 90, 99]))
    return LengthFit(mean=mean, p50=p50, p90=p90, p99=p99, max=float(tokens.max()),
                     lognormal=lognormal_spec(mean, p99), table=table_spec(tokens))


def lognormal_spec(mean: float, p99: float) -> dict | float:
    """{mean, p99} rounded to 0.1 token; the mean alone where p99 is not above it (a fixed length); p99 cut to
    0.99 of the most a lognormal of that mean can have where the sample's tail is heavier."""
    m = round(mean, 1)
    p = round(min(p99, mean * P99_RATIO_KEPT), 1)
    if p <= m:
        return m
    if p / m > MAX_P99_RATIO:  # rounding pushed it over
        p = math.floor(m * P99_RATIO_KEPT * 10) / 10
    return {"mean": m, "p99": p}


def table_spec(tokens: np.ndarray) -> dict:
    """The lengths as an empirical table: bins of the sorted sample (TABLE_EDGES), each its mean length (0.1
    token) and its number of requests; bins of one length merged, empty ones dropped."""
    ordered = np.sort(tokens)
    cuts = np.unique(np.round(TABLE_EDGES * ordered.size).astype(np.int64))
    rows: dict[float, int] = {}
    for lo, hi in zip(cuts[:-1], cuts[1:]):
        value = round(float(ordered[lo:hi].mean()), 1)
        rows[value] = rows.get(value, 0) + int(hi - lo)
    return {"table": [[value, count] for value, count in sorted(rows.items())]}


def fit_summary(fit: TraceFit, kind: str = "chat", lengths: str = "lognormal") -> dict:
    """The fit as JSON-safe data: plain floats and ints, no NaN or infinity."""
    def length(f: LengthFit) -> dict:
        return {"mean": f.mean, "p50": f.p50, "p90": f.p90, "p99": f.p99, "max": f.max,
                "lognormal": f.lognormal, "table": f.table["table"]}

    return _finite({
        "name": fit.name, "source": fit.source, "requests": fit.requests, "duration_s": fit.duration_s,
        "requests_per_s": fit.requests_per_s, "window_s": fit.window_s, "peak_to_mean": fit.peak_to_mean,
        "peak_start_s": fit.peak_start_s, "input_tokens": length(fit.input_tokens),
        "output_tokens": length(fit.output_tokens), "prefix_cache_hit": fit.prefix_cache_hit,
        "notes": list(fit.notes), "workload": fit.to_workload(kind, lengths),
    })


def fit_lines(fit: TraceFit) -> list[str]:
    """The fit in a few plain lines for the terminal."""
    def length(label: str, f: LengthFit) -> str:
        return f"{label:<14} mean {f.mean:,.1f}  p50 {f.p50:,.0f}  p90 {f.p90:,.0f}  p99 {f.p99:,.0f}  max {f.max:,.0f}"

    return [
        f"trace          {fit.name}: {fit.requests:,} requests over {fit.duration_s:,.1f} s, from {fit.source}",
        f"rate           {fit.requests_per_s:,.4g} requests/s (mean over the span)",
        f"peak_to_mean   {fit.peak_to_mean:.3g} (busiest {fit.window_s:g} s window, from {fit.peak_start_s:,.1f} s)",
        length("input_tokens", fit.input_tokens),
        length("output_tokens", fit.output_tokens),
        f"prefix hit     {fit.prefix_cache_hit:.1%} of input tokens cached",
        *(f"note           {n}" for n in fit.notes),
    ]


def fit_yaml(fit: TraceFit, kind: str = "chat", lengths: str = "lognormal") -> str:
    """Workload fields to paste into a scenario's workload (add name, model and tier), with a comment saying where
    they come from."""
    body = yaml.safe_dump(fit.to_workload(kind, lengths), sort_keys=False, default_flow_style=None, width=100)
    head = [f"# fitted to trace {fit.name} ({fit.source}): {fit.requests} requests over {fit.duration_s:.1f} s",
            f"# peak_to_mean: the busiest {fit.window_s:g} s window's rate over the mean rate"]
    return "\n".join(head) + "\n" + body


def _sig(x: float, digits: int = 4) -> float:
    return float(f"{x:.{digits}g}")


def _finite(value):
    """``value`` with every float checked finite (None where not: JSON has no NaN)."""
    if isinstance(value, dict):
        return {k: _finite(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_finite(v) for v in value]
    if isinstance(value, (float, np.floating)):
        return float(value) if math.isfinite(value) else None
    if isinstance(value, np.integer):
        return int(value)
    return value
