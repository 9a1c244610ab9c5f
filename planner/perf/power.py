"""The power curves' fit and ledger (docs/MODEL.md 14): chip power under load against data/power_points.yaml.

The kernels draw ``idle + memory x (memory seconds / step) + compute x (matmul seconds / step)`` of a chip's rated
power (at most all of it); a colocated replica spends part of its time in prefill passes, part in decode steps. The
shares enter linearly, so each point's kernel run at two unit curves gives its memory and compute features once, and
the fit is a bounded grid search over them. A quarter of the points (every fourth) stays out of the fit.
"""

from __future__ import annotations

import functools
import math
from pathlib import Path

import numpy as np

from planner import catalog
from planner.errors import InputError
from planner.perf.estimate import colocated, evaluate_config
from planner.perf.pack import POWER_SHARES, chip_power_fraction, power_curve, power_curve_values, power_table
from solvers.perf import slots as L
from solvers.perf.kernels import loaded_power_w

HOLD_OUT_EVERY = 4  # points i with i % 4 == 3 are held back from the fit
GRID_STEP = 0.01  # of the shares' grid search


@functools.lru_cache(maxsize=None)
def power_points() -> tuple[dict, ...]:
    """The measured points of data/power_points.yaml, in file order."""
    return tuple(catalog._read_yaml(catalog.DATA_DIR / "power_points.yaml")["points"])


def held_out(index: int) -> bool:
    return index % HOLD_OUT_EVERY == HOLD_OUT_EVERY - 1


def predicted_chip_share(point: dict, curve: dict[str, float]) -> float:
    """What the kernels say the point's chips draw, as a share of their rated power, under ``curve``: the rack's
    draw (``B_POWER_W``, prefill and decode in the replica's time shares) less the rest of the rack at its design
    draw, over the chips' part of the rack."""
    m, hw = catalog.get_model(point["model"]), catalog.get_hardware(point["hardware"])
    tp, ep, batch = int(point["tensor_parallel"]), int(point["expert_parallel"]), float(point["batch"])
    inp, out = float(point["input_tokens"]), float(point["output_tokens"])
    # no memory check: the measured run held this batch (vLLM preempts the few longest streams where a batch's
    # longest contexts would not all fit at once)
    dec, pre = evaluate_config(m, hw, point["precision"], tp, 1, ep, batch, inp, out, power=curve)
    _, served = colocated(dec, pre, batch, inp, out, 1.0)
    prefill_share = min(1.0, inp / float(pre[L.B_TOKENS_PER_S]) * served / out)
    design = tp * hw.rack_power_w / hw.chips_per_rack
    rack_share = loaded_power_w(float(dec[L.B_POWER_W]), float(pre[L.B_POWER_W]), prefill_share) / design
    c = chip_power_fraction(hw)
    return float((rack_share - (1.0 - c)) / c)


def features(point: dict) -> tuple[float, float]:
    """(memory, compute) features of a point: its predicted chip share with only that share at 1 (no idle)."""
    unit = dict.fromkeys(POWER_SHARES, 0.0)
    return (predicted_chip_share(point, {**unit, "memory_share": 1.0}),
            predicted_chip_share(point, {**unit, "compute_share": 1.0}))


def fit_curve(family: str = "nvidia-gpu") -> dict:
    """Fit the family's fitted shares (bounds from data/power.yaml) to its points outside the hold-out, minimising
    the squared log error; the idle share stays at its measured value."""
    entry = power_curve(family)
    idle = float(entry["idle_share"]["value"])
    fitted = [k for k in POWER_SHARES if entry[k].get("fitted")]
    pts = [(i, p) for i, p in enumerate(power_points()) if catalog.get_hardware(p["hardware"]).family == family]
    if not pts or not fitted:
        raise InputError(f"family {family!r} has no power points or no fitted share", field="family")
    feats = np.array([features(p) for _, p in pts])
    measured = np.array([float(p["chip_power_share"]) for _, p in pts])
    train = np.array([not held_out(i) for i, _ in pts])
    axes = {k: (np.arange(float(entry[k]["low"]), float(entry[k]["high"]) + GRID_STEP / 2, GRID_STEP)
                if k in fitted else np.array([float(entry[k]["value"])])) for k in ("memory_share", "compute_share")}
    mm, cc = np.meshgrid(axes["memory_share"], axes["compute_share"], indexing="ij")
    pred = np.minimum(1.0, idle + mm[..., None] * feats[:, 0] + cc[..., None] * feats[:, 1])
    loss = (np.log(np.maximum(pred, 1e-9) / measured) ** 2)[..., train].sum(axis=-1)
    i, j = np.unravel_index(np.argmin(loss), loss.shape)
    return {"family": family, "idle_share": idle, "memory_share": round(float(mm[i, j]), 4),
            "compute_share": round(float(cc[i, j]), 4), "points": len(pts), "fitted_points": int(train.sum())}


def power_ledger(family: str = "nvidia-gpu") -> dict:
    """Every point of the family predicted by the kernels with the shipped curve, and the median error factor
    exp(median |ln(predicted / measured)|) of the fitted and the held-back points."""
    curve = power_curve_values(family)
    rows = []
    for i, p in enumerate(power_points()):
        if catalog.get_hardware(p["hardware"]).family != family:
            continue
        pred = predicted_chip_share(p, curve)
        rows.append({"id": p["id"], "hardware": p["hardware"], "model": p["model"], "batch": p["batch"],
                     "task": p["task"], "split": "held-out" if held_out(i) else "fitted",
                     "measured_chip_share": float(p["chip_power_share"]), "predicted_chip_share": round(pred, 4),
                     "error_factor": round(math.exp(abs(math.log(pred / float(p["chip_power_share"])))), 4)})
    groups = []
    for split in ("fitted", "held-out"):
        errs = [r["error_factor"] for r in rows if r["split"] == split]
        groups.append({"family": family, "split": split, "points": len(errs),
                       "median_error_factor": round(float(np.median(errs)), 4) if errs else None,
                       "worst_error_factor": round(max(errs), 4) if errs else None})
    return {"curve": curve, "groups": groups, "points": rows}


def write_fit(family: str = "nvidia-gpu", path: Path | None = None) -> dict:
    """Refit the family's shares and rewrite their values (and basis) in data/power.yaml, keeping the rest."""
    path = path or catalog.DATA_DIR / "power.yaml"
    fit = fit_curve(family)
    text = path.read_text(encoding="utf-8").splitlines()
    out, current = [], None
    for line in text:
        if line and not line.startswith((" ", "#")):
            current = line.split(":")[0]
        key = line.strip().split(":")[0]
        if current == family and key in ("memory_share", "compute_share") and "fitted: true" in line:
            head, _, rest = line.partition("value: ")
            rest = rest.split(",", 1)[1]
            basis = (f"fitted to {fit['fitted_points']} of the family's {fit['points']} points of "
                     f"data/power_points.yaml (every fourth held back)")
            rest = rest.split("basis:")[0] + f'basis: "{basis}"}}'
            line = f"{head}value: {fit[key]},{rest}"
        out.append(line)
    path.write_text("\n".join(out) + "\n", encoding="utf-8")
    power_table.cache_clear()
    return fit
