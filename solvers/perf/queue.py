"""Queue kernels, jitted: the TTFT queue of a pool of prefill (or colocated) replicas as an M/G/c queue (docs/MODEL.md
9.2 and 15). Arrays and scalars only; the plain-Python twins are in ``solvers.perf.twin``.

* ``erlang_c(servers, utilization)``: the probability that an arrival waits, C(c, rho), for c servers each busy
  ``utilization`` of the time (offered load a = c rho).
* ``wait_quantile_s(servers, utilization, service_s, scv, quantile)``: the Allen-Cunneen approximation of the M/G/c
  waiting time, P(W > t) ~= C(c, rho) exp(-c (1 - rho) t / s * 2 / (1 + scv)), at its ``quantile``.
* ``max_utilization(ttft_target_s, fixed_s, service_s, quantile, servers, scv)``: the highest utilization (at most
  ``MAX_PREFILL_UTILIZATION``) at which fixed time + that wait quantile meets the target.
* ``servers_for_load`` and ``prefill_pool_servers``: the servers a pool sized for a workload's whole demand has.

c = 1, scv = 1 is M/M/1 exactly: C(1, rho) = rho, so t_q = s ln(rho / (1 - q)) / (1 - rho).
"""

from __future__ import annotations

import math

import numpy as np

from solvers.jit import njit

MAX_PREFILL_UTILIZATION = 0.95  # a prefill server is never planned busier than this
MAX_SERVERS = 100_000.0  # a pool is never assumed larger than this many servers (the kernels are tested up to it)
LOG_TINY = -700.0  # below this log-probability a term is 0 in float64


@njit
def erlang_c_integer(servers, utilization):
    """C(c, rho) for a whole number of servers c >= 1 and 0 <= rho < 1, stable for c up to 1e5.

    Erlang B from the Poisson law of N ~ Poisson(a), a = c rho: B = P(N = c) / P(N <= c), with
    P(N > c) = P(N = c) * a / (c + 1) * S, S = sum_{n >= 0} prod_{i=1..n} a / (c + 1 + i) (the series of the
    lower incomplete gamma function; its ratios are below rho, so it converges in about 36 / (1 - rho) terms at
    most), P(N = c) in logs (lgamma). Then C = B / (1 - rho (1 - B))."""
    if utilization <= 0.0:
        return 0.0
    if utilization >= 1.0:
        return 1.0
    c = servers
    a = c * utilization
    log_pmf = c * math.log(a) - a - math.lgamma(c + 1.0)
    if log_pmf < LOG_TINY:
        return 0.0
    pmf = math.exp(log_pmf)
    term, total, n = 1.0, 1.0, 1.0
    while term > 1e-17 * total:
        term *= a / (c + 1.0 + n)
        total += term
        n += 1.0
    tail = pmf * a / (c + 1.0) * total
    b = pmf / (1.0 - tail)
    return b / (1.0 - utilization * (1.0 - b))


@njit
def erlang_c(servers, utilization):
    """C(c, rho) for any c: fewer than one server is one server; between two whole numbers, linear
    interpolation of C between floor(c) and ceil(c) (a pool of 2.5 replicas: two servers and one at half speed,
    whose waits lie between two and three servers')."""
    c = max(servers, 1.0)
    lo = np.floor(c)
    f = c - lo
    low = erlang_c_integer(lo, utilization)
    if f <= 0.0:
        return low
    return (1.0 - f) * low + f * erlang_c_integer(lo + 1.0, utilization)


@njit
def wait_quantile_s(servers, utilization, service_s, scv, quantile):
    """The ``quantile`` (0..1) of the waiting time of an M/G/c queue (Allen-Cunneen): c = ``servers`` (at least
    one), each busy ``utilization`` of the time, mean service ``service_s``, squared coefficient of variation of
    service ``scv`` (1: exponential, M/M/c exactly; 0: deterministic, M/D/c). P(W > t) = C exp(-c (1 - rho) t / s *
    2 / (1 + scv)), so t_q = s (1 + scv) / 2 * ln(C / (1 - q)) / (c (1 - rho)) when C > 1 - q, else 0."""
    if utilization >= 1.0:
        return math.inf
    if utilization <= 0.0:
        return 0.0
    c = max(servers, 1.0)
    waits = erlang_c(c, utilization)
    tail = 1.0 - quantile
    if waits <= tail:
        return 0.0
    return service_s * 0.5 * (1.0 + scv) * math.log(waits / tail) / (c * (1.0 - utilization))


@njit
def max_utilization(ttft_target_s, fixed_s, service_s, quantile, servers, scv):
    """The highest utilization of a pool of ``servers`` at which fixed time + the wait quantile stays within the
    target (bisection: the wait grows with utilization). 0 if even an idle pool misses the target; at most
    MAX_PREFILL_UTILIZATION."""
    if fixed_s > ttft_target_s:
        return 0.0
    lo, hi = 0.0, MAX_PREFILL_UTILIZATION
    if fixed_s + wait_quantile_s(servers, hi, service_s, scv, quantile) <= ttft_target_s:
        return hi
    for _ in range(60):
        mid = 0.5 * (lo + hi)
        if fixed_s + wait_quantile_s(servers, mid, service_s, scv, quantile) <= ttft_target_s:
            lo = mid
        else:
            hi = mid
    return lo


@njit
def servers_for_load(load, capacity_per_server, max_servers):
    """The whole servers of a pool that serves ``load`` at ``capacity_per_server`` each: floor(load / capacity),
    at least 1, at most ``max_servers`` and MAX_SERVERS."""
    if capacity_per_server <= 0.0:
        return 1.0
    return max(1.0, min(np.floor(load / capacity_per_server), max_servers, MAX_SERVERS))


@njit
def prefill_pool_servers(load, rate, ttft_target_s, fixed_s, service_s, quantile, scv, max_servers):
    """The servers c of a prefill pool that serves ``load`` prompt tokens/s with replicas of ``rate`` prompt tokens/s
    each, every one run at the utilization rho*(c) that c servers allow (``max_utilization``): the largest whole
    c <= ``max_servers`` with c rho*(c) rate <= load (so that the pool of load / (rho*(c) rate) replicas has at
    least c), at least 1. c rho*(c) grows with c, so bisection over whole numbers."""
    if rate <= 0.0:
        return 1.0
    first = max_utilization(ttft_target_s, fixed_s, service_s, quantile, 1.0, scv)
    if first <= 0.0:
        return 1.0
    hi = max(1.0, min(np.floor(load / (first * rate)), max_servers, MAX_SERVERS))
    lo = 1.0
    if hi * max_utilization(ttft_target_s, fixed_s, service_s, quantile, hi, scv) * rate <= load:
        return hi
    while hi - lo > 1.0:  # lo meets the rule (or is 1), hi does not
        mid = np.floor(0.5 * (lo + hi))
        if mid * max_utilization(ttft_target_s, fixed_s, service_s, quantile, mid, scv) * rate <= load:
            lo = mid
        else:
            hi = mid
    return lo
