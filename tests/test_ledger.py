"""The accuracy ledger (docs/MODEL.md 13): the corpus's rules, and every class's median error held to the committed
ledger (tests/golden/ledger.json). A model or catalog change that makes a class's median error more than 10% worse
fails here; one that makes it better is recorded by regenerating the committed ledger:

    .venv/bin/planner calibrate --ledger --format json > tests/golden/ledger.json
"""

import json
import math
from collections import Counter
from pathlib import Path

import pytest

from planner.perf import calibration, ledger
from planner.vocabulary import FIGURE_KINDS, HOLDOUT_SHARE, LEDGER_CLASSES, LEDGER_GROWTH_LIMIT

COMMITTED = Path(__file__).with_name("golden") / "ledger.json"


@pytest.fixture(scope="module")
def book():
    return ledger.ledger()


@pytest.fixture(scope="module")
def committed():
    return json.loads(COMMITTED.read_text())


def test_corpus_has_sixty_figures_each_with_its_source_date_and_kind():
    points = calibration.points()
    assert len(points) >= 60
    assert len({p["id"] for p in points}) == len(points)
    for p in points:
        assert p.get("source") and p.get("date") and p.get("kind") in FIGURE_KINDS, p["id"]
        assert p["metric"] in calibration.PREDICTORS, p["id"]


def test_every_class_holds_a_quarter_of_its_fittable_curves_out():
    """A quarter of each class's units (a curve, or a point that belongs to none) is held out whole."""
    units = {(ledger.point_class(p), ledger.point_unit(p), bool(p.get("held_out")))
             for p in calibration.points() if p.get("fit", True)}
    by_class = Counter(c for c, _, _ in units)
    held = Counter(c for c, _, h in units if h)
    assert set(by_class) == set(LEDGER_CLASSES)
    for name, n in by_class.items():
        assert held[name] >= math.floor(HOLDOUT_SHARE * n), (name, held[name], n)


# The corpus's batches, in the order they were marked: the first 111 points, then SGLang's neighbour vLLM's, then
# the curves of data/curves.yaml.
LATER_BATCHES = (("vllm-",),)


def test_the_frozen_hold_out_is_the_hash_rule_of_the_ids():
    """The held-out marks in the files are what the rule chooses, batch by batch (holdout_ids for the first corpus,
    holdout_additions for each later batch, the curves last): none was moved by hand to flatter a class, and a curve
    is held out or fitted whole."""
    # a point shown since (``shown_since``: demoted after the marks were made, e.g. superseded) was fittable when
    # its batch was marked, and keeps its mark
    points = [{k: v for k, v in p.items() if not (k == "fit" and p.get("shown_since"))}
              for p in calibration.points()]
    single = {p["id"] for p in calibration.calibration_data()["points"]}
    later = [{p["id"] for p in points if p["id"] in single and p["id"].startswith(prefixes)}
             for prefixes in LATER_BATCHES]
    later.append({p["id"] for p in points if p["id"] not in single})
    first = [p for p in points if not any(p["id"] in batch for batch in later)]
    expected = ledger.holdout_ids(first).union(*(ledger.holdout_additions(points, batch) for batch in later))
    assert {p["id"] for p in points if p.get("held_out")} == expected


def test_a_curve_is_fitted_or_held_out_whole():
    by_curve: dict[str, set] = {}
    for p in calibration.points():
        if p.get("curve"):
            by_curve.setdefault(p["curve"], set()).add(bool(p.get("held_out")))
    assert len(by_curve) >= 50
    assert all(len(marks) == 1 for marks in by_curve.values()), [c for c, m in by_curve.items() if len(m) > 1]


@pytest.mark.parametrize("family", sorted(calibration.calibration_data()["fit"]))
def test_no_fit_sees_a_held_out_point(family):
    assert not [p["id"] for p in calibration.family_points(family) if p.get("held_out")]


def test_claims_weigh_less_than_measurements():
    assert calibration.weight({"kind": "claim"}) < calibration.weight({"kind": "measured"}) == 1.0


def test_error_factor_is_symmetric_and_infinite_without_a_prediction():
    assert ledger.error_factor(200.0, 100.0) == pytest.approx(2.0)
    assert ledger.error_factor(50.0, 100.0) == pytest.approx(2.0)
    assert ledger.error_factor(0.0, 100.0) == math.inf


def test_the_ledger_covers_every_class_and_vendor(book):
    names = {(g["group"], g["name"]) for g in book["groups"]}
    assert {("class", c) for c in LEDGER_CLASSES} <= names
    assert {("vendor", r["vendor"]) for r in book["points"]} <= names


def test_ledger_points_are_the_corpus(book):
    assert {r["id"] for r in book["points"]} == {p["id"] for p in calibration.points()}


def test_no_class_median_grew_more_than_ten_percent(book, committed):
    now, then = ledger.medians(book), ledger.medians(committed)
    worse = {}
    for key, before in then.items():
        if key[0] != "class" or before is None:
            continue
        after = now.get(key)
        if after is None or after > before * LEDGER_GROWTH_LIMIT:
            worse[key] = (before, after)
    assert not worse, worse


def test_the_committed_ledger_is_of_this_corpus(committed):
    assert {r["id"] for r in committed["points"]} == {p["id"] for p in calibration.points()}


def test_speculative_speed_ups_hold_within_a_quarter_at_every_batch(book):
    """Issue 22's done-when: the published speculative curves (EAGLE-3 by batch on SGLang, MTP on TensorRT-LLM and
    SGLang) hold within 25% at every batch they were measured at, fitted and held-out points alike."""
    rows = [r for r in book["points"] if r["metric"] == "speedup" and r["split"] != "shown"]
    assert len(rows) >= 12
    far = {r["id"]: r["error_factor"] for r in rows if r["error_factor"] is None or r["error_factor"] > 1.25}
    assert not far, far


ISSUE_22_CLASSES = ("gpu-dense", "gpu-moe", "speculative", "ttft", "sram")


def test_every_class_median_is_under_a_quarter_on_held_out_points(book):
    """Issue 22's done-when: every class it judged has a median error on its held-back points under 1.25x (the
    non-NVIDIA class came later, with issue 40's corpus of curves: the committed ledger holds it)."""
    held = {g["name"]: g["median_error"] for g in book["groups"] if g["group"] == "class" and g["split"] == "held_out"}
    assert set(held) == set(LEDGER_CLASSES)
    assert all(held[c] is not None and held[c] < 1.25 for c in ISSUE_22_CLASSES), held


def test_the_ledger_has_every_class_by_regime(book):
    """Issue 40: each class by regime (1-4, 5-64, 65-512 streams, maximum throughput), beside the classes."""
    names = {g["name"] for g in book["groups"] if g["group"] == "class-regime"}
    assert {f"gpu-moe {r}" for r in ("1-4", "5-64", "65-512", "max")} <= names
    regimes = {g["name"] for g in book["groups"] if g["group"] == "regime"}
    assert regimes == {"1-4", "5-64", "65-512", "max"}


def test_a_point_measured_without_expert_parallelism_is_predicted_without_it(book):
    """A point that says ``ep: 0`` (vLLM's plain ``-tp N``) is predicted on layouts without expert parallelism only:
    on DeepSeek-R1 the attention-DP layouts hold each stream's MLA cache once instead of on every rank and so
    batch several times more, which put vLLM's figures 1.4x too high."""
    pinned = [p["id"] for p in calibration.points() if p.get("ep") is not None and int(p["ep"]) == 0]
    assert len(pinned) >= 6
    configs = {r["id"]: r["config"] for r in book["points"]}
    for pid in pinned:
        assert " ep" not in configs[pid], (pid, configs[pid])
    free = next(p for p in calibration.points() if p["id"] == "vllm-dsr1-h200x8-tp8-fp8-2k-100-max")
    free = {k: v for k, v in free.items() if k != "ep"}
    assert " ep " in calibration.predict(free)["config"]  # the search alone picks expert parallelism here
