"""Options from measurements (docs/MODEL.md 12): a workload's measured rows on one system become curves in
concurrency, and each curve the one operating point the workload's tier and TTFT allow.

* Matching: rows of the workload's model, on the system, with its speculative method, grouped by precision,
  role, chips and layout. Rows whose prompt and output lengths are both within ``LENGTH_TOLERANCE`` of the
  workload's are used as measured; otherwise the nearest measured lengths (by log distance) are scaled to the
  workload's by the model's own shape: each point times the model's figure at the workload's lengths over its
  figure at the measured lengths, same layout and concurrency (``model_ratios``).
* Operating point: per-user speed falls and throughput rises with concurrency. The largest concurrency whose
  speed is at least the tier's and whose TTFT (where measured) is within the target, interpolated linearly
  between the measured points and taken down to a whole number of requests (never below the first point, never
  past the last); none when even the first point misses: a measured capacity below the tier removes the option.
* A measured point already includes its queueing and batching, so its throughput is used as measured, less the
  scenario's ``measurement_headroom``. Power and cost still come from the catalog.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from planner import catalog
from planner.perf.estimate import colocated, evaluate_config
from planner.perf.pack import efficiency_of, hardware_vector
from solvers.perf import slots as L

LENGTH_TOLERANCE = 0.10  # relative difference of prompt and output lengths within which rows are used as measured


@dataclass(frozen=True)
class Curve:
    """The measured points of one (system, precision, role, chips, layout) at one pair of lengths, sorted by
    concurrency, already scaled to the workload's lengths where ``scaled``."""

    hardware: str
    precision: str
    role: str
    chips: int
    layout: tuple[int, int, bool]
    input_tokens: float  # the measured lengths
    output_tokens: float
    concurrency: np.ndarray
    tps_per_user: np.ndarray
    output_tokens_per_s: np.ndarray
    input_tokens_per_s: np.ndarray  # nan where not measured
    ttft_s: np.ndarray  # nan where not measured
    ttft_percentile: float | None
    scaled: bool

    def describe(self) -> str:
        what = (f"{len(self.concurrency)} measured points at {self.input_tokens:,.0f}/{self.output_tokens:,.0f} "
                f"tokens")
        return what + (", scaled to the workload's lengths by the model" if self.scaled else "")


def _matches(m, demand, hw_id: str) -> bool:
    return m.model == demand.model and m.hardware == hw_id and m.speculative == demand.speculative


def _close(a: float, b: float) -> bool:
    return abs(a / b - 1.0) <= LENGTH_TOLERANCE


def curves_for(demand, model, hw, measurements, precisions=None, efficiency: dict | None = None) -> list[Curve]:
    """Every curve of ``demand`` on ``hw`` from ``measurements`` (``Measurement`` rows), at the workload's
    lengths (measured or scaled); ``precisions`` limits them (the workload's pinned one, the system's own);
    ``efficiency`` (family -> parameters) is the model that scales lengths, default the calibrated one. Under
    ``speculative: auto``, the curves of each drafter it considers (``Demand.variants``), in that order."""
    variants = demand.variants()
    if len(variants) > 1:
        return [c for v in variants for c in curves_for(v, model, hw, measurements, precisions, efficiency)]
    demand = variants[0]
    eff = efficiency_of(efficiency, hw)
    groups: dict[tuple, list] = {}
    for m in measurements:
        if _matches(m, demand, hw.id) and (precisions is None or m.precision in precisions):
            groups.setdefault((m.precision, m.role, m.chips, m.layout()), []).append(m)
    curves = []
    for (precision, role, chips, layout), rows in sorted(groups.items(), key=lambda kv: str(kv[0])):
        near = [m for m in rows if _close(m.input_tokens, demand.input_tokens)
                and _close(m.output_tokens, demand.output_tokens)]
        scaled = not near
        if scaled:
            def distance(m):
                return (math.log(m.input_tokens / demand.input_tokens) ** 2
                        + math.log(m.output_tokens / demand.output_tokens) ** 2)
            best = min(rows, key=distance)
            near = [m for m in rows if (m.input_tokens, m.output_tokens) == (best.input_tokens, best.output_tokens)]
        curves.append(_curve(near, demand, model, hw, precision, role, chips, layout, scaled, eff))
    return curves


def _curve(rows, demand, model, hw, precision, role, chips, layout, scaled, efficiency=None) -> Curve:
    rows = sorted(rows, key=lambda m: m.concurrency)
    c = np.array([m.concurrency for m in rows])
    speed = np.array([m.speed for m in rows])
    out = np.array([m.output_tokens_per_s or math.nan for m in rows])
    inp = np.array([m.input_tokens_per_s or math.nan for m in rows])
    ttft = np.array([m.ttft_s or math.nan for m in rows])
    percentiles = {m.ttft_percentile for m in rows if m.ttft_percentile is not None}
    if scaled:
        for i, m in enumerate(rows):
            f = model_ratios(model, hw, precision, layout, m.concurrency, (m.input_tokens, m.output_tokens),
                             (demand.input_tokens, demand.output_tokens), role, efficiency)
            speed[i] *= f["tps_per_user"]
            out[i] *= f["output_tokens_per_s"]
            inp[i] *= f["input_tokens_per_s"]
            ttft[i] *= f["ttft_s"]
    length = (float(np.mean([m.input_tokens for m in rows])), float(np.mean([m.output_tokens for m in rows])))
    return Curve(hw.id, precision, role, chips, layout, *length, c, speed, out, inp, ttft,
                 min(percentiles) if percentiles else None, scaled)


def model_point(model, hw, precision, layout, concurrency: float, lengths, role: str,
                efficiency: dict | None = None) -> dict:
    """The performance model at one point (plain decode; the family's efficiencies, or ``efficiency``): per-user
    speed and replica output tokens/s (colocated: with its own prefill), prompt tokens/s and one prompt's TTFT."""
    tp, pp, ep = layout
    batch = max(float(concurrency), 1.0)
    dec, pre = evaluate_config(model, hw, precision, tp, pp, int(ep), batch, lengths[0], lengths[1],
                               efficiency=efficiency)
    if role == "colocated":
        tps, served = colocated(dec, pre, batch, float(lengths[0]), float(lengths[1]), 1.0)
    else:
        tps, served = float(dec[L.B_TPS_PER_USER]), float(dec[L.B_TOKENS_PER_S])
    return {"tps_per_user": tps, "output_tokens_per_s": served, "input_tokens_per_s": float(pre[L.B_TOKENS_PER_S]),
            "ttft_s": float(pre[L.B_TIME_S])}


def model_ratios(model, hw, precision, layout, concurrency, measured_lengths, wanted_lengths, role,
                 efficiency: dict | None = None) -> dict:
    """Per figure, the model's value at ``wanted_lengths`` over its value at ``measured_lengths``."""
    at = model_point(model, hw, precision, layout, concurrency, measured_lengths, role, efficiency)
    to = model_point(model, hw, precision, layout, concurrency, wanted_lengths, role, efficiency)
    return {k: (to[k] / at[k] if at[k] > 0 else math.nan) for k in at}


@dataclass(frozen=True)
class OperatingPoint:
    concurrency: float  # where the figures are read (a whole number, or the first measured point)
    batch: int  # concurrency as the allocation row's batch
    tps_per_user: float
    output_tokens_per_s: float
    input_tokens_per_s: float
    ttft_s: float


def value_at(curve: Curve, concurrency: float) -> OperatingPoint:
    """The curve's figures at ``concurrency`` (linear between measured points; clamped to the measured range)."""
    c = min(max(float(concurrency), float(curve.concurrency[0])), float(curve.concurrency[-1]))

    def at(y):
        return float(np.interp(c, curve.concurrency, y)) if np.all(np.isfinite(y)) else math.nan

    return OperatingPoint(c, int(math.floor(c + 1e-9)), at(curve.tps_per_user), at(curve.output_tokens_per_s),
                          at(curve.input_tokens_per_s), at(curve.ttft_s))


def operating_point(curve: Curve, min_tps_per_user: float, ttft_target_s: float) -> OperatingPoint | None:
    """The largest whole concurrency the tier (decode, colocated) and the TTFT target (where measured) allow;
    None when the first measured point already misses them."""
    c, n = curve.concurrency, len(curve.concurrency)
    limits = []
    if curve.role in ("colocated", "decode"):
        limits.append((curve.tps_per_user, min_tps_per_user, True))  # at least
    if curve.role in ("colocated", "prefill") and np.all(np.isfinite(curve.ttft_s)):
        limits.append((curve.ttft_s, ttft_target_s, False))  # at most

    def ok(i: int) -> bool:
        return all((y[i] >= bound * (1 - 1e-12)) if at_least else (y[i] <= bound * (1 + 1e-12))
                   for y, bound, at_least in limits)

    if not ok(0):
        return None
    last = 0
    while last + 1 < n and ok(last + 1):
        last += 1
    top = float(c[last])
    if last + 1 < n:  # where the first limit is crossed between the last good point and the next
        ts = [(y[last] - bound) / (y[last] - y[last + 1]) for y, bound, _ in limits
              if (y[last] - bound) * (y[last + 1] - bound) < 0 and y[last] != y[last + 1]]
        top = float(c[last] + min(ts, default=0.0) * (c[last + 1] - c[last]))
    whole = math.floor(top + 1e-9)
    return value_at(curve, whole if whole >= c[0] else c[0])


def rescore_measured(row: dict, demand, model, hardware: dict, measurements, headroom: float,
                     efficiency: dict | None = None):
    """A measured allocation row re-read from its measurements, for ``check``: the curve of its system,
    precision, role, chips and layout at the workload's lengths, at the row's concurrency (``batch``, or the
    first measured point). An empty Rescore (nothing served) when no such curve exists."""
    from planner.fleet.options import Rescore
    from solvers.perf.serving import replica_power_w

    hw = hardware[row["hardware"]]
    layout = (int(row["tensor_parallel"]), int(row["pipeline_parallel"]), bool(row["expert_parallel"]))
    curve = next((c for c in curves_for(demand, model, hw, measurements, [row["precision"]], efficiency)
                  if c.role == row["role"] and c.chips == int(row["chips_per_replica"]) and c.layout == layout), None)
    power = float(replica_power_w(hardware_vector(hw, row["precision"]), float(row["chips_per_replica"])))
    if curve is None:
        return Rescore(False, 0.0, 0.0, 0.0, power)
    p = value_at(curve, max(float(row["batch"]), float(curve.concurrency[0])))
    keep = 1.0 - headroom
    prefill = row["role"] == "prefill"
    served = 0.0 if prefill else p.output_tokens_per_s * keep
    prompts = (p.input_tokens_per_s * keep if prefill else
               served * demand.prefill_tokens / demand.output_tokens if row["role"] == "colocated" else 0.0)
    ttft = {"ttft_s": p.ttft_s} if row["role"] != "decode" and math.isfinite(p.ttft_s) else {}
    return Rescore(True, None if prefill else p.tps_per_user, served, prompts, power, ttft, None)


def beside_model(rows, hardware: dict | None = None, models: dict | None = None) -> list[dict]:
    """Each row with what the performance model predicts at the same point (its layout, concurrency, lengths;
    plain decode): ``predicted_tps_per_user``, ``predicted_output_tokens_per_s`` (prefill rows: prompt
    tokens/s) and ``error_pct`` = 100 x (measured / predicted - 1) of that throughput. Ids the catalog (or the
    given ``hardware``/``models``) lacks get no prediction."""
    hardware = hardware or catalog.hardware_catalog()
    models = models or catalog.model_catalog()
    out = []
    for m in rows:
        row = {k: m.to_row()[k] for k in ("hardware", "model", "precision", "chips", "role", "input_tokens",
                                         "output_tokens", "concurrency")}
        row.update(tps_per_user=m.speed, output_tokens_per_s=m.output_tokens_per_s,
                   input_tokens_per_s=m.input_tokens_per_s, ttft_s=m.ttft_s, ttft_percentile=m.ttft_percentile)
        predicted = {"predicted_tps_per_user": None, "predicted_output_tokens_per_s": None, "error_pct": None}
        hw, model = hardware.get(m.hardware), models.get(m.model)
        if hw is not None and model is not None and catalog.runs_precision(hw, model, m.precision):
            p = model_point(model, hw, m.precision, m.layout(), m.concurrency, (m.input_tokens, m.output_tokens),
                            m.role)
            prefill = m.role == "prefill"
            measured = m.input_tokens_per_s if prefill else m.output_tokens_per_s
            modelled = p["input_tokens_per_s"] if prefill else p["output_tokens_per_s"]
            predicted = {"predicted_tps_per_user": None if prefill else p["tps_per_user"],
                         "predicted_output_tokens_per_s": modelled,
                         "error_pct": 100.0 * (measured / modelled - 1.0) if modelled > 0 else None}
        out.append({**row, **predicted, "source": m.source})
    return out
