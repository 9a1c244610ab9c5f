"""The one place that computes performance: pack catalog entries into vectors, call the jitted model, explain.

``estimate`` answers one deployment; ``frontier`` sweeps parallelism, batch and precision and keeps the Pareto
points of output tokens/s per MW against tokens/s per user. Everything else in the planner asks these (or the
kernels they call with the same vectors).
"""

from __future__ import annotations

import functools
import math
from dataclasses import asdict, dataclass, field

import numpy as np

from planner import catalog
from planner.catalog import KV_BYTES, WEIGHT_BYTES, Hardware, Model
from planner.errors import InputError
from solvers import layout as L

TIERS = {"standard": 100.0, "high": 200.0, "premium": 400.0, "ultra": 1000.0}
ACTIVATION_BYTES = 2.0  # activations cross links in 16-bit
EFFICIENCY_PARAMS = (
    "bandwidth_efficiency",
    "flops_efficiency",
    "layer_floor_s",
    "collective_latency_s",
    "usable_memory_fraction",
)
# Batch grid of the frontier: roughly geometric, 1 to 4096 concurrent streams per replica.
FRONTIER_BATCHES = np.unique(np.round(np.geomspace(1, 4096, 49))).astype(np.float64)


# ---- packing ------------------------------------------------------------------------------------------------
def model_vector(model: Model) -> np.ndarray:
    v = np.zeros(L.N_MODEL)
    v[L.M_LAYERS] = model.layers
    v[L.M_DENSE_LAYERS] = model.n_dense_layers
    v[L.M_MOE_LAYERS] = model.n_moe_layers
    v[L.M_HIDDEN] = model.hidden_size
    v[L.M_ATTN_PARAMS] = model.attention_params_per_layer
    v[L.M_DENSE_FFN_PARAMS] = model.dense_ffn_params_per_layer
    v[L.M_EXPERT_PARAMS] = model.expert_params if model.is_moe else 0.0
    v[L.M_EXPERTS] = model.experts
    v[L.M_EXPERTS_PER_TOKEN] = model.experts_per_token
    v[L.M_SHARED_PARAMS] = model.shared_params_per_moe_layer if model.is_moe else 0.0
    v[L.M_EMBED_PARAMS] = model.embedding_params
    v[L.M_LM_HEAD_PARAMS] = model.lm_head_params
    v[L.M_KV_ELEMS] = model.kv_elements_per_token_per_layer
    v[L.M_WINDOW_LAYERS] = model.sliding_window_layers
    v[L.M_WINDOW_TOKENS] = model.sliding_window_tokens or 0
    v[L.M_ATTN_FLOPS] = model.attention_flops_per_token_per_context
    v[L.M_PREFILL_ATTN_FLOPS] = model.prefill_attention_flops_per_token_per_context
    v[L.M_KV_HEADS] = model.kv_heads
    return v


ATTENTION_SLOTS = (L.M_ATTN_PARAMS, L.M_EMBED_PARAMS, L.M_LM_HEAD_PARAMS, L.M_KV_ELEMS, L.M_ATTN_FLOPS,
                   L.M_PREFILL_ATTN_FLOPS)
FFN_SLOTS = (L.M_DENSE_FFN_PARAMS, L.M_EXPERT_PARAMS, L.M_SHARED_PARAMS, L.M_EXPERTS)


def split_model_vectors(model: Model) -> tuple[np.ndarray, np.ndarray]:
    """The model's attention part (attention, embeddings, LM head, KV cache) and FFN part (dense FFNs, shared and
    routed experts) as two model vectors, for attention/FFN disaggregation (MODEL.md 10)."""
    whole = model_vector(model)
    attn, ffn = whole.copy(), whole.copy()
    for slot in FFN_SLOTS:
        attn[slot] = 0.0
    for slot in ATTENTION_SLOTS:
        ffn[slot] = 0.0
    return attn, ffn


@functools.lru_cache(maxsize=None)
def efficiency_table() -> dict[str, dict]:
    return catalog._read_yaml(catalog.DATA_DIR / "efficiency.yaml")


def family_efficiency(family: str) -> dict[str, float]:
    """The five efficiency parameters of a family, following ``inherits`` for families with no own data."""
    table = efficiency_table()
    if family not in table:
        raise InputError(f"hardware family {family!r} has no entry in data/efficiency.yaml")
    entry = table[family]
    base = family_efficiency(entry["inherits"]) if "inherits" in entry else {}
    own = {k: float(entry[k]["value"]) for k in EFFICIENCY_PARAMS if k in entry}
    merged = {**base, **own}
    missing = [k for k in EFFICIENCY_PARAMS if k not in merged]
    if missing:
        raise InputError(f"family {family!r} lacks efficiency parameters {missing}")
    return merged


def hardware_vector(hw: Hardware, precision: str, efficiency: dict[str, float] | None = None) -> np.ndarray:
    """One system at one precision, with its family's calibrated efficiencies (or the ones given)."""
    eff = efficiency if efficiency is not None else family_efficiency(hw.family)
    chip = hw.chip
    if len(chip.memory) > L.MAX_TIERS:
        raise InputError(f"{hw.id}: at most {L.MAX_TIERS} memory tiers are modelled")
    v = np.zeros(L.N_HW)
    v[L.H_N_TIERS] = len(chip.memory)
    for i, tier in enumerate(chip.memory):
        v[L.H_CAP + i] = tier.capacity_bytes.value
        v[L.H_BW + i] = tier.bandwidth_bytes_per_s.value
    v[L.H_PEAK_FLOPS] = chip.peak_flops_per_s[precision].value
    v[L.H_ATTN_PEAK_FLOPS] = attention_peak_flops(hw, precision)
    v[L.H_WEIGHT_BYTES] = WEIGHT_BYTES[precision]
    v[L.H_KV_BYTES] = KV_BYTES[precision]
    v[L.H_ACT_BYTES] = ACTIVATION_BYTES
    v[L.H_SU_DOMAIN] = chip.scale_up.domain_chips.value
    v[L.H_SU_BW] = chip.scale_up.bandwidth_bytes_per_s.value
    v[L.H_SU_LAT] = chip.scale_up.latency_s.value
    v[L.H_SO_BW] = chip.scale_out.bandwidth_bytes_per_s.value
    v[L.H_SO_LAT] = chip.scale_out.latency_s.value
    v[L.H_CHIPS_PER_RACK] = hw.chips_per_rack
    v[L.H_RACK_POWER_W] = hw.rack_power_w
    v[L.H_BW_EFF] = eff["bandwidth_efficiency"]
    v[L.H_FLOPS_EFF] = eff["flops_efficiency"]
    v[L.H_LAYER_FLOOR_S] = eff["layer_floor_s"]
    v[L.H_COLL_LAT_S] = eff["collective_latency_s"]
    v[L.H_MEM_USABLE] = eff["usable_memory_fraction"]
    return v


def attention_peak_flops(hw: Hardware, precision: str) -> float:
    """Attention arithmetic runs at the KV cache's precision (fp8 for fp4 runs) when the chip has it."""
    kv_precision = {"fp4": "fp8"}.get(precision, precision)
    flops = hw.chip.peak_flops_per_s
    return (flops[kv_precision] if kv_precision in flops else flops[precision]).value


# ---- the parallelism grid -----------------------------------------------------------------------------------
def tp_options(hw: Hardware, model: Model) -> list[int]:
    """Tensor-parallel degrees: powers of two up to the scale-up domain (and the domain itself), never more
    than the model has attention heads."""
    domain = int(hw.chip.scale_up.domain_chips.value)
    limit = min(domain, model.heads)
    opts = {1 << i for i in range(16) if (1 << i) <= limit}
    if domain <= model.heads:
        opts.add(domain)
    return sorted(opts)


def parallel_grid(hw: Hardware, model: Model, chips: int | None = None) -> np.ndarray:
    """Rows of (tp, pp, ep) a replica may use; with ``chips`` given, only tp * pp == chips."""
    grid = _grid(tuple(tp_options(hw, model)), model.layers, model.is_moe)
    if chips is not None:
        grid = grid[grid[:, 0] * grid[:, 1] == chips]
    return grid.copy()


@functools.lru_cache(maxsize=256)
def _grid(tps: tuple[int, ...], layers: int, moe: bool) -> np.ndarray:
    rows = [(tp, pp, ep) for tp in tps for pp in range(1, layers + 1)
            for ep in ((0, 1) if (moe and tp > 1) else (0,))]
    return np.array(rows, dtype=np.float64).reshape(-1, 3)


# ---- validation of the question -----------------------------------------------------------------------------
def check_pair(hw: Hardware, model: Model, precision: str) -> None:
    if hw.model_lock and hw.model_lock != model.id:
        raise InputError(f"{hw.id} serves only the model wired into it ({hw.model_lock}), not {model.id}")
    if precision not in hw.precisions:
        raise InputError(
            f"{hw.id} does not run {precision}; it supports {', '.join(hw.precisions)}", field="precision"
        )


def check_speculative(draft_tokens: int, acceptance: float) -> None:
    if not (isinstance(draft_tokens, int) and 0 <= draft_tokens <= 16):
        raise InputError(f"expected a whole number of draft tokens from 0 to 16, got {draft_tokens!r}",
                         field="draft-tokens")
    if not (math.isfinite(acceptance) and 0.0 <= acceptance < 1.0):
        raise InputError(f"expected an acceptance rate in [0, 1), got {acceptance!r}", field="acceptance")


def spec_tokens(draft_tokens: int, acceptance: float) -> tuple[float, float]:
    """(query tokens per step, accepted tokens per step) for speculative decoding with ``draft_tokens`` drafted
    tokens each accepted with probability ``acceptance`` (stopping at the first rejection; MODEL.md 3.4)."""
    if draft_tokens <= 0:
        return 1.0, 1.0
    if acceptance >= 1.0:
        return draft_tokens + 1.0, draft_tokens + 1.0
    return draft_tokens + 1.0, (1.0 - acceptance ** (draft_tokens + 1)) / (1.0 - acceptance)


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
    ttft_s: float
    power_w: float
    output_tokens_per_s_per_mw: float
    colocated_tps_per_user: float
    colocated_output_tokens_per_s: float
    decode: dict = field(default_factory=dict)
    prefill: dict = field(default_factory=dict)
    memory: dict = field(default_factory=dict)
    roles: list = field(default_factory=list)
    source: str = "planner performance model (docs/MODEL.md), efficiencies from data/efficiency.yaml"

    def to_dict(self) -> dict:
        return asdict(self)


def _breakdown_dict(row: np.ndarray) -> dict:
    return {
        "time_s": float(row[L.B_TIME_S]),
        "memory_s": float(row[L.B_MEMORY_S]),
        "compute_s": float(row[L.B_COMPUTE_S]),
        "communication_s": float(row[L.B_COMM_S]),
        "floor_s": float(row[L.B_FLOOR_S]),
        "bound": L.BOUND_NAMES[int(row[L.B_BOUND])],
    }


def evaluate_config(model, hw, precision, tp, pp, ep, batch, input_tokens, output_tokens,
                    draft_tokens=0, acceptance=0.0) -> tuple[np.ndarray, np.ndarray]:
    """Decode and prefill breakdown vectors of one configuration."""
    from solvers.perf_kernels import decode_breakdown, prefill_breakdown

    mv, hv = model_vector(model), hardware_vector(hw, precision)
    q, a = spec_tokens(draft_tokens, acceptance)
    dec = np.zeros(L.N_BREAKDOWN)
    pre = np.zeros(L.N_BREAKDOWN)
    ctx_avg = input_tokens + output_tokens / 2.0
    ctx_max = float(input_tokens + output_tokens)
    decode_breakdown(mv, hv, float(tp), float(pp), float(ep), float(batch), ctx_avg, ctx_max, q, a, dec)
    prefill_breakdown(mv, hv, float(tp), float(pp), float(ep), float(input_tokens), pre)
    return dec, pre


def choose_config(model, hw, precision, chips, batch, input_tokens, output_tokens, draft_tokens=0, acceptance=0.0):
    """(tp, pp, ep) for ``estimate``: with ``chips`` given, the fastest layout of that many chips; otherwise the
    smallest replica that holds the weights and the batch's KV cache, and its fastest layout."""
    from solvers.perf_kernels import decode_sweep

    grid = parallel_grid(hw, model, chips)
    if grid.size == 0:
        raise InputError(
            f"no tensor x pipeline layout of {chips} chips for {model.id} on {hw.id} "
            f"(tensor parallel options {tp_options(hw, model)}, pipeline up to {model.layers})",
            field="chips",
        )
    q, a = spec_tokens(draft_tokens, acceptance)
    mv, hv = model_vector(model), hardware_vector(hw, precision)
    streams = np.full(len(grid), float(batch))
    res = decode_sweep(mv, hv, grid[:, 0].copy(), grid[:, 1].copy(), grid[:, 2].copy(), streams,
                       input_tokens + output_tokens / 2.0, float(input_tokens + output_tokens), q, a)
    fits = res[:, L.B_FITS] > 0.5
    n_chips = grid[:, 0] * grid[:, 1]
    if chips is None:
        if not fits.any():
            raise InputError(
                f"{model.id} at batch {batch} does not fit any replica of {hw.id} up to "
                f"{int(n_chips.max())} chips at {precision}"
            )
        pool = np.flatnonzero(fits & (n_chips == n_chips[fits].min()))
    else:
        pool = np.flatnonzero(fits) if fits.any() else np.arange(len(grid))
    # fastest per user; ties to fewer pipeline stages, then no expert parallelism (deterministic)
    order = sorted(pool, key=lambda i: (-res[i, L.B_TPS_PER_USER], grid[i, 1], grid[i, 2]))
    best = order[0]
    return int(grid[best, 0]), int(grid[best, 1]), int(grid[best, 2])


def estimate(model: str, hardware: str, chips: int | None = None, batch: int = 1, precision: str | None = None,
             input_tokens: int = 1000, output_tokens: int = 1000, draft_tokens: int = 0,
             acceptance: float = 0.0) -> Estimate:
    """Performance of one deployment of ``model`` on ``hardware`` (interface: ``planner estimate``); ``A+B`` runs
    attention on A and the FFN on B (MODEL.md 10)."""
    check_speculative(draft_tokens, acceptance)
    a_id, f_id = parse_pair(hardware)
    if f_id is not None:
        return estimate_split(model, a_id, f_id, batch, precision, input_tokens, output_tokens, draft_tokens,
                              acceptance)
    m, hw = catalog.get_model(model), catalog.get_hardware(hardware)
    prec = hw.precision_or_best(precision)
    check_pair(hw, m, prec)
    _check_positive(batch=batch, input_tokens=input_tokens, output_tokens=output_tokens)
    if chips is not None:
        _check_positive(chips=chips)
    tp, pp, ep = choose_config(m, hw, prec, chips, batch, input_tokens, output_tokens, draft_tokens, acceptance)
    dec, pre = evaluate_config(m, hw, prec, tp, pp, ep, batch, input_tokens, output_tokens, draft_tokens, acceptance)
    power = float(dec[L.B_POWER_W])
    colocated = colocated_tokens_per_s(float(dec[L.B_TOKENS_PER_S]), float(pre[L.B_TOKENS_PER_S]),
                                       input_tokens, output_tokens)
    return Estimate(
        model=m.id, hardware=hw.id, precision=prec, chips=tp * pp, tensor_parallel=tp, pipeline_parallel=pp,
        expert_parallel=bool(ep), batch=batch, input_tokens=input_tokens, output_tokens=output_tokens,
        fits=bool(dec[L.B_FITS] > 0.5), tps_per_user=float(dec[L.B_TPS_PER_USER]),
        output_tokens_per_s=float(dec[L.B_TOKENS_PER_S]), step_time_s=float(dec[L.B_TIME_S]),
        ttft_s=float(pre[L.B_TIME_S]), power_w=power,
        output_tokens_per_s_per_mw=float(dec[L.B_TOKENS_PER_S]) / (power / 1e6),
        colocated_tps_per_user=float(dec[L.B_TPS_PER_USER]) * colocated / float(dec[L.B_TOKENS_PER_S]),
        colocated_output_tokens_per_s=colocated,
        decode=_breakdown_dict(dec), prefill=_breakdown_dict(pre),
        memory={
            "weight_bytes_per_chip": float(dec[L.B_WEIGHT_BYTES_PER_CHIP]),
            "kv_bytes_per_chip": float(dec[L.B_KV_BYTES_PER_CHIP]),
            "usable_bytes_per_chip": float(dec[L.B_USABLE_BYTES_PER_CHIP]),
        },
        roles=list(hw.roles),
    )


def estimate_split(model: str, a_id: str, f_id: str, batch: int, precision: str | None, input_tokens: int,
                   output_tokens: int, draft_tokens: int, acceptance: float) -> Estimate:
    """The smallest attention/FFN layout of the pair that holds the model at this batch (fewest FFN chips, then
    fewest attention chips), its fastest attention mode (MODEL.md 10); TTFT is the prompt's prefill on the
    smallest replica of A that holds the whole model."""
    from solvers import split_kernels as S

    m, hw_a, hw_f = catalog.get_model(model), catalog.get_hardware(a_id), catalog.get_hardware(f_id)
    check_split(hw_a, hw_f, m)
    prec_a, prec_f = hw_a.precision_or_best(precision), hw_f.precision_or_best(precision)
    check_pair(hw_a, m, prec_a)
    check_pair(hw_f, m, prec_f)
    _check_positive(batch=batch, input_tokens=input_tokens, output_tokens=output_tokens)
    attn, ffn = split_model_vectors(m)
    grid = split_grid(hw_a, hw_f, m)
    q, a = spec_tokens(draft_tokens, acceptance)
    res = S.split_decode_sweep(attn, ffn, hardware_vector(hw_a, prec_a), hardware_vector(hw_f, prec_f),
                               grid[:, 0].copy(), grid[:, 1].copy(), grid[:, 2].copy(), np.full(len(grid), float(batch)),
                               input_tokens + output_tokens / 2.0, float(input_tokens + output_tokens), q, a,
                               MICRO_BATCHES)
    fits = (res[:, S.S_FITS_ATTENTION] > 0.5) & (res[:, S.S_FITS_FFN] > 0.5)
    if not fits.any():
        raise InputError(f"{m.id} at batch {batch} does not fit any {a_id}+{f_id} layout up to "
                         f"{int(grid[:, 1].max())} {f_id} chips")
    pool = np.flatnonzero(fits)
    best = int(min(pool, key=lambda i: (grid[i, 1], grid[i, 0], -res[i, S.S_TPS_PER_USER])))
    r = res[best]
    ta, pa, ea = choose_config(m, hw_a, prec_a, None, 1, input_tokens, output_tokens)
    _, pre = evaluate_config(m, hw_a, prec_a, ta, pa, ea, 1, input_tokens, output_tokens)
    decode = {"time_s": float(r[S.S_TIME_S]), "attention_s": float(r[S.S_ATTENTION_S]), "ffn_s": float(r[S.S_FFN_S]),
              "crossing_s": float(r[S.S_CROSSING_S]), "bound": S.SPLIT_BOUND_NAMES[int(r[S.S_BOUND])],
              "attention_chips": int(grid[best, 0]), "ffn_chips": int(grid[best, 1])}
    return Estimate(
        model=m.id, hardware=f"{a_id}+{f_id}", precision=f"{prec_a}+{prec_f}",
        chips=int(grid[best, 0] + grid[best, 1]), tensor_parallel=int(grid[best, 0]), pipeline_parallel=1,
        expert_parallel=bool(grid[best, 2]), batch=batch, input_tokens=input_tokens, output_tokens=output_tokens,
        fits=True, tps_per_user=float(r[S.S_TPS_PER_USER]), output_tokens_per_s=float(r[S.S_TOKENS_PER_S]),
        step_time_s=float(r[S.S_TIME_S]), ttft_s=float(pre[L.B_TIME_S]), power_w=float(r[S.S_POWER_W]),
        output_tokens_per_s_per_mw=float(r[S.S_TOKENS_PER_S]) / (float(r[S.S_POWER_W]) / 1e6),
        colocated_tps_per_user=float(r[S.S_TPS_PER_USER]), colocated_output_tokens_per_s=float(r[S.S_TOKENS_PER_S]),
        decode=decode, prefill=_breakdown_dict(pre), roles=["attention", "ffn"],
        source="planner performance model, attention/FFN split (docs/MODEL.md 10)",
    )


def _check_positive(**values) -> None:
    for name, value in values.items():
        if not (isinstance(value, (int, float)) and math.isfinite(value) and value > 0):
            raise InputError(f"expected a positive number, got {value!r}", field=name.replace("_", "-"))


# ---- frontier -----------------------------------------------------------------------------------------------
def colocated_tokens_per_s(decode_tokens_per_s, prefill_tokens_per_s, input_tokens, output_tokens):
    """Output tokens/s of a replica that also prefills its own requests (MODEL.md 6): each request costs
    O / decode rate + I / prefill rate seconds of the replica. Each stream's speed falls by the same factor,
    since the prefill chunks are interleaved into the decode steps it waits on."""
    per_request_s = output_tokens / decode_tokens_per_s + input_tokens / prefill_tokens_per_s
    return output_tokens / per_request_s


def sweep_points(model: Model, hw: Hardware, precision: str, input_tokens: int, output_tokens: int,
                 efficiency: dict[str, float] | None = None, chips: int | None = None,
                 batches: np.ndarray = FRONTIER_BATCHES) -> dict:
    """Every fitting (tp, pp, ep, batch) of one system at one precision (replicas of ``chips`` chips if given),
    with per-user speed, TTFT and output tokens/s per MW including the replica's own prefill work."""
    from solvers.perf_kernels import decode_sweep, prefill_breakdown

    grid = parallel_grid(hw, model, chips)
    mv, hv = model_vector(model), hardware_vector(hw, precision, efficiency)
    nb = len(batches)
    tp, pp, ep = (np.repeat(grid[:, j], nb) for j in range(3))
    streams = np.tile(batches, len(grid))
    res = decode_sweep(mv, hv, tp, pp, ep, streams, input_tokens + output_tokens / 2.0,
                       float(input_tokens + output_tokens), 1.0, 1.0)
    prefill_rate, ttft = np.empty(len(grid)), np.empty(len(grid))
    pre = np.zeros(L.N_BREAKDOWN)
    for i, (t, p, e) in enumerate(grid):
        prefill_breakdown(mv, hv, t, p, e, float(input_tokens), pre)
        prefill_rate[i], ttft[i] = pre[L.B_TOKENS_PER_S], pre[L.B_TIME_S]
    keep = res[:, L.B_FITS] > 0.5
    tput = colocated_tokens_per_s(res[:, L.B_TOKENS_PER_S], np.repeat(prefill_rate, nb), input_tokens, output_tokens)
    # Prefill chunks share the replica's steps with decode, so a stream's speed falls by the same share.
    tps_user = res[:, L.B_TPS_PER_USER] * tput / res[:, L.B_TOKENS_PER_S]
    mw = res[:, L.B_POWER_W] / 1e6
    return {
        "hardware": hw.id,
        "precision": precision,
        "tp": tp[keep].astype(int),
        "pp": pp[keep].astype(int),
        "ep": ep[keep].astype(int),
        "batch": streams[keep].astype(int),
        "chips": (tp * pp)[keep].astype(int),
        "tps_per_user": tps_user[keep],
        "decode_tps_per_user": res[keep, L.B_TPS_PER_USER],
        "output_tokens_per_s": tput[keep],
        "ttft_s": np.repeat(ttft, nb)[keep],
        "output_tokens_per_s_per_mw": (tput / mw)[keep],
        "decode_tokens_per_s_per_mw": (res[:, L.B_TOKENS_PER_S] / mw)[keep],
        "bound": res[keep, L.B_BOUND].astype(int),
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


def tier_of(tps_per_user: float) -> str:
    """The fastest tier a per-user speed reaches ("below-standard" under standard)."""
    reached = [name for name, speed in TIERS.items() if tps_per_user >= speed]
    return reached[-1] if reached else "below-standard"


# ---- attention/FFN pairs (MODEL.md 10) -----------------------------------------------------------------------
MICRO_BATCHES = 2.0  # micro-batches ping-ponging between the attention and FFN pools
# FFN pool sizes tried, in racks of the FFN system
FFN_RACKS = (0.25, 0.5, 1.0, 2.0, 3.0, 4.0, 6.0, 8.0, 12.0, 16.0)


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


def split_grid(hw_a: Hardware, hw_f: Hardware, model: Model) -> np.ndarray:
    """Rows of (attention chips, FFN chips, attention mode) an attention/FFN pair may use: A's tensor-parallel
    options, 1/4 to 16 racks of F, data-parallel attention as well for MoE models."""
    rows = [(ta, max(1.0, round(r * hw_f.chips_per_rack)), ep) for ta in tp_options(hw_a, model)
            for r in FFN_RACKS for ep in ((0.0, 1.0) if model.is_moe and ta > 1 else (0.0,))]
    return np.array(rows, dtype=np.float64)


def prefill_mw_per_token_per_s(model: Model, hw: Hardware, precision: str, input_tokens: int) -> float:
    """MW of rack power per prompt token/s on the system's most power-efficient prefill layout that fits."""
    from solvers.engine import prefill_per_layout

    grid = parallel_grid(hw, model)
    pre = prefill_per_layout(model_vector(model), hardware_vector(hw, precision), grid, float(input_tokens))
    per_chip = np.where(pre[:, 0] > 0, pre[:, 0] / (grid[:, 0] * grid[:, 1]), 0.0)
    best = float(per_chip.max(initial=0.0))
    if best <= 0:
        raise InputError(f"{model.id} does not fit any prefill replica of {hw.id}")
    return hw.rack_power_w / hw.chips_per_rack / best / 1e6


def split_sweep_points(model: Model, hw_a: Hardware, hw_f: Hardware, prec_a: str, prec_f: str,
                       input_tokens: int, output_tokens: int, batches: np.ndarray = FRONTIER_BATCHES) -> dict:
    """Every fitting (attention chips, FFN chips, attention mode, batch) of an A+F pair, with per-user speed and
    output tokens/s per MW counting a separate prefill pool of A (MODEL.md 10)."""
    from solvers.split_kernels import (S_FITS_ATTENTION, S_FITS_FFN, S_POWER_W, S_TOKENS_PER_S, S_TPS_PER_USER,
                                       split_decode_sweep)

    attn, ffn = split_model_vectors(model)
    ha, hf = hardware_vector(hw_a, prec_a), hardware_vector(hw_f, prec_f)
    grid = split_grid(hw_a, hw_f, model)
    nb = len(batches)
    ca, cf, ep = (np.repeat(grid[:, j], nb) for j in range(3))
    streams = np.tile(batches, len(grid))
    res = split_decode_sweep(attn, ffn, ha, hf, ca, cf, ep, streams, input_tokens + output_tokens / 2.0,
                             float(input_tokens + output_tokens), 1.0, 1.0, MICRO_BATCHES)
    keep = (res[:, S_FITS_ATTENTION] > 0.5) & (res[:, S_FITS_FFN] > 0.5)
    decode_mw = res[:, S_POWER_W] / 1e6 / res[:, S_TOKENS_PER_S]  # MW per output token/s
    prefill_mw = prefill_mw_per_token_per_s(model, hw_a, prec_a, input_tokens) * input_tokens / output_tokens
    return {
        "hardware": f"{hw_a.id}+{hw_f.id}", "precision": f"{prec_a}+{prec_f}",
        "tp": ca[keep].astype(int), "pp": np.ones(int(keep.sum()), dtype=int), "ep": ep[keep].astype(int),
        "ffn_chips": cf[keep].astype(int), "batch": streams[keep].astype(int),
        "chips": (ca + cf)[keep].astype(int), "tps_per_user": res[keep, S_TPS_PER_USER],
        "output_tokens_per_s_per_mw": 1.0 / (decode_mw + prefill_mw)[keep],
        "decode_tokens_per_s_per_mw": 1.0 / decode_mw[keep],
        "bound": np.zeros(int(keep.sum()), dtype=int),
    }


def frontier(model: str, hardware: list[str] | None = None, precision: str | None = None,
             input_tokens: int = 1000, output_tokens: int = 1000) -> list[dict]:
    """Per hardware, the Pareto frontier of output tokens/s per MW against tokens/s per user (interface:
    ``planner frontier``). Hardware that cannot serve the model (model lock, prefill-only, no fit) is skipped."""
    m = catalog.get_model(model)
    _check_positive(input_tokens=input_tokens, output_tokens=output_tokens)
    ids = hardware or sorted(catalog.hardware_catalog())
    points: list[dict] = []
    for hw_id in ids:
        a_id, f_id = parse_pair(hw_id)
        if f_id is not None:
            points.extend(_pair_frontier(m, a_id, f_id, precision, input_tokens, output_tokens))
            continue
        hw = catalog.get_hardware(hw_id)
        if hardware is None and (not _serves(hw, m) or (precision and precision not in hw.precisions)):
            continue
        if "decode" not in hw.roles:
            raise InputError(f"{hw.id} takes only the {', '.join(hw.roles)} role(s): it has no decode frontier",
                             field="hardware")
        precs = [precision] if precision else list(hw.precisions)
        for prec in precs:
            check_pair(hw, m, prec)
        sweeps = [sweep_points(m, hw, p, input_tokens, output_tokens) for p in precs]
        points.extend(_frontier_of(sweeps))
    return points


def _pair_frontier(m: Model, a_id: str, f_id: str, precision, input_tokens, output_tokens) -> list[dict]:
    hw_a, hw_f = catalog.get_hardware(a_id), catalog.get_hardware(f_id)
    check_split(hw_a, hw_f, m)
    prec_a, prec_f = (precision, precision) if precision else (hw_a.precision_or_best(None), hw_f.precision_or_best(None))
    check_pair(hw_a, m, prec_a)
    check_pair(hw_f, m, prec_f)
    pts = _frontier_of([split_sweep_points(m, hw_a, hw_f, prec_a, prec_f, input_tokens, output_tokens)])
    for p in pts:
        p["bound"] = "split"
    return pts


def _serves(hw: Hardware, model: Model) -> bool:
    return (hw.model_lock in (None, model.id)) and "decode" in hw.roles


def _frontier_of(sweeps: list[dict]) -> list[dict]:
    cols = ["tp", "pp", "ep", "batch", "chips", "tps_per_user", "output_tokens_per_s_per_mw",
            "decode_tokens_per_s_per_mw", "bound"]
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
