"""Fuzzing: mutated scenarios must always end in a clean exit 0 (valid), 2 (bad input) or 3 (infeasible), with
no traceback. The short run is in CI; `pytest -m slow tests/test_fuzz.py` runs 10,000 cases."""

import copy
import math
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from planner.cli import main

SCENARIOS = sorted(Path(__file__).resolve().parents[1].joinpath("scenarios").glob("*.yaml"))
BASES = [yaml.safe_load(p.read_text()) for p in SCENARIOS]

ODD_VALUES = st.sampled_from([None, "", "fast", -1, 0, 0.0, -0.5, 1e308, math.nan, math.inf, -math.inf, True,
                              [], {}, [1, 2], {"a": 1}, "2027-02-30", 10**30, "llama-3.1-70", "vr-nvl27"])


def paths(obj, prefix=()):
    """Every key path in a nested dict/list."""
    yield prefix
    if isinstance(obj, dict):
        for k, v in obj.items():
            yield from paths(v, prefix + (k,))
    elif isinstance(obj, list):
        for i, v in enumerate(obj):
            yield from paths(v, prefix + (i,))


def mutate(base, path, action, value):
    doc = copy.deepcopy(base)
    if not path:
        return value if action == "replace" else doc
    parent = doc
    for key in path[:-1]:
        parent = parent[key]
    last = path[-1]
    if action == "delete":
        del parent[last]
    elif action == "replace":
        parent[last] = value
    elif action == "extra" and isinstance(parent, dict):
        parent["unexpected_field"] = value
    return doc


@st.composite
def mutated(draw):
    base = draw(st.sampled_from(BASES))
    all_paths = list(paths(base))
    n = draw(st.integers(1, 3))
    doc = base
    for _ in range(n):
        all_paths = list(paths(doc))
        path = draw(st.sampled_from(all_paths))
        action = draw(st.sampled_from(["delete", "replace", "extra"]))
        value = draw(ODD_VALUES)
        try:
            doc = mutate(doc, path, action, value)
        except (KeyError, IndexError, TypeError):
            pass
    return doc


def check(doc, tmp_path, command):
    path = tmp_path / "fuzz.yaml"
    try:
        path.write_text(yaml.safe_dump(doc, allow_unicode=True))
    except yaml.YAMLError:
        return
    args = [command, str(path)] + (["--time-limit", "10"] if command == "solve" else [])
    res = CliRunner().invoke(main, args)
    assert res.exit_code in (0, 2, 3), (res.exit_code, res.output, res.exception)
    assert "Traceback" not in res.output
    if res.exit_code == 2:
        assert res.output.startswith("error: ") and "fuzz.yaml" in res.output


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(mutated())
def test_validate_never_crashes(tmp_path, doc):
    check(doc, tmp_path, "validate")


@settings(max_examples=6, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(mutated())
def test_solve_never_crashes(tmp_path, doc):
    check(doc, tmp_path, "solve")


@pytest.mark.slow
@settings(max_examples=10_000, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(mutated())
def test_validate_never_crashes_long(tmp_path, doc):
    check(doc, tmp_path, "validate")
