"""A build-out's plan simulated period by period (docs/MODEL.md 16.6) and verified (16.5): each period carries its
allocation, ``planner simulate`` runs every period of every demand scenario (the first once), ``--period`` and
``--demand-scenario`` pick, the CLI prints what the library returns, and ``solve --verify`` repairs a build-out."""

from __future__ import annotations

import copy
import json

import pytest
from click.testing import CliRunner

from planner.cli import main
from planner.errors import InputError
from planner.fleet.buildout import check_buildout
from planner.sim import BuildOutSimResult, simulate
from planner.sim.run import windows
from planner.sim.build import pools_of
from planner.fleet.check import Inputs
from tests.test_buildout import GROW as ONE_WORKLOAD

# tests/test_buildout.py's growing site with an agent beside its chat workload
GROW = ONE_WORKLOAD.replace("\ndemand_scenarios:", """
  - {name: agent, model: llama-3.1-8b, kind: agentic, requests_per_s: 2, growth_per_year: 2.0, turns: 4,
     tool_call_gap_s: 3.0, input_tokens: 3000, context_growth_tokens_per_turn: 500, output_tokens: 200,
     tier: standard, ttft_s: 2.0}
demand_scenarios:""")
DURATION_S = 40.0


def grow():
    from planner.scenario import scenario_from_yaml

    return scenario_from_yaml(GROW)


@pytest.fixture(scope="module")
def plan():
    from planner.fleet.solve import solve

    return solve(grow()).to_dict()


@pytest.fixture(scope="module")
def simulated(plan):
    return simulate(plan, duration_s=DURATION_S)


def test_every_period_carries_its_allocation_and_check_holds_it(plan):
    checks = check_buildout(plan)
    assert all(c["ok"] for c in checks), [c for c in checks if not c["ok"]]
    assert any(c["check"] == "period allocations" for c in checks)
    for s in plan["scenarios"]:
        for per in s["periods"]:
            assert per["allocation"] and {r["workload"] for r in per["allocation"]} == {"chat", "agent"}
    changed = copy.deepcopy(plan)
    row = changed["scenarios"][2]["periods"][2]["allocation"][0]
    row["replicas"] = float(row["replicas"]) + 1.0
    bad = [c for c in check_buildout(changed) if not c["ok"]]
    assert [c["check"] for c in bad] == ["period allocations"] and "2029-01-01" in bad[0]["detail"]


def test_a_later_period_serves_more_than_the_first(plan):
    """Growth: the high scenario's last period deploys more decode tokens/s than the first period."""
    periods = plan["scenarios"][2]["periods"]
    served = [sum(float(r["output_tokens_per_s"]) for r in p["allocation"] if r["workload"] == "chat")
              for p in periods]
    assert served[-1] > 2.0 * served[0]


def test_every_period_of_every_demand_scenario_is_simulated_the_first_once(simulated, plan):
    assert isinstance(simulated, BuildOutSimResult)
    dates = [p["start_date"] for p in plan["scenarios"][0]["periods"]]
    assert [(n, d) for n, d, _ in simulated.runs] == [(n, d) for n in ("low", "base", "high") for d in dates]
    # a period whose allocation and demand another run had is not simulated again (the first period's demand is
    # every scenario's; its replicas may differ between scenarios where the MILP has ties)
    keys = [json.dumps([p["allocation"], plan["inputs"]["period_demands"][s][t]], sort_keys=True)
            for s, sc in enumerate(plan["scenarios"]) for t, p in enumerate(sc["periods"])]
    for a in range(len(keys)):
        for b in range(len(keys)):
            assert (simulated.runs[a][2] is simulated.runs[b][2]) == (keys[a] == keys[b])
    d = simulated.to_dict()
    assert d["holds"] == all(p["holds"] for p in d["periods"])
    assert d["failures"] == [f"{p['start_date']} {p['demand_scenario']}: {f}" for p in d["periods"]
                             for f in p["failures"]]


def test_the_rates_simulated_are_each_period_s(simulated, plan):
    """A period's requests follow its demand: the high scenario's last period sees more than its first."""
    runs = {(n, d): r for n, d, r in simulated.runs}
    dates = [p["start_date"] for p in plan["scenarios"][0]["periods"]]
    chat = {d: next(w for w in runs[("high", d)].workloads if w.workload == "chat") for d in dates}
    assert chat[dates[-1]].requests > 4.0 * chat[dates[0]].requests


def test_a_period_or_a_demand_scenario_can_be_picked(plan, simulated):
    one = simulate(plan, duration_s=DURATION_S, period="2028-01-01", demand_scenario="high")
    assert [(n, d) for n, d, _ in one.runs] == [("high", "2028-01-01")]
    same = next(r for n, d, r in simulated.runs if (n, d) == ("high", "2028-01-01"))
    assert one.runs[0][2].to_dict() == same.to_dict()  # one seed, one run, whatever else is simulated
    with pytest.raises(InputError, match="--period '2031-01-01'.*2027-01-01, 2028-01-01, 2029-01-01"):
        simulate(plan, duration_s=DURATION_S, period="2031-01-01")
    with pytest.raises(InputError, match="--demand-scenario 'medium'.*low, base, high"):
        simulate(plan, duration_s=DURATION_S, demand_scenario="medium")


def test_a_build_out_plan_without_allocations_is_refused_with_the_remedy(plan):
    old = copy.deepcopy(plan)
    for s in old["scenarios"]:
        for per in s["periods"]:
            del per["allocation"]
    with pytest.raises(InputError, match="solve the scenario again"):
        simulate(old, duration_s=DURATION_S)


def test_a_single_period_plan_refuses_period_picks():
    single = {"status": "optimal", "objective": "min_cost", "fleet": [], "workloads": [], "totals": {},
              "allocation": [], "inputs": {}}
    with pytest.raises(InputError, match="--period and --demand-scenario"):
        simulate(single, period="2027-01-01")


def test_each_workload_runs_as_long_as_it_needs(plan):
    """Windows are per workload: the agent's session floor does not lengthen the chat's run."""
    single = {"status": plan["status"], "allocation": plan["scenarios"][1]["periods"][1]["allocation"],
              "inputs": {**plan["inputs"]["plan"], "demands": plan["inputs"]["period_demands"][1][1]}}
    pools = {p.demand.name: p for p in pools_of(single, Inputs(single["inputs"]))}
    chat, agent = windows(pools["chat"], None), windows(pools["agent"], None)
    assert agent[1] > chat[1]  # the agent's warm-up is a session
    assert chat[0] - chat[1] >= 20.0 and agent[0] - agent[1] >= 20.0


def test_the_cli_prints_what_the_library_returns(plan, simulated, tmp_path):
    path = tmp_path / "plan.json"
    path.write_text(json.dumps(plan))
    res = CliRunner().invoke(main, ["simulate", str(path), "--duration", str(DURATION_S), "--format", "json"])
    assert res.exit_code == (0 if simulated.holds else 4), res.output
    printed = json.loads(res.output[:res.output.rindex("}") + 1])
    assert printed == json.loads(json.dumps(simulated.to_dict()))
    res = CliRunner().invoke(main, ["simulate", str(path), "--duration", str(DURATION_S), "--period",
                                    "2027-01-01", "--demand-scenario", "base"])
    assert "2027-01-01 base:" in res.output and res.exit_code in (0, 4)
    res = CliRunner().invoke(main, ["simulate", str(path), "--period", "2040-01-01"])
    assert res.exit_code == 2 and "--period" in res.output


def test_solve_verify_repairs_a_build_out(tmp_path):
    """The first plan's failures (named by period) raise the failing workloads' headroom; every round is
    reported, the last simulated over every period."""
    from planner.fleet.solve import solve
    from planner.sim.verify import verify

    v = verify(grow(), solve, duration_s=DURATION_S)
    assert v.rounds and all(r.plan.is_buildout for r in v.rounds)
    d = v.plan.to_dict() if v.plan.verification is None else v.plan.to_dict()
    first = v.rounds[0]
    if not first.simulation.holds:
        failing = {w.workload for w in first.simulation.workloads if not w.holds}
        raised = {w for w, h in v.rounds[1].headroom.items() if h > first.headroom[w]}
        assert raised == failing
        assert v.rounds[1].plan.net_present_cost_usd >= first.plan.net_present_cost_usd * (1 - 1e-6)
    out = v.to_dict()
    assert out["simulation"]["periods"] and out["rounds"][0]["net_present_cost_usd"] == pytest.approx(
        first.plan.net_present_cost_usd)
    assert d["status"] in ("optimal", "feasible", "time_limit")


def test_the_html_page_has_a_section_per_period_simulated(simulated):
    from planner.report.html import render_simulation_html

    page = render_simulation_html(simulated.to_dict())
    for k, (name, date, _) in enumerate(simulated.runs):
        assert f'id="simulation-{k}"' in page and f"period {date}, demand scenario {name}" in page
    assert "<script" not in page


def test_the_build_out_report_shows_its_simulated_periods(simulated):
    from planner.fleet.solve import solve
    from planner.report.html import render_buildout_html

    plan = solve(grow())
    page = render_buildout_html(plan, simulation=simulated.to_dict())
    assert page.count('<section id="simulation-') == len(simulated.runs)
    assert 'id="simulation-' not in render_buildout_html(plan)
