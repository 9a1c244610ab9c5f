"""The scenario format: shipped examples load, the JSON Schema covers every field, bad input names file/line/field."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
import yaml

from planner.catalog import hardware_catalog, model_catalog
from planner.errors import InputError
from planner.scenario import (
    TIERS,
    Scenario,
    load_scenario,
    scenario_from_yaml,
    scenario_json_schema,
)

ROOT = Path(__file__).resolve().parents[1]
SHIPPED = sorted((ROOT / "scenarios").glob("*.yaml"))

# Uses only vr-nvl72 and llama-3.1-70b so that it does not depend on the rest of the catalog. Line numbers matter:
# the table below points at them.
BASE = """\
name: test
start_date: 2027-01-01
horizon_years: 4
finance: {wacc: 0.08, electricity_usd_per_mwh: 70, pue: 1.25}
site: {power_budget_mw: 100, max_racks: 1500}
hardware:
  allow: [vr-nvl72]
  max_racks: {vr-nvl72: 40}
  overrides: {vr-nvl72: {capex_usd: 9.0e6}}
workloads:
  - name: chat
    model: llama-3.1-70b
    requests_per_s: 2000
    input_tokens: 1500
    output_tokens: 400
    tier: standard
  - name: agent
    model: llama-3.1-70b
    kind: agentic
    requests_per_s: 5
    input_tokens: 4000
    output_tokens: 300
    min_tps_per_user: 150
    turns: 10
    tool_call_gap_s: 2
    context_growth_tokens_per_turn: 800
objective: min_cost
solver: {name: scip, time_limit_s: 60, relative_gap: 0.001}
"""


def _write(tmp_path: Path, text: str | bytes, name: str = "s.yaml") -> Path:
    path = tmp_path / name
    path.write_bytes(text if isinstance(text, bytes) else text.encode())
    return path


def _edit(old: str, new: str) -> str:
    assert old in BASE, old
    return BASE.replace(old, new, 1)


# ---- good input ---------------------------------------------------------------------------------------------------
def test_base_loads(tmp_path):
    s = load_scenario(_write(tmp_path, BASE))
    assert s.name == "test" and str(s.start_date) == "2027-01-01"
    assert [w.resolved_min_tps_per_user for w in s.workloads] == [TIERS["standard"], 150.0]
    assert s.finance.maintenance_share_of_capex_per_year == 0.05
    assert s.solver.name == "scip" and s.objective == "min_cost"


@pytest.mark.parametrize("path", SHIPPED, ids=lambda p: p.name)
def test_shipped_scenarios_load(path):
    s = load_scenario(path)
    assert s.resolved_hardware(), "no usable hardware"
    models = s.resolved_models()
    assert all(w.model in models for w in s.workloads)


def test_four_scenarios_ship():
    names = {p.name for p in SHIPPED}
    assert {"mixed-site.yaml", "bank-2mw.yaml", "agentic-coding-ultra.yaml", "sovereign-100mw.yaml"} <= names


def test_json_schema_covers_every_field():
    schema = scenario_json_schema()
    json.dumps(schema)  # plain JSON
    assert schema["type"] == "object" and schema["additionalProperties"] is False
    assert set(schema["properties"]) == set(Scenario.model_fields)
    assert set(schema["required"]) == {"name", "start_date", "horizon_years", "finance", "workloads"}
    defs = schema["$defs"]
    assert {"wacc", "electricity_usd_per_mwh", "pue"} <= set(defs["Finance"]["properties"])
    assert {"tier", "min_tps_per_user", "ttft_percentile", "turns"} <= set(defs["Workload"]["properties"])
    for d in ("Finance", "Site", "HardwareChoice", "SolverSettings", "Workload"):
        for field, prop in defs[d]["properties"].items():
            assert prop.get("description"), f"{d}.{field} has no description"


def test_json_schema_is_valid_and_accepts_shipped_scenarios():
    jsonschema = pytest.importorskip("jsonschema")
    schema = scenario_json_schema()
    jsonschema.Draft202012Validator.check_schema(schema)
    for path in [*SHIPPED]:
        data = json.loads(json.dumps(yaml.safe_load(path.read_text()), default=str))
        jsonschema.validate(data, schema)


def test_resolved_hardware_applies_overrides_allow_and_date(tmp_path):
    s = load_scenario(_write(tmp_path, BASE))
    hw = s.resolved_hardware()
    assert list(hw) == ["vr-nvl72"]
    capex = hw["vr-nvl72"].rack.capex_usd
    assert capex.value == 9.0e6 and capex.confidence == "estimate" and capex.source == "scenario"
    assert hardware_catalog()["vr-nvl72"].rack.capex_usd.value != 9.0e6  # the catalog is untouched
    assert all(r == "not in hardware.allow" for r in s.excluded_hardware().values())


def test_start_date_filters_hardware(tmp_path):
    text = _edit("  allow: [vr-nvl72]\n", "").replace("start_date: 2027-01-01", "start_date: 2026-01-01")
    s = load_scenario(_write(tmp_path, text.replace("vr-nvl72", "hgx-h100")))
    assert "vr-nvl72" not in s.resolved_hardware()
    assert "after start_date" in s.excluded_hardware()["vr-nvl72"]
    assert all(h.rack.available.value <= s.start_date for h in s.resolved_hardware().values())


def test_override_by_dotted_path_and_available_date(tmp_path):
    text = _edit(
        "{capex_usd: 9.0e6}",
        "{chip.memory.0.capacity_bytes: 4.0e+11, available: 2026-01-01, chip.peak_flops_per_s.fp8: {value: 2.0e+16}}",
    )
    text = text.replace("start_date: 2027-01-01", "start_date: 2026-06-01")
    hw = load_scenario(_write(tmp_path, text)).resolved_hardware()["vr-nvl72"]
    assert hw.chip.memory[0].capacity_bytes.value == 4.0e11
    assert hw.chip.peak_flops_per_s["fp8"].value == 2.0e16
    assert hw.chip.peak_flops_per_s["fp8"].source == "scenario"


def test_custom_hardware_and_model(tmp_path):
    data = yaml.load(BASE, Loader=yaml.SafeLoader)
    custom_hw = hardware_catalog()["vr-nvl72"].model_dump(mode="json") | {"id": "my-rack", "name": "My rack"}
    custom_model = model_catalog()["llama-3.1-70b"].model_dump(mode="json") | {"id": "my-70b"}
    data["hardware"] = {"allow": ["vr-nvl72", "my-rack"], "custom": [custom_hw], "max_racks": {"my-rack": 3}}
    data["models"] = [custom_model]
    data["workloads"][0]["model"] = "my-70b"
    s = scenario_from_yaml(yaml.safe_dump(data, sort_keys=False))
    assert set(s.resolved_hardware()) == {"vr-nvl72", "my-rack"}
    assert s.model_for(s.workloads[0]).id == "my-70b"
    data["hardware"]["custom"][0]["id"] = "vr-nvl72"
    with pytest.raises(InputError, match=r"hardware\.custom\[0\]\.id: 'vr-nvl72' is already a catalog id"):
        scenario_from_yaml(yaml.safe_dump(data, sort_keys=False))


def test_workload_derived_quantities(tmp_path):
    agent = load_scenario(_write(tmp_path, BASE)).workloads[1]
    assert agent.calls_per_s == 50 and agent.peak_calls_per_s == 50
    assert agent.turn_input_tokens(1) == 4000 and agent.turn_input_tokens(3) == 4000 + 2 * (300 + 800)
    assert agent.mean_input_tokens == pytest.approx(4000 + 4.5 * 1100)
    assert agent.generated_tokens_per_call == 300


def test_yaml_conveniences(tmp_path):
    """1e3-style numbers, quoted dates and merge keys (shared workload settings) all work."""
    text = BASE[: BASE.index("workloads:")].replace("2027-01-01", "'2027-01-01'") + (
        "workloads:\n"
        "  - &base {name: a, model: llama-3.1-70b, requests_per_s: 2e3, input_tokens: 1.5e+3, output_tokens: 400,"
        " tier: high}\n"
        "  - <<: *base\n"
        "    name: b\n"
        "    tier: premium\n"
    )
    s = load_scenario(_write(tmp_path, text))
    assert str(s.start_date) == "2027-01-01"
    assert [(w.name, w.requests_per_s, w.input_tokens, w.tier) for w in s.workloads] == [
        ("a", 2000.0, 1500.0, "high"),
        ("b", 2000.0, 1500.0, "premium"),
    ]


def test_with_solver(tmp_path):
    s = load_scenario(_write(tmp_path, BASE)).with_solver("highs", 5)
    assert s.solver.name == "highs" and s.solver.time_limit_s == 5 and s.resolved_hardware()
    with pytest.raises(InputError, match="solver.time_limit_s"):
        s.with_solver(time_limit_s=-1)


# ---- bad input: (id, edited text, expected line, field path, words in the message) -----------------------------------
BAD = [
    ("yaml-syntax", _edit("allow: [vr-nvl72]", "allow: [vr-nvl72"), 8, None, "YAML syntax error"),
    ("wrong-type", _edit("requests_per_s: 2000", "requests_per_s: lots"), 13, "workloads[0].requests_per_s",
     "expected a valid number, got 'lots'"),
    ("bool-for-number", _edit("requests_per_s: 2000", "requests_per_s: yes"), 13, "workloads[0].requests_per_s",
     "valid number"),
    ("mapping-for-number", _edit("pue: 1.25", "pue: {a: 1}"), 4, "finance.pue", "valid number"),
    ("list-for-mapping", _edit("site: {power_budget_mw: 100, max_racks: 1500}", "site: [100, 1500]"), 5, "site",
     "expected a mapping, got a list"),
    ("unknown-field", _edit("    tier: standard", "    teir: standard"), 16, "workloads[0].teir",
     "unknown field (did you mean 'tier'?)"),
    ("unknown-top-field", _edit("objective: min_cost", "objectives: min_cost"), 27, "objectives",
     "did you mean 'objective'?"),
    ("unknown-hardware-allow", _edit("allow: [vr-nvl72]", "allow: [vr-nvl27]"), 7, "hardware.allow[0]",
     "unknown hardware id 'vr-nvl27' (did you mean 'vr-nvl72'?)"),
    ("unknown-hardware-max-racks", _edit("max_racks: {vr-nvl72: 40}", "max_racks: {vr-nv72: 40}"), 8,
     "hardware.max_racks.vr-nv72", "did you mean 'vr-nvl72'?"),
    ("unknown-hardware-override", _edit("overrides: {vr-nvl72:", "overrides: {vr_nvl72:"), 9,
     "hardware.overrides.vr_nvl72", "did you mean 'vr-nvl72'?"),
    ("unknown-override-field", _edit("capex_usd: 9.0e6", "capex: 9.0e6"), 9, "hardware.overrides.vr-nvl72.capex",
     "did you mean 'capex_usd'?"),
    ("ambiguous-override-field", _edit("capex_usd: 9.0e6", "latency_s: 1.0e-6"), 9,
     "hardware.overrides.vr-nvl72.latency_s", "ambiguous"),
    ("bad-override-path", _edit("capex_usd: 9.0e6", "rack.capex: 1"), 9, "hardware.overrides.vr-nvl72.rack.capex",
     "rack has no field 'capex'"),
    ("negative-override", _edit("capex_usd: 9.0e6", "power_kw: -5"), 9, "hardware.overrides.vr-nvl72.power_kw",
     "positive finite number"),
    ("override-id", _edit("capex_usd: 9.0e6", "id: x"), 9, "hardware.overrides.vr-nvl72.id", "cannot be overridden"),
    ("override-invalid-value", _edit("capex_usd: 9.0e6", "precisions: [fp2]"), 9,
     "hardware.overrides.vr-nvl72.precisions", "precisions[0]"),
    ("unknown-model", _edit("model: llama-3.1-70b", "model: llama-3.1-7b"), 12, "workloads[0].model",
     "unknown model id 'llama-3.1-7b' (did you mean"),
    ("negative-rate", _edit("requests_per_s: 2000", "requests_per_s: -5"), 13, "workloads[0].requests_per_s",
     "expected a number >= 1e-06"),
    ("zero-rate", _edit("requests_per_s: 2000", "requests_per_s: 0"), 13, "workloads[0].requests_per_s", ">= 1e-06"),
    ("nan-rate", _edit("requests_per_s: 2000", "requests_per_s: .nan"), 13, "workloads[0].requests_per_s",
     "finite number"),
    ("inf-rate", _edit("requests_per_s: 2000", "requests_per_s: .inf"), 13, "workloads[0].requests_per_s",
     "finite number"),
    ("pue-below-1", _edit("pue: 1.25", "pue: 0.9"), 4, "finance.pue", "expected a number >= 1"),
    ("wacc-nan", _edit("wacc: 0.08", "wacc: .NaN"), 4, "finance.wacc", "finite number"),
    ("percentile-150", _edit("    tier: standard\n", "    tier: standard\n    ttft_percentile: 150\n"), 17,
     "workloads[0].ttft_percentile", "expected a number < 100"),
    ("prefix-cache-1", _edit("    tier: standard\n", "    tier: standard\n    prefix_cache_hit: 1.0\n"), 17,
     "workloads[0].prefix_cache_hit", "< 1"),
    ("bad-tier", _edit("tier: standard", "tier: fast"), 16, "workloads[0].tier", "'standard', 'high', 'premium'"),
    ("bad-precision", _edit("    tier: standard\n", "    tier: standard\n    precision: int4\n"), 17,
     "workloads[0].precision", "'fp4', 'fp8', 'bf16' or 'w4a16'"),
    ("duplicate-workload-name", _edit("  - name: agent", "  - name: chat"), 17, "workloads[1].name",
     "duplicate workload name 'chat'"),
    ("tier-and-min-tps", _edit("    tier: standard\n", "    tier: standard\n    min_tps_per_user: 150\n"), 17,
     "workloads[0].min_tps_per_user", "not both"),
    ("neither-tier-nor-min-tps", _edit("    min_tps_per_user: 150\n", ""), 17, "workloads[1].tier",
     "min_tps_per_user"),
    ("turns-zero", _edit("turns: 10", "turns: 0"), 24, "workloads[1].turns", ">= 1"),
    ("gap-without-turns", _edit("turns: 10", "turns: 1"), 25, "workloads[1].tool_call_gap_s", "turns > 1"),
    ("negative-growth", _edit("context_growth_tokens_per_turn: 800", "context_growth_tokens_per_turn: -1"), 26,
     "workloads[1].context_growth_tokens_per_turn", ">= 0"),
    ("bad-kind", _edit("kind: agentic", "kind: batch"), 19, "workloads[1].kind", "'chat' or 'agentic'"),
    ("impossible-date", _edit("start_date: 2027-01-01", "start_date: 2027-02-30"), 2, "start_date",
     "day value is outside expected range"),
    ("not-a-date", _edit("start_date: 2027-01-01", "start_date: soon"), 2, "start_date", "valid date"),
    ("no-hardware-by-date", _edit("start_date: 2027-01-01", "start_date: 2020-01-01"), 7, "hardware.allow",
     "no allowed hardware is available by start_date 2020-01-01 (earliest: vr-nvl72"),
    ("missing-field", _edit("horizon_years: 4\n", ""), 1, "horizon_years", "required field is missing"),
    ("missing-workload-field", _edit("    output_tokens: 400\n", ""), 11, "workloads[0].output_tokens",
     "required field is missing"),
    ("no-workloads", BASE[: BASE.index("workloads:")] + "workloads: []\n", 10, "workloads",
     "expected at least 1 item(s), got 0"),
    ("bad-objective", _edit("objective: min_cost", "objective: max_profit"), 27, "objective", "'min_cost'"),
    ("bad-solver", _edit("name: scip,", "name: gurobi,"), 28, "solver.name", "'scip', 'highs' or 'cp-sat'"),
    ("gap-negative", _edit("relative_gap: 0.001", "relative_gap: -0.1"), 28, "solver.relative_gap", ">= 0"),
    ("python-object-tag", _edit("model: llama-3.1-70b", "model: !!python/object/apply:os.system [echo pwned]"), 12,
     "workloads[0].model", "python/object"),
    ("duplicate-key", _edit("    tier: standard\n", "    tier: standard\n    tier: high\n"), 17, "workloads[0].tier",
     "duplicate key 'tier' (first at line 16)"),
    ("top-level-list", "- name: x\n- name: y\n", 1, None, "expected a mapping of scenario fields"),
]


@pytest.mark.parametrize("text, line, field, words", [c[1:] for c in BAD], ids=[c[0] for c in BAD])
def test_bad_scenarios(tmp_path, text, line, field, words):
    path = _write(tmp_path, text)
    with pytest.raises(InputError) as info:
        load_scenario(path)
    err, message = info.value, str(info.value)
    assert message.startswith(f"{path}:{line}: "), message
    assert err.line == line and err.file == str(path)
    if field is not None:
        assert err.field == field and f": {field}: " in message, message
    assert words in message, message
    assert err.exit_code == 2


@pytest.mark.parametrize(
    "content, words",
    [
        ("", "is empty"),
        ("# only a comment\n\n", "is empty"),
        (b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR", "binary file"),
        (b"name: caf\xe9\n", "not UTF-8"),
    ],
    ids=["empty", "comments-only", "binary", "latin-1"],
)
def test_unreadable_files(tmp_path, content, words):
    path = _write(tmp_path, content)
    with pytest.raises(InputError, match=words) as info:
        load_scenario(path)
    assert str(info.value).startswith(str(path))


def test_missing_file_and_directory(tmp_path):
    with pytest.raises(InputError, match="no such file") as info:
        load_scenario(tmp_path / "nope.yaml")
    assert str(tmp_path / "nope.yaml") in str(info.value)
    with pytest.raises(InputError, match="is a directory"):
        load_scenario(tmp_path)


def test_python_tag_is_never_constructed(tmp_path):
    marker = tmp_path / "pwned"
    text = _edit("model: llama-3.1-70b", f"model: !!python/object/apply:os.system ['touch {marker}']")
    with pytest.raises(InputError):
        load_scenario(_write(tmp_path, text))
    assert not marker.exists()


def test_alias_bomb_is_rejected(tmp_path):
    lines = ["a0: &a0 [x, x, x, x, x, x, x, x, x, x]"]
    lines += [f"a{i}: &a{i} [{', '.join([f'*a{i - 1}'] * 10)}]" for i in range(1, 9)]
    with pytest.raises(InputError, match="after expanding aliases"):
        load_scenario(_write(tmp_path, "\n".join(lines) + "\n"))


def test_several_errors_are_all_listed(tmp_path):
    text = _edit("pue: 1.25", "pue: 0.5").replace("requests_per_s: 2000", "requests_per_s: -1")
    with pytest.raises(InputError) as info:
        load_scenario(_write(tmp_path, text))
    assert info.value.field == "finance.pue"
    assert "also line 13: workloads[0].requests_per_s" in str(info.value)


def test_tiers_table():
    assert TIERS == {"standard": 100.0, "high": 200.0, "premium": 400.0, "ultra": 1000.0}
    assert all(math.isfinite(v) for v in TIERS.values())


def test_a_plan_buys_merchant_systems_unless_told_otherwise():
    """issue 12: TPUs and Trainium are rented, Cerebras and SambaNova sold to a few; by default a plan offers only
    racks anyone can buy, says why each other system is left out, and a scenario may widen it or name systems."""
    import copy

    import yaml

    from planner.scenario import scenario_from_yaml

    doc = yaml.safe_load((ROOT / "scenarios" / "mixed-site.yaml").read_text())
    sc = scenario_from_yaml(yaml.safe_dump(doc))
    allowed, excluded = set(sc.resolved_hardware()), sc.excluded_hardware()
    assert {"tpu-v7", "trn3-ultraserver", "cs3", "sn40l-rack"} & allowed == set()
    assert "rented from one cloud only (acquisition: cloud)" in excluded["tpu-v7"]
    assert "sold to a few customers only (acquisition: select)" in excluded["cs3"]
    assert {"hgx-b200", "gb200-nvl72", "corsair-rack", "mi355x"} <= allowed
    wide = copy.deepcopy(doc)
    wide["hardware"]["acquisition"] = ["merchant", "cloud", "select"]
    assert {"tpu-v7", "trn3-ultraserver", "cs3"} <= set(scenario_from_yaml(yaml.safe_dump(wide)).resolved_hardware())
    named = copy.deepcopy(doc)
    named["hardware"]["allow"] = ["tpu-v7", "hgx-b200"]  # naming a system allows it, whatever its acquisition
    assert set(scenario_from_yaml(yaml.safe_dump(named)).resolved_hardware()) == {"tpu-v7", "hgx-b200"}


def test_a_rate_too_small_to_plan_is_an_input_error():
    """issue 28: 1e-15 requests/s reached HiGHS as demand rows spanning too many decades ('StatusNotOk ... has no
    attribute canonical_code', exit 1); rates below 1e-6 a second are refused naming the field, in the library and
    on the CLI."""
    from click.testing import CliRunner

    from planner.cli import main
    from planner.errors import InputError
    from planner.scenario import load_scenario

    bank = Path(__file__).resolve().parents[1] / "scenarios" / "bank-2mw.yaml"
    with pytest.raises(InputError, match=r"requests_per_s: expected a number >= 1e-06"):
        load_scenario(bank, ["workloads.employee-assistant.requests_per_s=0.000000000000001"])
    res = CliRunner().invoke(main, ["solve", str(bank), "--solver", "highs", "--set",
                                    "workloads.employee-assistant.requests_per_s=0.000000000000001"])
    assert res.exit_code == 2 and "requests_per_s" in res.output and "Traceback" not in res.output, res.output
    assert load_scenario(bank, ["workloads.employee-assistant.requests_per_s=0.000001"]).workloads[0].requests_per_s \
        == 1e-6


def test_validate_says_when_an_agent_has_no_prefix_cache():
    """issue 27: an agentic workload without prefix_cache_hit prefills every call whole (a 30-turn agent needed
    254 MW at 0 and 57 MW at 0.9); validate says so, and not where the share is given."""
    from planner.scenario import load_scenario, resolved_summary

    path = Path(__file__).resolve().parents[1] / "scenarios" / "agentic-coding-ultra.yaml"
    sc = load_scenario(path)
    given = {w.name for w in sc.workloads if "prefix_cache_hit" in w.model_fields_set}
    notes = " ".join(resolved_summary(sc)["warnings"])
    for w in sc.workloads:
        said = f"workload {w.name}: agentic without prefix_cache_hit" in notes
        assert said == (w.kind == "agentic" and w.name not in given)
    bare = sc.with_({f"workloads.{w.name}.kind": "agentic" for w in sc.workloads[:1]})
    if sc.workloads[0].name in given:  # the file gives it: drop it to see the note
        raw = sc.model_dump(mode="json", exclude_unset=True, by_alias=True)
        raw["workloads"][0].pop("prefix_cache_hit")
        bare = type(sc).model_validate(raw)
    assert f"workload {sc.workloads[0].name}: agentic without prefix_cache_hit" in " ".join(
        resolved_summary(bare)["warnings"])


def test_a_library_what_if_error_names_with_not_the_cli_flag():
    """issue 27: Scenario.with_ errors said '(after --set ...)' in library use; they now name with_, and the CLI's
    --set keeps its own words."""
    from planner.errors import InputError
    from planner.scenario import load_scenario

    bank = Path(__file__).resolve().parents[1] / "scenarios" / "bank-2mw.yaml"
    with pytest.raises(InputError, match=r"\(after with_ site\.power_budget_mw\)"):
        load_scenario(bank).with_({"site.power_budget_mw": -1})
    with pytest.raises(InputError, match=r"\(after --set site\.power_budget_mw\)"):
        load_scenario(bank, ["site.power_budget_mw=-1"])


def test_set_reads_an_exponent_as_a_number():
    """The docs' own example, `--set hardware.overrides.vr-nvl72.capex_usd=9e6`, was refused: PyYAML's plain loader
    reads 9e6 as text. --set values are read as the scenario's are."""
    from planner.scenario import load_scenario

    sc = load_scenario("scenarios/bank-2mw.yaml", ["hardware.overrides.hgx-b200.capex_usd=9e6"])
    assert sc.resolved_hardware()["hgx-b200"].rack.capex_usd.value == 9e6
