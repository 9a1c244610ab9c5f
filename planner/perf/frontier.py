"""``frontier``: per system, the Pareto frontier of output tokens/s per MW of rack power against tokens/s per user
(interface: ``planner frontier``), on the shared search space (``planner.perf.grid``). The points come from the
sweep drivers (``solvers.perf.sweep.colocated_points``, ``split_decode_sweep``); calibration reads the same
sweeps."""

from __future__ import annotations

import numpy as np

from planner import catalog
from planner.catalog import Hardware, Model
from planner.errors import InputError
from planner.hf_config import model_from_config
from planner.perf.estimate import check_id, check_pair, check_positive, check_split, parse_pair, spec_tokens
from planner.perf.speculative import NONE, Speculation, draft_vector, speculation
from planner.perf.grid import BATCHES, MICRO_BATCHES, Layouts, parallel_grid, split_grid
from planner.perf.pack import hardware_vector, model_vector, split_model_vectors, workload_vector
from planner.perf.uncertainty import band, uncertain_quantities
from planner.vocabulary import (
    DEFAULT_DRAFT_TOKENS,
    DEFAULT_INPUT_TOKENS,
    DEFAULT_OUTPUT_TOKENS,
    DEFAULT_SPECULATIVE,
    TIERS,
    tier_of,
)
from solvers.perf import slots as L


def sweep_points(model: Model, hw: Hardware, precision: str, input_tokens: int, output_tokens: int,
                 efficiency: dict[str, float] | None = None, chips: int | None = None,
                 batches: np.ndarray = BATCHES, spec: Speculation = NONE, layouts: Layouts = Layouts()) -> dict:
    """Every fitting (tp, pp, ep, batch, draft tokens) of one system at one precision (replicas of ``chips`` chips
    if given, on the layouts ``layouts`` allows), with per-user speed, TTFT and output tokens/s per MW including
    the replica's own prefill work."""
    return merged_sweeps([_sweep_points(model, hw, precision, input_tokens, output_tokens, efficiency, chips, batches,
                                        spec, k, a, layouts) for k, a in spec.settings()])


def merged_sweeps(sweeps: list[dict]) -> dict:
    """Sweeps of one system (or pair) at several speculative settings as one: their point arrays concatenated."""
    return {key: (sweeps[0][key] if key in ("hardware", "precision") else np.concatenate([x[key] for x in sweeps]))
            for key in sweeps[0]}


def _sweep_points(model, hw, precision, input_tokens, output_tokens, efficiency, chips, batches, spec, k,
                  acceptance, layouts) -> dict:
    from solvers.perf.sweep import colocated_points

    grid = layouts.grid(hw, model, chips)
    mv, hv = model_vector(model), hardware_vector(hw, precision, efficiency)
    wl = workload_vector(input_tokens, output_tokens)
    nb = len(batches)
    _, accepted = spec_tokens(k, acceptance)
    res = colocated_points(mv, hv, wl, grid, np.asarray(batches, dtype=np.float64), float(k), accepted,
                           draft_vector(model, spec))
    tp, pp, ep = (np.repeat(grid[:, j], nb) for j in range(3))
    streams = np.tile(batches, len(grid))
    keep = res[:, L.P_FITS] > 0.5
    mw = res[:, L.P_POWER_W] / 1e6
    return {
        "hardware": hw.id,
        "precision": precision,
        "draft_tokens": np.full(int(keep.sum()), k, dtype=int),
        "tp": tp[keep].astype(int),
        "pp": pp[keep].astype(int),
        "ep": ep[keep].astype(int),
        "batch": streams[keep].astype(int),
        "streams": streams[keep],
        "chips": (tp * pp)[keep].astype(int),
        "tps_per_user": res[keep, L.P_TPS_PER_USER],
        "decode_tps_per_user": res[keep, L.P_DECODE_TPS_PER_USER],
        "output_tokens_per_s": res[keep, L.P_TOKENS_PER_S],
        "ttft_s": res[keep, L.P_TTFT_S],
        "output_tokens_per_s_per_mw": (res[:, L.P_TOKENS_PER_S] / mw)[keep],
        "decode_tokens_per_s_per_mw": (res[:, L.P_DECODE_TOKENS_PER_S] / mw)[keep],
        "bound": res[keep, L.P_BOUND].astype(int),
    }


def pareto_mask(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Points not dominated in (x, y), both maximised: sort by x descending, keep strict new maxima of y."""
    order = np.lexsort((-y, -x))
    keep = np.zeros(len(x), dtype=bool)
    best = -np.inf
    for i in order:
        if y[i] > best:
            keep[i] = True
            best = y[i]
    return keep


def prefill_mw_per_token_per_s(model: Model, hw: Hardware, precision: str, input_tokens: int) -> float:
    """MW of rack power per prompt token/s on the system's most power-efficient prefill layout that fits."""
    from solvers.perf.sweep import prefill_per_layout

    from solvers.perf.serving import replica_power_w

    grid = parallel_grid(hw, model)
    hv = hardware_vector(hw, precision)
    pre = prefill_per_layout(model_vector(model), hv, grid, float(input_tokens))
    per_chip = np.where(pre[:, 0] > 0, pre[:, 0] / (grid[:, 0] * grid[:, 1]), 0.0)
    best = float(per_chip.max(initial=0.0))
    if best <= 0:
        raise InputError(f"{model.id} does not fit any prefill replica of {hw.id}")
    return replica_power_w(hv, 1.0) / best / 1e6


def split_sweep_points(model: Model, hw_a: Hardware, hw_f: Hardware, prec_a: str, prec_f: str,
                       input_tokens: int, output_tokens: int, batches: np.ndarray = BATCHES,
                       spec: Speculation = NONE) -> dict:
    """Every fitting (attention chips, FFN chips, attention mode, batch, draft tokens) of an A+F pair."""
    return merged_sweeps([_split_sweep_points(model, hw_a, hw_f, prec_a, prec_f, input_tokens, output_tokens, batches,
                                              spec, k, a) for k, a in spec.settings()])


def _split_sweep_points(model, hw_a, hw_f, prec_a, prec_f, input_tokens, output_tokens, batches, spec, k,
                        acceptance) -> dict:
    """Every fitting (attention chips, FFN chips, attention mode, batch) of an A+F pair, with per-user speed and
    output tokens/s per MW counting a separate prefill pool of A (MODEL.md 10)."""
    from solvers.perf.sweep import split_decode_sweep

    attn, ffn = split_model_vectors(model)
    ha, hf = hardware_vector(hw_a, prec_a), hardware_vector(hw_f, prec_f)
    grid = split_grid(hw_a, hw_f, model)
    nb = len(batches)
    ca, cf, ep = (np.repeat(grid[:, j], nb) for j in range(3))
    streams = np.tile(batches, len(grid))
    wl = workload_vector(input_tokens, output_tokens)
    _, accepted = spec_tokens(k, acceptance)
    res = split_decode_sweep(attn, ffn, draft_vector(model, spec), ha, hf, ca, cf, ep, streams, wl[L.W_CONTEXT_AVG],
                             wl[L.W_CONTEXT_MAX], float(k), accepted, MICRO_BATCHES)
    keep = (res[:, L.S_FITS_ATTENTION] > 0.5) & (res[:, L.S_FITS_FFN] > 0.5)
    decode_mw = res[:, L.S_POWER_W] / 1e6 / res[:, L.S_TOKENS_PER_S]  # MW per output token/s
    prefill_mw = prefill_mw_per_token_per_s(model, hw_a, prec_a, input_tokens) * input_tokens / output_tokens
    return {
        "hardware": f"{hw_a.id}+{hw_f.id}", "precision": f"{prec_a}+{prec_f}",
        "draft_tokens": np.full(int(keep.sum()), k, dtype=int),
        "tp": ca[keep].astype(int), "pp": np.ones(int(keep.sum()), dtype=int), "ep": ep[keep].astype(int),
        "ffn_chips": cf[keep].astype(int), "batch": streams[keep].astype(int),
        "chips": (ca + cf)[keep].astype(int), "tps_per_user": res[keep, L.S_TPS_PER_USER],
        "output_tokens_per_s_per_mw": 1.0 / (decode_mw + prefill_mw)[keep],
        "decode_tokens_per_s_per_mw": 1.0 / decode_mw[keep],
        "bound": np.zeros(int(keep.sum()), dtype=int),
    }


def frontier(model: str, hardware: list[str] | None = None, precision: str | None = None,
             input_tokens: int = DEFAULT_INPUT_TOKENS, output_tokens: int = DEFAULT_OUTPUT_TOKENS,
             speculative: str = DEFAULT_SPECULATIVE, draft_tokens: int | str | None = DEFAULT_DRAFT_TOKENS,
             acceptance: float | None = None, draft_model: str | None = None) -> list[dict]:
    """Per hardware, the Pareto frontier of output tokens/s per MW against tokens/s per user (interface:
    ``planner frontier``), with speculative decoding as ``estimate`` takes it (``auto``: every draft length, the
    frontier of them all). Hardware that cannot serve the model (model lock, prefill-only, no fit) is skipped.
    Arguments of the wrong type are an InputError naming the argument."""
    if not isinstance(model, str):
        raise InputError(f"expected one model id, got {type(model).__name__} {model!r:.60}", field="model")
    if not (hardware is None or isinstance(hardware, str) or (
            isinstance(hardware, (list, tuple)) and all(isinstance(h, str) and h for h in hardware))):
        raise InputError(f"expected a hardware id, a list of them or None (every system), got "
                         f"{type(hardware).__name__} {hardware!r:.60}", field="hardware")
    check_id(precision, "precision", "a precision", optional=True)
    check_id(draft_model, "draft_model", "the drafter's model id", optional=True)
    spec = speculation(speculative, draft_tokens, acceptance, draft_model,
                       model=model if isinstance(model, str) else None)
    m = model_from_config(model) if model.endswith(".json") else catalog.get_model(model)  # a config: issue 45
    draft_vector(m, spec)  # a drafter that cannot apply to this model is an error before any sweep
    check_positive(input_tokens=input_tokens, output_tokens=output_tokens)
    if isinstance(hardware, str):
        hardware = [hardware]
    if hardware is not None and len(hardware) == 0:
        raise InputError("an empty list of hardware: give ids, or None for every system that serves the model",
                         field="hardware")
    ids = hardware or sorted(catalog.hardware_catalog())
    points: list[dict] = []
    for hw_id in ids:
        a_id, f_id = parse_pair(hw_id)
        if f_id is not None:
            points.extend(_pair_frontier(m, a_id, f_id, precision, input_tokens, output_tokens, spec))
            continue
        hw = catalog.get_hardware(hw_id)
        if hardware is None and (not _serves(hw, m) or (precision and not catalog.runs_precision(hw, m, precision))):
            continue
        if "decode" not in hw.roles:
            raise InputError(f"{hw.id} takes only the {', '.join(hw.roles)} role(s): it has no decode frontier",
                             field="hardware")
        precs = [precision] if precision else catalog.runnable_precisions(hw, m)
        for prec in precs:
            check_pair(hw, m, prec)
        sweeps = [sweep_points(m, hw, p, input_tokens, output_tokens, spec=spec) for p in precs]
        points.extend(with_bands(_frontier_of(sweeps), m, hw, spec, input_tokens, output_tokens))
    return points


def with_bands(points: list[dict], model: Model, hw: Hardware, spec: Speculation, input_tokens: int,
               output_tokens: int) -> list[dict]:
    """Each frontier point with the low and high of its per-user speed and tokens/s per MW over the uncertain
    figures and efficiencies behind it, one at a time, and the one that moves tokens/s per MW most (MODEL.md 11)."""
    from solvers.perf.sweep import colocated_point_per_hardware

    mv, wl, draft = model_vector(model), workload_vector(input_tokens, output_tokens), draft_vector(model, spec)
    by_precision = {}
    for p in points:
        prec = p["precision"]
        if prec not in by_precision:
            by_precision[prec] = (hardware_vector(hw, prec), uncertain_quantities(hw, prec))
        hv, quantities = by_precision[prec]
        layout = np.array([p["tensor_parallel"], p["pipeline_parallel"], float(p["expert_parallel"])], dtype=float)
        _, accepted = spec_tokens(p["draft_tokens"], spec.acceptance_at(int(p["draft_tokens"])))

        def evaluate_many(vectors, layout=layout, batch=float(p["batch"]), k=float(p["draft_tokens"]), a=accepted):
            rows = colocated_point_per_hardware(mv, vectors, wl, layout, batch, k, a, draft)
            per_mw = rows[:, L.P_TOKENS_PER_S] / (rows[:, L.P_POWER_W] / 1e6)
            return [{"tps_per_user": float(t), "output_tokens_per_s_per_mw": float(w)}
                    for t, w in zip(rows[:, L.P_TPS_PER_USER], per_mw)]

        b = band(evaluate_many, hv, quantities)
        p.update(tps_per_user_low=b["low"]["tps_per_user"], tps_per_user_high=b["high"]["tps_per_user"],
                 output_tokens_per_s_per_mw_low=b["low"]["output_tokens_per_s_per_mw"],
                 output_tokens_per_s_per_mw_high=b["high"]["output_tokens_per_s_per_mw"],
                 widest=b["widest"].get("output_tokens_per_s_per_mw"))
    return points


def _pair_frontier(m: Model, a_id: str, f_id: str, precision, input_tokens, output_tokens,
                   spec: Speculation = NONE) -> list[dict]:
    hw_a, hw_f = catalog.get_hardware(a_id), catalog.get_hardware(f_id)
    check_split(hw_a, hw_f, m)
    prec_a, prec_f = (precision, precision) if precision else (hw_a.precision_or_best(None), hw_f.precision_or_best(None))
    check_pair(hw_a, m, prec_a)
    check_pair(hw_f, m, prec_f)
    pts = _frontier_of([split_sweep_points(m, hw_a, hw_f, prec_a, prec_f, input_tokens, output_tokens, spec=spec)])
    for p in pts:
        p["bound"] = "split"
    return pts


def _serves(hw: Hardware, model: Model) -> bool:
    return (hw.model_lock in (None, model.id)) and "decode" in hw.roles


def _frontier_of(sweeps: list[dict]) -> list[dict]:
    cols = ["tp", "pp", "ep", "batch", "chips", "tps_per_user", "output_tokens_per_s_per_mw",
            "decode_tokens_per_s_per_mw", "bound", "draft_tokens"]
    merged = {c: np.concatenate([s[c] for s in sweeps]) for c in cols}
    merged["precision"] = np.concatenate([[s["precision"]] * len(s["tp"]) for s in sweeps])
    if len(merged["tp"]) == 0:
        return []
    keep = pareto_mask(merged["tps_per_user"], merged["output_tokens_per_s_per_mw"])
    idx = np.flatnonzero(keep)
    idx = idx[np.argsort(merged["tps_per_user"][idx])]
    hw_id = sweeps[0]["hardware"]
    return [
        {
            "hardware": hw_id,
            "tps_per_user": float(merged["tps_per_user"][i]),
            "output_tokens_per_s_per_mw": float(merged["output_tokens_per_s_per_mw"][i]),
            "decode_tokens_per_s_per_mw": float(merged["decode_tokens_per_s_per_mw"][i]),
            "chips": int(merged["chips"][i]),
            "tensor_parallel": int(merged["tp"][i]),
            "pipeline_parallel": int(merged["pp"][i]),
            "expert_parallel": bool(merged["ep"][i]),
            "batch": int(merged["batch"][i]),
            "precision": str(merged["precision"][i]),
            "draft_tokens": int(merged["draft_tokens"][i]),
            "tier": tier_of(float(merged["tps_per_user"][i])),
            "bound": L.BOUND_NAMES[int(merged["bound"][i])],
        }
        for i in idx
    ]


def best_at_tiers(points: list[dict]) -> list[dict]:
    """For each hardware and tier, the highest tokens/s per MW among frontier points at or above the tier speed."""
    rows = []
    for hw_id in sorted({p["hardware"] for p in points}):
        mine = [p for p in points if p["hardware"] == hw_id]
        for tier, speed in TIERS.items():
            ok = [p for p in mine if p["tps_per_user"] >= speed]
            best = max(ok, key=lambda p: p["output_tokens_per_s_per_mw"]) if ok else None
            rows.append({
                "hardware": hw_id, "tier": tier, "min_tps_per_user": speed,
                "output_tokens_per_s_per_mw": best["output_tokens_per_s_per_mw"] if best else 0.0,
                "chips": best["chips"] if best else None, "batch": best["batch"] if best else None,
                "precision": best["precision"] if best else None,
            })
    return rows
