"""The calibration table stays within the errors measured when the efficiencies were fitted.

Measured with `planner calibrate` on 2026-12-01 after the GPU fixed costs were built from kernels, steps and
collectives, pipeline stages balanced by bytes (docs/MODEL.md 2.1, 2.8 and 5) and the fit searched from a
coarse grid as well as from its current values. A change to the model or the
catalog that moves a prediction outside its band fails here and must be looked at (and the table re-measured).
"""

import pytest

from planner.perf import calibration

# Absolute error bands in percent: the measured error rounded up to the next 5 points, plus 5.
TOLERANCE_PCT = {
    "c1": 35, "c2-offline": 15, "c3-offline": 40, "c11-plain": 10, "c11-mtp": 15,
    "c13-7b-tp1": 10, "c13-7b-tp2": 15, "c13-7b-tp4": 15, "c13-7b-tp8": 10, "c13-70b-tp8": 10,
    "c16-tp2": 15, "c16-tp8": 40,
    "c4-8b": 30, "c4-70b": 35, "c5-70b": 10, "c5-7b": 10, "c6-8b": 10,
    "c7-8b": 35, "c7-70b": 10, "c8": 30,
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


def test_within_30_percent_but_the_two_explained():
    """The done-when of issue 10: every fitted point within 30%. Two GPU points sit just past it at the family's
    least-squares optimum (MODEL.md 5: MLPerf and TensorRT-LLM's overview imply different achieved FLOP shares on
    the same H100s); any other point past 30% is new and fails here."""
    past = {pid for pid, row in calibration_rows().items() if row["fitted"] and abs(row["error_pct"]) > 30.0}
    assert past <= {"c3-offline", "c16-tp8"}, past


def calibration_rows():
    return {row["id"]: row for row in calibration.comparison()}


@pytest.mark.parametrize("family", sorted(calibration.calibration_data()["fit"]))
def test_written_fit_is_a_local_minimum(family):
    """No fitted parameter, moved 5% either way within its bounds, lowers its family's loss by more than the
    refit threshold: the values in data/efficiency.yaml are what `planner calibrate --write` converges to."""
    spec = calibration.calibration_data()
    bounds = {**spec["bounds"], **spec["fit"][family].get("bounds", {})}
    eff = dict(calibration.family_efficiency(family))
    pts = calibration.family_points(family)
    here = calibration.loss(pts, eff)
    for name in spec["fit"][family]["params"]:
        lo, hi = bounds[name]
        for factor in (0.95, 1.05):
            moved = min(max(eff[name] * factor, lo), hi)
            assert calibration.loss(pts, {**eff, name: moved}) >= here - calibration.REFIT_GAIN, (name, factor)


def _refit_gains(family):
    pts = calibration.family_points(family)
    written = calibration.loss(pts, dict(calibration.family_efficiency(family)))
    return written - calibration.loss(pts, calibration.fit_family(family))


FAST_FITS = ["cerebras-wafer", "groq-lpu", "sambanova-rdu", "dmatrix-corsair", "taalas-asic"]


@pytest.mark.parametrize("family", FAST_FITS)
def test_written_fit_is_what_a_refit_finds(family):
    """A refit from the coarse grid finds nothing better by more than the refit threshold: the written values are
    not a local minimum that a wider search escapes (as d-Matrix's once was, at +65% on c7-8b)."""
    assert _refit_gains(family) <= calibration.REFIT_GAIN


@pytest.mark.slow
def test_written_gpu_fit_is_what_a_refit_finds():
    """As above for the GPU family, whose five-parameter search takes about 11 s."""
    assert _refit_gains("nvidia-gpu") <= calibration.REFIT_GAIN


def test_every_fitted_family_has_a_refit_test():
    assert set(FAST_FITS) | {"nvidia-gpu"} == set(calibration.calibration_data()["fit"])


def test_groq3_per_operation_latency_follows_groq_v1s_fit():
    """groq3-lpu's per-operation latency is GroqChip v1's fitted one at an assumed 1.5x clock (its basis in
    efficiency.yaml): a refit of groq-lpu that leaves it stale fails here."""
    v1 = calibration.family_efficiency("groq-lpu")["kernel_latency_s"]
    assert calibration.family_efficiency("groq3-lpu")["kernel_latency_s"] == pytest.approx(v1 / 1.5, rel=1e-3)
