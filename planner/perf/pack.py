"""Packing catalog entries into the float64 vectors the jitted performance model reads (slots in
``solvers.perf.slots``): a model, a system at one precision with its family's efficiencies, and a workload's
question (lengths, tier, TTFT). The one place that turns catalog objects into arrays.
"""

from __future__ import annotations

import functools
import math
from typing import cast

import numpy as np

from planner import catalog
from planner.catalog import KV_BYTES, MATH_PRECISION, WEIGHT_BYTES, Hardware, Model
from planner.errors import InputError
from planner.vocabulary import DEFAULT_SERVING_STACK, SERVING_STACKS
from solvers.perf import slots as L

ACTIVATION_BYTES = 2.0  # activations cross links in 16-bit


EFFICIENCY_PARAMS = (
    "bandwidth_efficiency",
    "flops_efficiency",
    "kernel_latency_s",
    "prefill_kernel_latency_s",
    "step_overhead_s",
    "collective_latency_s",
    "usable_memory_fraction",
    "attention_stream_s",
    "grouped_gemm_factor",
    "fp8_grouped_gemm_factor",
    "fp4_grouped_gemm_factor",
    "attention_flops_efficiency",
    "fp8_attention_flops_efficiency",
    "fp8_flops_factor",
    "fp4_flops_factor",
    "w4a16_flops_factor",
    "speculative_stream_s",
    "max_streams_per_rank",
    "prefill_tokens_per_pass",
)

# Parameters a family may leave out that fall back to another of its own (``grouped_factor``), not to a neutral value.
FALLS_BACK = ("fp8_grouped_gemm_factor", "fp4_grouped_gemm_factor", "attention_flops_efficiency",
              "fp8_attention_flops_efficiency", "prefill_kernel_latency_s")

UNBOUNDED_STREAMS = 1e9  # "no scheduler bound", finite so that plans (JSON) can carry it

# Values of the parameters a family need not state: each turns its mechanism off (no per-stream attention cost,
# grouped expert matmuls at the dense rate, every precision at the 16-bit share of its peak, no per-stream speculative work,
# no scheduler bound, one prompt per prefill pass) (MODEL.md 5).
NEUTRAL_EFFICIENCY = {
    "attention_stream_s": 0.0,
    "grouped_gemm_factor": 1.0,
    "fp8_flops_factor": 1.0,
    "fp4_flops_factor": 1.0,
    "w4a16_flops_factor": 1.0,
    "speculative_stream_s": 0.0,
    "max_streams_per_rank": UNBOUNDED_STREAMS,
    "prefill_tokens_per_pass": 0.0,
}

# The achieved share of a precision's peak is flops_efficiency (16-bit) times its factor: narrower tensor-core
# formats reach less of their nominal rate (scaling, conversion and the 16-bit work around them).
PRECISION_FACTOR = {"bf16": None, "fp8": "fp8_flops_factor", "fp4": "fp4_flops_factor",
                    "w4a16": "w4a16_flops_factor"}


def precision_factor(eff: dict[str, float], precision: str) -> float:
    name = PRECISION_FACTOR[precision]
    return 1.0 if name is None else eff.get(name, 1.0)


# The grouped expert matmuls' share of the dense rate at each precision (a measured format's own, where the family
# states it; else the 16-bit one's): block-scaled FP8 and NVFP4 grouped kernels fall further below their dense
# GEMMs than 16-bit ones do (data/measured_kernels.yaml). Weight-only 4-bit dequantizes into 16-bit matmuls.
GROUPED_FACTOR = {"bf16": "grouped_gemm_factor", "fp8": "fp8_grouped_gemm_factor", "fp4": "fp4_grouped_gemm_factor",
                  "w4a16": "grouped_gemm_factor"}


def grouped_factor(eff: dict[str, float], precision: str) -> float:
    return eff.get(GROUPED_FACTOR[precision], eff.get("grouped_gemm_factor", 1.0))


# Attention kernels' own share of the peak at their precision (MLA decode's, measured: MODEL.md 2.6), where the
# family states it; else the matmuls' (flops_efficiency times the precision's factor).
ATTENTION_EFFICIENCY = {"bf16": "attention_flops_efficiency", "fp8": "fp8_attention_flops_efficiency"}


def attention_share(eff: dict[str, float], precision: str) -> float:
    """The achieved share of the attention precision's peak: its measured attention efficiency, else the matmuls'."""
    name = ATTENTION_EFFICIENCY.get(precision)
    if name is not None and name in eff:
        return eff[name]
    return eff["flops_efficiency"] * precision_factor(eff, precision)


# ---- packing ------------------------------------------------------------------------------------------------
def model_vector(model: Model) -> np.ndarray:
    v = np.zeros(L.N_MODEL)
    v[L.M_LAYERS] = model.layers
    v[L.M_DENSE_LAYERS] = model.n_dense_layers
    v[L.M_MOE_LAYERS] = model.n_moe_layers
    v[L.M_HIDDEN] = model.hidden_size
    v[L.M_ATTN_PARAMS] = model.attention_params / model.layers  # a hybrid's mean over its two kinds of layer
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
    v[L.M_ATTN_KERNELS] = model.attention_kernels_per_layer
    v[L.M_DENSE_FFN_KERNELS] = model.dense_ffn_kernels_per_layer
    v[L.M_MOE_KERNELS] = model.moe_kernels_per_layer  # counts only where there are MoE layers
    v[L.M_SAMPLES] = 1.0
    v[L.M_ATTN_HEADS] = model.heads
    v[L.M_LINEAR_LAYERS] = model.linear_attention_layers
    v[L.M_STATE_BYTES] = model.linear_state_bytes_per_layer
    v[L.M_STATE_HEADS] = model.linear_key_heads
    v[L.M_LINEAR_FLOPS] = model.linear_attention_flops_per_token
    v[L.M_TOPK] = model.sparse_attention_topk or 0
    v[L.M_INDEX_ELEMS] = model.indexer_head_dim if model.sparse_attention_topk else 0
    v[L.M_INDEX_FLOPS] = model.indexer_flops_per_token_per_context
    return v


ATTENTION_SLOTS = (L.M_ATTN_PARAMS, L.M_EMBED_PARAMS, L.M_LM_HEAD_PARAMS, L.M_KV_ELEMS, L.M_ATTN_FLOPS,
                   L.M_PREFILL_ATTN_FLOPS, L.M_ATTN_KERNELS, L.M_SAMPLES, L.M_ATTN_HEADS, L.M_STATE_BYTES,
                   L.M_LINEAR_FLOPS, L.M_INDEX_ELEMS, L.M_INDEX_FLOPS)


FFN_SLOTS = (L.M_DENSE_FFN_PARAMS, L.M_EXPERT_PARAMS, L.M_SHARED_PARAMS, L.M_EXPERTS, L.M_DENSE_FFN_KERNELS,
             L.M_MOE_KERNELS)


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


@functools.lru_cache(maxsize=None)
def power_table() -> dict[str, dict]:
    return catalog._read_yaml(catalog.DATA_DIR / "power.yaml")


POWER_SHARES = ("idle_share", "memory_share", "compute_share")


def power_curve(family: str) -> dict[str, dict]:
    """The family's chip power curve (data/power.yaml, MODEL.md 14): {idle_share, memory_share, compute_share} as
    sourced figures, following ``like:``."""
    table = power_table()
    entry = table.get(family)
    if entry is None:
        raise InputError(f"hardware family {family!r} has no power curve in data/power.yaml")
    if "like" in entry:
        return power_curve(entry["like"])
    return {k: entry[k] for k in POWER_SHARES}


def power_curve_values(family: str) -> dict[str, float]:
    """``power_curve``'s shares as plain numbers."""
    return {k: float(v["value"]) for k, v in power_curve(family).items()}


def chip_power_fraction(hw: Hardware) -> float:
    """Share of the rack's design power its chips are rated for (chips x chip power / rack power, at most 1); 1
    where the catalog gives no chip power (the whole rack then follows the curve)."""
    if hw.chip.power_w is None:
        return 1.0
    return min(1.0, hw.chips_per_rack * hw.chip.power_w.value / hw.rack_power_w)


def rack_power_shares(hw: Hardware, curve: dict[str, float] | None = None) -> tuple[float, float, float]:
    """(idle, memory, compute) shares of the rack's design power (slots H_*_POWER_SHARE): the chips' curve scaled by
    their part of the rack, the rest of the rack at its design draw. ``curve`` (plain numbers) replaces the family's."""
    shares = curve or power_curve_values(hw.family)
    c = chip_power_fraction(hw)
    return (1.0 - c + c * shares["idle_share"], c * shares["memory_share"], c * shares["compute_share"])


def efficiency_key(hw: Hardware) -> str:
    """The entry of data/efficiency.yaml whose parameters a system takes: ``family/generation`` where the system
    names a generation the table has an entry for, else its family's (a family's own entry is the generation it
    was measured on last: NVIDIA's, Blackwell)."""
    key = f"{hw.family}/{hw.generation}" if hw.generation else hw.family
    return key if key in efficiency_table() else hw.family


def efficiency_of(efficiencies: dict | None, hw: Hardware) -> dict[str, float] | None:
    """A system's parameters in a map of efficiencies (``Scenario.efficiencies``): its own entry where a scenario
    scopes parameters to it (a profile ``planner calibrate --measurements`` wrote for the measured system), else its
    generation's (``efficiency_key``), else its family's; None where the map has none (the calibrated
    values apply)."""
    efficiencies = efficiencies or {}
    return efficiencies.get(hw.id, efficiencies.get(efficiency_key(hw), efficiencies.get(hw.family)))


def family_efficiency(family: str, stack: str = DEFAULT_SERVING_STACK) -> dict[str, float]:
    """The efficiency parameters of an entry of data/efficiency.yaml (a family, or a family's generation
    ``family/generation``: ``efficiency_key``) under a serving stack, following ``inherits`` for entries
    with no own data of a parameter, with the stack's own values (an entry's ``stacks:``) over the vendor-best ones, and the neutral value
    of any optional one stated nowhere (``NEUTRAL_EFFICIENCY``)."""
    table = efficiency_table()
    if family not in table:
        raise InputError(f"hardware family {family!r} has no entry in data/efficiency.yaml")
    if stack not in SERVING_STACKS:
        raise InputError(f"expected one of {', '.join(SERVING_STACKS)}, got {stack!r}", field="serving_stack")
    entry = table[family]
    base = family_efficiency(entry["inherits"], stack) if "inherits" in entry else dict(NEUTRAL_EFFICIENCY)
    own = {k: float(entry[k]["value"]) for k in EFFICIENCY_PARAMS if k in entry}
    stacked = (entry.get("stacks") or {}).get(stack) or {}
    own.update({k: float(stacked[k]["value"]) for k in EFFICIENCY_PARAMS if k in stacked})
    merged = {**base, **own}
    missing = [k for k in EFFICIENCY_PARAMS if k not in merged and k not in FALLS_BACK]
    if missing:
        raise InputError(f"family {family!r} lacks efficiency parameters {missing}")
    return merged


def hardware_vector(hw: Hardware, precision: str, efficiency: dict[str, float] | None = None,
                    power: dict[str, float] | None = None) -> np.ndarray:
    """One system at one precision, with its family's calibrated efficiencies (or the ones given) and its family's
    power curve (or ``power``'s shares)."""
    eff = efficiency if efficiency is not None else family_efficiency(efficiency_key(hw))
    chip = hw.chip
    if len(chip.memory) > L.MAX_TIERS:
        raise InputError(f"{hw.id}: at most {L.MAX_TIERS} memory tiers are modelled")
    v = np.zeros(L.N_HW)
    v[L.H_N_TIERS] = len(chip.memory)
    v[L.H_SERVING_TIERS] = sum(1 for t in chip.memory if t.serves_weights)
    for i, tier in enumerate(chip.memory):
        v[L.H_CAP + i] = tier.capacity_bytes.value
        v[L.H_BW + i] = tier.bandwidth_bytes_per_s.value
    v[L.H_PEAK_FLOPS] = chip.peak_flops_per_s[MATH_PRECISION[precision]].value * precision_factor(eff, precision)
    # the kernel divides attention's FLOPs by H_FLOPS_EFF as it does the matmuls': the peak carries the rest
    v[L.H_ATTN_PEAK_FLOPS] = (attention_peak_flops(hw, precision)
                              * attention_share(eff, attention_precision(hw, precision)) / eff["flops_efficiency"])
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
    v[L.H_KERNEL_S] = eff["kernel_latency_s"]
    v[L.H_PREFILL_KERNEL_S] = eff.get("prefill_kernel_latency_s", eff["kernel_latency_s"])
    v[L.H_STEP_S] = eff["step_overhead_s"]
    v[L.H_COLL_LAT_S] = eff["collective_latency_s"]
    v[L.H_MEM_USABLE] = eff["usable_memory_fraction"]
    v[L.H_ATTN_STREAM_S] = eff.get("attention_stream_s", 0.0)
    v[L.H_EXP_PER_S] = chip.softmax_exp_per_s.value if chip.softmax_exp_per_s is not None else 0.0
    v[L.H_GROUPED_GEMM_FACTOR] = grouped_factor(eff, precision)
    v[L.H_SPEC_STREAM_S] = eff.get("speculative_stream_s", 0.0)
    v[L.H_MAX_STREAMS_PER_RANK] = eff.get("max_streams_per_rank", UNBOUNDED_STREAMS)
    v[L.H_PREFILL_TOKENS_PER_PASS] = eff.get("prefill_tokens_per_pass", 0.0)
    v[L.H_IDLE_POWER_SHARE], v[L.H_MEMORY_POWER_SHARE], v[L.H_COMPUTE_POWER_SHARE] = rack_power_shares(hw, power)
    return v


def attention_precision(hw: Hardware, precision: str) -> catalog.Precision:
    """Attention arithmetic runs at the KV cache's precision (fp8 for fp4 runs) when the chip has it."""
    kv_precision = cast(catalog.Precision, {"fp4": "fp8", "w4a16": "bf16"}.get(precision, precision))  # a precision
    return kv_precision if kv_precision in hw.chip.peak_flops_per_s else MATH_PRECISION[precision]


def attention_peak_flops(hw: Hardware, precision: str) -> float:
    """The dense peak attention runs at (``attention_precision``)."""
    return hw.chip.peak_flops_per_s[attention_precision(hw, precision)].value


def workload_vector(input_tokens: float, output_tokens: float, prefill_tokens: float | None = None,
                    min_tps_per_user: float = 0.0, ttft_s: float = math.inf, ttft_quantile: float = 0.9,
                    resident_s_per_token: float = 0.0) -> np.ndarray:
    """One workload's question to the engine (slots W_*). The context a decode step attends to is input + output
    / 2 on average and input + output at the longest (MODEL.md 3.1); ``prefill_tokens`` (default: the whole
    prompt) is what is left to compute after prefix-cache hits."""
    v = np.zeros(L.N_WORKLOAD)
    v[L.W_INPUT_TOKENS] = input_tokens
    v[L.W_PREFILL_TOKENS] = input_tokens if prefill_tokens is None else prefill_tokens
    v[L.W_OUTPUT_TOKENS] = output_tokens
    v[L.W_CONTEXT_AVG] = input_tokens + output_tokens / 2.0
    v[L.W_CONTEXT_MAX] = float(input_tokens + output_tokens)
    v[L.W_MIN_TPS_PER_USER] = min_tps_per_user
    v[L.W_TTFT_S] = ttft_s
    v[L.W_TTFT_QUANTILE] = ttft_quantile
    v[L.W_RESIDENT_S_PER_TOKEN] = resident_s_per_token
    return v
