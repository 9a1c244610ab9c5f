"""Uncertainty you can see (docs/MODEL.md 11): which figures behind a deployment are uncertain, their low/high
range and its basis, and the band they put around a prediction.

Each uncertain quantity is a slot of the hardware vector: an estimated catalog figure (a memory tier's capacity
or bandwidth, a link's bandwidth or latency, a peak FLOP rate, rack power) or a family efficiency. The band is
found one parameter at a time: the prediction is recomputed with each at its low and at its high, the others at
their central values; the band is the envelope of those, and the parameter whose swing is widest is named.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Any

import numpy as np

from planner import catalog
from planner.catalog import MATH_PRECISION, Figure, Hardware
from planner.perf.pack import (
    EFFICIENCY_PARAMS,
    NEUTRAL_EFFICIENCY,
    attention_precision,
    efficiency_key,
    efficiency_table,
    family_efficiency,
)
from solvers.perf import slots as L

EFFICIENCY_SLOTS = {"bandwidth_efficiency": L.H_BW_EFF, "flops_efficiency": L.H_FLOPS_EFF,
                    "kernel_latency_s": L.H_KERNEL_S,
                    "prefill_kernel_latency_s": L.H_PREFILL_KERNEL_S, "step_overhead_s": L.H_STEP_S,
                    "collective_latency_s": L.H_COLL_LAT_S, "usable_memory_fraction": L.H_MEM_USABLE,
                    "attention_stream_s": L.H_ATTN_STREAM_S, "speculative_stream_s": L.H_SPEC_STREAM_S,
                    "grouped_gemm_factor": L.H_GROUPED_GEMM_FACTOR}
# Parameters outside the bands: the fp8 and fp4 factors scale the peaks (already banded where estimated); the
# scheduler's bound and the prefill token budget are stack settings, not uncertain figures (MODEL.md 11).


@dataclass(frozen=True)
class Uncertain:
    """One uncertain quantity: its name, the hardware-vector slots it sets (one figure may feed several), its
    central, low and high values and the basis of the range."""

    name: str
    slots: tuple[int, ...]
    value: float
    low: float
    high: float
    basis: str


@functools.lru_cache(maxsize=None)
def ranges() -> dict:
    return catalog._read_yaml(catalog.DATA_DIR / "uncertainty.yaml")


def figure_range(fig: Figure, kind: str) -> tuple[float, float, str] | None:
    """(low, high, basis) of a catalog figure: its own, else its kind's range if it is an estimate, else None."""
    if fig.low is not None or fig.high is not None:
        return (fig.low if fig.low is not None else fig.value, fig.high if fig.high is not None else fig.value,
                fig.basis or "stated in the catalog")
    if fig.confidence != "estimate":
        return None
    rule = ranges()["figures"].get(kind)
    if rule is None:
        return None
    return fig.value * rule["low"], fig.value * rule["high"], rule["basis"]


def efficiency_ranges(family: str) -> list[Uncertain]:
    """The family's efficiency parameters with their ranges, clipped to the calibration's physical bounds."""
    from planner.perf.calibration import calibration_data

    bounds = calibration_data()["bounds"]
    values = family_efficiency(family)
    own = _own_entries(family)
    out = []
    for name in (n for n in EFFICIENCY_PARAMS if n in EFFICIENCY_SLOTS and n in values):
        if name not in own and values[name] == NEUTRAL_EFFICIENCY.get(name):
            continue  # a mechanism the family turns off has nothing to band
        entry = own.get(name, {})
        basis = str(entry.get("basis", "inherited prior"))
        rule = ranges()["efficiency"]["fitted" if basis.startswith("fitted") else "prior"]
        v = values[name]
        lo, hi = entry.get("low", v * rule["low"]), entry.get("high", v * rule["high"])
        if name in bounds:
            lo, hi = max(lo, bounds[name][0]), min(hi, bounds[name][1])
        if name == "usable_memory_fraction":
            hi = min(hi, 1.0)
        slots: tuple[int, ...] = (EFFICIENCY_SLOTS[name],)
        if name == "kernel_latency_s" and "prefill_kernel_latency_s" not in values:
            slots += (L.H_PREFILL_KERNEL_S,)  # a prompt pass's kernels fall back to the decode step's latency
        out.append(Uncertain(f"{family}.{name}", slots, v, min(lo, v), max(hi, v),
                             f"{basis}; range: {entry.get('range_basis', rule['basis'])}"))
    return out


def _own_entries(family: str) -> dict:
    """The efficiency entries that decide a family's values (its own, else those it inherits). An inherited entry
    was fitted, if at all, to another family's machines: it is carried here as an estimate, with a prior's range."""
    table = efficiency_table()
    entry = table[family]
    base = {}
    if "inherits" in entry:
        parent = entry["inherits"]
        base = {k: {**v, "basis": f"carried from {parent} ({v.get('basis', 'prior')}), no measurement of {family}",
                    "range_basis": ranges()["efficiency"]["prior"]["basis"]}
                for k, v in _own_entries(parent).items()}
    return {**base, **{k: v for k, v in entry.items() if isinstance(v, dict)}}


def uncertain_quantities(hw: Hardware, precision: str) -> list[Uncertain]:
    """Every uncertain quantity behind a prediction on ``hw`` at ``precision``."""
    chip = hw.chip
    out = []

    def add(name, slots, fig, kind):
        r = figure_range(fig, kind)
        if r is not None and (r[0] != fig.value or r[1] != fig.value):
            out.append(Uncertain(f"{hw.id}.{name}", tuple(slots), fig.value, r[0], r[1], r[2]))

    for i, tier in enumerate(chip.memory):
        add(f"memory[{i}].capacity_bytes", [L.H_CAP + i], tier.capacity_bytes, "capacity_bytes")
        add(f"memory[{i}].bandwidth_bytes_per_s", [L.H_BW + i], tier.bandwidth_bytes_per_s, "bandwidth_bytes_per_s")
    # attention runs at the KV cache's precision (pack.attention_peak_flops): the same figure or another one
    attention = attention_precision(hw, precision)
    for prec in dict.fromkeys((precision, attention)):
        slots = ([L.H_PEAK_FLOPS] if prec == precision else []) + ([L.H_ATTN_PEAK_FLOPS] if prec == attention else [])
        add(f"peak_flops_per_s.{MATH_PRECISION[prec]}", slots, chip.peak_flops_per_s[MATH_PRECISION[prec]],
            "peak_flops_per_s")
    add("scale_up.bandwidth_bytes_per_s", [L.H_SU_BW], chip.scale_up.bandwidth_bytes_per_s, "bandwidth_bytes_per_s")
    add("scale_up.latency_s", [L.H_SU_LAT], chip.scale_up.latency_s, "latency_s")
    add("scale_out.bandwidth_bytes_per_s", [L.H_SO_BW], chip.scale_out.bandwidth_bytes_per_s, "bandwidth_bytes_per_s")
    add("scale_out.latency_s", [L.H_SO_LAT], chip.scale_out.latency_s, "latency_s")
    power = hw.rack.power_kw
    r = figure_range(power, "power_kw")
    if r is not None:
        out.append(Uncertain(f"{hw.id}.rack.power_kw", (L.H_RACK_POWER_W,), power.value * 1e3, r[0] * 1e3,
                             r[1] * 1e3, r[2]))
    return out + efficiency_ranges(efficiency_key(hw))


def perturbed(hv: np.ndarray, quantities: list[Uncertain]) -> np.ndarray:
    """[1 + 2Q, len(hv)]: ``hv``, then each quantity at its low and at its high, the others central."""
    vectors = np.tile(hv, (1 + 2 * len(quantities), 1))
    for i, q in enumerate(quantities):
        vectors[1 + 2 * i, list(q.slots)] = q.low
        vectors[2 + 2 * i, list(q.slots)] = q.high
    return vectors


def band(evaluate_many, hv: np.ndarray, quantities: list[Uncertain]) -> dict:
    """The band around a prediction at ``hv``: ``evaluate_many(vectors)`` gives the named figures (a list of dicts)
    at each row of ``perturbed(hv, quantities)``, each quantity at its low and its high, one at a time. Returns per
    figure [low, high], the widest quantity per figure, and every quantity's swing."""
    results = evaluate_many(perturbed(hv, quantities))
    central = results[0]
    lows, highs = dict(central), dict(central)
    swings: list[dict[str, Any]] = []
    for i, q in enumerate(quantities):
        pair = results[1 + 2 * i: 3 + 2 * i]
        swing = {}
        for key, c in central.items():
            values = [r[key] for r in pair]
            lows[key], highs[key] = min(lows[key], *values), max(highs[key], *values)
            swing[key] = [min(values + [c]), max(values + [c])]
        swings.append({"parameter": q.name, "low": q.low, "high": q.high, "basis": q.basis, "swing": swing})
    widest = {}
    for key in central:
        if swings:
            top = max(swings, key=lambda s: s["swing"][key][1] - s["swing"][key][0])
            widest[key] = top["parameter"]
    return {"low": lows, "high": highs, "widest": widest, "parameters": swings}
