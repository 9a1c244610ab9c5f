"""Calibrating the performance model to a user's measurements (docs/MODEL.md 12.3): the same fit as the shipped
calibration (``planner.perf.calibration.fit_parameters``: coarse grid, coordinate descent, Nelder-Mead, the same
parameters and physical bounds per family), with each measured row as a point.

The loss is the sum of squared log errors over the rows of the family: for colocated and decode rows the replica's
output tokens/s and the per-user speed, for prefill rows the prompt tokens/s, each predicted by the model at the
row's own layout, concurrency and lengths (``curves.model_point``). A parameter that ends at its bound is reported
as such: the measurements ask for more than the model's physics allows there.

Only the parameters the rows identify are fitted (``planner.measurements.identify``: the residuals' Jacobian at the
shipped prior); the others stay exactly at the prior, reported with its range, and the result says how many of the
five the rows identified and why each other one was held.
"""

from __future__ import annotations

import datetime as _dt
import math
from pathlib import Path

import numpy as np

from planner import catalog, yaml_io
from planner.errors import InputError
from planner.measurements import identify
from planner.measurements.curves import model_point
from planner.measurements.reading import read_text
from planner.perf.calibration import calibration_data, fit_parameters, fit_spec
from planner.perf.pack import EFFICIENCY_PARAMS, efficiency_key, efficiency_table, family_efficiency
from planner.perf.uncertainty import efficiency_ranges, ranges
from planner.writing import atomic_write


def _figures(m) -> list[tuple[str, float]]:
    if m.role == "prefill":
        return [("input_tokens_per_s", float(m.input_tokens_per_s))]
    return [("output_tokens_per_s", float(m.output_tokens_per_s)), ("tps_per_user", m.speed)]


def predicted(m, hw, model, efficiency: dict | None) -> dict:
    return model_point(model, hw, m.precision, m.layout(), m.concurrency, (m.input_tokens, m.output_tokens), m.role,
                       efficiency)


def measurement_residuals(rows, hardware: dict, models: dict, efficiency: dict) -> np.ndarray:
    """The rows' log errors ``ln(predicted / measured)`` under ``efficiency``, one per measured figure."""
    out: list[float] = []
    for m in rows:
        p = predicted(m, hardware[m.hardware], models[m.model], efficiency)
        out.extend(math.log(max(p[key], 1e-12) / measured) for key, measured in _figures(m))
    return np.array(out)


def measurement_loss(rows, hardware: dict, models: dict, efficiency: dict) -> float:
    """Sum of squared log errors of the rows' figures under ``efficiency``."""
    return float(np.sum(measurement_residuals(rows, hardware, models, efficiency) ** 2))


def family_rows(rows, hardware: dict, family: str | None = None, hardware_id: str | None = None):
    """(family, rows): the rows of one hardware family (``family``), or of one system (``hardware_id``, its
    family's parameters fitted); without either, the rows must all be of one family."""
    known = [m for m in rows if m.hardware in hardware]
    unknown = sorted({m.hardware for m in rows if m.hardware not in hardware})
    if unknown:
        raise InputError(f"hardware {', '.join(unknown)} is not in the catalog (calibrate fits catalog systems)",
                         field="--measurements")
    if hardware_id is not None:
        if hardware_id not in hardware:
            raise InputError(f"unknown hardware {hardware_id!r}", field="--hardware")
        family = efficiency_key(hardware[hardware_id])
        known = [m for m in known if m.hardware == hardware_id]
    families = sorted({efficiency_key(hardware[m.hardware]) for m in known})
    if family is None:
        if len(families) != 1:
            raise InputError(f"the rows are of {len(families)} families ({', '.join(families)}); name one with "
                             f"--family or --hardware", field="--measurements")
        family = families[0]
    mine = [m for m in known if family in (efficiency_key(hardware[m.hardware]), hardware[m.hardware].family)]
    if not mine:
        raise InputError(f"no rows of family {family!r} (the rows' families: {', '.join(families)})",
                         field="--family")
    generations = {efficiency_key(hardware[m.hardware]) for m in mine}
    if len(generations) == 1:  # a family named whose rows are all of one generation: that generation's entry
        family = generations.pop()
    return family, mine


# What a user's rows can tell apart at most: the roofline's two efficiencies and the three fixed costs. The rest
# (padded rows, grouped-matmul and precision factors, speculative work, the scheduler's bound, a stack's own values)
# keep the shipped corpus's fit: a few layouts of one model rarely identify them (MODEL.md 12.3). Of these five,
# only those the rows identify are fitted (``planner.measurements.identify``); the others stay at the prior.
MEASURED_PARAMS = ("bandwidth_efficiency", "flops_efficiency", "kernel_latency_s", "step_overhead_s",
                   "collective_latency_s")


def fit_to_measurements(rows, family: str | None = None, hardware_id: str | None = None) -> dict:
    """The fitted parameters of the rows' family: ``{family, hardware, params, fitted, before, at_bound,
    loss_before, loss_after, rows}`` with ``rows`` the comparison before and after; and what the rows identify:
    ``identified`` (the names fitted), ``held`` (name -> why it stays at the prior), ``parameters`` (one row per
    parameter: fitted or held, value, prior, its range, its bounds, bound hit) and ``summary`` (one line)."""
    hardware, models = catalog.hardware_catalog(), catalog.model_catalog()
    missing = sorted({m.model for m in rows if m.model not in models})
    if missing:
        raise InputError(f"model {', '.join(missing)} is not in the catalog", field="--measurements")
    family, mine = family_rows(rows, hardware, family, hardware_id)
    bounds = physical_bounds(family)
    names = list(MEASURED_PARAMS)
    before = dict(family_efficiency(family))
    prior = prior_ranges(family, names, bounds)

    def residuals(eff):
        return measurement_residuals(mine, hardware, models, eff)

    def objective(eff):
        return float(np.sum(residuals(eff) ** 2))

    sigma = {n: prior[n]["sigma_log"] for n in names}
    chosen, held = identify.identified(identify.log_jacobian(residuals, before, names, bounds), names, sigma,
                                       len(mine))
    chosen = [n for n in names if n in chosen]  # in the table's order
    fitted = fit_parameters(objective, chosen, bounds, before) if chosen else dict(before)
    fitted.update({n: before[n] for n in held})  # exactly the prior: the search never moves them, nor may anything
    loss_after = objective(fitted)
    at_bound = [n for n in chosen if math.isclose(fitted[n], bounds[n][0], rel_tol=1e-3)
                or math.isclose(fitted[n], bounds[n][1], rel_tol=1e-3)]
    figures = sum(len(_figures(m)) for m in mine)
    noise = max(identify.MEASUREMENT_LOG_ERROR, math.sqrt(loss_after / max(1, figures - len(chosen))))
    spread = identify.posterior_sigma_log(identify.log_jacobian(residuals, fitted, chosen, bounds),
                                          [sigma[n] for n in chosen], noise)
    table = parameter_rows(names, chosen, held, fitted, before, prior, bounds, dict(zip(chosen, spread)), at_bound)
    return {"family": family, "hardware": sorted({m.hardware for m in mine}), "params": names, "fitted": fitted,
            "before": before, "at_bound": at_bound, "identified": chosen, "held": held,
            "parameters": table, "summary": summary(len(mine), chosen, held),
            "loss_before": objective(before), "loss_after": loss_after,
            "rows": comparison(mine, hardware, models, before, fitted)}


def physical_bounds(family: str) -> dict[str, tuple[float, float]]:
    """Each parameter's physical range (data/calibration.yaml ``bounds``, each with its reason there, narrowed by
    the family's own ``fit`` entry: e.g. a kernel's fixed time at least the measured GEMM's)."""
    _, bounds = fit_spec(family)
    return {n: (float(lo), float(hi)) for n, (lo, hi) in bounds.items()}


def prior_ranges(family: str, names: list[str], bounds: dict) -> dict[str, dict]:
    """Per parameter the shipped prior's range (planner.perf.uncertainty: the fitted points' spread, or a prior's
    factor of two, from data/uncertainty.yaml) within the physical bounds, and its log standard deviation (half the
    log width of the range)."""
    values = family_efficiency(family)
    known = {u.name.split(".", 1)[1]: (u.low, u.high) for u in efficiency_ranges(family)}
    rule = ranges()["efficiency"]["prior"]
    out = {}
    for n in names:
        v = values[n]
        lo, hi = known.get(n, (v * rule["low"], v * rule["high"]))
        lo, hi = max(min(lo, v), bounds[n][0]), min(max(hi, v), bounds[n][1])
        width = math.log(hi / lo) / 2.0 if hi > lo else 0.0
        out[n] = {"low": lo, "high": hi, "sigma_log": width if width > 0 else math.log(2.0)}
    return out


def parameter_rows(names, chosen, held, fitted, before, prior, bounds, spread, at_bound) -> list[dict]:
    """One row per parameter: fitted or held at the prior, its value and the prior's, its range (the fit's,
    one standard deviation each way, or the prior's), its physical bounds and whether the fit ended on one."""
    out = []
    for n in names:
        lo, hi = bounds[n]
        if n in chosen:
            low, high = max(fitted[n] * math.exp(-spread[n]), lo), min(fitted[n] * math.exp(spread[n]), hi)
        else:
            low, high = prior[n]["low"], prior[n]["high"]
        out.append({"parameter": n, "status": "fitted" if n in chosen else "held at prior", "value": fitted[n],
                    "prior": before[n], "low": low, "high": high, "lower_bound": lo, "upper_bound": hi,
                    "at_bound": n in at_bound,
                    "why": _at_bound_why(fitted[n], lo) if n in at_bound else held.get(n)})
    return out


def _at_bound_why(value: float, lower: float) -> str:
    side = "lower" if math.isclose(value, lower, rel_tol=1e-3) else "upper"
    return f"ends at its {side} bound: the rows ask for more than its physics allows (or the model's form misses them)"


def summary(rows: int, chosen: list[str], held: dict) -> str:
    """One line: how many parameters the rows identify, and which stay at the prior."""
    total = len(chosen) + len(held)
    what = f"{rows} row{'s' if rows != 1 else ''} identify "
    if not held:
        return what + f"all {total} parameters"
    what += f"{len(chosen)} of {total} parameters" + (f" ({', '.join(chosen)})" if chosen else "")
    return (what + f"; too few rows, or rows too alike, to fit {', '.join(held)}: "
            f"{'they stay' if len(held) > 1 else 'it stays'} at the shipped prior, with its range")


def comparison(rows, hardware, models, before: dict, after: dict) -> list[dict]:
    out = []
    for m in rows:
        a = predicted(m, hardware[m.hardware], models[m.model], before)
        b = predicted(m, hardware[m.hardware], models[m.model], after)
        for key, measured in _figures(m):
            out.append({"hardware": m.hardware, "model": m.model, "role": m.role, "chips": m.chips,
                        "concurrency": m.concurrency, "input_tokens": m.input_tokens,
                        "output_tokens": m.output_tokens, "figure": key, "measured": measured,
                        "predicted_before": a[key], "error_before_pct": 100.0 * (a[key] / measured - 1.0),
                        "predicted_after": b[key], "error_after_pct": 100.0 * (b[key] / measured - 1.0)})
    return out


def write_efficiency(result: dict, path, source: str, scope: str = "hardware") -> None:
    """The fitted parameters as an efficiency file a scenario can name (``efficiency: FILE``), in the shape of
    planner/data/efficiency.yaml: ``{key: {param: {value, basis}}}``, the key each measured system's id (``scope``
    hardware, the default: the fit speaks for the systems measured, not their whole family) or the family's
    (``scope`` family, asked for)."""
    import yaml

    basis = (f"fitted {_dt.date.today().isoformat()} to {len(result['rows'])} measured figures of {source} "
             f"(planner calibrate --measurements)")
    held = result.get("held", {})
    entry = {n: {"value": float(f"{result['fitted'][n]:.4g}"),
                 "basis": basis if n not in held else f"the shipped prior, held: {len(result['rows'])} measured "
                                                       f"figures of {source} do not identify it ({held[n]})"}
             for n in result["params"]}
    keys = [result["family"]] if scope == "family" else result["hardware"]
    what = f"family {result['family']}" if scope == "family" else "the measured systems only"
    text = (f"# Efficiencies fitted to measurements, for {what}; name this file in a scenario as "
            f"`efficiency: FILE`.\n" + yaml.safe_dump({k: entry for k in keys}, sort_keys=False, width=120))
    atomic_write(Path(path), text.encode())


def read_efficiency(path) -> dict[str, dict[str, float]]:
    """An efficiency file (``write_efficiency``'s, or entries in planner/data/efficiency.yaml's shape): family or
    hardware id -> parameter -> value, each parameter known and within the calibration's bounds."""
    path = Path(path)
    expected = "an efficiency file (family -> {parameter: value})"
    data, _ = yaml_io.parse(read_text(path, expected), str(path), expected)
    if not isinstance(data, dict):
        raise InputError("expected a mapping of family -> {parameter: value}", file=str(path))
    bounds = calibration_data()["bounds"]
    out: dict[str, dict[str, float]] = {}
    for family, params in data.items():
        if family not in efficiency_table() and family not in catalog.hardware_catalog():
            raise InputError(f"unknown hardware family or system; expected a hardware id or one of "
                             f"{', '.join(sorted(efficiency_table()))}", file=str(path), field=str(family))
        if not isinstance(params, dict):
            raise InputError("expected a mapping of parameter -> value", file=str(path), field=str(family))
        out[family] = {}
        for name, value in params.items():
            value = value.get("value") if isinstance(value, dict) else value
            if name not in EFFICIENCY_PARAMS:
                raise InputError(f"unknown parameter; expected one of {', '.join(EFFICIENCY_PARAMS)}",
                                 file=str(path), field=f"{family}.{name}")
            lo, hi = bounds[name]
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not lo <= value <= hi:
                raise InputError(f"expected a number in [{lo:g}, {hi:g}] (the calibration's bounds), got {value!r}",
                                 file=str(path), field=f"{family}.{name}")
            out[family][name] = float(value)
    return out
