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
            if k not in ("inputs", "checks", "unserved"):  # inputs: catalog schema, documented as such
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
