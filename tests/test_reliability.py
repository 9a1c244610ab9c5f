"""Reliability round three (issue 28): the library's inputs of the wrong type, full disks and closed pipes, and
the four cases of the last round that still failed. docs/RELIABILITY.md lists each surface, its promise and the
test that holds it."""

from __future__ import annotations

import errno
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

import planner
from planner.cli import main
from planner.errors import InputError

ROOT = Path(__file__).resolve().parents[1]
SMALL = """
name: small
start_date: 2027-01-01
horizon_years: 4
finance: {wacc: 0.08, electricity_usd_per_mwh: 70, pue: 1.25}
hardware: {allow: [hgx-h100]}
workloads:
  - {name: chat, model: llama-3.1-8b, requests_per_s: 20, input_tokens: 1000, output_tokens: 300, tier: standard,
     ttft_s: 1.0}
"""


# ---- the library's inputs of the wrong type ---------------------------------------------------------------------
@pytest.mark.parametrize("call, field", [
    (lambda: planner.solve(None), "scenario"),
    (lambda: planner.solve(42), "scenario"),
    (lambda: planner.load_scenario(None), "scenario"),
    (lambda: planner.estimate(None, "hgx-h100"), "model"),
    (lambda: planner.estimate("llama-3.1-8b", None), "hardware"),
])
def test_library_calls_with_the_wrong_type_raise_input_error(call, field):
    """issue 28: planner.solve(None) and friends raised TypeError, not the documented InputError."""
    with pytest.raises(InputError, match="expected") as err:
        call()
    assert err.value.field == field


@pytest.mark.parametrize("setting", [42, [1, 2], None, 3.5])
def test_scenario_with_of_the_wrong_type_raises_input_error(setting):
    from planner.scenario import scenario_from_yaml

    sc = scenario_from_yaml(SMALL)
    with pytest.raises(InputError, match="expected 'PATH=VALUE' strings or a mapping") as err:
        sc.with_(setting)
    assert err.value.field == "with_"
    assert sc.with_({"site.power_budget_mw": 5}).site.power_budget_mw == 5  # the right types still work
