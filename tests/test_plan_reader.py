"""Issue 43: one reader of a written plan's rows (planner.fleet.rows) for check, simulate and export. A tampered
number (NaN, infinity, text, null, a list, 10^18) was a traceback in export and simulate: each is now an error
naming allocation[i].FIELD and what was expected (exit 2), and check reports it as a failed check. The ranges bound
the work: 10^9 replicas hung the simulator."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest
from click.testing import CliRunner

import planner
from planner.cli import main
from planner.errors import InputError
from planner.export import export_plan
from planner.fleet.rows import MAX_REPLICAS, read_rows, row_problems

PLAN = Path(__file__).resolve().parent / "golden" / "plans" / "bank-2mw.json"
FIELDS = ["replicas", "batch", "tensor_parallel", "pipeline_parallel", "chips_per_replica", "draft_tokens",
          "precision", "expert_parallel", "role", "workload", "hardware", "acceptance"]
VALUES = [float("nan"), float("inf"), -float("inf"), "text", None, -3, 1e18, 2.5, True, [], {}, "", 10 ** 30]


def tampered(field: str, value) -> dict:
    plan = json.loads(PLAN.read_text())
    plan["allocation"][0][field] = value
    return plan


def test_a_sound_plan_s_rows_pass_the_reader():
    plan = json.loads(PLAN.read_text())
    assert read_rows(plan["allocation"]) is plan["allocation"]
    assert all(row_problems(r) == [] for r in plan["allocation"])


@pytest.mark.parametrize("field, value, expected", [
    ("replicas", float("nan"), "expected a finite number"), ("replicas", 1e18, f"from 0.0 to {MAX_REPLICAS:g}"),
    ("batch", "text", "expected a whole number"), ("batch", 2.5, "expected a whole number"),
    ("tensor_parallel", None, "expected a whole number"), ("precision", "int3", "expected one of"),
    ("expert_parallel", "yes", "expected true or false"), ("workload", [], "expected a name"),
    ("role", "router", "expected one of")])
def test_a_tampered_field_is_named_with_what_was_expected(field, value, expected):
    with pytest.raises(InputError) as err:
        read_rows(tampered(field, value)["allocation"])
    assert err.value.field == f"allocation[0].{field}" and expected in str(err.value)


def test_tampered_plans_are_errors_in_export_and_simulate_and_failed_checks_in_check():
    """Every field of FIELDS set to every value of VALUES: export and simulate raise InputError or succeed, never
    anything else; check reports without raising. A random sample of pairs keeps the test short."""
    rng = random.Random(43)
    pairs = rng.sample([(f, v) for f in FIELDS for v in VALUES], 40)
    for field, value in pairs:
        plan = tampered(field, value)
        checks = planner.check(json.loads(json.dumps(plan)))
        problems = row_problems(plan["allocation"][0])
        if problems:
            assert not all(c["ok"] for c in checks), (field, value)
        for run in (lambda p: export_plan(p, "vllm"), lambda p: planner.simulate(p, duration_s=5.0)):
            try:
                run(json.loads(json.dumps(plan)))
            except InputError:  # anything else (a traceback's TypeError, KeyError, MemoryError) fails the test
                pass


def test_a_plan_asking_the_simulator_for_more_slots_than_it_holds_is_refused_before_it_starts():
    plan = tampered("replicas", 900_000.0)
    plan["allocation"][0]["batch"] = 1000
    with pytest.raises(InputError, match="slots; the simulator holds at most"):
        planner.simulate(plan, duration_s=5.0)


def test_the_cli_names_the_field_of_a_tampered_plan(tmp_path):
    path = tmp_path / "plan.json"
    path.write_text(json.dumps(tampered("batch", None)))
    for argv in (["export", str(path), "--to", "vllm"], ["simulate", str(path), "--duration", "5"]):
        out = CliRunner().invoke(main, argv)
        assert out.exit_code == 2 and "allocation[0].batch" in out.output and "Traceback" not in out.output, argv
