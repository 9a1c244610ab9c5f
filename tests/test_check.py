"""``planner check``: a plan re-checked from disk, without the solver or the scenario; a tampered plan fails."""

from __future__ import annotations

import copy
import json

import pytest
from click.testing import CliRunner

from planner.cli import main
from planner.errors import InputError
from planner.fleet.check import check
from planner.fleet.solve import solve
from planner.scenario import scenario_from_yaml

SCENARIO = """
name: check-me
start_date: 2027-01-01
horizon_years: 4
finance: {wacc: 0.08, electricity_usd_per_mwh: 70, pue: 1.25}
site: {power_budget_mw: 10}
hardware: {allow: [hgx-h200, gb200-nvl72], max_racks: {gb200-nvl72: 5}}
workloads:
  - {name: chat, model: llama-3.1-8b, requests_per_s: 80, input_tokens: 1000, output_tokens: 300,
     tier: standard, ttft_s: 1.0}
  - {name: agent, model: llama-3.1-70b, kind: agentic, turns: 3, tool_call_gap_s: 2.0, requests_per_s: 5,
     input_tokens: 4000, output_tokens: 400, min_tps_per_user: 150, ttft_s: 2.0, precision: fp8}
"""


@pytest.fixture(scope="module")
def plan():
    return solve(scenario_from_yaml(SCENARIO))


@pytest.fixture(scope="module")
def written(plan, tmp_path_factory):
    path = tmp_path_factory.mktemp("plan") / "plan.json"
    path.write_text(json.dumps(plan.to_dict()))
    return path


def failed(d) -> list[str]:
    return [c["check"] for c in check(d) if not c["ok"]]


def test_a_written_plan_holds_from_disk(plan, written):
    from_disk = check(written)
    assert from_disk and all(c["ok"] for c in from_disk), [c for c in from_disk if not c["ok"]]
    assert from_disk == check(plan) == check(json.loads(written.read_text()))


def edit(plan, fn):
    d = copy.deepcopy(plan.to_dict())
    fn(d)
    return d


def row(d, role):
    return next(r for r in d["allocation"] if r["role"] == role)


def test_tampered_served_tokens_fail(plan):
    def more(d):
        r = row(d, "decode") if any(x["role"] == "decode" for x in d["allocation"]) else row(d, "colocated")
        r["output_tokens_per_s"] *= 3
    assert any("capacity" in c for c in failed(edit(plan, more)))


def test_tampered_rack_count_fails(plan):
    for delta in (1, -1):
        d = edit(plan, lambda d: d["fleet"][0].update(racks=d["fleet"][0]["racks"] + delta))
        assert failed(d), delta


def test_tampered_rack_power_fails(plan):
    hw = plan.to_dict()["fleet"][0]["hardware"]

    def cheaper_power(d):
        d["inputs"]["hardware"][hw]["rack"]["power_kw"]["value"] *= 0.5
    names = failed(edit(plan, cheaper_power))
    assert any("power_mw" in c for c in names), names


def test_tampered_totals_and_objective_fail(plan):
    assert "totals power_mw" in failed(edit(plan, lambda d: d["totals"].update(power_mw=d["totals"]["power_mw"] / 2)))
    assert "objective_usd_per_year" in failed(edit(plan, lambda d: d.update(objective_usd_per_year=1.0)))


def test_dropping_a_workload_under_min_cost_fails(plan):
    def drop(d):
        d["allocation"] = [r for r in d["allocation"] if r["workload"] != "agent"]
        for w in d["workloads"]:
            if w["workload"] == "agent":
                w["served_share"] = 0.0
    names = failed(edit(plan, drop))
    assert "demand agent share" in names and "demand agent decode" in names


def test_pinned_precision_and_allow_list_are_enforced(plan):
    def other_precision(d):
        for r in d["allocation"]:
            if r["workload"] == "agent":
                r["precision"] = "bf16"
    assert any("precision" in c for c in failed(edit(plan, other_precision)))

    def disallow(d):
        d["inputs"]["demands"][0]["allow_hardware"] = ["not-this-one"]
    assert any("allowed" in c for c in failed(edit(plan, disallow)))


def test_inflated_tensor_parallel_fails(plan):
    def wider(d):
        r = d["allocation"][0]
        r["tensor_parallel"] *= 8
    assert any("layout" in c for c in failed(edit(plan, wider)))


def test_supply_cap_and_budget_are_rechecked(plan):
    hw = plan.to_dict()["fleet"][0]["hardware"]
    names = failed(edit(plan, lambda d: d["inputs"]["scenario"]["max_racks"].update({hw: 0})))
    assert f"supply cap {hw}" in names
    names = failed(edit(plan, lambda d: d["inputs"]["scenario"]["site"].update(power_budget_mw=1e-3)))
    assert "power budget" in names


def test_cli_check_exit_codes(written, plan, tmp_path):
    runner = CliRunner()
    ok = runner.invoke(main, ["check", str(written)])
    assert ok.exit_code == 0, ok.output
    assert "holds" in ok.output
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(edit(plan, lambda d: d["fleet"][0].update(racks=d["fleet"][0]["racks"] + 1))))
    res = runner.invoke(main, ["check", str(bad), "--format", "json"])
    assert res.exit_code == 4
    report = json.loads(res.stdout)
    assert report["ok"] is False and any(not c["ok"] for c in report["checks"])
    for text in ("not json", json.dumps({"status": "optimal"}), json.dumps([1, 2])):
        path = tmp_path / "notaplan.json"
        path.write_text(text)
        res = runner.invoke(main, ["check", str(path)])
        assert res.exit_code == 2, res.output
        assert "Traceback" not in res.output
    assert runner.invoke(main, ["check", str(tmp_path / "missing.json")]).exit_code == 2


def test_library_check_rejects_what_is_not_a_plan():
    with pytest.raises(InputError):
        check({"status": "optimal"})
    with pytest.raises(InputError):
        check(42)


def test_an_infeasible_plan_is_valid_json_and_checks(tmp_path):
    text = SCENARIO.replace("power_budget_mw: 10", "power_budget_mw: 0.001")
    path = tmp_path / "tight.yaml"
    path.write_text(text)
    out = tmp_path / "out"
    res = CliRunner().invoke(main, ["solve", str(path), "--format", "json", "--out", str(out)])
    assert res.exit_code == 3, res.output
    printed = json.loads(res.stdout)
    assert printed["status"] == "infeasible" and printed["objective_usd_per_year"] is None and printed["reason"]
    written = json.loads((out / "plan.json").read_text(), parse_constant=lambda c: pytest.fail(f"JSON holds {c}"))
    assert written["status"] == "infeasible"
    assert all(c["ok"] for c in check(written))


def test_a_plan_from_the_per_layer_floor_model_is_refused_clearly(plan):
    """Plans written before the fixed costs were built from kernels carry layer_floor_s: check cannot re-score them
    with today's model and says so, naming the key and what to do."""
    from planner.errors import InputError

    def old(d):
        for eff in d["inputs"]["efficiency"].values():
            eff["layer_floor_s"] = eff.pop("kernel_latency_s")
            eff.pop("step_overhead_s")

    with pytest.raises(InputError, match="layer_floor_s.*solve the scenario again"):
        check(edit(plan, old))


def test_a_plan_solved_to_gap_zero_passes_its_own_check():
    """A solve asked for relative_gap 0 is optimal within the solver's tolerance (mixed-site's came back 3e-8 off its
    bound, and the check once refused its own plan: "bug: the plan fails its own check"). Its rounds on every column
    once took a decode option at one replica's slots, asked 1,037 racks of the 800 the site holds, and the solve
    said "no feasible fleet" of a site the first MILP had a plan for: that plan's own columns, sized again, answer
    (at a gap against the first MILP's bound, so not proved to 0)."""
    from pathlib import Path

    from planner.scenario import load_scenario

    sc = load_scenario(Path(__file__).parents[1] / "scenarios" / "mixed-site.yaml").with_({"solver.relative_gap": 0.0})
    plan = solve(sc)
    assert plan.status in ("optimal", "feasible") and all(c["ok"] for c in plan.checks)


@pytest.mark.parametrize("field", ["input_tokens", "prefill_tokens", "resident_s_per_token"])
def test_a_huge_integer_in_a_demand_fails_its_checks_not_the_kernels(plan, field):
    """JSON integers past int64 (10**30, as a fuzzed plan had) reached the jitted kernels as Python ints, which
    numba cannot type: check raised a TypingError instead of reporting what the tampered plan breaks."""
    d = copy.deepcopy(plan.to_dict())
    d["inputs"]["demands"][0][field] = 10**30
    assert failed(d)


@pytest.mark.parametrize("content, match", [
    (b"[" * 100000 + b"]" * 100000, "nested more than 64 levels deep"),
    (b'{"a":' * 200 + b"1" + b"}" * 200, "nested more than 64 levels deep"),
    (b'{"status": "\xff"}', "not JSON"),
])
def test_a_plan_file_nested_too_deep_or_not_utf8_is_an_input_error(tmp_path, content, match):
    """issue 28: a deeply nested plan.json was a RecursionError traceback from `planner check`."""
    path = tmp_path / "plan.json"
    path.write_bytes(content)
    with pytest.raises(InputError, match=match):
        check(path)
    res = CliRunner().invoke(main, ["check", str(path)])
    assert res.exit_code == 2 and res.stderr.startswith(f"error: {path}: ") and res.stderr.count("\n") == 1


def test_a_plan_whose_inputs_cannot_be_read_is_one_line_naming_the_file(plan, tmp_path):
    d = copy.deepcopy(plan.to_dict())
    d["inputs"]["hardware"][next(iter(d["inputs"]["hardware"]))]["roles"] = "1e999"
    path = tmp_path / "plan.json"
    path.write_text(json.dumps(d))
    res = CliRunner().invoke(main, ["check", str(path)])
    assert res.exit_code == 2 and res.stderr.startswith(f"error: {path}: not a plan"), res.stderr
    assert res.stderr.count("\n") == 1, res.stderr


@pytest.mark.parametrize("table", ["fleet", "allocation", "workloads"])
def test_a_duplicated_row_fails(plan, table):
    """issue 28: a plan whose fleet row was duplicated passed check (anyone summing fleet.csv ordered every system
    twice); a repeated row of any table fails, naming the rows."""
    d = edit(plan, lambda d: d[table].append(copy.deepcopy(d[table][0])))
    bad = [c for c in check(d) if not c["ok"] and c["check"].startswith(f"{table} rows ")]
    assert bad and "the same row repeated" in bad[0]["detail"], failed(d)


def test_a_contradictory_fleet_row_fails(plan):
    def contradict(d):
        twin = copy.deepcopy(d["fleet"][0])
        twin["racks"] += 1
        d["fleet"].append(twin)
    d = edit(plan, contradict)
    bad = [c for c in check(d) if not c["ok"] and c["check"] == f"fleet rows {d['fleet'][0]['hardware']}"]
    assert bad and "contradictory" in bad[0]["detail"]


def test_a_plan_of_another_catalog_version_says_which(plan, tmp_path):
    """issue 28: a plan whose catalog_version was changed passed check; it now fails one check naming both
    versions, and every other check still re-runs against the plan's own inputs (and holds)."""
    from planner import catalog

    d = edit(plan, lambda d: d["provenance"].update(catalog_version="2025.01.01"))
    checks = check(d)
    bad = [c for c in checks if not c["ok"]]
    assert [c["check"] for c in bad] == ["catalog version"]
    assert "'2025.01.01'" in bad[0]["detail"] and catalog.CATALOG_VERSION in bad[0]["detail"]
    assert len(checks) == len(check(plan)) > 10
    path = tmp_path / "plan.json"
    path.write_text(json.dumps(d))
    res = CliRunner().invoke(main, ["check", str(path)])
    assert res.exit_code == 4 and "catalog version" in res.stderr, res.output
