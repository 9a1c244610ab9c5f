"""Calibrating the performance model to a user's measurements (docs/MODEL.md 12.3): the same fit as the shipped
calibration (``planner.perf.calibration.fit_parameters``: coarse grid, coordinate descent, Nelder-Mead, the same
parameters and physical bounds per family), with each measured row as a point.

The loss is the sum of squared log errors over the rows of the family: for colocated and decode rows the replica's
output tokens/s and the per-user speed, for prefill rows the prompt tokens/s, each predicted by the model at the
row's own layout, concurrency and lengths (``curves.model_point``). A parameter that ends at its bound is reported
as such: the measurements ask for more than the model's physics allows there.
"""

from __future__ import annotations

import datetime as _dt
import math
from pathlib import Path

from planner import catalog, yaml_io
from planner.errors import InputError
from planner.measurements.curves import model_point
from planner.measurements.reading import read_text
from planner.perf.calibration import calibration_data, fit_parameters, fit_spec
from planner.perf.pack import EFFICIENCY_PARAMS, efficiency_key, efficiency_table, family_efficiency
from planner.writing import atomic_write


def _figures(m) -> list[tuple[str, float]]:
    if m.role == "prefill":
        return [("input_tokens_per_s", float(m.input_tokens_per_s))]
    return [("output_tokens_per_s", float(m.output_tokens_per_s)), ("tps_per_user", m.speed)]


def predicted(m, hw, model, efficiency: dict | None) -> dict:
    return model_point(model, hw, m.precision, m.layout(), m.concurrency, (m.input_tokens, m.output_tokens), m.role,
                       efficiency)


def measurement_loss(rows, hardware: dict, models: dict, efficiency: dict) -> float:
    """Sum of squared log errors of the rows' figures under ``efficiency``."""
    total = 0.0
    for m in rows:
        p = predicted(m, hardware[m.hardware], models[m.model], efficiency)
        for key, measured in _figures(m):
            total += math.log(max(p[key], 1e-12) / measured) ** 2
    return total


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


# What a user's rows can tell apart: the roofline's two efficiencies and the three fixed costs. The rest (padded
# rows, grouped-matmul and precision factors, speculative work, the scheduler's bound, a stack's own values) keep
# the shipped corpus's fit: a few layouts of one model rarely identify them (MODEL.md 12.3).
MEASURED_PARAMS = ("bandwidth_efficiency", "flops_efficiency", "kernel_latency_s", "step_overhead_s",
                   "collective_latency_s")


def fit_to_measurements(rows, family: str | None = None, hardware_id: str | None = None) -> dict:
    """The fitted parameters of the rows' family: ``{family, params, fitted, before, at_bound, loss_before,
    loss_after, rows}`` with ``rows`` the comparison before and after."""
    hardware, models = catalog.hardware_catalog(), catalog.model_catalog()
    missing = sorted({m.model for m in rows if m.model not in models})
    if missing:
        raise InputError(f"model {', '.join(missing)} is not in the catalog", field="--measurements")
    family, mine = family_rows(rows, hardware, family, hardware_id)
    _, bounds = fit_spec(family)
    names = list(MEASURED_PARAMS)  # what a user's rows identify, whatever the shipped fit takes from kernels
    before = dict(family_efficiency(family))

    def objective(eff):
        return measurement_loss(mine, hardware, models, eff)

    fitted = fit_parameters(objective, names, bounds, before)
    at_bound = [n for n in names if math.isclose(fitted[n], bounds[n][0], rel_tol=1e-3)
                or math.isclose(fitted[n], bounds[n][1], rel_tol=1e-3)]
    return {"family": family, "hardware": sorted({m.hardware for m in mine}), "params": names, "fitted": fitted,
            "before": before, "at_bound": at_bound,
            "loss_before": objective(before), "loss_after": objective(fitted),
            "rows": comparison(mine, hardware, models, before, fitted)}


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
    entry = {n: {"value": float(f"{result['fitted'][n]:.4g}"), "basis": basis} for n in result["params"]}
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
