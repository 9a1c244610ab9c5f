"""Colocated pools as queues of batch slots (docs/OPTIMIZER.md 18, MODEL.md 9.2, issue 41 item 1): a colocated
replica of batch B is B slots whose streams wait before their first token, so the wait is held within what the
row's TTFT leaves of the target; its streams meet the prefill chunks of the prompts their replica takes, so the
tier is held over the requests at the workload's percentile, not at the mean share. The simulator prefills no
more prompts than a replica has slots, queues a prompt that finds none for the row's next free slot, and holds the
KV a replica's memory holds. Hand-computed values, twins, and the engine's runs that failed before."""

from __future__ import annotations

import math

import numpy as np
import pytest

from planner.fleet.queues import (MAX_DECODE_UTILIZATION, max_colocated_utilization, max_slot_utilization,
                                  routing_share, slot_seconds, ttft_room_s)
from solvers.perf import serving, twin
from solvers.sim import engine as E
from tests.test_queues import demand
from tests.test_simulate import run


# ---- the tier over requests, past the prefill chunks they meet --------------------------------------------------
def test_the_share_of_requests_under_the_tier_by_hand():
    # 100 tokens in steps of 10 ms take 1 s; at the 80 tok/s tier they may take 1.25 s, 0.25 s more: five prompts
    # of 50 ms. A full batch of 4 meets 4 prompts in a mean stream's life (Poisson), so P(N > 5) = 1 - P(N <= 5)
    shares = np.ones(1)
    below = sum(math.exp(-4.0) * 4.0 ** n / math.factorial(n) for n in range(6))
    miss = serving.colocated_miss_share(100.0, 0.01, 4.0, 1.0, 0.05, 0.0, 80.0, shares)
    assert miss == pytest.approx(1.0 - below, rel=1e-9)  # 0.2149
    # whole steps alone past the tier: every request misses; no prefill on the replica: none
    assert serving.colocated_miss_share(100.0, 0.0126, 4.0, 1.0, 0.05, 0.0, 80.0, shares) == 1.0
    assert serving.colocated_miss_share(100.0, 0.01, 4.0, 1.0, 0.0, 0.0, 80.0, shares) == 0.0
    # a short answer misses more often than a long one: the same prompts are a larger part of its time
    short = serving.colocated_miss_share(100.0, 0.01, 4.0, 1.0, 0.05, 0.0, 80.0, np.array([0.2]))
    long = serving.colocated_miss_share(100.0, 0.01, 4.0, 1.0, 0.05, 0.0, 80.0, np.array([5.0]))
    assert short > miss > long


@pytest.mark.parametrize("seed", range(12))
def test_the_miss_share_equals_its_twin(seed):
    rng = np.random.default_rng(seed)
    out = float(rng.uniform(20, 3000))
    interval = float(rng.uniform(0.002, 0.05))
    streams = float(rng.choice([1, 3, 16, 40, 64, 256]))  # both sides of the Poisson sum's 50 prompts
    accepted = float(rng.choice([1.0, 2.4]))
    tier = out / (math.ceil(out / accepted) * interval) / float(rng.uniform(1.02, 3.0))
    prefill = float(rng.uniform(0.001, 0.2)) * out / tier / streams
    scv = float(rng.choice([0.0, 0.4, 2.5]))
    shares = np.sort(rng.lognormal(0.0, 0.8, int(rng.integers(1, 9))))
    got = serving.colocated_miss_share(out, interval, streams, accepted, prefill, scv, tier, shares)
    want = twin.colocated_miss_share(out, interval, streams, accepted, prefill, scv, tier, list(shares))
    assert got == pytest.approx(want, rel=1e-9, abs=1e-12)


# ---- the slots' queue before the first token --------------------------------------------------------------------
def test_a_colocated_row_waits_within_what_its_ttft_leaves():
    d = demand(ttft_s=1.0)
    # its TTFT at p90 (0.4 s: a lone prefill and the prompts' queue) leaves 0.6 s to wait for a slot
    assert ttft_room_s(d, 0.4) == pytest.approx(0.6)
    assert ttft_room_s(d, None) == 1.0 and ttft_room_s(d, float("nan")) == 1.0  # a measured row states none
    assert ttft_room_s(d, 1.2) < 0 and max_colocated_utilization(d, 100.0, 250.0, 1.0, 1.2) == 0.0
    rho = max_colocated_utilization(d, 100.0, 250.0, 1.0, 0.4)
    assert rho == max_slot_utilization(d, 100.0, 250.0, 1.0, 0.6)
    assert 0.0 < rho < MAX_DECODE_UTILIZATION
    # the wait a slot queue at rho* gives at p90 is the room: Erlang C with Allen-Cunneen, as the decode rows'
    from solvers.perf.queue import wait_quantile_s
    assert wait_quantile_s(100.0, rho, slot_seconds(d, 250.0, 1.0), 0.0, 0.9) == pytest.approx(0.6, rel=1e-6)
    # a tighter target leaves less room and a less busy pool; more slots, a busier one
    assert max_colocated_utilization(d, 100.0, 250.0, 1.0, 0.8) < rho < max_colocated_utilization(
        d, 400.0, 250.0, 1.0, 0.4)
    row = {"workload": "chat", "role": "colocated", "replicas": 10.0, "batch": 10, "tps_per_user": 250.0,
           "draft_tokens": 0, "acceptance": 0.0, "ttft_s": 0.4, "acquisition": "owned"}
    assert routing_share(d, row) == pytest.approx(rho * 500 / 500.5)  # its slots' streams: 500 steps, the join


# ---- the simulator -------------------------------------------------------------------------------------------------
STEP_S = 0.01


def colocated_run(replicas: int, batch: int, rate: float, seed: int = 3):
    """A colocated row of ``replicas`` replicas of ``batch`` slots: 1,000-token prompts prefilled at 100,000
    tokens/s in one chunk, 10-token answers in steps of 10 ms."""
    rp = [[E.COLOCATED, 0, replicas, batch, 0, 0]]
    rw = [[1.0, 1.0, 0.0, 0.0, 1e6, 1e18]]
    pre = (np.array([1.0, 1e7]), np.full(2, 1e-9), np.full(2, 1e5), 2)
    return run(rp, rw, [1.0] * replicas, np.full(batch, STEP_S), pre, rate, 300.0, seed=seed)


def test_a_replica_prefills_no_more_prompts_than_it_has_slots():
    """At batch 1 a step prefilled every prompt waiting, each then had its first token, and all but one waited
    for the others' whole answers to decode: 40% of the requests of a solved plan at half their speed."""
    req, counts, *_ = colocated_run(replicas=2, batch=1, rate=12.0)
    assert counts[E.C_FINISHED] > 3000
    done = req[req[:, E.RF_DONE] > 0]
    per_token = (done[:, E.RF_DONE] - done[:, E.RF_FIRST]) / done[:, E.RF_OUT]
    assert per_token.max() == pytest.approx(STEP_S, rel=1e-6)  # every answer decodes alone, at once


def test_a_prompt_waits_only_when_every_slot_of_its_row_is_taken():
    """A prompt was left on the less loaded of two replicas drawn, even with both full and another free: a row of
    12 replicas of batch 1 simulated a p99 TTFT of 1.36 s against the 1 s its pool's queue of slots gives."""
    req, counts, *_ = colocated_run(replicas=2, batch=1, rate=14.0)
    done = req[req[:, E.RF_DONE] > 0]
    arrive, first, end = done[:, E.RF_ARRIVE], done[:, E.RF_FIRST], done[:, E.RF_DONE]
    waited = np.flatnonzero(first - arrive > 0.01 + 1e-9)  # longer than its own prefill
    assert len(waited) > 100
    for i in waited:
        busy = np.sum((arrive < arrive[i]) & (end > arrive[i]))  # requests in the system when it came
        assert busy >= 2, "a prompt waited while a slot of its row was free"
