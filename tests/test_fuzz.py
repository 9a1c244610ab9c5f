"""Fuzzing: mutated scenarios must always end in a clean exit 0 (valid), 2 (bad input) or 3 (infeasible), with
no traceback, and `solve --format json` must print strict JSON (no NaN, no infinity) whenever it exits 0 or 3.
The bases are the shipped scenarios and one with custom hardware, an inline model and speculative decoding;
mutations delete, replace or add fields, and put YAML tags PyYAML cannot convert on scalars. The short run is in CI;
`pytest -m slow tests/test_fuzz.py` runs 10,000 validate and 200 solve cases (docs/RELIABILITY.md)."""

import copy
import json
import math
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from planner.cli import main

SCENARIOS = [p for p in sorted(Path(__file__).resolve().parents[1].joinpath("scenarios").glob("*.yaml"))
             if "periods" not in yaml.safe_load(p.read_text())]  # build-outs: tests/test_buildout.py
ROOT = Path(__file__).resolve().parents[1]


def custom_base() -> dict:
    """bank-2mw with an inline rack type and model, served with a costed drafter."""
    doc = yaml.safe_load((ROOT / "scenarios" / "bank-2mw.yaml").read_text())
    hw = yaml.safe_load((ROOT / "planner" / "data" / "hardware" / "hgx-h200.yaml").read_text())
    hw["id"] = "my-rack"
    model = yaml.safe_load((ROOT / "planner" / "data" / "models" / "llama-3.1-8b.yaml").read_text())
    model["id"] = "my-model"
    doc["hardware"] = {"custom": [hw], "allow": ["my-rack", "hgx-b200"]}
    doc["models"] = [model]
    doc["workloads"][0].update(model="my-model", speculative={"method": "eagle", "draft_tokens": "auto"})
    return doc


BASES = [yaml.safe_load(p.read_text()) for p in SCENARIOS] + [custom_base()]
TAGS = ["!!bool maybe", "!!timestamp soon", "!!int many", "!!float lots", "!!str 5", "!!null x", "!!binary zz"]

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
def tagged(draw):
    """A mutated scenario as YAML text, with a tag PyYAML cannot convert put on one scalar value."""
    text = yaml.safe_dump(draw(mutated()), allow_unicode=True)
    lines = text.splitlines()
    scalars = [i for i, line in enumerate(lines) if ": " in line and not line.rstrip().endswith(":")]
    if scalars:
        i = draw(st.sampled_from(scalars))
        key = lines[i].split(": ", 1)[0]
        lines[i] = f"{key}: {draw(st.sampled_from(TAGS))}"
    return "\n".join(lines) + "\n"


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


def no_constant(name):
    raise AssertionError(f"JSON holds {name}")


def check(doc, tmp_path, command, text=None):
    path = tmp_path / "fuzz.yaml"
    try:
        path.write_text(text if text is not None else yaml.safe_dump(doc, allow_unicode=True))
    except yaml.YAMLError:
        return
    args = [command, str(path)] + (["--time-limit", "10", "--format", "json"] if command == "solve" else [])
    res = CliRunner().invoke(main, args)
    assert res.exit_code in (0, 2, 3), (res.exit_code, res.output, res.exception)
    assert "Traceback" not in res.output
    if res.exit_code == 2:
        assert res.output.startswith("error: ") and "fuzz.yaml" in res.output
    if command == "solve" and res.exit_code in (0, 3):
        plan = json.loads(res.stdout, parse_constant=no_constant)  # strict: no NaN, no infinity
        assert plan["status"] in ("optimal", "feasible", "time_limit", "infeasible")


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(mutated())
def test_validate_never_crashes(tmp_path, doc):  # 10,000 in make test-slow
    check(doc, tmp_path, "validate")


@settings(max_examples=3, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(mutated())
def test_solve_never_crashes(tmp_path, doc):  # 200 in make test-slow
    check(doc, tmp_path, "solve")


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(tagged())
def test_yaml_tags_never_crash(tmp_path, text):
    check(None, tmp_path, "validate", text)


def test_the_custom_base_is_valid(tmp_path):
    path = tmp_path / "custom.yaml"
    path.write_text(yaml.safe_dump(custom_base()))
    res = CliRunner().invoke(main, ["validate", str(path)])
    assert res.exit_code == 0, res.output


@pytest.mark.slow
@settings(max_examples=10_000, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(mutated())
def test_validate_never_crashes_long(tmp_path, doc):
    check(doc, tmp_path, "validate")


@pytest.mark.slow
@settings(max_examples=2_000, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(tagged())
def test_yaml_tags_never_crash_long(tmp_path, text):
    check(None, tmp_path, "validate", text)


@pytest.mark.slow
@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(mutated())
def test_solve_never_crashes_long(tmp_path, doc):
    check(doc, tmp_path, "solve")


# ---- every command with --format json: exit 0 with strict JSON, or exit 2 with one error line ----------------------
def strict_or_clear(res, codes=(0, 2)):
    assert res.exit_code in codes, (res.exit_code, res.output, res.exception)
    assert "Traceback" not in res.output
    if res.exit_code == 2:  # the planner's one line, or click's usage error for an option it cannot parse
        assert res.output.startswith("error: ") or (res.output.startswith("Usage: ") and "\nError: " in res.output), \
            res.output
        return None
    return json.loads(res.stdout, parse_constant=no_constant)


MODELS = st.sampled_from(["llama-3.1-8b", "gpt-oss-20b", "deepseek-r1", "llama-3.1-70b", "no-such-model", ""])
SYSTEMS = st.sampled_from(["hgx-h100", "cs3", "groq3-lpx", "corsair-rack", "taalas-hc1", "vr-nvl72+groq3-lpx",
                           "sn50-rack", "hgx-h10", "+", ""])
COUNTS = st.sampled_from(["1", "7", "64", "0", "-3", "1e9", "2.5", "nan", "99999999999"])
TOKENS = st.sampled_from(["1", "128", "100000", "0", "-1", "10000000", "x"])


@settings(max_examples=80, deadline=None)
@given(MODELS, SYSTEMS, st.one_of(st.none(), COUNTS), COUNTS, TOKENS, TOKENS,
       st.sampled_from([[], ["--precision", "fp4"], ["--precision", "bf16"], ["--speculative", "eagle"],
                        ["--speculative", "mtp", "--draft-tokens", "auto"], ["--speculative", "draft_model"],
                        ["--speculative", "eagle", "--acceptance", "1.5"], ["--draft-tokens", "3"]]))
def test_estimate_json_is_strict_or_a_clear_error(model, system, chips, batch, inp, out, extra):
    args = ["estimate", "-m", model, "-H", system, "--batch", batch, "--input-tokens", inp, "--output-tokens", out,
            "--format", "json", *extra] + (["--chips", chips] if chips is not None else [])
    doc = strict_or_clear(CliRunner().invoke(main, args))
    if doc is not None:
        assert doc["tps_per_user"] >= 0 and doc["model"] == model


@settings(max_examples=12, deadline=None)
@given(st.sampled_from(["llama-3.1-8b", "gpt-oss-20b", "nope"]),
       st.sampled_from([["-H", "hgx-h100"], ["-H", "taalas-hc1"], ["-H", "cs3", "-H", "groq3-lpx"], ["-H", "x"]]),
       TOKENS, st.sampled_from([[], ["--speculative", "eagle"], ["--precision", "fp8"]]))
def test_frontier_json_is_strict_or_a_clear_error(model, systems, inp, extra):
    strict_or_clear(CliRunner().invoke(main, ["frontier", "-m", model, *systems, "--input-tokens", inp,
                                              "--format", "json", *extra]))


@pytest.fixture(scope="module")
def plan_doc():
    res = CliRunner().invoke(main, ["solve", str(ROOT / "scenarios" / "bank-2mw.yaml"), "--format", "json"])
    return json.loads(res.stdout)


def _paths(doc, prefix=()):
    if isinstance(doc, dict):
        for k, v in doc.items():
            yield prefix + (k,)
            yield from _paths(v, prefix + (k,))
    elif isinstance(doc, list):
        for i, v in enumerate(doc[:3]):
            yield prefix + (i,)
            yield from _paths(v, prefix + (i,))


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.data())
def test_check_json_on_tampered_plans_is_strict_or_a_clear_error(tmp_path, plan_doc, data):
    """A plan with one value replaced or one key removed: check exits 0 (it holds), 4 (with a JSON report naming
    what fails) or 2 (not a plan), never a traceback, and its JSON is strict."""
    import copy

    doc = copy.deepcopy(plan_doc)
    paths = list(_paths(doc))
    path = data.draw(st.sampled_from(paths))
    parent = doc
    for seg in path[:-1]:
        parent = parent[seg]
    if data.draw(st.booleans()) and isinstance(parent, dict):
        del parent[path[-1]]
    else:
        parent[path[-1]] = data.draw(ODD_VALUES)
    plan = tmp_path / "plan.json"
    plan.write_text(json.dumps(doc, allow_nan=True))
    res = CliRunner().invoke(main, ["check", str(plan), "--format", "json"])
    report = strict_or_clear(res, codes=(0, 2, 4))
    if res.exit_code == 4:
        assert report is not None
