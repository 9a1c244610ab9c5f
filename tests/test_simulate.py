"""The simulator (docs/MODEL.md 16): the engine against its twin request by request, against closed forms where
they are exact (M/M/1 and M/M/c waits, one batch decoded by hand), conservation and determinism by seed; then
``planner simulate`` on a solved plan, the library and the CLI alike."""

from __future__ import annotations

import copy
import json
import math

from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from planner.cli import main
from planner.errors import InputError
from planner.sim import simulate
from planner.fleet.check import Inputs
from planner.sim.build import pools_of, row_parts, servers_of
from planner.sim.run import percentile
from solvers.sim import engine as E
from solvers.sim import twin as T
from solvers.sim.rng import from_quantiles, from_quantiles_py, uniform, uniform_py

GOLDEN_PLANS = Path(__file__).resolve().parent / "golden" / "plans"  # the shipped scenarios' whole plans

HIST = 6000
NO_TRACE = np.zeros(0)


def params(warmup, duration, ttft_target=1e9, tpot_target=1e9, turns=1, gap=0.0, growth=0.0):
    return np.array([warmup, duration, -6.0, 500.0, ttft_target, tpot_target, turns, gap, growth])


def run(rp, rw, speeds, step_s, pre, rate, duration, seed=1, warmup=0.0, in_q=(1000.0,), out_q=(10.0,),
        share=1.0, trace=(NO_TRACE, NO_TRACE, NO_TRACE), max_requests=None, drain=1e4, slots=None, args=None):
    pre_n, pre_lone, pre_rate, n_points = pre
    if max_requests is None:
        max_requests = len(trace[0]) or int(rate * duration + 10 * math.sqrt(rate * duration) + 100)
    rw = np.asarray(rw, float)
    if rw.shape[1] < E.N_RW:  # rows that leave out the KV capacity have room for any context
        rw = np.hstack([rw, np.full((len(rw), E.N_RW - rw.shape[1]), 1e18)])
    hist_ttft, hist_tpot = np.zeros(HIST, np.int64), np.zeros(HIST, np.int64)
    counts, busy = np.zeros(E.N_COUNTS, np.int64), np.zeros(len(rp))
    req = np.zeros((max_requests, E.N_RF))
    E.simulate_workload(seed, rate, params(warmup, duration) if args is None else args, drain, np.array(in_q, float), np.array(out_q, float),
                        share, *trace, np.asarray(rp, np.int64), np.asarray(rw, float), np.asarray(speeds, float),
                        np.asarray(step_s, float), pre_n, pre_lone, pre_rate, n_points, max_requests,
                        max_requests if slots is None else slots, hist_ttft, hist_tpot,
                        np.zeros((len(rp), HIST), np.int64), counts, busy, req)
    return req[:max(counts[E.C_CREATED], 0)], counts, hist_ttft, hist_tpot, busy


def test_reused_request_slots_change_nothing():
    """A run that keeps state for only the requests in flight (slots reused) is the run that keeps all."""
    rp = [[E.PREFILL, 0, 2, 0, 0, 0], [E.DECODE, 2, 3, 8, 0, 0], [E.COLOCATED, 5, 2, 4, 0, 2]]
    rw = [[1.0, 1.0, 0.0, 0.0, 0.0], [2.0, 1.0, 0.0, 0.0, 0.0], [1.0, 1.0, 0.0, 0.0, 300.0]]
    pre = (np.array([1.0, 1e7] * 2), np.full(4, 0.05), np.full(4, 2e4), 2)
    args = (rp, rw, [1.0] * 6 + [0.6], np.linspace(0.01, 0.03, 8), pre, 40.0, 60.0)
    every = run(*args, in_q=exponential_quantiles(800.0))
    reused = run(*args, in_q=exponential_quantiles(800.0), slots=300)
    np.testing.assert_array_equal(every[0], reused[0])
    np.testing.assert_array_equal(every[2], reused[2])
    assert every[1][E.C_DROPPED] == reused[1][E.C_DROPPED] == 0


def flat_prefill(rate_tok_s, lone_s=1e-9, rows=1):
    """Prefill tables of one rate and one lone-prompt time at every length, for ``rows`` rows."""
    n = np.array([1.0, 1e7] * rows)
    return n, np.full(2 * rows, lone_s), np.full(2 * rows, rate_tok_s), 2


def fast_decode_row(c0, servers=1, batch=4096):
    """A decode row that never queues: every stream takes one tiny step."""
    return [E.DECODE, c0, servers, batch, 0, 0], [1.0, 1e9, 0.0, 0.0, 0.0]


def exponential_quantiles(mean, k=8192):
    u = (np.arange(k) + 0.5) / k
    return -mean * np.log1p(-u)


# ---- the random numbers --------------------------------------------------------------------------------------
def test_the_generator_and_its_twin_draw_the_same_numbers(rng):
    for seed, index in rng.integers(0, 2**62, size=(200, 2)):
        u = uniform(int(seed), int(index))
        assert u == uniform_py(int(seed), int(index))
        assert 0.0 < u < 1.0
    table = np.sort(rng.lognormal(5, 1, 64))
    for u in rng.random(100):
        assert from_quantiles(table, u) == pytest.approx(from_quantiles_py(table, u), rel=1e-15)


# ---- engine == twin -----------------------------------------------------------------------------------------------
def random_case(rng):
    """Rows of every role with random servers (some fractional), batches, step tables and prefill tables."""
    rp, rw, speeds, steps, pre_n, pre_lone, pre_rate = [], [], [], [], [], [], []
    for role in (E.PREFILL, E.DECODE, E.COLOCATED, E.PREFILL, E.DECODE, E.API):
        replicas = float(rng.uniform(0.3, 4.0))
        c, last = servers_of(replicas)
        c = 0 if role == E.API else c
        batch = int(rng.integers(1, 7)) if role in (E.DECODE, E.COLOCATED) else 0
        rp.append([role, len(speeds), c, batch, sum(map(len, steps)), len(pre_n) * 4])
        rw.append([rng.uniform(0.5, 2.0), rng.choice([1.0, 1.7, 2.4]), rng.uniform(0, 0.02), rng.uniform(0, 1e-5),
                   float(rng.integers(64, 1024)), batch * rng.uniform(300, 3000)])
        speeds.extend([1.0] * (c - 1) + [last] if c else [])
        if batch:
            steps.append(np.sort(rng.uniform(0.005, 0.05, batch)))
        n = np.sort(rng.uniform(1, 20000, 4))
        pre_n.append(n)
        pre_lone.append(np.sort(rng.uniform(0.01, 0.5, 4)))
        pre_rate.append(np.sort(rng.uniform(2e3, 3e4, 4)))
    return (np.array(rp, np.int64), np.array(rw), np.array(speeds), np.concatenate(steps),
            (np.concatenate(pre_n), np.concatenate(pre_lone), np.concatenate(pre_rate), 4))


@pytest.mark.parametrize("seed,turns", [(k, 1) for k in range(6)] + [(k, 4) for k in range(6, 9)])
def test_the_engine_and_its_twin_agree_request_by_request(seed, turns):
    """Calls alone, and agentic sessions of four calls whose next call follows the last after a tool wait."""
    rng = np.random.default_rng(seed)
    rp, rw, speeds, steps, pre = random_case(rng)
    in_q = np.sort(rng.lognormal(6.5, 1.0, 64))
    out_q = np.sort(rng.integers(2, 80, 64).astype(float))
    rate, duration = float(rng.uniform(2, 12)) / turns, 40.0
    sessions = int(rate * duration + 10 * math.sqrt(rate * duration) + 100)
    args = params(0.0, duration, turns=turns, gap=0.5, growth=300.0)
    req, counts, *_ = run(rp, rw, speeds, steps, pre, rate, duration, seed=seed, in_q=in_q, out_q=out_q, share=0.7,
                          max_requests=sessions * turns, args=args)
    twin = T.simulate_py(seed, rate, args, 1e4, in_q, out_q, 0.7, rp, rw, speeds, steps, *pre, sessions * turns)
    made = ~np.isnan(twin[:, E.RF_ARRIVE])
    assert made.sum() > 50 and (turns == 1 or (made.reshape(-1, turns).sum(axis=1) > 1).any())
    assert counts[E.C_ARRIVED] == made.sum()
    for col in (E.RF_ARRIVE, E.RF_IN, E.RF_OUT, E.RF_FIRST, E.RF_DONE):
        np.testing.assert_allclose(req[:len(twin), col][made], twin[made, col], rtol=1e-9, atol=1e-12,
                                   equal_nan=True)


# ---- closed forms -------------------------------------------------------------------------------------------------
def erlang_c(c, a):
    """Probability of waiting in M/M/c with offered load a = lambda / mu (Erlang C), by hand."""
    top = a**c / math.factorial(c) * c / (c - a)
    return top / (sum(a**k / math.factorial(k) for k in range(c)) + top)


@pytest.mark.parametrize("servers,rho", [(1, 0.7), (4, 0.8)])
def test_a_prefill_pool_of_exponential_prompts_waits_as_mmc(servers, rho):
    """Prompts of exponentially distributed length at a fixed rate are exponential services: the pool is M/M/c."""
    service_s, rate_tok_s = 0.1, 1e4
    mean_tokens = service_s * rate_tok_s
    lam = rho * servers / service_s
    dec_p, dec_w = fast_decode_row(servers)
    rp = [[E.PREFILL, 0, servers, 0, 0, 0], dec_p]
    rw = [[1.0, 1.0, 0.0, 0.0, 0.0], dec_w]
    req, *_ = run(rp, rw, [1.0] * (servers + 1), [1e-9] * 4096, flat_prefill(rate_tok_s, rows=2), lam, 40000.0,
                  seed=3, in_q=exponential_quantiles(mean_tokens))
    arrived = req[:, E.RF_ARRIVE]
    kept = arrived > 1000.0
    wait = (req[:, E.RF_FIRST] - arrived - req[:, E.RF_PREFILL] / rate_tok_s)[kept]
    a = lam * service_s
    pw = erlang_c(servers, a)
    mean = pw * service_s / (servers - a)
    assert wait.mean() == pytest.approx(mean, rel=0.06)
    # P(W > t) = C exp(-(c mu - lambda) t): the 99th percentile
    p99 = math.log(pw / 0.01) / (servers / service_s - lam)
    assert np.quantile(wait, 0.99) == pytest.approx(p99, rel=0.06)
    assert (wait > 1e-7).mean() == pytest.approx(pw, rel=0.05)  # clocks near 4e4 s round at 1e-11


def test_one_batch_decoded_by_hand():
    """Four prompts at t = 0, prefilled together in 0.1 s; the first stream to arrive wakes the idle replica and
    decodes one step alone (0.01 s), the other three join at its end and all four run at 0.04 s a step. The first
    needs 10 steps: 0.11 + 9 x 0.04 = 0.47 s; the others' tenth step runs at batch 3: 0.11 + 9 x 0.04 + 0.03."""
    rp = [[E.PREFILL, 0, 4, 0, 0, 0], [E.DECODE, 4, 1, 4, 0, 0]]
    rw = [[1.0, 1.0, 0.0, 0.0, 0.0], [1.0, 1.0, 0.0, 0.0, 0.0]]
    trace = (np.zeros(4), np.full(4, 100.0), np.full(4, 10.0))
    req, counts, *_ = run(rp, rw, [1.0] * 5, [0.01, 0.02, 0.03, 0.04], flat_prefill(1e12, lone_s=0.1, rows=2),
                          1.0, 10.0, trace=trace)
    np.testing.assert_allclose(req[:, E.RF_FIRST], 0.1)
    np.testing.assert_allclose(np.sort(req[:, E.RF_DONE]), [0.47, 0.50, 0.50, 0.50])
    assert counts[E.C_FINISHED] == 4


def test_streams_wait_for_kv_room_first_come_first_served():
    """A replica of 4 slots but KV for 2,000 tokens takes two 1,000-token streams at once: the third joins when the
    first finishes (0.20 s) and ends 10 steps later (0.30 s), the fourth when the second does (0.21 -> 0.31 s)."""
    rp = [[E.PREFILL, 0, 4, 0, 0, 0], [E.DECODE, 4, 1, 4, 0, 0]]
    rw = [[1.0, 1.0, 0.0, 0.0, 0.0, 0.0], [1.0, 1.0, 0.0, 0.0, 0.0, 2000.0]]
    trace = (np.zeros(4), np.full(4, 990.0), np.full(4, 10.0))
    req, *_ = run(rp, rw, [1.0] * 5, [0.01] * 4, flat_prefill(1e12, lone_s=0.1, rows=2), 1.0, 10.0, trace=trace)
    np.testing.assert_allclose(np.sort(req[:, E.RF_DONE]), [0.20, 0.21, 0.30, 0.31])


def test_speculative_streams_take_fewer_steps():
    """A stream keeping 2.5 tokens a step needs ceil(10 / 2.5) = 4 steps of 0.01 s."""
    rp = [[E.PREFILL, 0, 1, 0, 0, 0], [E.DECODE, 1, 1, 4, 0, 0]]
    rw = [[1.0, 1.0, 0.0, 0.0, 0.0], [1.0, 2.5, 0.0, 0.0, 0.0]]
    req, *_ = run(rp, rw, [1.0, 1.0], [0.01] * 4, flat_prefill(1e12, lone_s=0.1, rows=2), 1.0, 10.0,
                  trace=(np.zeros(1), np.full(1, 100.0), np.full(1, 10.0)))
    assert req[0, E.RF_DONE] == pytest.approx(0.14)


def test_a_colocated_replica_prefills_in_chunks_beside_its_batch():
    """One colocated replica, chunks of 500 tokens at 10,000 tokens/s: a 1,200-token prompt takes three steps
    (500, 500, 200 tokens: 0.05 + 0.05 + 0.02 s) and then decodes 10 steps of 0.01 s alone."""
    rp = [[E.COLOCATED, 0, 1, 4, 0, 0]]
    rw = [[1.0, 1.0, 0.0, 0.0, 500.0]]
    req, *_ = run(rp, rw, [1.0], [0.01] * 4, flat_prefill(1e4), 1.0, 10.0,
                  trace=(np.zeros(1), np.full(1, 1200.0), np.full(1, 10.0)))
    assert req[0, E.RF_FIRST] == pytest.approx(0.12)
    assert req[0, E.RF_DONE] == pytest.approx(0.22)


def test_every_request_finishes_or_is_counted_unfinished():
    """A decode pool asked for 1.5 times what it serves: requests back up, and every one that arrived in the
    window either finished or is counted as unfinished."""
    rp = [[E.PREFILL, 0, 8, 0, 0, 0], [E.DECODE, 8, 2, 8, 0, 0]]
    rw = [[1.0, 1.0, 0.0, 0.0, 0.0], [1.0, 1.0, 0.0, 0.0, 0.0]]
    # capacity: 2 replicas x 8 streams / (10 steps x 0.01 s) = 160 requests/s; asked 240
    req, counts, hist_ttft, hist_tpot, _ = run(rp, rw, [1.0] * 10, [0.01] * 8, flat_prefill(1e9, rows=2), 240.0,
                                               60.0, drain=5.0)
    window = (req[:, E.RF_ARRIVE] >= 0) & (req[:, E.RF_ARRIVE] < 60.0)
    done = ~np.isnan(req[:, E.RF_DONE])
    assert counts[E.C_ARRIVED] == window.sum()
    assert counts[E.C_FINISHED] == (window & done).sum() == hist_ttft.sum() == hist_tpot.sum()
    assert counts[E.C_FINISHED] < counts[E.C_ARRIVED]
    # with too few slots for the backlog, the arrivals that find none are dropped and counted
    _, few, *_ = run(rp, rw, [1.0] * 10, [0.01] * 8, flat_prefill(1e9, rows=2), 240.0, 60.0, drain=5.0, slots=500)
    assert few[E.C_DROPPED] > 0
    assert few[E.C_FINISHED] + few[E.C_DROPPED] <= few[E.C_ARRIVED]


def test_the_same_seed_gives_the_same_run_and_another_seed_another():
    rp = [[E.PREFILL, 0, 2, 0, 0, 0], [E.DECODE, 2, 2, 8, 0, 0]]
    rw = [[1.0, 1.0, 0.0, 0.0, 0.0], [1.0, 1.0, 0.0, 0.0, 0.0]]
    args = (rp, rw, [1.0] * 4, np.linspace(0.01, 0.03, 8), flat_prefill(2e4, rows=2), 50.0, 30.0)
    a = run(*args, seed=5, in_q=exponential_quantiles(1000.0))
    b = run(*args, seed=5, in_q=exponential_quantiles(1000.0))
    c = run(*args, seed=6, in_q=exponential_quantiles(1000.0))
    np.testing.assert_array_equal(a[0], b[0])
    np.testing.assert_array_equal(a[2], b[2])
    assert not np.array_equal(a[2], c[2])


def test_percentiles_read_from_the_histogram_are_within_its_resolution(rng):
    values = rng.lognormal(-1, 1, 100_000)
    hist = np.zeros(HIST, np.int64)
    for v in values:
        E.hist_add(hist, -6.0, 500.0, v)
    for q in (0.5, 0.9, 0.99):
        assert percentile(hist, q) == pytest.approx(np.quantile(values, q), rel=0.005)


def test_a_fractional_replica_is_one_more_replica_held_to_its_share():
    assert servers_of(2.3) == (3, pytest.approx(0.3))
    assert servers_of(1.0) == (1, 1.0)
    assert servers_of(0.0) == (0, 1.0)
    # a decode row of 2.5 replicas: two whole replicas with 2 / 2.5 of its traffic, one of half the batch with the rest
    parts = row_parts({"role": "decode", "replicas": 2.5})
    assert parts == [(2, 1.0, pytest.approx(0.8)), (1, pytest.approx(0.5), pytest.approx(0.2))]
    assert row_parts({"role": "prefill", "replicas": 2.5}) == [(3, 1.0, 1.0)]
    assert row_parts({"role": "colocated", "replicas": 0.25}) == [(1, pytest.approx(0.25), pytest.approx(1.0))]


def test_a_replica_share_is_routed_the_traffic_of_the_slots_it_deploys():
    """A decode row's fraction f of a replica is deployed as round(f B) slots; routed f B slots' traffic, a share
    rounded down ran over the rho* its plan priced. Every simulator row of one allocation row carries the same
    traffic a slot (bank-2mw's golden plan: a 0.857 share of a 59-slot replica, a 0.261 share of a 50-slot one)."""
    plan = json.loads((Path(__file__).parent / "golden" / "plans" / "bank-2mw.json").read_text())
    split = 0
    for pools in pools_of(plan, Inputs(plan["inputs"])):
        queued = np.flatnonzero(pools.rp[:, E.RP_ROLE] != E.PREFILL)
        per_slot: dict = {}
        for r in queued:
            slots = pools.rp[r, E.RP_C] * pools.rp[r, E.RP_BATCH]
            per_slot.setdefault(pools.source[r], []).append(pools.rw[r, E.RW_WEIGHT] / slots)
        for source, weights in per_slot.items():
            split += len(weights) > 1
            assert weights == pytest.approx([weights[0]] * len(weights), rel=1e-9), pools.rows[source]["workload"]
    assert split  # the plan has a share of a replica beside whole ones


# ---- plans ---------------------------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def bank_plan():
    from planner import load_scenario, solve

    return json.loads(json.dumps(solve(load_scenario("scenarios/bank-2mw.yaml")).to_dict()))


def test_a_plan_with_too_few_decode_replicas_fails_naming_the_workload(bank_plan):
    plan = copy.deepcopy(bank_plan)
    # the plan's largest decode-side row: streams are routed by capacity, so a small row cut only sends its
    # share to the workload's others
    row = max((r for r in plan["allocation"] if r["role"] in ("decode", "colocated")),
              key=lambda r: float(r["output_tokens_per_s"]))
    row["replicas"] = float(row["replicas"]) * 0.6
    result = simulate(plan, duration_s=60.0)
    assert not result.holds
    assert any(f.startswith(row["workload"] + ":") for f in result.failures)


@pytest.mark.parametrize("tamper", ["removed", 0.0])
def test_a_workload_with_demand_and_no_servers_does_not_hold(bank_plan, tmp_path, tamper):
    """Issue 43: a workload whose decode rows were removed (or set to 0 replicas) "held" with exit 0 and no
    request counted: the router had sent its requests nowhere and counted them as a hosted API's. (NaN or -3
    replicas, impossible numbers, are an input error: test_impossible_replicas_are_an_input_error.)"""
    plan = copy.deepcopy(bank_plan)
    name = "customer-chatbot"
    if tamper == "removed":
        plan["allocation"] = [r for r in plan["allocation"] if not (r["workload"] == name and r["role"] != "prefill")]
    else:
        for r in plan["allocation"]:
            if r["workload"] == name and r["role"] != "prefill":
                r["replicas"] = tamper
    result = simulate(plan, duration_s=20.0)
    assert not result.holds and any(f.startswith(f"{name}: no replica serves") for f in result.failures)
    path = tmp_path / "plan.json"
    path.write_text(json.dumps(plan))
    out = CliRunner().invoke(main, ["simulate", str(path), "--duration", "20"])
    assert out.exit_code == 4 and "no replica serves" in out.output


def test_the_cli_prints_what_the_library_returns_and_exits_by_the_targets(bank_plan, tmp_path):
    path = tmp_path / "plan.json"
    path.write_text(json.dumps(bank_plan))
    library = simulate(str(path), duration_s=40.0, seed=2).to_dict()
    out = CliRunner().invoke(main, ["simulate", str(path), "--duration", "40", "--seed", "2", "--format", "json"])
    assert out.exit_code == (0 if library["holds"] else 4), out.output
    assert json.loads(out.output[:out.output.rindex("}") + 1]) == library
    for w in library["workloads"]:
        assert w["requests"] == w["finished"] + w["unfinished"]
        assert w["ttft_p50_s"] <= w["ttft_p90_s"] <= w["ttft_p99_s"]


def test_bad_input_is_exit_2_with_a_message(tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text("{\"status\": \"optimal\"}")
    out = CliRunner().invoke(main, ["simulate", str(bad)])
    assert out.exit_code == 2 and "not a plan" in out.output
    with pytest.raises(InputError, match="--duration"):
        simulate({"status": "optimal", "objective": "min_cost", "fleet": [], "allocation": [], "workloads": [],
                  "totals": {}, "inputs": {}}, duration_s=-1.0)


def test_every_simulate_key_is_defined_in_interface_md(bank_plan):
    from tests.test_interface import DOCUMENTED

    d = simulate(bank_plan, duration_s=30.0).to_dict()
    keys = set(d) | {k for w in d["workloads"] for k in w} | {k for p in d["pools"] for k in p}
    assert not sorted(k for k in keys if k not in DOCUMENTED)


def test_the_closed_form_ttft_is_within_its_stated_band_of_the_simulation(bank_plan):
    """MODEL.md 16.4: on disaggregated prefill pools of at least 10 servers, the simulated TTFT at the workload's
    percentile lies within -20% / +10% of the plan's M/G/c closed form (over all shipped scenarios: -35% / +7%;
    the closed form errs on the safe side)."""
    pools = [p for p in simulate(bank_plan).to_dict()["pools"]
             if p["role"] == "prefill" and p["servers"] >= 10 and (p["requests"] or 0) >= 1000]
    assert len(pools) >= 3
    for p in pools:
        assert 0.8 <= p["ttft_at_target_percentile_s"] / p["analytic_ttft_s"] <= 1.1, p


def test_a_session_s_next_call_follows_its_last_after_the_tool_wait_with_a_grown_prompt():
    """Three-call sessions: call k + 1 arrives when call k finished plus its drawn tool wait (exponential, mean
    2 s) and its prompt is the first's plus k x 500 tokens; calls whose turn would come after the window are not
    made."""
    rp = [[E.PREFILL, 0, 4, 0, 0, 0], [E.DECODE, 4, 2, 16, 0, 0]]
    rw = [[1.0, 1.0, 0.0, 0.0, 0.0], [1.0, 1.0, 0.0, 0.0, 0.0]]
    args = params(0.0, 60.0, turns=3, gap=2.0, growth=500.0)
    req, counts, *_ = run(rp, rw, [1.0] * 6, [0.01] * 16, flat_prefill(2e4, lone_s=0.05, rows=2), 2.0, 60.0,
                          in_q=exponential_quantiles(1000.0, 256), max_requests=3000, args=args)
    calls = req.reshape(-1, 3, E.N_RF)
    made = ~np.isnan(calls[:, :, E.RF_DONE]) & (calls[:, :, E.RF_ARRIVE] > 0)
    followed = made[:, 1:] & made[:, :-1]
    assert followed.sum() > 50
    prev, nxt = calls[:, :-1][followed], calls[:, 1:][followed]
    np.testing.assert_allclose(nxt[:, E.RF_ARRIVE], prev[:, E.RF_DONE] + prev[:, E.RF_TOOL_S], rtol=1e-12)
    np.testing.assert_allclose(nxt[:, E.RF_IN] - prev[:, E.RF_IN], 500.0)
    waits = calls[:, :, E.RF_TOOL_S][made]
    assert waits.mean() == pytest.approx(2.0, rel=0.15)
    assert np.all(calls[:, 1:, E.RF_ARRIVE][made[:, 1:]] < 60.0)


@pytest.mark.parametrize("seed", [2 ** 70, -1, 1.5, "7", True])
def test_a_seed_the_simulator_cannot_take_is_an_input_error_naming_it(bank_plan, tmp_path, seed):
    """Issue 43: --seed 2^70 was a numba traceback; every seed outside 0..2^63 - 1 (or not a whole number) is one
    error naming --seed, in the library and the CLI, before any work."""
    with pytest.raises(InputError, match="--seed") as err:
        simulate(bank_plan, duration_s=5.0, seed=seed)
    assert err.value.field == "--seed"
    if seed == 2 ** 70:
        path = tmp_path / "plan.json"
        path.write_text(json.dumps(bank_plan))
        out = CliRunner().invoke(main, ["simulate", str(path), "--seed", str(seed)])
        assert out.exit_code == 2 and "--seed" in out.output and "Traceback" not in out.output


def test_solve_refuses_a_seed_it_could_not_verify_with_before_it_solves():
    from planner.orchestration import answer

    with pytest.raises(InputError, match="--seed"):
        answer("scenarios/gtc-2026-tiers.yaml", seed=2 ** 70)  # no solve starts (the unit marker's guard holds)


def test_a_replica_holds_the_kv_its_memory_holds(bank_plan):
    """A decode replica held KV for B mean contexts only: where the tier, not the memory, limits its batch, a long
    prompt was turned away until the replica emptied and held every prompt behind it (a premium pool's p99 TTFT 31 s
    against 1 on a random small site). Its cap is now all the memory past the weights, never less than B mean
    contexts."""
    from planner.fleet.check import Inputs
    from planner.sim.build import pools_of

    pools = pools_of(bank_plan, Inputs(bank_plan["inputs"]))
    above = 0
    for p in pools:
        for r in range(len(p.rp)):
            if p.rp[r, E.RP_ROLE] in (E.DECODE, E.COLOCATED):
                planned = p.rp[r, E.RP_BATCH] * p.demand.context_max
                assert p.rw[r, E.RW_KV_CAP_TOKENS] >= planned * (1 - 1e-9)
                above += p.rw[r, E.RW_KV_CAP_TOKENS] > 1.5 * planned
    assert above  # bank-2mw's decode replicas are batch-limited by their tier: room for longer streams


def test_the_library_simulates_a_written_plan_as_the_interface_names_it():
    """Issue 43: planner.simulate, which the interface names (2.8.1), did not exist."""
    import planner

    result = planner.simulate(GOLDEN_PLANS / "gtc-2026-tiers.json", duration_s=20.0)
    assert result.to_dict()["workloads"]
    assert "simulate" in dir(planner)


def test_solve_s_verification_errors_name_the_option_solve_has():
    """Issue 43: a bad --sim-duration was reported as --duration, an option only simulate has; it is refused
    before the solve, naming --sim-duration."""
    out = CliRunner().invoke(main, ["solve", "scenarios/gtc-2026-tiers.yaml", "--sim-duration",
                                    "-5"])
    assert out.exit_code == 2 and "--sim-duration" in out.output and "--duration:" not in out.output
    import planner

    with pytest.raises(InputError) as err:
        planner.simulate(GOLDEN_PLANS / "gtc-2026-tiers.json", duration_s=float("nan"))
    assert err.value.field == "--duration"


@pytest.mark.integration
def test_a_plan_s_dict_is_a_copy_the_caller_may_edit():
    """Issue 43: Plan.to_dict() returned the plan's own dicts, so editing the result corrupted the plan."""
    import planner

    plan = planner.solve("scenarios/gtc-2026-tiers.yaml", verify="off")
    d = plan.to_dict()
    d["totals"]["facility_power_mw"] = -1.0
    d["inputs"]["scenario"] = "edited"
    again = plan.to_dict()
    assert again["totals"]["facility_power_mw"] > 0 and again["inputs"]["scenario"] != "edited"


@pytest.mark.parametrize("tamper", [float("nan"), -3.0, 1e18])
def test_impossible_replicas_are_an_input_error(bank_plan, tmp_path, tamper):
    """Issue 43: simulate checks the plan first, as check does: NaN, negative or 10^18 replicas are an input error
    naming the field (exit 2), not a plan that "holds" or a hang."""
    plan = copy.deepcopy(bank_plan)
    plan["allocation"][0]["replicas"] = tamper
    with pytest.raises(InputError) as err:
        simulate(plan, duration_s=20.0)
    assert err.value.field == "allocation[0].replicas"
    path = tmp_path / "plan.json"
    path.write_text(json.dumps(plan))
    out = CliRunner().invoke(main, ["simulate", str(path), "--duration", "20"])
    assert out.exit_code == 2 and "allocation[0].replicas" in out.output
