"""The candidate engine reorganises the performance model for speed; it must give the same numbers."""

import math

import numpy as np
import pytest

from solvers.perf import serving
from solvers.perf import sweep as E
from solvers.perf import slots as L
from solvers.perf.kernels import speculative_decode_breakdown
from tests.generators import random_config, random_hw, random_model


def workload(context_avg, context_max, min_tps, prefill_tokens, output_tokens, ttft_s=np.inf, quantile=0.9,
             resident=0.0, input_tokens=None):
    """A workload vector with these slots (the engine's question)."""
    wl = np.zeros(L.N_WORKLOAD)
    wl[L.W_INPUT_TOKENS] = prefill_tokens if input_tokens is None else input_tokens
    wl[L.W_PREFILL_TOKENS] = prefill_tokens
    wl[L.W_OUTPUT_TOKENS] = output_tokens
    wl[L.W_CONTEXT_AVG] = context_avg
    wl[L.W_CONTEXT_MAX] = context_max
    wl[L.W_MIN_TPS_PER_USER] = min_tps
    wl[L.W_TTFT_S] = ttft_s
    wl[L.W_TTFT_QUANTILE] = quantile
    wl[L.W_RESIDENT_S_PER_TOKEN] = resident
    return wl


def slow_best(m, h, layouts, batches, q, a, ctx_avg, ctx_max, min_tps, draft, output_tokens=500.0, quantile=0.9):
    """Plain loop over speculative_decode_breakdown: the engine's decode-only reduction, written the obvious way."""
    out = []
    full, scratch = np.empty(L.N_BREAKDOWN), np.empty(L.N_BREAKDOWN)
    for tp, pp, ep in layouts:
        for qj, aj in zip(q, a):
            best = (0.0, batches[0])
            for b in batches:
                speculative_decode_breakdown(m, draft, h, tp, pp, ep, b, ctx_avg, ctx_max, qj - 1.0, aj, scratch,
                                             full)
                # a mean answer's whole steps and its join at the percentile within the tier (queues.slack_s)
                tps = full[L.B_TPS_PER_USER]
                steps = math.ceil(output_tokens / aj - 1e-9) + quantile
                joined = tps > 0 and steps * aj / tps <= output_tokens / min_tps * (1 + 1e-9)
                if full[L.B_FITS] and tps >= min_tps and joined and full[L.B_TOKENS_PER_S] > best[0]:
                    best = (full[L.B_TOKENS_PER_S], b)
            out.append(best)
    return out


@pytest.mark.parametrize("seed", range(100))
def test_best_decode_per_layout_equals_slow_loop(seed):
    rng = np.random.default_rng(9000 + seed)
    m, h = random_model(rng), random_hw(rng)
    layouts = np.array([random_config(rng, m) for _ in range(6)])
    batches = np.array([1.0, 2.0, 5.0, 17.0, 64.0, 300.0, 2000.0])
    q, a = np.array([1.0, 4.0]), np.array([1.0, 2.5])  # query tokens per step: K + 1 (no drafter's cost here)
    pps = np.unique(layouts[:, 1])
    touched = E.touched_experts_table(m, pps, batches, q)
    draft = random_model(rng)
    draft_touched = E.touched_experts_table(draft, pps, batches, np.ones(1))
    wl = workload(context_avg=3000.0, context_max=4000.0, min_tps=20.0, prefill_tokens=1000.0, output_tokens=500.0)
    res = E.best_decode_per_layout(m, draft, h, wl, layouts, np.searchsorted(pps, layouts[:, 1]), touched,
                                   draft_touched, batches, q - 1.0, a, np.full(6, np.inf), np.zeros(6))
    for got, (tput, batch) in zip(res, slow_best(m, h, layouts, batches, q, a, 3000.0, 4000.0, 20.0, draft)):
        assert got[0] == pytest.approx(tput, rel=1e-9, abs=1e-12)
        if tput > 0:
            assert got[1] == batch


def test_wait_quantile_hand_values():
    # M/M/1, rho 0.5, s 1: P(W > t) = 0.5 exp(-0.5 t); the 90th percentile: 0.5 exp(-0.5 t) = 0.1 -> t = 2 ln 5
    assert serving.wait_quantile_s(0.5, 1.0, 0.9) == pytest.approx(2 * math.log(5))
    assert serving.wait_quantile_s(0.05, 1.0, 0.9) == 0.0  # P(W > 0) = rho < 0.1
    assert serving.wait_quantile_s(1.0, 1.0, 0.9) == math.inf


def test_max_prefill_utilization_meets_the_target_exactly():
    rho = serving.max_prefill_utilization(2.0, 0.5, 0.4, 0.99)
    assert 0 < rho < 0.95
    assert 0.5 + serving.wait_quantile_s(rho, 0.4, 0.99) == pytest.approx(2.0, rel=1e-9)
    assert serving.max_prefill_utilization(0.4, 0.5, 0.4, 0.99) == 0.0  # the prompt alone misses the target
    assert serving.max_prefill_utilization(100.0, 0.5, 0.4, 0.9) == 0.95  # capped
