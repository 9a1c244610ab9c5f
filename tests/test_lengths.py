"""Token length distributions (planner.lengths, docs/MODEL.md 15): the three shapes, their means, scv and quantiles
by hand and by sampling, the input errors, the scenario's and the Demand's use of them, and the property that more
length variance never buys a cheaper plan."""

import math

import numpy as np
import pytest

from planner.catalog import get_hardware, get_model
from planner.errors import InputError
from planner.fleet.demand import Demand
from planner.fleet.problem import demands_of
from planner.fleet.solve import solve
from planner.lengths import MAX_P99_OVER_MEAN, Z99, Lengths
from planner.perf.pack import hardware_vector, model_vector
from planner.scenario import scenario_from_yaml
from solvers.perf import sweep, twin


def test_a_number_is_fixed():
    d = Lengths.from_spec(1200, "input_tokens")
    assert (d.mean, d.scv, d.spec, d.quantile(0.99)) == (1200.0, 0.0, None, 1200.0)


def test_one_row_of_a_table_is_a_fixed_length():
    d = Lengths.from_spec({"table": [[1200, 1]]}, "input_tokens")
    assert (d.mean, d.scv, d.quantile(0.99)) == (1200.0, 0.0, 1200.0)
    assert np.all(Lengths.fixed(0.5).sample(np.random.default_rng(0), 5) == 1.0)  # at least one token


def test_lognormal_from_mean_and_p99_round_trips_by_sampling():
    d = Lengths.from_spec({"mean": 1000, "p99": 5000}, "input_tokens")
    # sigma solves ln(5) = sigma z99 - sigma^2 / 2 (the smaller root)
    assert d.sigma == pytest.approx(Z99 - math.sqrt(Z99 ** 2 - 2 * math.log(5)), rel=1e-12)
    assert math.log(5) == pytest.approx(d.sigma * Z99 - d.sigma ** 2 / 2, rel=1e-12)
    assert d.quantile(0.99) == pytest.approx(5000, rel=1e-9) and d.mean == 1000
    assert d.scv == pytest.approx(math.exp(d.sigma ** 2) - 1, rel=1e-12)
    assert d.spec == {"mean": 1000.0, "p99": 5000.0}
    x = d.sample(np.random.default_rng(7), 400_000)
    assert x.dtype == np.float64 and x.min() >= 1.0
    assert x.mean() == pytest.approx(1000, rel=0.01)
    assert np.quantile(x, 0.99) == pytest.approx(5000, rel=0.02)
    assert x.var() / x.mean() ** 2 == pytest.approx(d.scv, rel=0.05)


def test_a_table_by_hand():
    d = Lengths.from_spec({"table": [[300, 3], [100, 1]]}, "input_tokens")
    # p = 1/4 at 100, 3/4 at 300: mean 25 + 225 = 250; variance 150^2 / 4 + 50^2 * 3/4 = 7500; scv 7500 / 250^2
    assert d.mean == pytest.approx(250.0) and d.scv == pytest.approx(0.12)
    assert (d.quantile(0.2), d.quantile(0.25), d.quantile(0.5)) == (100.0, 100.0, 300.0)
    x = d.sample(np.random.default_rng(3), 100_000)
    assert set(np.unique(x)) == {100.0, 300.0} and (x == 100).mean() == pytest.approx(0.25, abs=0.01)
    assert d.spec == {"table": [[300.0, 3.0], [100.0, 1.0]]}


def test_a_shift_keeps_the_variance():
    d = Lengths.from_spec({"table": [[100, 1], [300, 3]]}, "x").shifted(250.0)
    assert d.mean == 500.0 and d.scv == pytest.approx(7500 / 500 ** 2)
    assert d.quantile(0.5) == 550.0 and d.sample(np.random.default_rng(0), 10).min() >= 350.0


@pytest.mark.parametrize("value,words", [
    ({"mean": 1000, "p99": 1000}, "must exceed the mean"),
    ({"mean": 1000, "p99": 900}, "must exceed the mean"),
    ({"mean": 100, "p99": 100 * MAX_P99_OVER_MEAN * 1.01}, "no lognormal has that mean and p99"),
    ({"mean": 100}, "got a mapping with keys ['mean']"),
    ({"mean": 100, "p99": 300, "p50": 90}, "got a mapping with keys"),
    ({"table": []}, "table: expected"),
    ({"table": [[100, -1]]}, "table[0]"),
    ({"table": [[0, 1]]}, "table[0]"),
    ({"table": [[100, 0], [200, 0]]}, "weights sum to 0"),
    ({"table": [[100]]}, "table[0]"),
    ("1000", "expected a number of tokens"),
    (True, "expected a number of tokens"),
    (-3, "expected a number of tokens in (0, 1e8]"),
    (float("nan"), "expected a number of tokens"),
    ({"mean": "a", "p99": 3}, "mean: expected a number"),
])
def test_bad_shapes_are_input_errors_naming_the_field(value, words):
    with pytest.raises(InputError) as err:
        Lengths.from_spec(value, "workloads.chat.input_tokens")
    assert err.value.field == "workloads.chat.input_tokens" and words in str(err.value)


SCENARIO = """name: lengths
start_date: 2027-01-01
horizon_years: 4
finance: {wacc: 0.08, electricity_usd_per_mwh: 70, pue: 1.25, average_load_share: 0.7}
site: {power_budget_mw: 20}
hardware: {allow: [hgx-h200]}
workloads:
  - name: chat
    model: llama-3.1-8b
    requests_per_s: 200
    input_tokens: INPUT
    output_tokens: 300
    tier: standard
    ttft_s: 0.5
    ttft_percentile: 99
  - name: agent
    model: llama-3.1-8b
    kind: agentic
    requests_per_s: 2
    turns: 5
    input_tokens: {table: [[1000, 1], [3000, 1]]}
    output_tokens: {mean: 200, p99: 900}
    context_growth_tokens_per_turn: 100
    tier: standard
"""


def scenario(input_tokens="1000", settings=()):
    return scenario_from_yaml(SCENARIO.replace("INPUT", input_tokens), "lengths.yaml", settings)


def test_the_scenario_takes_every_shape_and_plans_the_mean():
    sc = scenario("{mean: 1000, p99: 6000}")
    chat, agent = sc.workloads
    assert isinstance(chat.input_tokens, float) and chat.input_tokens == 1000.0
    assert chat.input_lengths.spec == {"mean": 1000.0, "p99": 6000.0}
    assert agent.input_tokens == 2000.0 and agent.output_tokens == 200.0 and agent.output_lengths.kind == "lognormal"
    # --set replaces the shape: a number is fixed again; and a what-if keeps the shapes it does not touch
    again = sc.with_({"workloads.chat.input_tokens": 2000})
    assert again.workloads[0].input_tokens == 2000.0 and again.workloads[0].input_lengths.spec is None
    assert again.workloads[1].input_lengths.spec == {"table": [[1000.0, 1.0], [3000.0, 1.0]]}
    assert scenario(settings=["workloads.chat.input_tokens=2000"]).workloads[0].input_tokens == 2000.0
    assert scenario(settings=["workloads.chat.input_tokens={mean: 900, p99: 2000}"]).workloads[0].input_tokens == 900


def test_a_bad_shape_is_an_error_at_its_line():
    with pytest.raises(InputError) as err:
        scenario("{mean: 1000, p99: 800}")
    assert err.value.line == 11 and err.value.field == "workloads[0].input_tokens"
    assert "p99 (800) must exceed the mean (1000)" in str(err.value)


def test_demands_carry_the_specs_and_round_trip():
    chat, agent = demands_of(scenario("{mean: 1000, p99: 6000}"))
    assert chat.input_lengths == {"mean": 1000.0, "p99": 6000.0} and chat.output_lengths is None
    assert chat.input_length_dist().mean == pytest.approx(1000.0) and chat.prefill_scv > 0.5
    assert chat.output_length_dist() == Lengths.fixed(300.0)
    # an agentic call's prompt: the first turn's table shifted by the mean growth over the turns, (5 - 1) / 2 x
    # (200 + 100) = 600 tokens; the variance is the first turn's (1000^2), the mean the calls' 2600
    dist = agent.input_length_dist()
    assert agent.input_tokens == pytest.approx(2600.0) and dist.mean == pytest.approx(2600.0)
    assert dist.scv == pytest.approx(1000.0 ** 2 / 2600.0 ** 2) and dist.quantile(0.99) == pytest.approx(3600.0)
    assert agent.output_length_dist().mean == pytest.approx(200.0)
    for d in (chat, agent):
        assert Demand.from_dict(d.to_dict()) == d
    bad = {**chat.to_dict(), "input_lengths": {"mean": 5, "p99": 1}}
    with pytest.raises(ValueError, match="input_lengths"):
        Demand.from_dict(bad)


@pytest.mark.integration
def test_more_length_variance_never_buys_a_cheaper_plan():
    # racks billed at a flat share of design power: under the power curves a replica's energy follows the
    # utilization it is planned at, which a wider spread lowers for the same replicas
    costs, ttft = [], []
    for spec in ("1000", "{mean: 1000, p99: 2000}", "{mean: 1000, p99: 6000}", "{mean: 1000, p99: 14000}"):
        plan = solve(scenario(spec))
        assert all(c["ok"] for c in plan.checks)
        costs.append(plan.totals["annual_cost_usd"])
        ttft.append(max(r["ttft_s"] for r in plan.allocation.to_dicts() if r["workload"] == "chat" and
                        r["ttft_s"] is not None))
    gap = 1e-4  # the solver's relative gap: two plans of equal cost may differ by it
    assert all(b >= a * (1 - gap) for a, b in zip(costs, costs[1:])), costs
    # a spread need not cost more (short prompts share passes, MODEL.md 15.3), but the percentile's prompt is long
    assert ttft[-1] > ttft[0], ttft


def test_prefill_over_lengths_is_the_mean_service_and_its_twin_agrees():
    """One point is prefill_per_layout; over a spread, the rate is sum w n / sum w n / rate(n) (the mean service
    time, by hand from prefill_per_layout at each point) and the lone time is the quantile length's."""
    mv = model_vector(get_model("llama-3.1-70b"))
    hv = hardware_vector(get_hardware("hgx-h100"), "fp8", None)
    layouts = np.array([[8.0, 1.0, 0.0], [4.0, 2.0, 0.0], [2.0, 4.0, 0.0]])
    one = sweep.prefill_over_lengths(mv, hv, layouts, np.array([1500.0]), np.ones(1), 1500.0)
    np.testing.assert_array_equal(one, sweep.prefill_per_layout(mv, hv, layouts, 1500.0))
    tokens, weights = np.array([200.0, 1500.0, 9000.0]), np.array([0.5, 0.3, 0.2])
    spread = sweep.prefill_over_lengths(mv, hv, layouts, tokens, weights, 9000.0)
    at = [sweep.prefill_per_layout(mv, hv, layouts, n) for n in tokens]
    busy = sum(w * n / a[:, 0] for n, w, a in zip(tokens, weights, at))
    np.testing.assert_allclose(spread[:, 0], (weights @ tokens) / busy, rtol=1e-12)
    np.testing.assert_allclose(spread[:, 1], at[2][:, 1], rtol=1e-12)
    assert np.all(spread[:, 0] < sweep.prefill_per_layout(mv, hv, layouts, weights @ tokens)[:, 0])
    for i, layout in enumerate(layouts):
        np.testing.assert_allclose(twin.prefill_over_lengths(mv, hv, layout, tokens, weights, 9000.0), spread[i],
                                   rtol=1e-9)


def test_a_spread_prices_the_percentile_prompt_and_the_mean_service():
    chat, _ = demands_of(scenario("{mean: 1000, p99: 6000}"))
    tokens, weights, at_q = chat.prefill_lengths()
    assert len(tokens) == 16 and weights.sum() == pytest.approx(1.0)
    assert at_q == pytest.approx(chat.input_length_dist().quantile(chat.ttft_quantile) * chat.prefill_tokens
                                 / chat.input_tokens)
    fixed, _ = demands_of(scenario("1000"))
    assert fixed.prefill_lengths()[2] == fixed.prefill_tokens and len(fixed.prefill_lengths()[0]) == 1


def test_a_session_s_calls_are_priced_turn_by_turn():
    """The agent's first prompt is 1,000 or 3,000 tokens (half each), each call adds 300 (its 200 output + 100
    growth) to the next, five calls: its calls' prompts are {1000, 3000} + {0, 300, 600, 900, 1200}, ten lengths of
    weight 0.1, whose 90th percentile is 3,900; their spread adds 300^2 (5^2 - 1) / 12 to the first prompt's
    variance (1,000^2)."""
    _, agent = demands_of(scenario())
    tokens, weights, at_q = agent.prefill_lengths()
    expected = sorted(a + k * 300.0 for a in (1000.0, 3000.0) for k in range(5))
    assert agent.turns == 5 and agent.turn_growth_tokens == 300.0 and agent.ttft_quantile == 0.9
    assert sorted(tokens.round(9)) == expected and weights == pytest.approx(np.full(10, 0.1))
    assert at_q == pytest.approx(3900.0, abs=1e-6)
    assert agent.prefill_scv == pytest.approx((1000.0 ** 2 + 300.0 ** 2 * 24 / 12) / 2600.0 ** 2)
