"""Speculative decoding as an explicit, costed choice (docs/MODEL.md 3.4): scenario fields, estimate, solve and
check agree, and nothing drafts unless asked."""

from __future__ import annotations

import copy
import json

import pytest
from click.testing import CliRunner

from planner.cli import main
from planner.errors import InputError
from planner.fleet.check import check
from planner.fleet.solve import solve
from planner.perf.estimate import estimate
from planner.scenario import scenario_from_yaml

SITE = """start_date: 2027-01-01
horizon_years: 4
finance: {wacc: 0.08, electricity_usd_per_mwh: 70, pue: 1.25}
site: {power_budget_mw: 20}
hardware: {allow: [hgx-b200, gb200-nvl72]}
"""
SCENARIO = "name: spec\n" + SITE + """workloads:
  - {name: draft, model: llama-3.1-70b, requests_per_s: 20, input_tokens: 1000, output_tokens: 300, min_tps_per_user: 150,
     ttft_s: 1.0, speculative: {method: draft_model, draft_model: llama-3.1-8b, draft_tokens: auto, acceptance: 0.6}}
  - {name: mtp, model: deepseek-r1, requests_per_s: 5, input_tokens: 1000, output_tokens: 1000, tier: high,
     ttft_s: 2.0, speculative: {method: mtp, draft_tokens: 2, acceptance: 0.74}}
  - {name: plain, model: llama-3.1-8b, requests_per_s: 50, input_tokens: 1000, output_tokens: 300, tier: standard,
     ttft_s: 1.0, speculative: {method: none}}
  - {name: auto, model: deepseek-r1, requests_per_s: 5, input_tokens: 1000, output_tokens: 1000, tier: high,
     ttft_s: 2.0}
"""


@pytest.fixture(scope="module")
def plan():
    return solve(scenario_from_yaml(SCENARIO))


def test_each_workload_drafts_as_it_says(plan):
    rows = plan.allocation.to_dicts()
    decode = [r for r in rows if r["role"] in ("decode", "colocated", "attention")]
    for r in decode:
        if r["workload"] == "plain":
            assert r["speculative"] == "none" and r["draft_tokens"] == 0
        if r["workload"] == "mtp":
            assert r["speculative"] == "mtp" and r["draft_tokens"] == 2 and r["acceptance"] == 0.74
        if r["workload"] == "draft" and r["draft_tokens"]:
            assert r["speculative"] == "draft_model" and 0 <= r["draft_tokens"] <= 6
    assert all(r["draft_tokens"] == 0 for r in rows if r["role"] == "prefill")
    assert "llama-3.1-8b" in plan.to_dict()["inputs"]["models"]  # the drafter travels with the plan
    assert all(c["ok"] for c in plan.checks)


def test_check_refuses_free_speculation(plan):
    d = copy.deepcopy(plan.to_dict())
    row = next(r for r in d["allocation"] if r["workload"] == "plain" and r["role"] != "prefill")
    row.update(speculative="eagle", draft_tokens=3, acceptance=0.7)
    assert any(not c["ok"] and "speculative" in c["check"] for c in check(d))


def test_no_method_no_drafts_and_a_drafter_costs_time():
    plain = estimate("deepseek-r1", "hgx-b200", chips=8)
    assert plain.speculative == "none" and plain.draft_tokens == 0 and plain.decode["draft_s"] == 0
    spec = estimate("deepseek-r1", "hgx-b200", chips=8, speculative="mtp", draft_tokens=3, acceptance=0.74)
    assert spec.draft_tokens == 3 and spec.decode["draft_s"] > 0
    assert spec.step_time_s > plain.step_time_s and spec.tps_per_user > plain.tps_per_user
    with pytest.raises(InputError, match="need a drafter"):
        estimate("deepseek-r1", "hgx-b200", draft_tokens=3)
    with pytest.raises(InputError, match="no multi-token-prediction"):
        estimate("kimi-k2", "vr-nvl72", speculative="mtp")


def test_auto_is_never_slower_than_none():
    none = estimate("llama-3.1-70b", "hgx-b200", chips=8, batch=4)
    auto = estimate("llama-3.1-70b", "hgx-b200", chips=8, batch=4, speculative="eagle")
    assert auto.tps_per_user >= none.tps_per_user * (1 - 1e-12)


@pytest.mark.parametrize("edit,message", [
    (("model: deepseek-r1", "model: kimi-k2"), "ships no multi-token-prediction layers"),
    (("draft_model: llama-3.1-8b", "draft_model: llama-2-7b"), "a drafter must share the target's tokenizer"),
    (("method: draft_model, draft_model: llama-3.1-8b,", "method: eagle, draft_model: llama-3.1-8b,"),
     "method draft_model names its drafter"),
    (("draft_tokens: 2", "draft_tokens: 40"), "at most 16"),
])
def test_bad_speculative_fields_name_the_field(tmp_path, edit, message):
    path = tmp_path / "s.yaml"
    path.write_text(SCENARIO.replace(*edit))
    res = CliRunner().invoke(main, ["validate", str(path)])
    assert res.exit_code == 2 and message in res.output and "speculative" in res.output, res.output
    assert "Traceback" not in res.output


def test_estimate_cli_takes_auto_and_reports_the_choice():
    res = CliRunner().invoke(main, ["estimate", "-m", "deepseek-r1", "-H", "hgx-b200", "--chips", "8",
                                    "--speculative", "mtp", "--draft-tokens", "auto", "--format", "json"])
    assert res.exit_code == 0, res.output
    d = json.loads(res.stdout)
    assert d["speculative"] == "mtp" and 0 <= d["draft_tokens"] <= 6
    bad = CliRunner().invoke(main, ["estimate", "-m", "deepseek-r1", "-H", "hgx-b200", "--draft-tokens", "many"])
    assert bad.exit_code == 2


# ---- speculative: auto (the default) ---------------------------------------------------------------------------
def test_auto_rows_each_name_a_drafter_the_model_has(plan):
    d = plan.to_dict()
    demand = next(w for w in d["inputs"]["demands"] if w["name"] == "auto")
    assert demand["speculative"] == "auto" and demand["auto_methods"] == ["none", "mtp"]  # DeepSeek-R1: MTP only
    rows = [r for r in d["allocation"] if r["workload"] == "auto" and r["role"] != "prefill"]
    assert rows and all(r["speculative"] in ("none", "mtp") for r in rows)
    assert all((r["speculative"] == "none") == (r["draft_tokens"] == 0) for r in rows)
    line = next(a for a in d["assumptions"] if a.startswith("auto:"))
    assert "chooses per option between no drafting and mtp at the published acceptance" in line


def test_check_refuses_a_drafter_auto_does_not_consider(plan):
    d = copy.deepcopy(plan.to_dict())
    row = next(r for r in d["allocation"] if r["workload"] == "auto" and r["role"] != "prefill")
    row.update(speculative="eagle", draft_tokens=3, acceptance=0.7)
    bad = [c for c in check(d) if not c["ok"]]
    assert any("speculative" in c["check"] and "of speculative auto: none, mtp" in c["detail"] for c in bad)


AUTO = "name: auto\n" + SITE + """workloads:
  - {name: fast, model: llama-3.1-70b, requests_per_s: 10, input_tokens: 1000, output_tokens: 300, tier: standard,
     ttft_s: 2.0SPEC}
"""


@pytest.mark.parametrize("spec", ["{method: none}", "{method: eagle}"])
def test_auto_never_costs_more_than_one_method_alone(spec):
    """auto considers every option the single methods give, so its optimum is no dearer than theirs."""
    auto = solve(scenario_from_yaml(AUTO.replace("SPEC", ""))).objective_usd_per_year
    alone = solve(scenario_from_yaml(AUTO.replace("SPEC", f", speculative: {spec}"))).objective_usd_per_year
    assert auto <= alone * (1 + 2e-3)


@pytest.mark.parametrize("field,value", [("draft_tokens", "3"), ("acceptance", "0.6")])
def test_auto_takes_the_published_settings_only(tmp_path, field, value):
    path = tmp_path / "s.yaml"
    path.write_text(AUTO.replace("SPEC", f", speculative: {{method: auto, {field}: {value}}}"))
    res = CliRunner().invoke(main, ["validate", str(path)])
    assert res.exit_code == 2 and "method auto takes each drafter's published" in res.output, res.output
    assert f"speculative.{field}" in res.output and "Traceback" not in res.output


def test_a_demand_under_auto_survives_the_plan_file():
    from planner.fleet.demand import Demand
    from planner.fleet.problem import demands_of

    sc = scenario_from_yaml(AUTO.replace("SPEC", ""))
    d = demands_of(sc)[0]
    assert d.auto_methods == ("none", "eagle")
    back = Demand.from_dict(json.loads(json.dumps(d.to_dict())))
    assert back == d
    eagle = back.for_method("eagle")
    assert eagle.speculative == "eagle" and eagle.acceptance_by_k and eagle.draft_tokens == "auto"
    assert back.for_row("none").speculative == "none" and back.for_row("mtp").speculative == "none"
    with pytest.raises(ValueError, match="take its variants"):
        back.speculation()
