"""Issue 43, scenarios: a workload written with peak_requests_per_s whose peak was wrong (negative, text, NaN,
a list without periods) was reported as requests_per_s, a field the user did not write (the mean derived from
the peak). It is now one error naming the field the user wrote."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from planner import load_scenario
from planner.errors import InputError

SCENARIO = Path(__file__).resolve().parents[1] / "scenarios" / "gtc-2026-tiers.yaml"


@pytest.mark.parametrize("peak", [-5, "abc", 0, float("nan"), [1, -2], [3, 6]])
def test_a_bad_peak_rate_is_named_as_written(tmp_path, peak):
    d = yaml.safe_load(SCENARIO.read_text())
    w = d["workloads"][0]
    w.pop("requests_per_s", None)
    w["peak_requests_per_s"] = peak
    path = tmp_path / "s.yaml"
    path.write_text(yaml.safe_dump(d))
    with pytest.raises(InputError) as err:
        load_scenario(path)
    text = str(err.value)
    assert "workloads[0].peak_requests_per_s" in text and "workloads[0].requests_per_s" not in text, text


def test_a_good_peak_rate_is_the_mean_times_peak_to_mean(tmp_path):
    d = yaml.safe_load(SCENARIO.read_text())
    w = d["workloads"][0]
    ratio = float(w.get("peak_to_mean", 1.0))
    w.pop("requests_per_s", None)
    w["peak_requests_per_s"] = 12.0
    path = tmp_path / "s.yaml"
    path.write_text(yaml.safe_dump(d))
    assert load_scenario(path).workloads[0].requests_per_s == pytest.approx(12.0 / ratio)

