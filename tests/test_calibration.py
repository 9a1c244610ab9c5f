"""The calibration table stays within the errors measured when the efficiencies were fitted.

Measured with `planner calibrate` on 2026-12-01 after the GPU fixed costs were built from kernels, steps and
collectives and pipeline stages balanced by bytes (docs/MODEL.md 2.1, 2.8 and 5). A change to the model or the
catalog that moves a prediction outside its band fails here and must be looked at (and the table re-measured).
"""

import pytest

from planner.perf import calibration

# Absolute error bands in percent: the measured error rounded up to the next 5 points, plus 5.
TOLERANCE_PCT = {
    "c1": 35, "c2-offline": 15, "c3-offline": 35, "c11-plain": 10, "c11-mtp": 15,
    "c13-7b-tp1": 10, "c13-7b-tp2": 15, "c13-7b-tp4": 15, "c13-7b-tp8": 10, "c13-70b-tp8": 10,
    "c16-tp2": 15, "c16-tp8": 40,
    "c4-8b": 30, "c4-70b": 35, "c5-70b": 10, "c5-7b": 10, "c6-8b": 10,
    "c7-8b": 75, "c7-70b": 10, "c8": 30,
}
# Points shown but not fitted, with why; their errors are recorded, not bounded. c10 is a speculative (MTP) record
# without its conditions; c11 measures the same setup with them and is fitted instead.
NOT_FITTED = {"c2-interactive", "c3-server", "c6-405b", "c6-70b", "c10"}


@pytest.fixture(scope="module")
def table():
    return {row["id"]: row for row in calibration.comparison()}


def test_every_point_is_listed(table):
    assert set(table) == set(TOLERANCE_PCT) | NOT_FITTED


@pytest.mark.parametrize("point", sorted(TOLERANCE_PCT))
def test_fitted_point_within_measured_error(table, point):
    row = table[point]
    assert row["fitted"]
    assert abs(row["error_pct"]) <= TOLERANCE_PCT[point], row


@pytest.mark.parametrize("point", sorted(NOT_FITTED))
def test_unfitted_points_say_why(table, point):
    row = table[point]
    assert not row["fitted"] and row["why_not_fitted"]


def test_points_above_the_ideal_roofline_are_the_sambanova_large_models(table):
    """SN40L's published 405B and 70B speeds beat the bandwidth of 16 chips' HBM at 16-bit: not fittable."""
    above = {pid for pid, row in table.items() if row["published"] > row["ideal_roofline"]}
    assert above == {"c6-405b", "c6-70b"}
