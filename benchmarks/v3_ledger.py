"""Model v3's errors on today's corpus (docs/MODEL.md 13, "Before and after v4"): v3's predictions, classed, put
in regimes and split as v4's ledger does (from tests/golden/ledger.json), medians per class and regime.

v3 is the code of commit 650878f (before issue 40). Check it out beside this tree and run this file with it first
on the path, so that ``planner`` is v3's while the corpus and the ledger's classes are read from this tree:

    git worktree add /tmp/v3 650878f
    PYTHONPATH=/tmp/v3 NUMBA_CACHE_DIR=/tmp/v3-numba python benchmarks/v3_ledger.py
    git worktree remove /tmp/v3
"""

from __future__ import annotations

import json
import math
import statistics
from pathlib import Path

import yaml

from planner.perf import calibration  # v3's, where the worktree is first on the path

ROOT = Path(__file__).resolve().parents[1]


def corpus() -> list[dict]:
    """Today's points: data/calibration.yaml's, then each curve's, as v4's calibration.curve_points makes them."""
    data = ROOT / "planner" / "data"
    points = yaml.safe_load((data / "calibration.yaml").read_text())["points"]
    for curve in yaml.safe_load((data / "curves.yaml").read_text())["curves"]:
        shared = {k: v for k, v in curve.items() if k not in ("points", "conversion")}
        for p in curve["points"]:
            point = {**shared, "curve": curve["id"], **p}
            if len(curve["points"]) > 1:
                point["id"] = f"{curve['id']}@c{p['concurrency']}"
            points.append(point)
    return points


def v3_error(point: dict) -> float:
    """v3's error factor; weight-only 4-bit (which v3 could not express) priced at fp8, the nearest it had."""
    if point.get("precision") == "w4a16":
        point = {**point, "precision": "fp8"}
    try:
        predicted = calibration.predict(point)["predicted"]
    except Exception:  # noqa: BLE001 - a condition v3 cannot express has no prediction
        predicted = 0.0
    return math.exp(abs(math.log(predicted / point["published"]))) if predicted > 0 else math.inf


def main() -> None:
    ledger = {p["id"]: p for p in json.loads((ROOT / "tests" / "golden" / "ledger.json").read_text())["points"]}
    rows = [(ledger[p["id"]], v3_error(p)) for p in corpus()]
    for key in ("class", "regime"):
        for name in dict.fromkeys(meta[key] for meta, _ in rows):
            every = [e for meta, e in rows if meta[key] == name]
            held = [e for meta, e in rows if meta[key] == name and meta["split"] == "held_out"]
            print(f"{key:7} {name:12} held out {len(held):3} median {statistics.median(held) if held else math.nan:.3f}"
                  f"   all {len(every):3} median {statistics.median(every):.3f} within 2x {sum(e <= 2 for e in every)}")
    held = [e for meta, e in rows if meta["split"] == "held_out"]
    print(f"every held-out point: {len(held)}, median {statistics.median(held):.3f}")


if __name__ == "__main__":
    main()
