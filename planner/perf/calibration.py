"""Fitting the few physical efficiency parameters of each hardware family to published figures.

The points are in ``data/calibration.yaml``, the fitted values with their provenance in ``data/efficiency.yaml``.
Each family minimises the sum of squared log errors of its points over the parameters it is allowed to fit, within
physical bounds, by coordinate descent on a log scale from the best points of a coarse grid. Nothing is special-cased per model or figure.
"""

from __future__ import annotations

import copy
import datetime as _dt
import functools
import itertools
import math
from pathlib import Path
from typing import Any

import numpy as np
import yaml

from planner import catalog, yaml_io
from planner.perf.frontier import sweep_points
from planner.perf.estimate import batch_ttft_per_layout
from planner.perf.grid import BATCHES, Layouts
from planner.perf.pack import NEUTRAL_EFFICIENCY, efficiency_key, efficiency_table, family_efficiency
from planner.perf.speculative import acceptance_for, speculation
from planner.vocabulary import CLAIM_WEIGHT, DEFAULT_SERVING_STACK, ENGINE_STACKS
from planner.writing import atomic_write, locked



def calibration_data() -> dict:
    """calibration.yaml, parsed once per version of the file (a build-out checks every period's efficiencies
    against its bounds), a copy each call so that no caller changes another's."""
    path = catalog.DATA_DIR / "calibration.yaml"
    stat = path.stat()
    return copy.deepcopy(_calibration_file(str(path), stat.st_mtime_ns, stat.st_size))


@functools.lru_cache(maxsize=2)
def _calibration_file(path: str, mtime_ns: int, size: int) -> dict:
    return catalog._read_yaml(Path(path))


def curves_data() -> dict:
    """curves.yaml (the corpus of curves, MODEL.md 13), parsed once per version of the file, a copy each call."""
    path = catalog.DATA_DIR / "curves.yaml"
    stat = path.stat()
    return copy.deepcopy(_calibration_file(str(path), stat.st_mtime_ns, stat.st_size))


def curve_points(curve: dict) -> list[dict]:
    """A curve's points as calibration points: the curve's conditions with each point's concurrency and figure;
    the id is the curve's, with ``@c<concurrency>`` where it has several points. ``curve`` names the curve: a curve
    is fitted or held out whole."""
    shared = {k: v for k, v in curve.items() if k not in ("points", "conversion")}
    pts = curve["points"]
    out = []
    for p in pts:
        point = {**shared, "curve": curve["id"], **p}
        if len(pts) > 1:
            point["id"] = f"{curve['id']}@c{p['concurrency']}"
        out.append(point)
    return out


def points() -> list[dict]:
    """The corpus: calibration.yaml's figures, then every point of curves.yaml's curves."""
    return calibration_data()["points"] + [p for c in curves_data()["curves"] for p in curve_points(c)]


def predict(point: dict, efficiency: dict[str, float] | None = None) -> dict:
    """The model's figure for one calibration point, with the configuration that achieves it."""
    model = catalog.get_model(point["model"])
    hw = catalog.get_hardware(point["hardware"])
    stack = point_stack(point)
    eff = stack_view(efficiency, stack) if efficiency is not None else family_efficiency(efficiency_key(hw), stack)
    if not catalog.runs_precision(hw, model, point["precision"]):
        return {"predicted": 0.0, "config": f"{hw.id} lists no {point['precision']} format"}
    if hw.model_lock is not None and hw.model_lock != model.id:
        return {"predicted": 0.0, "config": f"{hw.id} serves only {hw.model_lock}"}
    return PREDICTORS[point["metric"]](point, model, hw, eff)


def point_stack(point: dict) -> str:
    """The serving stack a point was measured on: its engine's own (``ENGINE_STACKS``), else vendor-best."""
    return ENGINE_STACKS.get(point.get("engine", ""), DEFAULT_SERVING_STACK)


def stack_view(efficiency: dict[str, float], stack: str) -> dict[str, float]:
    """Efficiencies as a point of ``stack`` sees them: the plain names, with any ``STACK:name`` of its stack over
    them (the fit carries a stack's own parameters under such names beside the vendor-best ones)."""
    plain = {k: v for k, v in efficiency.items() if ":" not in k}
    prefix = stack + ":"
    plain.update({k[len(prefix):]: v for k, v in efficiency.items() if k.startswith(prefix)})
    return plain


def point_speculation(point: dict):
    """The speculative setting a point was measured with (``speculative: {method, draft_tokens, acceptance}``),
    none by default: a speculative record is predicted with its drafter costed (MODEL.md 3.4). An acceptance comes
    from the point (``acceptance``, or ``accepted_tokens_per_step`` at its draft length), else from the published
    figures for its model (data/speculative.yaml), else the default."""
    spec = point.get("speculative") or {}
    acceptance = spec.get("acceptance")
    if acceptance is None and spec.get("accepted_tokens_per_step") is not None:
        acceptance = acceptance_for(int(spec["draft_tokens"]), float(spec["accepted_tokens_per_step"]))
    return speculation(spec.get("method"), spec.get("draft_tokens"), acceptance, spec.get("draft_model"),
                       model=point["model"])


def _layouts_of(point: dict, s: dict) -> dict:
    """The sweep's points on the layout the figure was measured at: its tensor-parallel degree (``tp``) and its
    expert layout where it states one (``ep: 0``: attention tensor-parallel, experts sharded with it, as vLLM's plain
    ``-tp N`` runs; ``ep: 1``: attention data-parallel with expert parallelism)."""
    keep = np.ones(len(s["tp"]), dtype=bool)
    if point.get("tp") is not None:
        keep &= s["tp"] == int(point["tp"])
    if _pinned_ep(point) is not None:
        keep &= s["ep"] == _pinned_ep(point)
    return {k: (v[keep] if isinstance(v, np.ndarray) else v) for k, v in s.items()}


def _pinned_ep(point: dict) -> int | None:
    """0 or 1 where a point pins its expert layout; a larger ``ep`` is the expert-parallel size its source
    recorded (data/calibration.yaml's header), not a pin."""
    ep = point.get("ep")
    return int(ep) if ep is not None and int(ep) in (0, 1) else None


def _predict_per_user(point, model, hw, eff) -> dict:
    s = _layouts_of(point, sweep_points(model, hw, point["precision"], point["input_tokens"], point["output_tokens"],
                                        efficiency=eff, chips=point.get("chips"), batches=np.array([1.0]),
                                        spec=point_speculation(point),
                                        layouts=Layouts(point_stack(point))))
    if len(s["tps_per_user"]) == 0:
        return {"predicted": 0.0, "config": "does not fit"}
    i = int(np.argmax(s["tps_per_user"]))
    return {"predicted": float(s["tps_per_user"][i]), "config": _config(s, i)}


def _replica_sweeps(point, model, hw, eff, batches_of):
    """(replicas, sweep) for each replica size that divides the point's ``chips`` (and is a multiple of its ``tp``):
    the sweep of one replica at the batches ``batches_of(replicas)`` gives."""
    total = int(point["chips"])
    for replica in (r for r in range(1, total + 1) if total % r == 0):
        if point.get("tp") is not None and replica % int(point["tp"]):
            continue
        n = total // replica
        yield n, _layouts_of(point, sweep_points(model, hw, point["precision"], point["input_tokens"],
                                                 point["output_tokens"], efficiency=eff, chips=replica,
                                                 batches=batches_of(n), spec=point_speculation(point),
                                                 layouts=Layouts(point_stack(point))))


def _best_system(point, model, hw, eff, rate_of, ok_of) -> dict:
    """The most output tokens/s of the point's chips in equal replicas (``rate_of`` a replica's sweep), over every
    batch and layout ``ok_of`` admits."""
    best, where = 0.0, "no layout meets the condition"
    for n, s in _replica_sweeps(point, model, hw, eff, lambda n: BATCHES):
        ok = ok_of(s)
        if not ok.any():
            continue
        system = rate_of(s) * n
        i = int(np.argmax(np.where(ok, system, -1.0)))
        if system[i] > best:
            best, where = float(system[i]), f"{n} x ({_config(s, i)})"
    return {"predicted": best, "config": where}


def _predict_throughput(point, model, hw, eff) -> dict:
    """Colocated output tokens/s (prefill included) under the point's speed and TTFT limits."""
    return _best_system(point, model, hw, eff, lambda s: s["output_tokens_per_s"],
                        lambda s: (s["tps_per_user"] >= point.get("min_tps_per_user", 0.0))
                        & (s["ttft_s"] <= point.get("max_ttft_s", math.inf)))


def _predict_decode_throughput(point, model, hw, eff) -> dict:
    """Output tokens/s of ``chips`` chips decoding only (their prompts prefilled elsewhere, as in a disaggregated
    decode pool), over every batch and layout that meets ``min_tps_per_user``."""
    return _best_system(point, model, hw, eff, lambda s: s["decode_tps_per_user"] * s["batch"],
                        lambda s: s["decode_tps_per_user"] >= point.get("min_tps_per_user", 0.0))


def _at_concurrency(point, model, hw, eff) -> tuple[float, float, str]:
    """(tokens/s per user, streams served, configuration) of ``concurrency`` streams on ``chips`` chips, over the
    replica sizes that divide them (each replica an equal share of the streams) and the layouts the point allows, the
    configuration that serves the most output tokens/s. A closed-loop client's streams beyond what a replica admits
    (its memory, its scheduler's bound) wait for a slot: the replica serves the largest batch that fits (MODEL.md
    13), so the figure is that batch's, not "does not fit"."""
    streams = float(point["concurrency"])
    best = (0.0, 0.0, "does not fit")
    for n, s in _replica_sweeps(point, model, hw, eff, lambda n: _admissible(max(streams / n, 1.0))):
        if not len(s["tps_per_user"]):
            continue
        served = n * _largest_admitted(s)
        rate = served * s["tps_per_user"]
        i = int(np.argmax(rate))
        if rate[i] > best[0] * best[1]:
            best = (float(s["tps_per_user"][i]), float(served[i]), f"{n} x ({_config(s, i)})")
    return best


def _admissible(streams: float) -> np.ndarray:
    """The batches a replica offered ``streams`` streams may run: all of them, or a smaller batch of the grid."""
    return np.unique(np.append(BATCHES[BATCHES < streams], streams))


def _largest_admitted(s: dict) -> np.ndarray:
    """Per row of a sweep over ``_admissible`` batches, the row's batch where it is its layout's largest that fits,
    else 0: only the largest admitted batch of each layout (and drafter setting) serves."""
    keys = list(zip(s["tp"], s["pp"], s["ep"], s["draft_tokens"]))
    largest: dict = {}
    for key, b in zip(keys, s["streams"]):
        largest[key] = max(largest.get(key, 0.0), b)
    return np.array([b if b == largest[key] else 0.0 for key, b in zip(keys, s["streams"])])


def _predict_per_user_at_concurrency(point, model, hw, eff) -> dict:
    tps, _, where = _at_concurrency(point, model, hw, eff)
    return {"predicted": tps, "config": where}


def _predict_throughput_at_concurrency(point, model, hw, eff) -> dict:
    tps, served, where = _at_concurrency(point, model, hw, eff)
    return {"predicted": tps * served, "config": where}


def _predict_ttft(point, model, hw, eff) -> dict:
    """Time to first token on one replica of ``chips`` chips when ``concurrency`` prompts (default 1: a lone
    request) arrive together, on the replica's fastest layout for it (the point's ``tp`` where it says one):
    ``estimate.batch_ttft_s``."""
    grid = Layouts(point_stack(point)).grid(hw, model, point.get("chips"))
    if point.get("tp") is not None:
        grid = grid[grid[:, 0] == int(point["tp"])]
    if _pinned_ep(point) is not None:
        grid = grid[grid[:, 2] == _pinned_ep(point)]
    prompts = float(point.get("concurrency", 1))
    if len(grid) == 0:
        return {"predicted": 0.0, "config": "does not fit"}
    times = batch_ttft_per_layout(model, hw, point["precision"], grid, point["input_tokens"], prompts, eff)
    i = int(np.argmin(times))
    tp, pp, ep = grid[i]
    return {"predicted": float(times[i]),
            "config": f"tp{int(tp)} pp{int(pp)}{' ep' if ep else ''} {int(prompts)} prompts {point['precision']}"}


def _predict_speedup(point, model, hw, eff) -> dict:
    """Speculative over plain per-user speed at ``concurrency`` streams on ``chips`` chips: each side on its own
    best layout."""
    plain = {k: v for k, v in point.items() if k != "speculative"}
    fast, _, where = _at_concurrency(point, model, hw, eff)
    slow, _, _ = _at_concurrency(plain, model, hw, eff)
    return {"predicted": fast / slow if slow > 0 else 0.0, "config": where}


# What each metric of a calibration point means (data/calibration.yaml's header), and how the model predicts it.
PREDICTORS = {
    "per_user": _predict_per_user,
    "system_throughput": _predict_throughput,
    "decode_throughput": _predict_decode_throughput,
    "per_user_at_concurrency": _predict_per_user_at_concurrency,
    "throughput_at_concurrency": _predict_throughput_at_concurrency,
    "ttft": _predict_ttft,
    "speedup": _predict_speedup,
}


def _config(s: dict, i: int) -> str:
    ep = " ep" if s["ep"][i] else ""
    draft = f" draft {s['draft_tokens'][i]}" if s["draft_tokens"][i] else ""
    return f"tp{s['tp'][i]} pp{s['pp'][i]}{ep} batch {s['batch'][i]} {s['precision']}{draft}"


def log_error(predicted: float, published: float) -> float:
    return math.log(max(predicted, 1e-9) / published)


# Efficiencies of a machine with no overheads: a published figure above this roofline cannot be fitted.
# Every optional mechanism off (NEUTRAL_EFFICIENCY) but the stack's prefill batching, which is no inefficiency.
IDEAL = {"bandwidth_efficiency": 1.0, "flops_efficiency": 1.0, "kernel_latency_s": 0.0, "step_overhead_s": 0.0,
         "collective_latency_s": 0.0, "prefill_kernel_latency_s": 0.0,
         **{k: v for k, v in NEUTRAL_EFFICIENCY.items() if k != "prefill_tokens_per_pass"}}


def ideal_prediction(point: dict) -> float:
    hw = catalog.get_hardware(point["hardware"])
    eff = {**family_efficiency(efficiency_key(hw)), **IDEAL}
    return predict(point, eff)["predicted"]


# Metrics whose figure is a time (lower is faster), and ratios that perfect efficiency does not bound.
LOWER_IS_FASTER = ("ttft",)
UNBOUNDED = ("speedup",)


def above_roofline(point: dict) -> bool:
    """True if the published figure beats the model with perfect efficiency on the catalog's hardware figures:
    the point's condition must include something the model does not (e.g. speculative decoding), so it is shown
    but not fitted."""
    if point["metric"] in UNBOUNDED:
        return False
    ideal = ideal_prediction(point)
    if point["metric"] in LOWER_IS_FASTER:
        return 0.0 < point["published"] < ideal
    return point["published"] > ideal


def family_points(family: str, fitted_only: bool = True) -> list[dict]:
    mine = [p for p in points() if efficiency_key(catalog.get_hardware(p["hardware"])) == family]
    return [p for p in mine if is_fitted(p)] if fitted_only else mine


def is_fitted(point: dict) -> bool:
    """A point the fit uses: not held out (the ledger's out-of-sample quarter), not excluded for its conditions,
    and not beyond what perfect efficiency reaches."""
    return not point.get("held_out", False) and point.get("fit", True) and not above_roofline(point)


def weight(point: dict) -> float:
    """A point's weight in the loss: 1 for a measurement, ``CLAIM_WEIGHT`` for a vendor's claim."""
    return CLAIM_WEIGHT if point.get("kind", "measured") == "claim" else 1.0


def loss(pts: list[dict], eff: dict[str, float]) -> float:
    """Weighted sum of squared log errors of ``pts`` under efficiencies ``eff``."""
    return sum(weight(p) * log_error(predict(p, eff)["predicted"], p["published"]) ** 2 for p in pts)


REFIT_GAIN = 0.01  # in summed squared log error: about 10% on one point
COARSE_EVALUATIONS = 2048  # coarse-grid size: 45 levels for two parameters, 12 for three, 4 for five, 2 for eight


def fit_family(family: str, sweeps: int = 5, steps: int = 9, starts: int = 4) -> dict[str, float]:
    """The family's parameters that minimise ``loss`` over its published points within their bounds
    (``fit_parameters``)."""
    pts = family_points(family)
    names, bounds = fit_spec(family)
    return fit_parameters(lambda eff: loss(pts, eff), names, bounds, fit_start(family, names), sweeps, steps, starts)


def fit_start(family: str, names: list[str]) -> dict[str, float]:
    """The family's current values, vendor-best, with each fitted ``STACK:name`` at that stack's current value."""
    current = dict(family_efficiency(family))
    if "prefill_kernel_latency_s" in names:  # unstated, a prompt pass's kernels take the decode step's latency
        current.setdefault("prefill_kernel_latency_s", current["kernel_latency_s"])
    for name in names:
        if ":" in name:
            stack, param = name.split(":", 1)
            current[name] = family_efficiency(family, stack)[param]
    return current


def fit_spec(family: str) -> tuple[list[str], dict]:
    """(parameters fitted, their bounds) of a family: its own entry in calibration.yaml's ``fit``, else that of
    the family it inherits from, else all five; bounds the shared ones with the entry's own."""
    from planner.perf.pack import EFFICIENCY_PARAMS

    spec = calibration_data()
    entry, name = spec["fit"].get(family), family
    while entry is None and "inherits" in efficiency_table().get(name, {}):
        name = efficiency_table()[name]["inherits"]
        entry = spec["fit"].get(name)
    entry = entry or {"params": list(EFFICIENCY_PARAMS)}
    bounds = {**spec["bounds"], **entry.get("bounds", {})}
    for name in entry["params"]:  # a stack's own parameter takes the parameter's bounds
        if ":" in name:
            bounds.setdefault(name, bounds[name.split(":", 1)[1]])
    return list(entry["params"]), bounds


def fit_parameters(objective, names: list[str], bounds: dict, current: dict[str, float], sweeps: int = 5,
                   steps: int = 9, starts: int = 4) -> dict[str, float]:
    """The values of ``names`` that minimise ``objective(efficiencies)`` within ``bounds``, from ``current``.

    The loss is piecewise smooth (each point's best layout and batch change at thresholds), so one descent can stop
    in a local minimum. The current values are refined by coordinate descent on a log grid that halves around the
    best value each sweep, then polished by Nelder-Mead; so are the ``starts`` best points of a coarse grid
    (interior log levels per parameter, every combination, about ``COARSE_EVALUATIONS`` in all). The best of them
    replaces the current values only if it lowers the loss by more than ``REFIT_GAIN``. Deterministic: no random
    starts."""
    # A stack's own value (``STACK:name``, set by a handful of that stack's points) is not gridded: it starts from
    # its current value in every start and is refined by the descents, so the grid stays the family's size.
    gridded = [n for n in names if ":" not in n]
    per_param = max(2, int(COARSE_EVALUATIONS ** (1.0 / max(1, len(gridded)))))
    levels = [np.exp(np.linspace(math.log(bounds[n][0]), math.log(bounds[n][1]), per_param + 2)[1:-1])
              if n in gridded else np.array([current[n]]) for n in names]
    coarse = []
    for combo in itertools.product(*levels):
        eff = {**current, **dict(zip(names, map(float, combo)))}
        coarse.append((objective(eff), eff))
    coarse.sort(key=lambda s: s[0])
    kept = _polish(objective, _descend(objective, current, names, bounds, sweeps, steps), names, bounds)
    others = [_polish(objective, _descend(objective, eff, names, bounds, sweeps, steps), names, bounds)
              for _, eff in coarse[:starts]]
    best = min([kept, *others], key=objective)
    # Few points can leave a valley of equally good fits (two points, two parameters): a refit moves off the
    # current values only for a real gain, so rerunning it does not wander along the valley.
    return best if objective(best) < objective(current) - REFIT_GAIN else current


def _descend(objective, eff, names, bounds, sweeps, steps) -> dict[str, float]:
    """Coordinate descent from ``eff``: each parameter in turn takes the best of ``steps`` log-spaced values around
    it (first spanning a factor of 4), clipped to its bounds."""
    eff = dict(eff)
    width = {n: math.log(4.0) for n in names}
    for _ in range(sweeps):
        for n in names:
            lo, hi = bounds[n]
            centre = math.log(min(max(eff[n], lo), hi))
            grid = np.exp(np.linspace(centre - width[n] / 2, centre + width[n] / 2, steps))
            grid = np.unique(np.clip(grid, lo, hi))
            scores = [objective({**eff, n: float(v)}) for v in grid]
            eff[n] = float(grid[int(np.argmin(scores))])
            width[n] /= 2.0
    return eff


def _polish(objective, eff, names, bounds, iterations: int = 300) -> dict[str, float]:
    """Nelder-Mead from ``eff`` in the logarithms of ``names``, clipped to the bounds: it follows the diagonal
    valleys (a faster memory traded for a slower fixed cost) along which coordinate descent only crawls."""

    def values(z):
        return {n: float(min(max(math.exp(v), bounds[n][0]), bounds[n][1])) for n, v in zip(names, z)}

    def f(z):
        return objective({**eff, **values(z)})

    z, best = np.log([eff[n] for n in names]), f(np.log([eff[n] for n in names]))
    for _ in range(RESTARTS):  # a fresh simplex leaves a kink (a kernel group's roofline turning) it stalled on
        z_next, value = nelder_mead(f, z, iterations)
        if value >= best - 1e-12 * max(1.0, abs(best)):
            break
        z, best = z_next, value
    polished = {**eff, **values(z)}
    return polished if objective(polished) <= objective(eff) else eff


RESTARTS = 3


def nelder_mead(f, x0, iterations, step=0.1, spread=1e-10):
    """Minimum of ``f`` from ``x0`` by the Nelder-Mead simplex (reflect 1, expand 2, contract and shrink 1/2)."""
    simplex = [np.array(x0, dtype=float)]
    for i in range(len(x0)):
        x = np.array(x0, dtype=float)
        x[i] += step
        simplex.append(x)
    vals = [f(x) for x in simplex]
    for _ in range(iterations):
        order = np.argsort(vals)
        simplex, vals = [simplex[i] for i in order], [vals[i] for i in order]
        if vals[-1] - vals[0] < spread:
            break
        centroid = np.mean(simplex[:-1], axis=0)
        reflected = 2.0 * centroid - simplex[-1]
        f_r = f(reflected)
        if f_r < vals[0]:
            expanded = 3.0 * centroid - 2.0 * simplex[-1]
            f_e = f(expanded)
            simplex[-1], vals[-1] = (expanded, f_e) if f_e < f_r else (reflected, f_r)
        elif f_r < vals[-2]:
            simplex[-1], vals[-1] = reflected, f_r
        else:
            contracted = 0.5 * (centroid + simplex[-1])
            f_c = f(contracted)
            if f_c < vals[-1]:
                simplex[-1], vals[-1] = contracted, f_c
            else:
                simplex = [simplex[0]] + [0.5 * (simplex[0] + x) for x in simplex[1:]]
                vals = [vals[0]] + [f(x) for x in simplex[1:]]
    best = int(np.argmin(vals))
    return simplex[best], vals[best]


def write_fit(families: list[str] | None = None) -> None:
    """Refit ``families`` (default: every family named in calibration.yaml) and rewrite data/efficiency.yaml with
    provenance: each family fitted first, then, under the file's lock, the file read again, the fitted values set
    and the file replaced atomically (a concurrent writer's values are kept, not overwritten by a stale copy)."""
    path = catalog.DATA_DIR / "efficiency.yaml"
    for family in families or calibration_data()["fit"]:
        fitted = fit_family(family)
        ids = [p["id"] for p in family_points(family)]
        with locked(path):
            table = yaml_io.load_trusted(path)
            for name in calibration_data()["fit"][family]["params"]:
                entry: dict[str, Any] = {"value": float(f"{fitted[name]:.4g}"),
                         "basis": f"fitted {_dt.date.today().isoformat()} to the family's {len(ids)} fitted points "
                                  f"of data/calibration.yaml (split fitted in planner calibrate --ledger)"}
                if ":" in name:  # a stack's own value, beside the vendor-best one
                    stack, param = name.split(":", 1)
                    entry["basis"] += f", those measured on {stack} setting it"
                    table[family].setdefault("stacks", {}).setdefault(stack, {})[param] = entry
                else:
                    table[family][name] = entry
            try:
                atomic_write(path, (_header(path) + yaml.safe_dump(table, sort_keys=False, width=120)).encode())
            except OSError as exc:
                from planner.errors import PlannerError

                raise PlannerError(f"cannot write {path} ({exc.strerror or exc}): --write refits the installed "
                                   f"catalog, which must be writable") from None
        efficiency_table.cache_clear()


def _header(path) -> str:
    lines = []
    for line in path.read_text().splitlines():
        if not line.startswith("#"):
            break
        lines.append(line)
    return "\n".join(lines) + "\n"


def _why_not(point: dict) -> str | None:
    if point.get("held_out"):
        return "held out of every fit (the ledger's out-of-sample quarter)"
    if not point.get("fit", True):
        return point.get("fit_reason", "excluded")
    if above_roofline(point):
        return "above the ideal roofline of the catalog figures"
    return None


def comparison() -> list[dict]:
    """Predicted against published for every point, with the error."""
    rows = []
    for p in points():
        pred = predict(p)
        rows.append({
            "id": p["id"],
            "model": p["model"],
            "hardware": p["hardware"],
            "metric": p["metric"],
            "published": float(p["published"]),
            "predicted": pred["predicted"],
            "error_pct": 100.0 * (pred["predicted"] / p["published"] - 1.0),
            "config": pred["config"],
            "confidence": p.get("confidence", p.get("kind", "measured")),
            "ideal_roofline": ideal_prediction(p),
            "fitted": is_fitted(p),
            "why_not_fitted": _why_not(p),
        })
    return rows
