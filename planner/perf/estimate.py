"""``estimate``: one deployment's performance, with the breakdowns that explain it (interface: ``planner
estimate``). ``A+B`` hardware runs attention on A and the FFN on B (MODEL.md 10). Every figure comes from the
jitted kernels (``solvers.perf``); this module only chooses the layout and names the results."""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field

import numpy as np

from planner import catalog
from planner.catalog import Hardware, Model, runnable_precisions, runs_precision
from planner.errors import InputError
from planner.perf.grid import MICRO_BATCHES, pair_engines, parallel_grid, split_grid, tp_options
from planner.perf.pack import efficiency_key, family_efficiency, hardware_vector, model_vector, split_model_vectors, workload_vector
from planner.perf.speculative import NONE, Speculation, draft_vector, speculation
from planner.perf.uncertainty import band, uncertain_quantities
from planner.vocabulary import (
    DEFAULT_BATCH,
    DEFAULT_DRAFT_TOKENS,
    DEFAULT_INPUT_TOKENS,
    DEFAULT_OUTPUT_TOKENS,
    DEFAULT_SPECULATIVE,
)
from solvers.perf import slots as L


# ---- validation of the question -----------------------------------------------------------------------------
def check_pair(hw: Hardware, model: Model, precision: str) -> None:
    if hw.model_lock and hw.model_lock != model.id:
        raise InputError(f"{hw.id} serves only the model wired into it ({hw.model_lock}), not {model.id}")
    if not runs_precision(hw, model, precision):
        raise InputError(f"{hw.id} does not run {precision} for {model.id}; it runs "
                         f"{', '.join(runnable_precisions(hw, model))}", field="precision")


def check_positive(**values) -> None:
    for name, value in values.items():
        if not (isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)
                and value > 0):
            raise InputError(f"expected a positive number, got {value!r}", field=name.replace("_", "-"))


def check_id(value, field: str, what: str, optional: bool = False) -> None:
    """A library argument that names something (a catalog id, a precision): text, or None where ``optional``;
    anything else is an InputError naming the argument (not a TypeError from deep inside)."""
    if value is None and optional:
        return
    if not isinstance(value, str) or not value:
        got = repr(value)
        raise InputError(f"expected {what} (text{', or None' if optional else ''}), got {type(value).__name__} "
                         f"{got if len(got) <= 60 else got[:57] + '...'}", field=field)


def check_whole(**values) -> None:
    """Counts (chips, streams): positive whole numbers."""
    check_positive(**values)
    for name, value in values.items():
        if not float(value).is_integer():
            raise InputError(f"expected a whole number, got {value!r}", field=name.replace("_", "-"))


def spec_tokens(draft_tokens: int, acceptance: float) -> tuple[float, float]:
    """(query tokens, accepted tokens) per step: ``solvers.perf.serving.spec_tokens`` (MODEL.md 3.4)."""
    from solvers.perf.serving import spec_tokens as kernel

    return kernel(float(draft_tokens), float(acceptance))


def parse_pair(hw_id: str) -> tuple[str, str | None]:
    """'A+B' (attention and prefill on A, FFN on B) or a single id."""
    if "+" in hw_id:
        a, _, b = hw_id.partition("+")
        return a.strip(), b.strip()
    return hw_id, None


def check_split(hw_a: Hardware, hw_f: Hardware, model: Model) -> None:
    if "attention" not in hw_a.roles:
        raise InputError(f"{hw_a.id} cannot take the attention role (roles: {', '.join(hw_a.roles)})",
                         field="hardware")
    if "ffn" not in hw_f.roles:
        raise InputError(f"{hw_f.id} cannot take the ffn role (roles: {', '.join(hw_f.roles)})", field="hardware")
    for hw in (hw_a, hw_f):
        if hw.model_lock and hw.model_lock != model.id:
            raise InputError(f"{hw.id} serves only {hw.model_lock}, not {model.id}")
    if not pair_engines(hw_a.family, hw_f.family):
        pairs = sorted({f"{a} with {f}" for e in catalog.serving_engines().values() for a, f in e.pairs})
        raise InputError(f"no public engine runs attention on {hw_a.id} ({hw_a.family}) with the FFN on {hw_f.id} "
                         f"({hw_f.family}); the pairs engines run: {', '.join(pairs)} (data/engines.yaml, "
                         f"docs/MODEL.md 2.9)", field="hardware")


@dataclass
class Estimate:
    """One deployment's performance, with the decode and prefill breakdowns that explain it.

    ``tps_per_user``, ``output_tokens_per_s`` and ``output_tokens_per_s_per_mw`` are decode alone (prefill on other
    replicas); the ``colocated_`` fields charge the replica with prefilling its own requests too, as the frontier
    does."""

    model: str
    hardware: str
    precision: str
    chips: int
    tensor_parallel: int
    pipeline_parallel: int
    expert_parallel: bool
    batch: int
    input_tokens: int
    output_tokens: int
    fits: bool
    tps_per_user: float
    output_tokens_per_s: float
    step_time_s: float
    ttft_s: float  # a lone request's time to first token
    ttft_batch_s: float  # when ``batch`` prompts arrive together: the last of them to get its first token
    power_w: float
    output_tokens_per_s_per_mw: float
    colocated_tps_per_user: float
    colocated_output_tokens_per_s: float
    speculative: str = "none"
    draft_tokens: int = 0
    acceptance: float = 0.0
    draft_model: str | None = None
    decode: dict = field(default_factory=dict)
    prefill: dict = field(default_factory=dict)
    memory: dict = field(default_factory=dict)
    roles: list = field(default_factory=list)
    warnings: list = field(default_factory=list)
    band: dict = field(default_factory=dict)  # low/high of the figures over the uncertain inputs (MODEL.md 11)
    source: str = "model"
    method: str = "planner performance model (docs/MODEL.md), efficiencies from data/efficiency.yaml"

    def to_dict(self) -> dict:
        return asdict(self)


def breakdown_dict(row: np.ndarray) -> dict:
    return {
        "time_s": float(row[L.B_TIME_S]),
        "memory_s": float(row[L.B_MEMORY_S]),
        "compute_s": float(row[L.B_COMPUTE_S]),
        "communication_s": float(row[L.B_COMM_S]),
        "floor_s": float(row[L.B_FLOOR_S]),
        "draft_s": float(row[L.B_DRAFT_S]),
        "bound": L.BOUND_NAMES[int(row[L.B_BOUND])],
    }


def evaluate_config(model, hw, precision, tp, pp, ep, batch, input_tokens, output_tokens, k=0,
                    spec: Speculation = NONE, efficiency: dict | None = None,
                    power: dict | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Decode (with ``k`` draft tokens of ``spec``'s drafter) and prefill breakdown vectors of one configuration,
    with the family's efficiencies (or ``efficiency``) and power curve (or ``power``)."""
    from solvers.perf.kernels import prefill_breakdown, speculative_decode_breakdown

    mv, hv = model_vector(model), hardware_vector(hw, precision, efficiency, power)
    wl = workload_vector(input_tokens, output_tokens)
    _, a = spec_tokens(k, spec.acceptance_at(k))
    dec, pre, scratch = np.zeros(L.N_BREAKDOWN), np.zeros(L.N_BREAKDOWN), np.zeros(L.N_BREAKDOWN)
    speculative_decode_breakdown(mv, draft_vector(model, spec), hv, float(tp), float(pp), float(ep), float(batch),
                                 wl[L.W_CONTEXT_AVG], wl[L.W_CONTEXT_MAX], float(k), a, scratch, dec)
    prefill_breakdown(mv, hv, float(tp), float(pp), float(ep), wl[L.W_PREFILL_TOKENS], pre)
    return dec, pre


def batch_ttft_per_layout(model, hw, precision, layouts, input_tokens, prompts,
                          efficiency: dict | None = None) -> np.ndarray:
    """Per (tp, pp, ep) row of ``layouts``: seconds until the last of ``prompts`` prompts of ``input_tokens`` tokens
    that arrive together gets its first token, prefilled in one pass (``batch_prefill_breakdown``, MODEL.md 4.3)."""
    from solvers.perf.kernels import batch_prefill_breakdown

    mv, hv = model_vector(model), hardware_vector(hw, precision, efficiency)
    out, times = np.zeros(L.N_BREAKDOWN), np.zeros(len(layouts))
    for i, (tp, pp, ep) in enumerate(layouts):
        batch_prefill_breakdown(mv, hv, float(tp), float(pp), float(ep), float(input_tokens), float(prompts), out)
        times[i] = out[L.B_TIME_S]
    return times


def batch_ttft_s(model, hw, precision, layout, input_tokens, prompts, efficiency: dict | None = None) -> float:
    """``batch_ttft_per_layout`` on one layout."""
    return float(batch_ttft_per_layout(model, hw, precision, [layout], input_tokens, prompts, efficiency)[0])


def choose_config(model, hw, precision, chips, batch, input_tokens, output_tokens, spec: Speculation = NONE):
    """(tp, pp, ep, K) for ``estimate``: with ``chips`` given, the layout of that many chips on which one request
    is shortest (its TTFT plus its output at the stream's speed); otherwise the smallest replica that holds the
    weights (and the drafter's) and the batch's KV cache, and its shortest-request layout; K the draft length (of
    ``spec``'s settings) that is best there. On a chip with several serving tiers the
    smallest replica within one scale-up domain that holds everything in the fastest tier comes first (a d-Matrix
    rack serves a 70B model from SRAM, not one card from LPDDR), else the smallest that fits at all."""
    from solvers.perf.sweep import decode_sweep, prefill_per_layout

    grid = parallel_grid(hw, model, chips)
    if grid.size == 0:
        raise InputError(
            f"no tensor x pipeline layout of {chips} chips for {model.id} on {hw.id} "
            f"(tensor parallel options {tp_options(hw, model)}, pipeline up to {model.layers})",
            field="chips",
        )
    mv, hv = model_vector(model), hardware_vector(hw, precision)
    draft = draft_vector(model, spec)
    wl = workload_vector(input_tokens, output_tokens)
    streams = np.full(len(grid), float(batch))
    rows: list[tuple[np.ndarray, np.ndarray, int]] = []  # (result row, layout, draft tokens)
    for k, acceptance in spec.settings():
        _, a = spec_tokens(k, acceptance)
        res = decode_sweep(mv, hv, grid[:, 0].copy(), grid[:, 1].copy(), grid[:, 2].copy(), streams,
                           wl[L.W_CONTEXT_AVG], wl[L.W_CONTEXT_MAX], float(k), a, draft)
        rows.extend((res[i], grid[i], k) for i in range(len(grid)))
    fits = np.array([r[L.B_FITS] > 0.5 for r, _, _ in rows])
    n_chips = np.array([g[0] * g[1] for _, g, _ in rows])
    if chips is None:
        if not fits.any():
            raise InputError(
                f"{model.id} at batch {batch} does not fit any replica of {hw.id} up to "
                f"{int(n_chips.max())} chips at {precision}"
            )
        fast = fits & in_fastest_tier(hw, rows, n_chips)
        chosen = fast if fast.any() else fits
        pool = np.flatnonzero(chosen & (n_chips == n_chips[chosen].min()))
    else:
        pool = np.flatnonzero(fits) if fits.any() else np.arange(len(rows))
    # the shortest request, prefill and decode together (MODEL.md 7): a lone prompt's TTFT plus its output at the
    # stream's speed; ties to fewer pipeline stages, then no expert parallelism, then fewer drafts (deterministic)
    ttft = prefill_per_layout(mv, hv, grid, float(input_tokens))[:, 1]
    n_layouts = len(grid)
    best = min(pool, key=lambda i: (ttft[i % n_layouts] + output_tokens / rows[i][0][L.B_TPS_PER_USER],
                                    rows[i][1][1], rows[i][1][2], rows[i][2]))
    g = rows[best][1]
    return int(g[0]), int(g[1]), int(g[2]), int(rows[best][2])


def in_fastest_tier(hw: Hardware, rows, n_chips: np.ndarray) -> np.ndarray:
    """Per row: its weights and KV fit the chip's fastest memory tier, and the replica one scale-up domain."""
    tiers = [t for t in hw.chip.memory if t.serves_weights]
    if len(tiers) < 2:
        return np.ones(len(rows), dtype=bool)
    usable = tiers[0].capacity_bytes.value * family_efficiency(efficiency_key(hw))["usable_memory_fraction"]
    held = np.array([r[L.B_WEIGHT_BYTES_PER_CHIP] + r[L.B_KV_BYTES_PER_CHIP] for r, _, _ in rows])
    return (held <= usable) & (n_chips <= hw.chip.scale_up.domain_chips.value)


def colocated(dec: np.ndarray, pre: np.ndarray, batch: float, prefill_tokens: float, output_tokens: float,
              accepted_tokens: float) -> tuple[float, float]:
    """(tokens/s per user, replica output tokens/s) when the replica also prefills its own requests:
    ``solvers.perf.serving.colocated_request_s`` on the decode interval and the pipelined prefill rate."""
    from solvers.perf.serving import colocated_request_s

    prefill_s = prefill_tokens / float(pre[L.B_TOKENS_PER_S])
    served = output_tokens / colocated_request_s(output_tokens, float(dec[L.B_TIME_S]), batch, accepted_tokens,
                                                 prefill_s)
    return served / batch, served


def estimate(model: str, hardware: str, chips: int | None = None, batch: int = DEFAULT_BATCH,
             precision: str | None = None, input_tokens: int = DEFAULT_INPUT_TOKENS,
             output_tokens: int = DEFAULT_OUTPUT_TOKENS, speculative: str = DEFAULT_SPECULATIVE,
             draft_tokens: int | str | None = DEFAULT_DRAFT_TOKENS, acceptance: float | None = None,
             draft_model: str | None = None) -> Estimate:
    """Performance of one deployment of ``model`` on ``hardware`` (interface: ``planner estimate``); ``A+B`` runs
    attention on A and the FFN on B (MODEL.md 10). ``speculative`` names the drafter (none, mtp, eagle,
    draft_model with ``draft_model``), ``draft_tokens`` K or ``auto`` (the fastest K), ``acceptance`` the rate per
    draft token (MODEL.md 3.4)."""
    if not isinstance(model, str):
        raise InputError(f"expected one model id, got {model!r}", field="model")
    check_id(draft_model, "draft_model", "the drafter's model id", optional=True)
    spec = speculation(speculative, draft_tokens, acceptance, draft_model, model=model)
    if not isinstance(hardware, str):
        raise InputError(f"expected one hardware id, got {hardware!r}", field="hardware")
    check_id(precision, "precision", "a precision", optional=True)
    a_id, f_id = parse_pair(hardware)
    if f_id is not None:
        if chips is not None:
            raise InputError("--chips does not apply to an attention/FFN pair: the pair's layout is searched",
                             field="chips")
        return estimate_split(model, a_id, f_id, batch, precision, input_tokens, output_tokens, spec)
    m, hw = catalog.get_model(model), catalog.get_hardware(hardware)
    prec = hw.precision_or_best(precision)
    check_pair(hw, m, prec)
    check_positive(input_tokens=input_tokens, output_tokens=output_tokens)
    check_whole(batch=batch)
    if chips is not None:
        check_whole(chips=chips)
    draft_vector(m, spec)  # a drafter that cannot apply to this model is an error before any search
    tp, pp, ep, k = choose_config(m, hw, prec, chips, batch, input_tokens, output_tokens, spec)
    dec, pre = evaluate_config(m, hw, prec, tp, pp, ep, batch, input_tokens, output_tokens, k, spec)
    power = float(dec[L.B_POWER_W])
    _, accepted = spec_tokens(k, spec.acceptance_at(k))
    colo_tps, colo_tokens = colocated(dec, pre, float(batch), float(input_tokens), float(output_tokens), accepted)
    return Estimate(
        model=m.id, hardware=hw.id, precision=prec, chips=tp * pp, tensor_parallel=tp, pipeline_parallel=pp,
        expert_parallel=bool(ep), batch=batch, input_tokens=input_tokens, output_tokens=output_tokens,
        fits=bool(dec[L.B_FITS] > 0.5), tps_per_user=float(dec[L.B_TPS_PER_USER]),
        output_tokens_per_s=float(dec[L.B_TOKENS_PER_S]), step_time_s=float(dec[L.B_TIME_S]),
        ttft_s=float(pre[L.B_TIME_S]),
        ttft_batch_s=batch_ttft_s(m, hw, prec, (tp, pp, ep), input_tokens, batch), power_w=power,
        output_tokens_per_s_per_mw=float(dec[L.B_TOKENS_PER_S]) / (power / 1e6),
        colocated_tps_per_user=colo_tps, colocated_output_tokens_per_s=colo_tokens,
        speculative=spec.method, draft_tokens=k, acceptance=spec.acceptance_at(k),
        draft_model=spec.draft_model, decode=breakdown_dict(dec), prefill=breakdown_dict(pre),
        memory={
            "weight_bytes_per_chip": float(dec[L.B_WEIGHT_BYTES_PER_CHIP]),
            "kv_bytes_per_chip": float(dec[L.B_KV_BYTES_PER_CHIP]),
            "usable_bytes_per_chip": float(dec[L.B_USABLE_BYTES_PER_CHIP]),
        },
        roles=list(hw.roles), warnings=fit_warnings(hw, dec),
        band=uncertainty_band(m, hw, prec, (tp, pp, ep), batch, input_tokens, output_tokens, k, spec),
    )


def uncertainty_band(model, hw, precision, layout, batch, input_tokens, output_tokens, k, spec) -> dict:
    """Low and high of tokens/s per user and output tokens/s per MW (decode) at this configuration, over every
    uncertain figure and efficiency behind it, one at a time, and the one that moves each most (MODEL.md 11)."""
    from solvers.perf.kernels import speculative_decode_breakdown

    mv, hv = model_vector(model), hardware_vector(hw, precision)
    draft = draft_vector(model, spec)
    wl = workload_vector(input_tokens, output_tokens)
    _, a = spec_tokens(k, spec.acceptance_at(k))
    dec, scratch = np.zeros(L.N_BREAKDOWN), np.zeros(L.N_BREAKDOWN)

    def evaluate(v):
        speculative_decode_breakdown(mv, draft, v, *(float(x) for x in layout), float(batch), wl[L.W_CONTEXT_AVG],
                                     wl[L.W_CONTEXT_MAX], float(k), a, scratch, dec)
        return {"tps_per_user": float(dec[L.B_TPS_PER_USER]),
                "output_tokens_per_s_per_mw": float(dec[L.B_TOKENS_PER_S]) / (float(dec[L.B_POWER_W]) / 1e6)}

    result = band(lambda vectors: [evaluate(v) for v in vectors], hv, uncertain_quantities(hw, precision))
    return {key: {"low": result["low"][key], "high": result["high"][key], "widest": result["widest"].get(key)}
            for key in result["low"]} | {"parameters": result["parameters"]}


def fit_warnings(hw: Hardware, dec: np.ndarray) -> list[str]:
    """Why a layout asked for with --chips does not fit: what overflows the tiers inference serves from, and where
    it would stream from."""
    if dec[L.B_FITS] > 0.5:
        return []
    serving = [t.tier for t in hw.chip.memory if t.serves_weights]
    capacity = [t for t in hw.chip.memory if not t.serves_weights]
    need = float(dec[L.B_WEIGHT_BYTES_PER_CHIP] + dec[L.B_KV_BYTES_PER_CHIP])
    text = (f"does not fit: {need / 1e9:.4g} GB of weights and KV per chip, {float(dec[L.B_USABLE_BYTES_PER_CHIP]) / 1e9:.4g}"
            f" GB usable in {'+'.join(serving)}")
    if capacity:
        t = capacity[0]
        text += (f"; the rest would stream from {t.tier} at {t.bandwidth_bytes_per_s.value / 1e9:.4g} GB/s, as the "
                 f"speeds above assume (a capacity tier: not a way to serve)")
    return [text]


def estimate_split(model: str, a_id: str, f_id: str, batch: int, precision: str | None, input_tokens: int,
                   output_tokens: int, spec: Speculation = NONE) -> Estimate:
    """The smallest attention/FFN layout of the pair that holds the model at this batch (fewest FFN chips, then
    fewest attention chips), its fastest attention mode (MODEL.md 10); TTFT is the prompt's prefill on the
    smallest replica of A that holds the whole model."""
    from solvers.perf.sweep import split_decode_sweep

    m, hw_a, hw_f = catalog.get_model(model), catalog.get_hardware(a_id), catalog.get_hardware(f_id)
    check_split(hw_a, hw_f, m)
    prec_a, prec_f = hw_a.precision_or_best(precision), hw_f.precision_or_best(precision)
    check_pair(hw_a, m, prec_a)
    check_pair(hw_f, m, prec_f)
    check_positive(input_tokens=input_tokens, output_tokens=output_tokens)
    check_whole(batch=batch)
    attn, ffn = split_model_vectors(m)
    draft = draft_vector(m, spec)
    grid = split_grid(hw_a, hw_f, m)
    wl = workload_vector(input_tokens, output_tokens)
    found: list[tuple[np.ndarray, int, int]] = []  # (result row, layout index, draft tokens)
    for k, acceptance in spec.settings():
        _, a = spec_tokens(k, acceptance)
        res = split_decode_sweep(attn, ffn, draft, hardware_vector(hw_a, prec_a), hardware_vector(hw_f, prec_f),
                                 grid[:, 0].copy(), grid[:, 1].copy(), grid[:, 2].copy(),
                                 np.full(len(grid), float(batch)), wl[L.W_CONTEXT_AVG], wl[L.W_CONTEXT_MAX], float(k),
                                 a, MICRO_BATCHES)
        found.extend((res[i], i, k) for i in range(len(grid))
                     if res[i, L.S_FITS_ATTENTION] > 0.5 and res[i, L.S_FITS_FFN] > 0.5)
    if not found:
        raise InputError(f"{m.id} at batch {batch} does not fit any {a_id}+{f_id} layout up to "
                         f"{int(grid[:, 1].max())} {f_id} chips")
    r, best, k = min(found, key=lambda f: (grid[f[1], 1], grid[f[1], 0], -f[0][L.S_TPS_PER_USER], f[2]))
    ta, pa, ea, _ = choose_config(m, hw_a, prec_a, None, 1, input_tokens, output_tokens)
    _, pre = evaluate_config(m, hw_a, prec_a, ta, pa, ea, 1, input_tokens, output_tokens)
    decode = {"time_s": float(r[L.S_TIME_S]), "attention_s": float(r[L.S_ATTENTION_S]), "ffn_s": float(r[L.S_FFN_S]),
              "crossing_s": float(r[L.S_CROSSING_S]), "bound": L.SPLIT_BOUND_NAMES[int(r[L.S_BOUND])],
              "attention_chips": int(grid[best, 0]), "ffn_chips": int(grid[best, 1])}
    return Estimate(
        model=m.id, hardware=f"{a_id}+{f_id}", precision=f"{prec_a}+{prec_f}",
        chips=int(grid[best, 0] + grid[best, 1]), tensor_parallel=int(grid[best, 0]), pipeline_parallel=1,
        expert_parallel=bool(grid[best, 2]), batch=batch, input_tokens=input_tokens, output_tokens=output_tokens,
        fits=True, tps_per_user=float(r[L.S_TPS_PER_USER]), output_tokens_per_s=float(r[L.S_TOKENS_PER_S]),
        step_time_s=float(r[L.S_TIME_S]), ttft_s=float(pre[L.B_TIME_S]),
        ttft_batch_s=batch_ttft_s(m, hw_a, prec_a, (ta, pa, ea), input_tokens, batch), power_w=float(r[L.S_POWER_W]),
        output_tokens_per_s_per_mw=float(r[L.S_TOKENS_PER_S]) / (float(r[L.S_POWER_W]) / 1e6),
        colocated_tps_per_user=float(r[L.S_TPS_PER_USER]), colocated_output_tokens_per_s=float(r[L.S_TOKENS_PER_S]),
        speculative=spec.method, draft_tokens=k, acceptance=spec.acceptance_at(k),
        draft_model=spec.draft_model, decode=decode, prefill=breakdown_dict(pre), roles=["attention", "ffn"],
        method="planner performance model, attention/FFN split (docs/MODEL.md 10)",
    )
