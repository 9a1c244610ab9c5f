"""Issue 41 items 4 and 6: every plan ``planner solve`` shows is simulated first (the quick run, docs/MODEL.md 16.7)
and repaired where it misses, its verdict on the first screen; ``planner.orchestration`` decides what runs around the
MILP, each thing once."""

from __future__ import annotations

import json
import math
from types import SimpleNamespace

import numpy as np
import pytest
from click.testing import CliRunner

import planner
from planner import orchestration as A
from planner.cli import main
from planner.fleet.solve import solve
from planner.scenario import load_scenario
from planner.sim import run as R
from planner.sim.run import fill_time_s, quick_windows, simulate

BANK = "scenarios/bank-2mw.yaml"
# bank-2mw with a wide spread of the chatbot's output lengths (p99 7.5x the mean): the MILP's first plan misses
# the chatbot's tier at p90 (96.6 tok/s per user against 100 in planner simulate's own windows)
SPREAD = "workloads.customer-chatbot.output_tokens={mean: 400, p99: 3000}"


def pools_like(out_q, ttft_s=0.5, tier=100.0, calls_per_s=1000.0, turns=1, gap_s=0.0):
    demand = SimpleNamespace(ttft_s=ttft_s, min_tps_per_user=tier, output_tokens=float(np.mean(out_q)),
                             calls_per_s=calls_per_s, turns=turns, tool_call_gap_s=gap_s)
    return SimpleNamespace(demand=demand, out_q=np.asarray(out_q, float))


def test_the_fill_time_by_hand():
    """M/G/inf from empty: lambda E[min(S, t)] streams at t. Fixed S = 0.5 + 400/100 = 4.5 s: 95% at 0.95 x 4.5;
    exponential S (a fine quantile table of mean 4 s): -ln(0.05) x 4 = 11.98 s."""
    assert fill_time_s(pools_like([400.0] * 8)) == pytest.approx(0.95 * 4.5, rel=1e-12)
    k = 20_000
    exp_q = -np.log(1.0 - (np.arange(k) + 0.5) / k) * 400.0  # outputs of mean 400 tokens: S = O / 100, no TTFT
    assert fill_time_s(pools_like(exp_q, ttft_s=0.0)) == pytest.approx(-math.log(0.05) * 4.0, rel=2e-3)


def test_the_quick_window_by_hand():
    """Warm-up the fill time (a session's length where longer, at least 2 s), then 100,000 calls' time, at least
    one request's time, at most 240 s."""
    fast = pools_like([400.0] * 8, calls_per_s=1e6)  # 0.1 s of calls: one request's time (4.5 s) instead
    duration, warm, _ = quick_windows(fast)
    assert warm == pytest.approx(0.95 * 4.5) and duration - warm == pytest.approx(4.5)
    slow = pools_like([400.0] * 8, calls_per_s=10.0)  # 10,000 s of calls: capped at 240 s
    assert quick_windows(slow)[0] - quick_windows(slow)[1] == pytest.approx(R.DEFAULT_WINDOW_S)
    mid = pools_like([400.0] * 8, calls_per_s=1000.0)
    assert quick_windows(mid)[0] - quick_windows(mid)[1] == pytest.approx(R.QUICK_CALLS / 1000.0)
    sessions = pools_like([400.0] * 8, turns=10, gap_s=5.0)  # 10 x 4.5 + 9 x 5 = 90 s a session
    assert quick_windows(sessions)[1] == pytest.approx(90.0)


@pytest.fixture(scope="module")
def spread_plan():
    return solve(load_scenario(BANK, [SPREAD]))


@pytest.mark.integration
def test_the_quick_run_finds_the_miss_the_thorough_run_finds(spread_plan):
    """The quick run first closed its window after 20,000 calls (22 s here): it read the chatbot's p90 at 98.5
    tok/s per user and passed a plan that planner simulate fails (96.6); a queue of heavy-tailed streams takes
    longer than that to show its waits. At 100,000 calls it fails the plan, on every seed tried."""
    for seed in (0, 1, 2):
        quick = simulate(spread_plan, seed=seed, quick=True)
        missed = [w for w in quick.workloads if not w.holds]
        assert [w.workload for w in missed] == ["customer-chatbot"], quick.failures
        assert 1.0 / missed[0].tpot_s["p90"] < 98.0


@pytest.mark.integration
def test_solve_verifies_by_default_and_says_so_on_the_first_screen(tmp_path):
    out = CliRunner().invoke(main, ["solve", BANK, "-q", "--set", SPREAD, "--out", str(tmp_path)])
    assert out.exit_code == 0, out.output
    lines = out.output.splitlines()
    first = next(k for k, line in enumerate(lines) if line.startswith("verified: "))
    tables = next(k for k, line in enumerate(lines) if "what to buy" in line)
    assert first < tables and lines[first].startswith("verified: repaired: the first plan missed (customer-chatbot")
    v = json.loads((tmp_path / "plan.json").read_text())["verification"]
    assert v["holds"] and v["mode"] == "quick" and v["seed"] == 0 and v["solves"] == len(v["rounds"]) > 1
    assert v["failures"] == [] and v["extra_cost_usd_per_year"] > 0 and v["extra_net_present_cost_usd"] is None
    assert v["extra_cost_usd_per_year"] == pytest.approx(v["rounds"][-1]["objective_usd_per_year"]
                                                        - v["rounds"][0]["objective_usd_per_year"])
    assert "solve 2: headroom customer-chatbot" in out.output  # the rounds, after the tables
    plain = CliRunner().invoke(main, ["solve", BANK, "-q", "--no-verify", "--set", SPREAD, "--format", "json"])
    assert plain.exit_code == 0 and "verification" not in json.loads(plain.output)
    words = CliRunner().invoke(main, ["solve", BANK, "-q", "--no-verify"])
    assert "verified: not simulated" in words.output


@pytest.mark.parametrize("args, flag", [(["--verify", "--no-verify"], "--no-verify"),
                                        (["--no-verify", "--sim-duration", "10"], "--sim-duration"),
                                        (["--no-verify", "--trace", "azure-code-2023"], "--trace")])
def test_verification_flags_that_contradict_are_exit_2_naming_the_flag(args, flag):
    out = CliRunner().invoke(main, ["solve", BANK, "-q", *args])
    assert out.exit_code == 2 and flag in out.output, out.output


def test_a_bad_verify_mode_in_the_library_names_the_field():
    with pytest.raises(planner.InputError, match="verify"):
        A.verify_mode("sometimes")
    assert [A.verify_mode(x) for x in (None, True, False, "QUICK")] == ["quick", "thorough", "off", "quick"]


@pytest.mark.integration
def test_what_runs_around_the_milp_runs_once(monkeypatch):
    """Issue 41 item 6: the minor-platform re-solves ran twice on a plain solve (in fleet.solve and again in the
    CLI) and once more in every verification round; now planner.orchestration runs them once, on the plan shown."""
    calls = []
    real = A.minor_platforms
    monkeypatch.setattr(A, "minor_platforms", lambda plan, progress=None: calls.append(plan) or real(plan))
    out = CliRunner().invoke(main, ["solve", BANK, "-q", "--set", SPREAD, "--format", "json"])
    assert out.exit_code == 0, out.output
    assert len(calls) == 1 and json.loads(out.output)["verification"]["solves"] > 1
    assert solve(load_scenario(BANK)).minor_platforms is None  # the MILP step alone weighs none


@pytest.mark.integration
def test_a_plan_that_serves_a_share_is_simulated_at_that_share():
    """A fleet-only plan serves rag-assistant in part: simulated at its whole peak the pools it has could never
    keep up (TTFT p90 80 s against 2 s), which the verification then tried to repair with headroom no rack could
    hold; at its served share it holds."""
    plan = solve(load_scenario("scenarios/installed-h100-site.yaml").fleet_only())
    shares = {w["workload"]: w["served_share"] for w in plan.to_dict()["workloads"]}
    assert 0 < shares["rag-assistant"] < 1 and shares["coding-agent"] == 0
    sim = simulate(plan, quick=True)
    assert sim.holds, sim.failures
    assert "coding-agent" not in [w.workload for w in sim.workloads]  # served not at all: nothing to simulate


def why_plan(alternatives, fleet=None, binding_power=False, installed=0):
    alloc = [{"workload": "chat", "role": "decode", "hardware": "a", "replicas": 4, "chips_per_replica": 8,
              "acquisition": "owned"},
             {"workload": "chat", "role": "prefill", "hardware": "a", "replicas": 2, "chips_per_replica": 1,
              "acquisition": "owned"}]
    fleet = fleet or [{"hardware": "a", "racks": 1, "racks_new": 0 if installed else 1, "racks_installed": installed}]
    return {"allocation": alloc, "fleet": fleet, "alternatives": [
        {"workload": w, "role": r, "hardware": h, "usd_per_year_per_1k_tokens_per_s": c, "kw_per_1k_tokens_per_s": k}
        for w, r, h, c, k in alternatives],
        "totals": {"facility_power_mw": 1.0, "racks": 1}, "inputs": {"scenario": {"site": {
            "power_budget_mw": 1.0 if binding_power else None}}}}


def test_why_names_the_runner_up_and_by_how_much():
    """Issue 41 item 5: for each system, what it serves most (by chips: chat decode, 32 of 34) and its cost per
    token/s against the best other system's for the same workload and role."""
    from planner.fleet.assumptions import why_bought

    cheap = why_plan([("chat", "decode", "a", 100.0, 1.0), ("chat", "decode", "b", 125.0, 1.0),
                      ("chat", "decode", "c", 900.0, 1.0)])
    assert why_bought(cheap) == ["a for chat decode (and 1 more): 20% cheaper per token/s than b, the runner-up"]
    far = why_plan([("chat", "decode", "a", 100.0, 1.0), ("chat", "decode", "c", 900.0, 1.0)])
    assert why_bought(far)[0].endswith("9x cheaper per token/s than c, the runner-up")
    alone = why_plan([("chat", "decode", "a", 100.0, 1.0)])
    assert why_bought(alone)[0].endswith("no other system reaches its tier and TTFT")
    dearer = why_plan([("chat", "decode", "a", 100.0, 1.0), ("chat", "decode", "b", 80.0, 2.0)])
    assert "b is 20% cheaper per token/s alone; the fleet as a whole" in why_bought(dearer)[0]
    sunk = why_plan([("chat", "decode", "a", 100.0, 1.0), ("chat", "decode", "b", 80.0, 2.0)], installed=1)
    assert "installed (its capex sunk); b is 20% cheaper" in why_bought(sunk)[0]


def test_why_counts_a_split_replica_once_on_each_side():
    """A split replica's rows are its attention row (attention on A, the FFN side's chips named in it) and an ffn
    row repeating the FFN side on F: the why line's chips counted F's side three times (the ffn row's own chips,
    its copied ffn_chips, the attention row's) under a role (ffn) and system (F+F) no alternative has."""
    from planner.fleet.assumptions import chips_by_use, why_bought

    split = {"workload": "chat", "replicas": 2, "acquisition": "owned", "chips_per_replica": 4, "ffn_chips": 8}
    d = why_plan([("chat", "attention+ffn", "a+f", 100.0, 1.0), ("chat", "decode", "a", 150.0, 1.0)],
                 fleet=[{"hardware": "a", "racks": 1, "racks_new": 1}, {"hardware": "f", "racks": 1, "racks_new": 1}])
    d["allocation"] = [{**split, "role": "attention", "hardware": "a", "ffn_hardware": "f"},
                       {**split, "role": "ffn", "hardware": "f", "ffn_hardware": "f", "chips_per_replica": 8}]
    assert chips_by_use(d, "f") == {("chat", "attention+ffn", "a+f"): 16.0}
    assert chips_by_use(d, "a") == {("chat", "attention+ffn", "a+f"): 8.0}
    assert why_bought(d) == ["a for chat attention+ffn: 33% cheaper per token/s than a, the runner-up",
                             "f for chat attention+ffn: 33% cheaper per token/s than a, the runner-up"]
