"""Calibration that knows its limits (issue 45 item 5): `calibrate --measurements` fits only the parameters the
rows identify, holds the others exactly at the shipped prior (with its range), says so in one line, and never leaves
a parameter's physical bounds (planner/data/calibration.yaml)."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from planner import catalog
from planner.cli import main
from planner.measurements import identify
from planner.measurements.curves import model_point
from planner.measurements.fit import MEASURED_PARAMS, fit_to_measurements, physical_bounds
from planner.measurements.table import Measurement, read_measurements
from planner.perf.pack import efficiency_table, family_efficiency

SHIPPED = Path(__file__).resolve().parent / "data" / "measurements" / "h100-h200-llama8b.csv"


def two_rows(tmp_path) -> Path:
    """The first two rows of the shipped measurement file: one H100, one model, one chip, 8 and 16 streams."""
    path = tmp_path / "two.csv"
    path.write_text("".join(SHIPPED.read_text().splitlines(keepends=True)[:3]))
    return path


def model_rows(hw_id: str, true: dict, plan, lengths=((1000, 200), (4000, 500)), noise=None) -> list[Measurement]:
    """Rows the model itself predicts on ``hw_id`` under ``true``: ``plan`` is (model, chips, concurrencies) each;
    ``noise`` (a numpy generator) multiplies each figure by a log-normal factor of sigma 2%."""
    hw = catalog.get_hardware(hw_id)
    rows = []
    for name, chips_list, concurrencies in plan:
        for chips in chips_list:
            for i, o in lengths:
                for c in concurrencies:
                    p = model_point(catalog.get_model(name), hw, "fp8", (chips, 1, False), c, (i, o), "colocated",
                                    true)
                    f = np.exp(noise.normal(0.0, 0.02, 2)) if noise is not None else np.ones(2)
                    rows.append(Measurement(hardware=hw_id, model=name, precision="fp8", chips=chips, input_tokens=i,
                                            output_tokens=o, concurrency=float(c),
                                            tps_per_user=float(p["tps_per_user"] * f[0]),
                                            output_tokens_per_s=float(p["output_tokens_per_s"] * f[1])))
    return rows


def test_two_rows_leave_the_unidentified_parameters_exactly_at_their_prior(tmp_path):
    """Before: five parameters fitted to two rows, four of them driven to a bound (flops 0.77 -> 0.2, step overhead
    80 -> 1 us, collective 3.7 -> 50 us on one chip, where no collective runs). Now the two rows identify the memory's
    efficiency alone; the rest keep the prior, bit for bit, with its range and the reason."""
    result = fit_to_measurements(read_measurements(two_rows(tmp_path)))
    prior = family_efficiency("nvidia-gpu/hopper")
    assert result["family"] == "nvidia-gpu/hopper" and result["identified"] == ["bandwidth_efficiency"]
    assert result["summary"].startswith("2 rows identify 1 of 5 parameters (bandwidth_efficiency); too few rows")
    for name in MEASURED_PARAMS[1:]:
        assert result["fitted"][name] == prior[name], name
        row = next(r for r in result["parameters"] if r["parameter"] == name)
        assert row["status"] == "held at prior" and row["value"] == row["prior"] == prior[name]
        assert row["low"] < prior[name] < row["high"] and row["why"]  # the prior's range, and why it is held
    assert "do not depend on it" in result["held"]["collective_latency_s"]  # one chip: no collective
    assert result["loss_after"] < result["loss_before"]
    lo, hi = physical_bounds("nvidia-gpu/hopper")["bandwidth_efficiency"]
    assert lo <= result["fitted"]["bandwidth_efficiency"] <= hi


def test_rows_made_by_the_model_give_back_every_parameter_they_were_made_with():
    """MI355X (its fitted step overhead, 2.9 ms, is a real share of a step): two models of different depth, one to
    eight chips, four concurrencies, made at five values away from the prior inside the bounds: all five identified
    and recovered to 0.1%."""
    true = {**family_efficiency("amd-gpu"), "bandwidth_efficiency": 0.6, "flops_efficiency": 0.45,
            "kernel_latency_s": 7e-6, "step_overhead_s": 1.5e-3, "collective_latency_s": 9e-6}
    rows = model_rows("mi355x", true, [("llama-3.1-8b", (1, 2), (1, 8, 64, 256)),
                                       ("llama-3.1-70b", (4, 8), (1, 8, 64, 256))])
    result = fit_to_measurements(rows)
    assert result["family"] == "amd-gpu" and result["summary"] == "32 rows identify all 5 parameters"
    assert result["loss_before"] > 0.1 and result["loss_after"] < 1e-8 and result["at_bound"] == []
    for row in result["parameters"]:
        name = row["parameter"]
        assert row["status"] == "fitted" and row["value"] == pytest.approx(true[name], rel=1e-3), name
        assert row["low"] <= row["value"] <= row["high"] and row["high"] / row["low"] < 1.3, name  # pinned


def test_every_shipped_prior_is_inside_its_physical_bounds():
    """A held parameter is its prior: each family's five priors are within the bounds the fit keeps to."""
    for family in efficiency_table():
        bounds, prior = physical_bounds(family), family_efficiency(family)
        for name in MEASURED_PARAMS:
            assert bounds[name][0] <= prior[name] <= bounds[name][1], (family, name)


def test_a_column_of_zeros_or_a_collinear_one_is_not_identified():
    """By hand: the second parameter moves nothing, the third moves the rows as the first does; and never more
    parameters than rows."""
    J = np.array([[1.0, 0.0, 2.0], [0.5, 0.0, 1.0], [0.2, 0.0, 0.4]])
    names = ["a", "b", "c"]
    sigma = dict.fromkeys(names, 1.0)
    chosen, why = identify.identified(J, names, sigma, rows=3)
    assert chosen == ["c"] and "do not depend" in why["b"] and "moves the rows as c does" in why["a"]
    J = np.array([[1.0, 0.0], [0.0, 1.0]])
    assert identify.identified(J, ["a", "b"], {"a": 1.0, "b": 1.0}, rows=1)[0] == ["a"]
    weak = math.sqrt(identify.MIN_INFORMATION) * identify.MEASUREMENT_LOG_ERROR * 0.9  # just under the threshold
    assert identify.identified(np.array([[weak]]), ["a"], {"a": 1.0}, rows=1)[0] == []


POOL_PLAN = {"hgx-h100": [("llama-3.1-8b", (1, 2), (1, 16, 128)), ("llama-3.1-70b", (4,), (1, 16, 128))],
             "mi355x": [("llama-3.1-8b", (1,), (1, 16, 128)), ("llama-3.1-70b", (2, 8), (1, 16, 128))]}


@st.composite
def measured_subsets(draw):
    """A system, parameters drawn log-uniformly inside its bounds (the rows' truth), 2% noise, and 1 to 4 of the
    rows they make."""
    hw_id = draw(st.sampled_from(sorted(POOL_PLAN)))
    family = "nvidia-gpu/hopper" if hw_id == "hgx-h100" else "amd-gpu"
    bounds = physical_bounds(family)
    true = dict(family_efficiency(family))
    for name in MEASURED_PARAMS:
        u = draw(st.floats(0.0, 1.0))
        lo, hi = bounds[name]
        true[name] = math.exp(math.log(lo) + u * math.log(hi / lo))
    rng = np.random.default_rng(draw(st.integers(0, 2 ** 32 - 1)))
    pool = model_rows(hw_id, true, POOL_PLAN[hw_id], lengths=((1000, 200), (8000, 300)), noise=rng)
    picked = draw(st.lists(st.integers(0, len(pool) - 1), min_size=1, max_size=4, unique=True))
    return family, [pool[i] for i in picked]


@pytest.mark.integration
@settings(max_examples=12, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
@given(measured_subsets())
def test_no_fitted_parameter_ever_leaves_its_physical_bounds(case):
    family, rows = case
    result = fit_to_measurements(rows)
    bounds, prior = physical_bounds(family), family_efficiency(family)
    assert result["family"] == family and len(result["identified"]) <= len(rows)
    for row in result["parameters"]:
        name = row["parameter"]
        lo, hi = bounds[name]
        assert lo <= row["value"] <= hi and lo <= row["low"] <= row["value"] <= row["high"] <= hi, row
        if row["status"] == "held at prior":
            assert row["value"] == prior[name] and name not in result["identified"]


def test_the_cli_and_the_library_give_the_same_answer(tmp_path):
    """`calibrate --measurements --format json` is the library's result, and the table says the summary line."""
    path = two_rows(tmp_path)
    res = CliRunner().invoke(main, ["calibrate", "--measurements", str(path), "--format", "json"])
    assert res.exit_code == 0, res.output
    printed = json.loads(res.stdout)
    library = json.loads(json.dumps(fit_to_measurements(read_measurements(path))))
    for key in ("family", "hardware", "summary", "identified", "parameters", "loss_before", "loss_after", "rows"):
        assert printed[key] == library[key], key
    table = CliRunner().invoke(main, ["calibrate", "--measurements", str(path)], terminal_width=200)
    assert table.exit_code == 0 and "2 rows identify 1 of 5 parameters" in table.output
    assert "collective_latency_s: the rows do not depend on it" in table.output
