"""Replaying a trace at another rate, to drive a simulator: the trace's own gaps and lengths, time compressed by
the rate scale, looped to fill the duration from a random starting request."""

from __future__ import annotations

import math
from dataclasses import replace

import numpy as np

from planner.errors import InputError
from planner.traces.read import Trace

MAX_REPLAY_REQUESTS = 50_000_000  # arrays of this many requests take ~1.6 GB


def sample_arrivals(trace: Trace, rate_scale: float, duration_s: float, rng=None) -> Trace:
    """Requests arriving in [0, duration_s) at ``rate_scale`` times the trace's mean rate: each gap divided by
    ``rate_scale``, requests keeping their lengths and cached tokens. The trace is read as a loop (one mean gap
    between its last request and its first) entered at a request ``rng`` draws (a Generator or a seed), so
    different seeds give different phases of the same traffic. The arrays are ``arrival_s``, ``input_tokens``,
    ``output_tokens`` and ``cached_tokens`` of the Trace returned."""
    for field, value in (("rate_scale", rate_scale), ("duration_s", duration_s)):
        if not (isinstance(value, (int, float)) and math.isfinite(value) and value > 0):
            raise InputError(f"expected a number > 0, got {value!r}", field=field)
    n, span = trace.requests, trace.duration_s
    if n < 2 or span <= 0:
        raise InputError("cannot be replayed: it needs requests at two or more distinct times", file=trace.source,
                         field="arrival_s")
    period = span + span / (n - 1)  # the loop: the span and one mean gap back to the first request
    loops = math.ceil(duration_s * rate_scale / period) + 1
    if loops * n > MAX_REPLAY_REQUESTS:
        raise InputError(f"would hold about {loops * n:,} requests, more than {MAX_REPLAY_REQUESTS:,}; expected a "
                         "shorter duration or a smaller rate scale", field="duration_s")
    start = int(np.random.default_rng(rng).integers(n))
    order = np.roll(np.arange(n), -start)
    once = np.where(order >= start, trace.arrival_s[order], trace.arrival_s[order] + period) - trace.arrival_s[start]
    times = (once[None, :] + period * np.arange(loops)[:, None]).ravel() / rate_scale
    keep = times < duration_s
    index = np.tile(order, loops)[keep]
    arrays = {"arrival_s": times[keep], "input_tokens": trace.input_tokens[index],
              "output_tokens": trace.output_tokens[index], "cached_tokens": trace.cached_tokens[index]}
    for a in arrays.values():
        a.setflags(write=False)
    session = None if trace.session is None else trace.session[index]
    return replace(trace, name=f"{trace.name} x{rate_scale:g}", session=session, notes=(), **arrays)
