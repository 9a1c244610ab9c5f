"""The accuracy ledger: the model's error on every figure of the published corpus (data/calibration.yaml), by
class and by vendor, with the points the efficiencies were fitted to and the held-back points apart (MODEL.md 13).

A point's error is the factor between prediction and figure, ``exp(|ln(predicted / published)|)`` (1.0 is exact;
2.0 is a factor of two either way). A point the model gives no prediction for counts as an infinite error. The
committed ledger (``tests/golden/ledger.json``, written by ``planner calibrate --ledger --format json``) is what CI
holds every class's median to.
"""

from __future__ import annotations

import hashlib
import math
import statistics

from planner import catalog
from planner.perf import calibration
from planner.vocabulary import HOLDOUT_SHARE, LEDGER_CLASSES, LEDGER_REGIMES, LEDGER_SPLITS


def point_class(point: dict) -> str:
    """The ledger class of a point: speculative where its condition drafts (or it is a speed-up), ttft for a
    time-to-first-token figure, sram for a machine that serves from on-chip SRAM, else gpu-moe or gpu-dense by the
    model's kind. The first that applies wins."""
    spec = point.get("speculative") or {}
    if point["metric"] == "speedup" or spec.get("method", "none") != "none":
        return "speculative"
    if point["metric"] == "ttft":
        return "ttft"
    hw = catalog.get_hardware(point["hardware"])
    if hw.chip.memory[0].tier == "sram":
        return "sram"
    if not hw.vendor.startswith("NVIDIA"):
        return "non-nvidia"
    return "gpu-moe" if catalog.get_model(point["model"]).is_moe else "gpu-dense"


def point_regime(point: dict) -> str:
    """The regime of a point's streams (``LEDGER_REGIMES``): 1-4 (a lone stream to a few), 5-64, 65-512, or max (a
    system's maximum throughput, or more than 512 streams). A batch-1 figure and a TTFT of lone prompts are 1-4."""
    if point["metric"] in ("system_throughput", "decode_throughput"):
        return "max"
    streams = float(point.get("concurrency", 1))
    for bound, name in ((4, "1-4"), (64, "5-64"), (512, "65-512")):
        if streams <= bound:
            return name
    return "max"


def point_unit(point: dict) -> str:
    """What is held out or fitted whole: the point's curve where it belongs to one, else the point itself."""
    return point.get("curve") or point["id"]


def point_vendor(point: dict) -> str:
    return catalog.get_hardware(point["hardware"]).vendor


def point_split(point: dict) -> str:
    """fitted (the efficiencies were fitted to it), held_out (kept out of every fit on purpose, to judge the
    model out of sample) or shown (its condition includes something the fit must not absorb, with the reason)."""
    if not point.get("fit", True):
        return "shown"
    if point.get("held_out"):
        return "held_out"
    return "fitted" if calibration.is_fitted(point) else "shown"


def holdout_ids(points: list[dict], share: float = HOLDOUT_SHARE) -> set[str]:
    """The ids a fresh corpus holds back: in each class, of the units (a curve, or a point of none: ``point_unit``)
    whose conditions the model can express (no ``fit: false``), the ceil(share x n) whose ids hash lowest (sha256),
    every point of each: the choice depends on nothing but the ids, and a curve is never split. Used once to mark the first corpus (``held_out: true``); the marks are then frozen in the file, and
    later additions are marked by ``holdout_additions``, so adding a point never reshuffles the others."""
    by_class: dict[str, set[str]] = {}
    members: dict[str, list[str]] = {}
    for p in points:
        if p.get("fit", True):
            by_class.setdefault(point_class(p), set()).add(point_unit(p))
            members.setdefault(point_unit(p), []).append(p["id"])
    held: set[str] = set()
    for units in by_class.values():
        ordered = sorted(units, key=lambda i: hashlib.sha256(i.encode()).hexdigest())
        for unit in ordered[: math.ceil(share * len(ordered))]:  # a curve is held out whole
            held.update(members[unit])
    return held


def holdout_additions(points: list[dict], new_ids: set[str], share: float = HOLDOUT_SHARE) -> set[str]:
    """The ids of points added to a marked corpus that are held out: in each class, the ceil(share x n) of the n
    new fittable points whose ids hash lowest. The marks already in the file stay as they are, so each batch of
    additions keeps its own quarter out and nothing earlier is reshuffled."""
    return holdout_ids([p for p in points if p["id"] in new_ids], share)


def error_factor(predicted: float, published: float) -> float:
    if predicted <= 0.0 or published <= 0.0:
        return math.inf
    return math.exp(abs(math.log(predicted / published)))


def point_rows(rows: list[dict] | None = None) -> list[dict]:
    """calibration.comparison's rows with the ledger's class, vendor, split, kind, date and error factor."""
    by_id = {p["id"]: p for p in calibration.points()}
    out = []
    for row in rows if rows is not None else calibration.comparison():
        p = by_id[row["id"]]
        out.append({**row, "class": point_class(p), "vendor": point_vendor(p), "split": point_split(p),
                    "regime": point_regime(p), "curve": point_unit(p),
                    "kind": p.get("kind", "measured"), "date": str(p.get("date", "")),
                    "error_factor": _finite(error_factor(row["predicted"], row["published"]))})
    return out


def _finite(x: float) -> float | None:
    """JSON holds no infinity: a point with no prediction has a null error (counted as infinite in medians)."""
    return x if math.isfinite(x) else None


def _summary(rows: list[dict]) -> dict:
    errors = [math.inf if r["error_factor"] is None else r["error_factor"] for r in rows]
    return {
        "points": len(errors),
        "median_error": _finite(statistics.median(errors)),
        "max_error": _finite(max(errors)),
        "within_2x": sum(e <= 2.0 for e in errors),
        "no_prediction": sum(not math.isfinite(e) for e in errors),
    }


def ledger(rows: list[dict] | None = None) -> dict:
    """Per class and per vendor, for each split, the point count, the median and largest error factor, how many
    are within 2x and how many have no prediction; and every point's row."""
    pts = point_rows(rows)
    groups = []
    for key, names in (("class", LEDGER_CLASSES), ("vendor", sorted({r["vendor"] for r in pts})),
                       ("regime", LEDGER_REGIMES)):
        for name in names:
            for split in (*LEDGER_SPLITS, "all"):
                chosen = [r for r in pts if r[key] == name and split in (r["split"], "all")]
                if chosen:
                    groups.append({"group": key, "name": name, "split": split, **_summary(chosen)})
    for name in LEDGER_CLASSES:  # each class by regime (MODEL.md 13)
        for regime in LEDGER_REGIMES:
            for split in (*LEDGER_SPLITS, "all"):
                chosen = [r for r in pts if r["class"] == name and r["regime"] == regime
                          and split in (r["split"], "all")]
                if chosen:
                    groups.append({"group": "class-regime", "name": f"{name} {regime}", "split": split,
                                   **_summary(chosen)})
    return {"groups": groups, "points": pts}


def medians(book: dict) -> dict[tuple[str, str, str], float]:
    """(group, name, split) -> median error factor of a ledger (the figures CI holds)."""
    return {(g["group"], g["name"], g["split"]): g["median_error"] for g in book["groups"]}
