"""The candidate engine reorganises the performance model for speed; it must give the same numbers."""

import math

import numpy as np
import pytest

from solvers import engine as E
from solvers import layout as L
from solvers.perf_kernels import decode_breakdown
from tests.test_kernels_twin import random_config, random_hw, random_model


def slow_best(m, h, layouts, batches, q, a, ctx_avg, ctx_max, min_tps):
    """Plain loop over decode_breakdown: the engine's decode-only reduction, written the obvious way."""
    out = []
    full = np.empty(L.N_BREAKDOWN)
    for tp, pp, ep in layouts:
        for qj, aj in zip(q, a):
            best = (0.0, batches[0])
            for b in batches:
                decode_breakdown(m, h, tp, pp, ep, b, ctx_avg, ctx_max, qj, aj, full)
                if full[L.B_FITS] and full[L.B_TPS_PER_USER] >= min_tps and full[L.B_TOKENS_PER_S] > best[0]:
                    best = (full[L.B_TOKENS_PER_S], b)
            out.append(best)
    return out


@pytest.mark.parametrize("seed", range(100))
def test_best_decode_per_layout_equals_slow_loop(seed):
    rng = np.random.default_rng(9000 + seed)
    m, h = random_model(rng), random_hw(rng)
    layouts = np.array([random_config(rng, m) for _ in range(6)])
    batches = np.array([1.0, 2.0, 5.0, 17.0, 64.0, 300.0, 2000.0])
    q, a = np.array([1.0, 4.0]), np.array([1.0, 2.5])
    pps = np.unique(layouts[:, 1])
    touched = E.touched_experts_table(m, pps, batches, q)
    res = E.best_decode_per_layout(m, h, layouts, np.searchsorted(pps, layouts[:, 1]), touched, batches, q, a,
                                   3000.0, 4000.0, 20.0, np.full(6, np.inf), np.zeros(6), 1000.0, 500.0,
                                   np.inf, 0.9, 0.0)
    for got, (tput, batch) in zip(res, slow_best(m, h, layouts, batches, q, a, 3000.0, 4000.0, 20.0)):
        assert got[0] == pytest.approx(tput, rel=1e-9, abs=1e-12)
        if tput > 0:
            assert got[1] == batch


def test_wait_quantile_hand_values():
    # M/M/1, rho 0.5, s 1: P(W > t) = 0.5 exp(-0.5 t); the 90th percentile: 0.5 exp(-0.5 t) = 0.1 -> t = 2 ln 5
    assert E.wait_quantile_s(0.5, 1.0, 0.9) == pytest.approx(2 * math.log(5))
    assert E.wait_quantile_s(0.05, 1.0, 0.9) == 0.0  # P(W > 0) = rho < 0.1
    assert E.wait_quantile_s(1.0, 1.0, 0.9) == math.inf


def test_max_prefill_utilization_meets_the_target_exactly():
    rho = E.max_prefill_utilization(2.0, 0.5, 0.4, 0.99)
    assert 0 < rho < 0.95
    assert 0.5 + E.wait_quantile_s(rho, 0.4, 0.99) == pytest.approx(2.0, rel=1e-9)
    assert E.max_prefill_utilization(0.4, 0.5, 0.4, 0.99) == 0.0  # the prompt alone misses the target
    assert E.max_prefill_utilization(100.0, 0.5, 0.4, 0.9) == 0.95  # capped
