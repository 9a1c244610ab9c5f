"""The command line: interface keys, exit codes, and that it shows what the library computes."""

import json
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from planner import catalog
from planner.perf.estimate import estimate
from planner.perf.frontier import frontier
from planner.cli import main

ROOT = Path(__file__).resolve().parents[1]


def run(*args):
    return CliRunner().invoke(main, list(args), catch_exceptions=False)


def test_help_lists_commands():
    res = run("--help")
    assert res.exit_code == 0
    for cmd in ("estimate", "frontier", "catalog", "validate", "schema", "calibrate"):
        assert cmd in res.output


def test_help_does_not_import_heavy_packages():
    code = "import sys, planner.cli; print(any(m in sys.modules for m in ('numba', 'polars', 'ortools')))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "False"


def test_estimate_json_has_interface_keys_and_matches_library():
    res = run("estimate", "--model", "llama-3.1-70b", "--hardware", "gb200-nvl72", "--batch", "32",
              "--chips", "8", "--precision", "fp8", "--format", "json")
    assert res.exit_code == 0, res.output
    got = json.loads(res.output)
    for key in ("tps_per_user", "output_tokens_per_s", "step_time_s", "ttft_s", "fits", "chips", "batch",
                "precision"):
        assert key in got
    lib = estimate("llama-3.1-70b", "gb200-nvl72", chips=8, batch=32, precision="fp8",
                               acceptance=0.7).to_dict()
    assert got == json.loads(json.dumps(lib))


def test_frontier_json_has_interface_keys_and_matches_library():
    res = run("frontier", "--model", "llama-3.1-8b", "--hardware", "hgx-h100", "--format", "json")
    assert res.exit_code == 0, res.output
    points = json.loads(res.output)
    assert points and all(p["hardware"] == "hgx-h100" for p in points)
    for key in ("hardware", "tps_per_user", "output_tokens_per_s_per_mw", "chips", "batch", "precision"):
        assert key in points[0]
    assert points == frontier("llama-3.1-8b", ["hgx-h100"])


def test_frontier_csv_and_table():
    res = run("frontier", "--model", "llama-3.1-8b", "--hardware", "cs3", "--format", "csv")
    assert res.exit_code == 0
    assert res.output.splitlines()[0].startswith("hardware,tps_per_user")
    res = run("frontier", "--model", "llama-3.1-8b", "--hardware", "cs3")
    assert res.exit_code == 0 and "best output tokens/s per MW" in res.output


@pytest.mark.parametrize("args, needle", [
    (["estimate", "--model", "llama-3.1-70", "--hardware", "vr-nvl72"], "did you mean 'llama-3.1-70b'"),
    (["estimate", "--model", "llama-3.1-70b", "--hardware", "vr-nvl27"], "did you mean 'vr-nvl72'"),
    (["estimate", "--model", "llama-3.1-70b", "--hardware", "hgx-h100", "--precision", "fp4"], "does not run fp4"),
    (["estimate", "--model", "llama-3.1-70b", "--hardware", "taalas-hc1"], "serves only"),
    (["estimate", "--model", "llama-3.1-70b", "--hardware", "vr-nvl72", "--batch", "0"], "batch"),
    (["estimate", "--model", "llama-3.1-70b", "--hardware", "vr-nvl72", "--chips", "97"], "chips"),
    (["catalog", "show", "vr-nvl7"], "did you mean"),
    (["estimate", "--model", "llama-3.1-8b", "--hardware", "vr-nvl72", "--acceptance", "nan"], "acceptance"),
    (["estimate", "--model", "llama-3.1-8b", "--hardware", "vr-nvl72", "--draft-tokens", "-3"], "draft-tokens"),
    (["frontier", "--model", "llama-3.1-8b", "--hardware", "vr-nvl72", "--input-tokens", "0"], "input-tokens"),
    (["solve", "scenarios/bank-2mw.yaml", "--time-limit", "nan"], "solver.time_limit_s"),
    (["solve", "scenarios/bank-2mw.yaml", "--time-limit", "-1"], "solver.time_limit_s"),
])
def test_bad_input_exits_2_with_a_message(args, needle):
    res = CliRunner().invoke(main, args)
    assert res.exit_code == 2, res.output
    assert needle in res.output
    assert "Traceback" not in res.output


def test_catalog_lists_every_system_and_model():
    res = run("catalog", "--format", "json")
    assert res.exit_code == 0
    data = json.loads(res.output)
    assert {r["id"] for r in data["hardware"]} == set(catalog.hardware_catalog())
    assert {r["id"] for r in data["models"]} == set(catalog.model_catalog())


def test_catalog_show_gives_sources():
    res = run("catalog", "show", "groq3-lpx", "--format", "json")
    assert res.exit_code == 0
    entry = json.loads(res.output)
    assert entry["id"] == "groq3-lpx" and entry["sources"]
    assert all("title" in s for s in entry["sources"].values())


def test_every_cited_source_exists():
    known = set(catalog.sources())
    from planner.report.catalog_view import sources_of

    for hw in catalog.hardware_catalog().values():
        missing = sources_of(hw.model_dump()) - known
        assert not missing, (hw.id, missing)


@pytest.mark.parametrize("hw_id", sorted(catalog.hardware_catalog()))
def test_estimate_answers_for_every_system(hw_id):
    """Every catalog system answers `estimate` for every model it may serve (or says clearly why not)."""
    hw = catalog.get_hardware(hw_id)
    for model_id in sorted(catalog.model_catalog()):
        args = ["estimate", "--model", model_id, "--hardware", hw_id, "--format", "json"]
        res = CliRunner().invoke(main, args)
        if hw.model_lock and hw.model_lock != model_id:
            assert res.exit_code == 2 and "serves only" in res.output
            continue
        if res.exit_code == 2:
            # Too large for any modelled layout of this system (e.g. a 1T MoE on 230 MB chips): said plainly, and
            # only where the weights alone, at a byte a parameter, take a quarter or more of the memory that serves
            # weights on the widest replica tried: the layouts' uneven split of layers and experts over the chips,
            # the KV and the activations take the rest (Llama 4 Maverick's 401 GB on 1,536 LPX chips' 768 GB)
            assert "does not fit any replica" in res.output, (model_id, res.output)
            widest = int(res.output.split(" up to ")[1].split()[0])
            per_chip = sum(t.capacity_bytes.value for t in hw.chip.memory if t.serves_weights)
            assert catalog.get_model(model_id).total_params > 0.25 * widest * per_chip, (model_id, res.output)
            continue
        assert res.exit_code == 0, (model_id, res.output)
        est = json.loads(res.output)
        assert est["fits"] and est["tps_per_user"] > 0 and est["ttft_s"] > 0


def test_set_and_objective_are_what_the_library_does(tmp_path):
    """--set and --objective equal Scenario.with_ and load_scenario(settings=...): the same plan."""
    import json

    from planner.fleet.solve import solve
    from planner.scenario import load_scenario

    path = str(ROOT / "scenarios" / "bank-2mw.yaml")
    res = run("solve", path, "--set", "site.power_budget_mw=3", "--set", "workloads.customer-chatbot.requests_per_s=900",
              "--objective", "min_power", "--format", "json", "-q")
    assert res.exit_code == 0, res.output
    cli = json.loads(res.stdout)
    lib = solve(load_scenario(path).with_({"site.power_budget_mw": 3, "workloads.customer-chatbot.requests_per_s": 900,
                                            "objective": "min_power"})).to_dict()
    assert cli["objective"] == "min_power" and cli["inputs"]["scenario"]["site"]["power_budget_mw"] == 3
    assert {f["hardware"]: f["racks"] for f in cli["fleet"]} == {f["hardware"]: f["racks"] for f in lib["fleet"]}
    assert cli["objective_usd_per_year"] == lib["objective_usd_per_year"]
    again = load_scenario(path, ["site.power_budget_mw=3", "workloads.1.requests_per_s=900", "objective=min_power"])
    assert again == load_scenario(path).with_("site.power_budget_mw=3", "workloads.customer-chatbot.requests_per_s=900",
                                              "objective=min_power")


def test_set_errors_name_the_path():
    path = str(ROOT / "scenarios" / "bank-2mw.yaml")
    for setting, message in (
        ("site.power_budget_mw=abc", "site.power_budget_mw: expected a valid number, got 'abc' (after --set site."),
        ("workloads.custmer-chatbot.tier=high", "no item named 'custmer-chatbot' in workloads (did you mean"),
        ("nonsense", "expected PATH=VALUE"),
        ("site.pue=1.2", "pue belongs under finance"),
        ("name.x=1", "name is a value, not a mapping or list"),
    ):
        res = run("solve", path, "--set", setting)
        assert res.exit_code == 2 and message in res.output, (setting, res.output)


def test_validate_says_what_the_scenario_resolves_to():
    import json

    res = run("validate", str(ROOT / "scenarios" / "bank-2mw.yaml"), "--format", "json", "--set", "site.power_budget_mw=null")
    assert res.exit_code == 0, res.output
    doc = json.loads(res.stdout)
    assert doc["valid"] and doc["hardware"]["allowed"] == ["hgx-b200", "hgx-h100", "hgx-h200"]
    assert doc["hardware"]["excluded"]["vr-nvl72"] == "not in hardware.allow"
    assert [d["name"] for d in doc["demands"]][:2] == ["employee-assistant", "customer-chatbot"]
    assert doc["demands"][0]["output_tokens_per_s"] == pytest.approx(270 * 3.0 * 450)  # rate x peak x output
    assert any("power_budget_mw not given" in w for w in doc["warnings"])
    table = run("validate", str(ROOT / "scenarios" / "bank-2mw.yaml"))
    assert "3 systems allowed (hgx-b200, hgx-h100, hgx-h200)" in table.output and "364,500 output tok/s" in table.output


UNREACHABLE = """
name: unreachable
start_date: 2027-01-01
horizon_years: 4
finance: {wacc: 0.08, electricity_usd_per_mwh: 70, pue: 1.2}
hardware: {allow: [hgx-h100]}
workloads:
  - {name: chat, model: llama-3.1-8b, requests_per_s: 10, input_tokens: 1000, output_tokens: 300, tier: standard,
     ttft_s: 1.0}
  - {name: racing, model: llama-3.1-405b, requests_per_s: 1, input_tokens: 1000, output_tokens: 300,
     min_tps_per_user: 5000, ttft_s: 1.0}
"""


def test_validate_names_a_workload_no_hardware_reaches_as_solve_would(tmp_path):
    """Issue 41 item 5: validate said "valid" where solve, after its search, said no hardware reaches a workload's
    speed; it now scores the options and exits 3 naming it, the JSON saying so too."""
    import json

    path = tmp_path / "s.yaml"
    path.write_text(UNREACHABLE)
    res = run("validate", str(path))
    assert res.exit_code == 3, res.output
    assert "unreachable: racing: no available hardware reaches 5000 tok/s per user on llama-3.1-405b" in res.output
    assert "chat:" not in res.output.split("unreachable")[-1]
    doc = json.loads(run("validate", str(path), "--format", "json").stdout)
    assert list(doc["unreachable"]) == ["racing"]
    assert run("solve", str(path), "-q").exit_code == 3  # the same verdict, after the search
    path.write_text(UNREACHABLE.replace("min_tps_per_user: 5000", "min_tps_per_user: 20"))
    ok = run("validate", str(path), "--format", "json")
    assert ok.exit_code == 0 and json.loads(ok.stdout)["unreachable"] == {}


def test_out_says_what_it_wrote_and_parquet_names_its_plan(tmp_path):
    import polars as pl

    out = tmp_path / "o"
    res = run("solve", str(ROOT / "scenarios" / "gtc-2026-tiers.yaml"), "--out", str(out), "--format", "json")
    assert res.exit_code == 0
    json.loads(res.stdout)  # the message goes to stderr, stdout stays JSON
    assert f"wrote {out}" in res.stderr
    meta = pl.read_parquet_metadata(out / "fleet.parquet")
    assert meta["planner.scenario"] == "gtc-2026-tiers" and meta["planner.table"] == "fleet"
    assert meta["planner.version"] and meta["planner.catalog_version"] == catalog.CATALOG_VERSION


def test_a_missing_price_names_every_unpriced_workload():
    res = run("solve", str(ROOT / "scenarios" / "bank-2mw.yaml"), "--objective", "max_revenue")
    assert res.exit_code == 2
    for name in ("employee-assistant", "customer-chatbot", "document-extraction", "code-completion"):
        assert name in res.output


def test_a_platform_limit_and_a_minimum_purchase_hold_in_the_plan():
    """Against the shipped plan's golden cost (tests/golden/plans, the same solve without the limits), the plan's own
    checks, unsimulated (--no-verify: the simulation is tests/test_verify.py's)."""
    base = json.loads((ROOT / "tests" / "golden" / "plans" / "mixed-site.json").read_text())
    res = run("solve", str(ROOT / "scenarios" / "mixed-site.yaml"), "--set", "hardware.max_platforms=2",
              "--set", "hardware.min_racks.gb200-nvl72=90", "--format", "json", "-q", "--no-verify")
    assert res.exit_code == 0, res.output
    plan = json.loads(res.stdout)
    racks = {f["hardware"]: f["racks"] for f in plan["fleet"]}
    assert len(racks) <= 2 and racks.get("gb200-nvl72", 90) >= 90
    assert all(c["ok"] for c in plan["checks"]) and any(c["check"] == "platforms" for c in plan["checks"])
    assert plan["objective_usd_per_year"] >= base["objective_usd_per_year"] * (1 - 0.005)  # a limit never saves


def test_the_workloads_table_shows_the_served_share_as_a_percentage():
    """issue 27: `served` printed 1 for a share; the compact table now says 100% (JSON keeps the share)."""
    from planner.report.terminal import shares_as_percent

    assert shares_as_percent([{"served_share": 1.0}, {"served_share": 0.625}, {"served_share": None}]) == [
        {"served_share": "100%"}, {"served_share": "62.5%"}, {"served_share": None}]
    res = CliRunner().invoke(main, ["solve", str(ROOT / "scenarios" / "bank-2mw.yaml"), "-q"])
    assert res.exit_code == 0 and "100%" in res.output, res.output


def test_no_source_key_is_defined_twice():
    """sources.yaml defined A1, A2 and T1-T4 twice (the A100 datasheet and AWS Neuron docs; Google's TPU 8 and
    Tensordyne), so YAML kept the later and the A100's and TPU 8's figures cited the wrong documents."""
    import re

    keys = re.findall(r"^([A-Za-z0-9_-]+):", (catalog.DATA_DIR / "sources.yaml").read_text(), flags=re.M)
    assert len(keys) == len(set(keys)), sorted({k for k in keys if keys.count(k) > 1})
