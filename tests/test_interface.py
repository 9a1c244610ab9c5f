"""The CLI and the library agree (defaults, choices, JSON), and docs/INTERFACE.md defines every key they emit."""

from __future__ import annotations

import inspect
import json
import re
from pathlib import Path

import click
from click.testing import CliRunner

from planner import vocabulary
from planner.cli import main
from planner.perf.estimate import estimate
from planner.perf.frontier import frontier

ROOT = Path(__file__).resolve().parents[1]
INTERFACE = (ROOT / "docs" / "INTERFACE.md").read_text()
DOCUMENTED = set(re.findall(r"`([A-Za-z_][A-Za-z0-9_.-]*)`", INTERFACE))


def run(*args) -> dict | list:
    res = CliRunner().invoke(main, list(args))
    assert res.exit_code == 0, res.output
    return json.loads(res.stdout)


def test_estimate_cli_defaults_equal_the_library():
    assert run("estimate", "-m", "llama-3.1-8b", "-H", "hgx-h200", "--format", "json") == json.loads(
        json.dumps(estimate("llama-3.1-8b", "hgx-h200").to_dict()))


def test_frontier_cli_defaults_equal_the_library():
    assert run("frontier", "-m", "llama-3.1-8b", "-H", "hgx-h200", "--format", "json") == json.loads(
        json.dumps(frontier("llama-3.1-8b", ["hgx-h200"])))


def test_option_defaults_and_choices_come_from_the_library():
    commands = main.commands
    lib = inspect.signature(estimate).parameters
    for option in commands["estimate"].params:
        name = option.name
        if name in lib and lib[name].default is not inspect.Parameter.empty:
            assert option.default == lib[name].default, name
    lib = inspect.signature(frontier).parameters
    for option in commands["frontier"].params:
        if option.name in ("input_tokens", "output_tokens"):
            assert option.default == lib[option.name].default
    choices = {o.name: tuple(o.type.choices) for c in commands.values() for o in c.params
               if isinstance(o.type, click.Choice)}
    assert choices["solver"] == vocabulary.SOLVERS
    assert choices["precision"] == vocabulary.PRECISIONS


def emitted_keys(obj, out: set) -> set:
    if isinstance(obj, dict):
        for k, v in obj.items():
            out.add(k)
            if k not in ("inputs", "checks", "unserved", "headroom"):  # inputs: catalog schema, documented as
                # such; a verification round's headroom is keyed by workload
                emitted_keys(v, out)
    elif isinstance(obj, list):
        for v in obj:
            emitted_keys(v, out)
    return out


def test_every_emitted_key_is_defined_in_interface_md():
    keys = set()
    emitted_keys(run("solve", str(ROOT / "scenarios" / "bank-2mw.yaml"), "--format", "json"), keys)
    emitted_keys(run("estimate", "-m", "kimi-k2", "-H", "vr-nvl72+groq3-lpx", "--format", "json"), keys)
    emitted_keys(run("estimate", "-m", "llama-3.1-8b", "-H", "hgx-h200", "--format", "json"), keys)
    emitted_keys(run("frontier", "-m", "llama-3.1-8b", "-H", "hgx-h200", "--format", "json"), keys)
    plan = run("solve", str(ROOT / "scenarios" / "bank-2mw.yaml"), "--format", "json")
    keys |= set(plan["inputs"]) | set(plan["inputs"]["scenario"]) | set(plan["inputs"]["demands"][0])
    missing = sorted(k for k in keys if k not in DOCUMENTED)
    assert not missing, f"docs/INTERFACE.md does not define: {missing}"


def test_every_vocabulary_word_is_in_interface_md():
    words = [*vocabulary.TIERS, *vocabulary.PRECISIONS, *vocabulary.ALLOCATION_ROLES, *vocabulary.OBJECTIVES,
             *vocabulary.SOLVERS, *vocabulary.STATUSES]
    assert not [w for w in words if w not in DOCUMENTED]


def documented_sections() -> dict[str, set[str]]:
    """Heading -> the names in the first cell of every table row under it (before the next heading)."""
    sections, heading = {}, ""
    for line in INTERFACE.splitlines():
        if line.startswith("#"):
            heading = line.lstrip("#").strip()
            sections.setdefault(heading, set())
        elif line.startswith("| `"):
            first = line.split("|")[1]
            sections[heading] |= set(re.findall(r"`([A-Za-z_][A-Za-z0-9_.-]*)`", first))
    return sections


def section(prefix: str) -> set[str]:
    found = [keys for heading, keys in documented_sections().items() if heading.split(" ")[0] == prefix.strip()]
    assert len(found) == 1, f"docs/INTERFACE.md has {len(found)} sections starting {prefix!r}"
    return found[0]


def row_keys(rows) -> set[str]:
    return {k for r in rows for k in r}


def test_every_plan_column_is_defined_in_its_own_table():
    """Each table of a plan, both ways: every column emitted is a row of its own section of INTERFACE.md, and
    every row there is emitted (so the document can neither lag nor run ahead of the code)."""
    plans = [run("solve", str(ROOT / "scenarios" / name), "--format", "json")
             for name in ("bank-2mw.yaml", "gtc-2026-tiers.yaml", "two-sites.yaml")]
    tables = {"4.3.1": lambda d: set(d["solver"]), "4.3.2": lambda d: row_keys(d["fleet"]),
              "4.3.3": lambda d: row_keys(d["allocation"]), "4.3.4": lambda d: row_keys(d["workloads"]),
              "4.3.5": lambda d: set(d["totals"]), "4.3.6": lambda d: row_keys(d["tiers"]),
              "4.3.7": lambda d: row_keys(d["alternatives"]), "4.3.8": lambda d: set(d["provenance"]),
              "4.3.10": lambda d: row_keys(d["curtailment"])}
    for number, keys_of in tables.items():
        emitted = set().union(*(keys_of(d) for d in plans))
        documented = section(number)
        assert emitted <= documented, f"{number}: not in INTERFACE.md: {sorted(emitted - documented)}"
        assert documented <= emitted, f"{number}: documented but never emitted: {sorted(documented - emitted)}"
    top = set().union(*(set(d) for d in plans)) - {"reason"}  # reason: infeasible plans only
    assert top <= section("4.3 "), sorted(top - section("4.3 "))


def test_every_estimate_frontier_catalog_and_calibrate_column_is_in_its_section():
    est = run("estimate", "-m", "llama-3.1-8b", "-H", "hgx-h200", "--format", "json")
    pair = run("estimate", "-m", "kimi-k2", "-H", "vr-nvl72+groq3-lpx", "--format", "json")
    keys = set(est) | set(pair) | set(est["decode"]) | set(est["prefill"]) | set(est["memory"]) | set(pair["decode"])
    keys |= set(est["band"]) | row_keys(est["band"]["parameters"])
    keys |= {k for v in est["band"].values() if isinstance(v, dict) for k in v}
    assert keys <= section("4.1"), sorted(keys - section("4.1"))
    points = run("frontier", "-m", "llama-3.1-8b", "-H", "hgx-h200", "--format", "json")
    assert row_keys(points) <= section("4.2"), sorted(row_keys(points) - section("4.2"))
    cat = run("catalog", "--format", "json")
    cols = row_keys(cat["hardware"]) | row_keys(cat["models"])
    assert cols <= section("4.4"), sorted(cols - section("4.4"))
    cal = run("calibrate", "--format", "json")
    assert row_keys(cal) == section("4.5"), sorted(row_keys(cal) ^ section("4.5"))


# Names that carry no unit because they are counts of what they name, shares, flags, ids or words.
UNITLESS = {"racks", "chips", "replicas", "batch", "chips_per_replica", "tensor_parallel", "pipeline_parallel",
            "draft_tokens", "ffn_chips", "chips_used", "column", "concurrent_streams", "resident_sessions", "candidates_scored",
            "columns", "acceptance", "chip_utilization", "utilization", "prefill_share", "served_share",
            "relative_gap", "ttft_percentile", "best_bound",
            "racks_installed", "racks_new", "racks_retired", "chips_rented", "breakeven_utilization",
            "step", "racks_powered_off", "shed_share_of_peak", "replicas_per_rack"}
UNIT_MARKS = ("_usd", "_mw", "_w", "_s", "_kw", "tps_", "_bytes", "_mtok", "_tokens", "_pct", "_hours")


def test_every_numeric_plan_column_carries_its_unit_in_its_name():
    """A number's unit is in its name (USD, MW, s, tokens...), unless it counts what it names or is a share;
    best_bound is in the objective's unit, which the plan's `objective` names."""
    d = run("solve", str(ROOT / "scenarios" / "gtc-2026-tiers.yaml"), "--format", "json")
    numeric = {k for rows in (d["fleet"], d["allocation"], d["workloads"], d["tiers"], d["alternatives"],
                              d["curtailment"], [d["totals"]], [d["solver"]]) for r in rows for k, v in r.items()
               if isinstance(v, (int, float)) and not isinstance(v, bool)}
    bare = sorted(k for k in numeric - UNITLESS if not any(m in k or k.endswith(m.strip("_")) for m in UNIT_MARKS))
    assert not bare, f"numeric columns without a unit in the name: {bare}"
