"""The hardware and model catalogs: schemas for the data files in ``planner/data`` and their loaders.

Catalogs are data, not classes: one YAML file per rack system in ``data/hardware/`` and one per model in
``data/models/``. These pydantic models only validate those files and derive quantities (parameter counts, KV bytes
per token) from the public config fields; every number the rest of the planner uses comes from here.
"""

from __future__ import annotations

import datetime as _dt
import functools
import math
from pathlib import Path
from typing import Annotated, Literal, TypeVar, get_args

import numpy as np
from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, model_validator

from planner import yaml_io
from planner.vocabulary import ACQUISITIONS, FOUR_BIT, HARDWARE_ROLES, PRECISIONS

DATA_DIR = Path(__file__).parent / "data"
CATALOG_VERSION = "2026.11.30"

Confidence = Literal["official", "measured", "press", "estimate"]
Precision = Literal["fp4", "fp8", "bf16", "w4a16"]
Role = Literal["prefill", "decode", "attention", "ffn"]
TierKind = Literal["sram", "hbm", "gddr", "ddr", "lpddr"]
Acquisition = Literal["merchant", "cloud", "select"]

assert get_args(Precision) == PRECISIONS and get_args(Role) == HARDWARE_ROLES  # the vocabulary's words
assert get_args(Acquisition) == ACQUISITIONS
# Bytes per weight element. FP4 carries one 8-bit scale per 16 elements (NVFP4 block size), so 4.5 bits; weight-only
# 4-bit one 8-bit scale per 32 (MXFP4; INT4 with a 16-bit scale per 128 is 4.125 bits, about the same), 4.25 bits.
WEIGHT_BYTES = {"fp4": 4.5 / 8.0, "fp8": 1.0, "bf16": 2.0, "w4a16": 4.25 / 8.0}
# KV cache element bytes at each serving precision: FP4 deployments keep the KV cache in FP8; weight-only 4-bit
# ones in 16 bits, as their activations.
KV_BYTES = {"fp4": 1.0, "fp8": 1.0, "bf16": 2.0, "w4a16": 2.0}
# Bytes per element of a linear-attention layer's recurrent state at the dtype the serving engine keeps it in (the
# config's mamba_ssm_dtype where it names one: Qwen3.5's float32; else the model's 16 bits, vLLM's "auto"): the state
# is updated in place every token, so engines keep it wide whatever the KV cache's precision. Its convolution window
# holds activations, in 16 bits.
STATE_BYTES = {"bf16": 2.0, "fp32": 4.0}
CONV_STATE_BYTES = 2.0
# The precision whose tensor-core peak a serving precision's matmuls run at: weight-only formats multiply in 16 bits.
MATH_PRECISION: dict[str, Precision] = {"fp4": "fp4", "fp8": "fp8", "bf16": "bf16", "w4a16": "bf16"}


class Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


def _a_number(v):
    """A figure is a number as written: YAML's true or "700" is not one (pydantic would read them as 1 and 700)."""
    if isinstance(v, (bool, str)):
        raise ValueError("expected a valid number")  # the scenario's error text adds what it got
    return v


Number = Annotated[float, BeforeValidator(_a_number)]


class Figure(Strict):
    """One sourced number. ``source`` is a key of ``data/sources.yaml``; an estimate states its basis."""

    value: Number
    source: str
    confidence: Confidence
    basis: str | None = Field(None, description="how an estimate was derived; required when confidence is estimate")
    note: str | None = None
    low: Number | None = Field(None, description="lowest plausible value (default for an estimate: its kind's range, "
                              "data/uncertainty.yaml)")
    high: Number | None = Field(None, description="highest plausible value")

    @model_validator(mode="after")
    def _estimate_has_basis(self) -> "Figure":
        if not math.isfinite(self.value):
            raise ValueError("value must be a finite number")
        if (self.low is not None and self.low > self.value) or (self.high is not None and self.high < self.value):
            raise ValueError(f"low <= value <= high must hold, got {self.low}, {self.value}, {self.high}")
        if self.confidence == "estimate" and not self.basis:
            raise ValueError("an estimate must state its basis")
        return self


class DateFigure(Strict):
    value: _dt.date
    source: str
    confidence: Confidence
    basis: str | None = None
    note: str | None = None


def _positive(*names: str):
    """A model validator: the named Figure fields must be > 0."""

    def check(self):
        for name in names:
            fig = getattr(self, name)
            if fig is not None and not fig.value > 0:
                raise ValueError(f"{name} must be > 0, got {fig.value}")
        return self

    return model_validator(mode="after")(check)


class MemoryTier(Strict):
    tier: TierKind
    capacity_bytes: Figure
    bandwidth_bytes_per_s: Figure
    serves_weights: bool = Field(True, description="inference serves weights and KV from this tier; false for a "
                                 "capacity tier that only streams or stages them (Cerebras MemoryX, SambaNova's "
                                 "model-switching DDR)")

    _check = _positive("capacity_bytes", "bandwidth_bytes_per_s")


class Link(Strict):
    bandwidth_bytes_per_s: Figure = Field(description="per chip, one direction")
    latency_s: Figure

    @model_validator(mode="after")
    def _sane(self) -> "Link":
        if not self.bandwidth_bytes_per_s.value > 0:
            raise ValueError(f"bandwidth_bytes_per_s must be > 0, got {self.bandwidth_bytes_per_s.value}")
        if self.latency_s.value < 0:
            raise ValueError(f"latency_s must be >= 0, got {self.latency_s.value}")
        return self


class ScaleUp(Link):
    domain_chips: Figure

    @model_validator(mode="after")
    def _domain(self) -> "ScaleUp":
        if not (self.domain_chips.value >= 1 and float(self.domain_chips.value).is_integer()):
            raise ValueError(f"domain_chips must be a whole number >= 1, got {self.domain_chips.value}")
        return self


class Chip(Strict):
    name: str
    memory: list[MemoryTier] = Field(min_length=1, max_length=4, description="fastest tier first (at most 4, the "
                                     "slots of the performance model's hardware vector)")
    peak_flops_per_s: dict[Precision, Figure] = Field(description="dense peak per precision (never sparse)")
    softmax_exp_per_s: Figure | None = Field(None, description="exponentials per second the chip's special-function "
                                             "units compute (softmax's, one per attention score); null where not "
                                             "stated: the model then takes attention as matmul-bound")
    power_w: Figure | None = None
    scale_up: ScaleUp
    scale_out: Link

    @model_validator(mode="after")
    def _serving_tiers_first(self) -> "Chip":
        flags = [t.serves_weights for t in self.memory]
        if not flags[0] or any(b and not a for a, b in zip(flags, flags[1:])):
            raise ValueError("memory: the tiers that serve weights (serves_weights: true) must come first, the "
                             "fastest among them")
        return self

    @model_validator(mode="after")
    def _flops(self) -> "Chip":
        for prec, fig in self.peak_flops_per_s.items():
            if not fig.value > 0:
                raise ValueError(f"peak_flops_per_s.{prec} must be > 0, got {fig.value}")
        return self


class Rack(Strict):
    chips: Figure
    node_chips: Figure | None = Field(None, description="chips one host holds (a server, a compute tray: one operating "
                                      "system, one Kubernetes node); a replica of more chips spans hosts, and its "
                                      "export carries the engine's multi-node settings")
    power_kw: Figure = Field(description="design (IT) power of one rack")
    capex_usd: Figure
    embodied_kg_co2e: Figure | None = Field(None, description="cradle-to-gate manufacturing emissions of one "
                                            "catalog rack (chips, memory, boards, host, network, chassis), kg CO2e: "
                                            "the min_carbon objective spreads it over the rack's service life")
    available: DateFigure
    acquisition: Acquisition = Field("merchant", description="how it can be obtained: merchant (racks anyone can "
                                     "buy), cloud (rented from one cloud only), select (sold to a few customers)")
    acquisition_basis: str | None = Field(None, description="why, with the source where there is one")
    note: str | None = None

    _check = _positive("power_kw")

    @model_validator(mode="after")
    def _counts(self) -> "Rack":
        if not (self.chips.value >= 1 and float(self.chips.value).is_integer()):
            raise ValueError(f"chips must be a whole number >= 1, got {self.chips.value}")
        node = self.node_chips
        if node is not None and not (1 <= node.value <= self.chips.value and float(node.value).is_integer()):
            raise ValueError(f"node_chips must be a whole number from 1 to the rack's chips, got {node.value}")
        if self.capex_usd.value < 0:
            raise ValueError(f"capex_usd must be >= 0, got {self.capex_usd.value}")
        if self.embodied_kg_co2e is not None and not self.embodied_kg_co2e.value > 0:
            raise ValueError(f"embodied_kg_co2e must be > 0, got {self.embodied_kg_co2e.value}")
        return self


class RentalOffer(Strict):
    """Capacity of a system rented by the chip-hour (OPTIMIZER.md 11): paid for every hour of the term, no site
    power, no floor space."""

    name: str = Field(description="the offer: provider, instance and term")
    usd_per_chip_hour: float = Field(gt=0, description="USD per chip-hour")
    term_months: int = Field(0, ge=0, description="commitment in months (0: on demand)")
    max_chips: int | None = Field(None, ge=0, description="most chips the offer rents (null: no limit)")
    source: str | None = Field(None, description="where the price was read, with its date")


class Hardware(Strict):
    id: str
    name: str
    vendor: str
    family: str = Field(description="calibration family in data/efficiency.yaml")
    generation: str | None = Field(None, description="the family's hardware and software generation (hopper, "
                                   "blackwell, ...): the entry family/generation of data/efficiency.yaml, where "
                                   "there is one, holds its efficiencies and fixed costs; else the family's own")
    chip: Chip
    rack: Rack
    precisions: list[Precision] = Field(min_length=1)
    roles: list[Role] = Field(min_length=1)
    model_lock: str | None = Field(None, description="model id wired into the silicon; serves nothing else")
    notes: str | None = None
    rental: list[RentalOffer] = Field(default_factory=list, description="offers to rent it by the chip-hour")

    @model_validator(mode="after")
    def _precisions_have_flops(self) -> "Hardware":
        missing = [p for p in self.precisions if MATH_PRECISION[p] not in self.chip.peak_flops_per_s]
        if missing:
            raise ValueError(f"precisions {missing} have no chip.peak_flops_per_s entry")
        return self

    @property
    def chips_per_rack(self) -> int:
        return int(self.rack.chips.value)

    @property
    def rack_power_w(self) -> float:
        return self.rack.power_kw.value * 1e3

    def precision_or_best(self, precision: str | None, model: "Model | None" = None) -> str:
        """The precision asked for, or the fastest the hardware runs ``model`` at (``runnable_precisions``; a 4-bit
        checkpoint at its 4-bit format before any wider one)."""
        if precision is not None:
            return precision
        runnable = runnable_precisions(self, model) if model is not None else list(self.precisions)
        if model is not None and model.native_precision in FOUR_BIT:
            four = [p for p in FOUR_BIT if p in runnable]
            if four:
                return four[0]
        return next(p for p in PRECISIONS if p in runnable)


class Model(Strict):
    """A transformer from its public config. Parameter counts and KV sizes are derived, never typed in. Sizes are
    bounded far above any published model, so that a typo (100,000 layers) is an input error, not minutes of
    search."""

    id: str
    name: str
    source: str = Field(description="URL of the public config the fields were read from")
    layers: int = Field(gt=0, le=1024, description="decoder layers (at most 1,024: beyond any published model)")
    hidden_size: int = Field(gt=0, le=131072)
    vocab_size: int = Field(gt=0, le=4194304)
    tie_word_embeddings: bool = False
    attention: Literal["gqa", "mla"]
    heads: int = Field(gt=0, le=4096)
    kv_heads: int = Field(gt=0, description="for MLA the latent is shared: 1")
    head_dim: int = Field(gt=0, description="GQA head dim; for MLA qk_nope_head_dim + qk_rope_head_dim")
    # MLA (DeepSeek-style) ranks
    q_lora_rank: int | None = None
    kv_lora_rank: int | None = None
    qk_nope_head_dim: int | None = None
    qk_rope_head_dim: int | None = None
    v_head_dim: int | None = None
    attention_bias: bool = False
    sliding_window_tokens: int | None = Field(None, description="window of the sliding-window layers")
    sliding_window_layers: int = Field(0, ge=0, description="how many layers use the sliding window")
    attention_output_gate: bool = Field(False, description="the full-attention layers gate their output by a second "
                                        "query-sized projection (Qwen3-Next, Qwen3.5: q_proj twice as wide)")
    # Hybrid linear attention (MODEL.md 2.10): layers with a fixed-size recurrent state per sequence, no KV cache
    linear_attention: Literal["gated_deltanet", "lightning"] | None = Field(
        None, description="the linear-attention layers' kind: gated DeltaNet (Qwen3-Next, Qwen3.5) or lightning "
        "attention (MiniMax-01)")
    linear_attention_layers: int = Field(0, ge=0, description="layers of linear attention; the rest attend over a "
                                         "KV cache")
    linear_key_heads: int = Field(0, ge=0, description="linear attention's key (and query) heads")
    linear_key_head_dim: int = Field(0, ge=0)
    linear_value_heads: int = Field(0, ge=0, description="linear attention's value heads: one recurrent state each")
    linear_value_head_dim: int = Field(0, ge=0)
    linear_conv_kernel: int = Field(0, ge=0, description="width of the causal convolution over q, k and v (gated "
                                    "DeltaNet; 0: none)")
    linear_state_dtype: Literal["bf16", "fp32"] = Field("bf16", description="dtype engines keep the recurrent "
                                                        "state in (the config's mamba_ssm_dtype)")
    # DeepSeek sparse attention (MODEL.md 2.10): the cache holds every token, a query reads its top k
    sparse_attention_topk: int | None = Field(None, gt=0, description="cached tokens each query of a full-attention "
                                              "layer reads, chosen by the lightning indexer (index_topk)")
    indexer_heads: int = Field(0, ge=0, description="the lightning indexer's query heads (index_n_heads)")
    indexer_head_dim: int = Field(0, ge=0, description="its head dim, the size of its one key per token and layer "
                               "(index_head_dim)")
    # FFN: dense layers use intermediate_size; MoE layers use experts of moe_intermediate_size
    intermediate_size: int = Field(0, ge=0, description="dense FFN width (0 when every layer is MoE)")
    dense_layers: int | None = Field(None, description="layers with a dense FFN; default all (dense) or 0 (MoE)")
    experts: int = Field(0, ge=0, le=65536)
    experts_per_token: int = Field(0, ge=0)
    shared_experts: int = Field(0, ge=0)
    moe_intermediate_size: int = Field(0, ge=0)
    native_precision: Precision = "bf16"
    mtp_layers: int = Field(0, ge=0, description="multi-token-prediction layers the checkpoint ships "
                            "(num_nextn_predict_layers), the drafter of speculative method mtp")
    notes: str | None = None

    @model_validator(mode="before")
    @classmethod
    def _derived_is_recomputed(cls, data):
        """An entry as ``catalog show`` and ``models add`` print it carries ``derived``: read back, the counts are
        derived again from the fields, never taken from it (an edited field would leave them stale)."""
        if isinstance(data, dict) and isinstance(data.get("derived"), dict):
            data = {k: v for k, v in data.items() if k != "derived"}
        return data

    @model_validator(mode="after")
    def _consistent(self) -> "Model":
        if self.attention == "mla":
            for f in ("kv_lora_rank", "qk_nope_head_dim", "qk_rope_head_dim", "v_head_dim"):
                if getattr(self, f) is None:
                    raise ValueError(f"MLA attention needs {f}")
            _, nope, rope, _ = self.mla_dims
            if self.kv_heads != 1 or self.head_dim != nope + rope:
                raise ValueError("MLA needs kv_heads 1 and head_dim = qk_nope_head_dim + qk_rope_head_dim")
        if self.experts:
            if not (0 < self.experts_per_token <= self.experts) or self.moe_intermediate_size <= 0:
                raise ValueError("MoE needs 0 < experts_per_token <= experts and moe_intermediate_size > 0")
        elif self.intermediate_size <= 0:
            raise ValueError("a dense model needs intermediate_size > 0")
        if self.sliding_window_layers + self.linear_attention_layers > self.layers:
            raise ValueError("sliding_window_layers and linear_attention_layers exceed layers")
        self._linear_consistent()
        if self.sparse_attention_topk and not (self.indexer_heads and self.indexer_head_dim):
            raise ValueError("sparse attention (sparse_attention_topk) needs indexer_heads and indexer_head_dim")
        if self.sliding_window_layers and not self.sliding_window_tokens:
            raise ValueError("sliding_window_layers needs sliding_window_tokens")
        if self.n_dense_layers > self.layers:
            raise ValueError("dense_layers exceeds layers")
        return self

    def _linear_consistent(self) -> None:
        if not self.linear_attention_layers:
            return
        if self.linear_attention is None:
            raise ValueError("linear_attention_layers needs linear_attention (its kind)")
        dims = ("linear_key_heads", "linear_key_head_dim", "linear_value_heads", "linear_value_head_dim")
        missing = [f for f in dims if not getattr(self, f)]
        if missing:
            raise ValueError(f"linear attention needs {', '.join(missing)}")
        if self.linear_value_heads % self.linear_key_heads:
            raise ValueError("linear_value_heads must be a multiple of linear_key_heads")

    # ---- derived structure -------------------------------------------------------------------------------
    @property
    def is_moe(self) -> bool:
        return self.experts > 0

    @property
    def n_dense_layers(self) -> int:
        if self.dense_layers is not None:
            return self.dense_layers
        return 0 if self.is_moe else self.layers

    @property
    def n_moe_layers(self) -> int:
        return self.layers - self.n_dense_layers

    @property
    def full_attention_layers(self) -> int:
        """Layers that attend over a KV cache (sliding-window ones included): all but the linear-attention ones."""
        return self.layers - self.linear_attention_layers

    @property
    def attention_params(self) -> int:
        """Attention weights of all layers: the full-attention layers' and the linear-attention layers'."""
        return (self.full_attention_layers * self.attention_params_per_layer
                + self.linear_attention_layers * self.linear_attention_params_per_layer)

    @property
    def attention_params_per_layer(self) -> int:
        """One full-attention layer's weights (its output gate and sparse-attention indexer included)."""
        h = self.hidden_size
        if self.attention == "gqa":
            q = h * self.heads * self.head_dim * (2 if self.attention_output_gate else 1)
            kv = 2 * h * self.kv_heads * self.head_dim
            o = self.heads * self.head_dim * h
            bias = (self.heads + 2 * self.kv_heads) * self.head_dim if self.attention_bias else 0
            return q + kv + o + bias + self.indexer_params_per_layer
        kv_rank, nope, rope, v_dim = self.mla_dims
        qk = nope + rope
        if self.q_lora_rank:
            q = h * self.q_lora_rank + self.q_lora_rank * self.heads * qk
        else:
            q = h * self.heads * qk
        kv = h * (kv_rank + rope) + kv_rank * self.heads * (nope + v_dim)
        o = self.heads * v_dim * h
        return q + kv + o + self.indexer_params_per_layer

    @property
    def indexer_params_per_layer(self) -> int:
        """DeepSeek sparse attention's lightning indexer (DeepSeek-V3.2's Indexer): its queries from the query
        latent (wq_b, q_lora_rank -> heads x dim; from the hidden state without one), one key per token (wk,
        h -> dim, with its LayerNorm's weight and bias) and a weight per head (weights_proj, h -> heads)."""
        n, d = self.indexer_heads, self.indexer_head_dim
        if not self.sparse_attention_topk:
            return 0
        return (self.q_lora_rank or self.hidden_size) * n * d + self.hidden_size * d + 2 * d + self.hidden_size * n

    @property
    def linear_conv_channels(self) -> int:
        """Channels of gated DeltaNet's causal convolution: q, k (key heads) and v (value heads)."""
        if self.linear_conv_kernel == 0:
            return 0
        return 2 * self.linear_key_heads * self.linear_key_head_dim + self.linear_value_heads * self.linear_value_head_dim

    @property
    def linear_attention_params_per_layer(self) -> int:
        """One linear-attention layer's weights. Gated DeltaNet (transformers' Qwen3NextGatedDeltaNet): q, k, v and
        the output gate z (in_proj_qkvz: h -> 2 nk dk + 2 nv dv), the decay and write gates (in_proj_ba: h -> 2 nv),
        the convolution (channels x kernel), A_log and dt_bias (nv each), the gated norm (dv), out_proj (nv dv -> h).
        Lightning attention (MiniMax-01): qkv (h -> 3 H d), the output gate (h -> H d), its norm (H d) and out_proj
        (H d -> h)."""
        if not self.linear_attention_layers:
            return 0
        h = self.hidden_size
        nk, dk, nv, dv = self.linear_key_heads, self.linear_key_head_dim, self.linear_value_heads, self.linear_value_head_dim
        if self.linear_attention == "lightning":
            return h * (2 * nk * dk + nv * dv) + h * nv * dv + nv * dv + nv * dv * h
        in_proj = h * (2 * nk * dk + 2 * nv * dv) + h * 2 * nv
        conv = self.linear_conv_channels * self.linear_conv_kernel
        return in_proj + conv + 2 * nv + dv + nv * dv * h

    @property
    def linear_state_bytes_per_layer(self) -> float:
        """One sequence's state in one linear-attention layer: a dk x dv matrix per value head at the state's dtype
        (STATE_BYTES), and gated DeltaNet's convolution window, the last kernel - 1 inputs of its channels, in 16
        bits."""
        if not self.linear_attention_layers:
            return 0.0
        recurrent = self.linear_value_heads * self.linear_key_head_dim * self.linear_value_head_dim
        window = self.linear_conv_channels * max(self.linear_conv_kernel - 1, 0)
        return recurrent * STATE_BYTES[self.linear_state_dtype] + window * CONV_STATE_BYTES

    @property
    def state_bytes_per_sequence(self) -> float:
        """Fixed-size state one sequence keeps over all linear-attention layers, whatever its length."""
        return self.linear_attention_layers * self.linear_state_bytes_per_layer

    @property
    def linear_attention_flops_per_token(self) -> int:
        """FLOPs of one token through one linear-attention layer's state (2 per multiply-add), whatever the
        context. Gated DeltaNet per value head: decay the dk x dv state (dk dv), retrieve S^T k (2 dk dv), write the
        rank-one delta correction (2 dk dv), read out S^T q (2 dk dv): 7 dk dv; and the convolution, 2 x channels
        x kernel. Lightning attention per head: decay (d^2), add k^T v (2 d^2), read out q S (2 d^2): 5 d^2."""
        if not self.linear_attention_layers:
            return 0
        per_head = self.linear_key_head_dim * self.linear_value_head_dim * (5 if self.linear_attention == "lightning"
                                                                              else 7)
        return self.linear_value_heads * per_head + 2 * self.linear_conv_channels * self.linear_conv_kernel

    @property
    def indexer_flops_per_token_per_context(self) -> int:
        """Indexer FLOPs per layer for one query token against one cached token: each head's dot product with the
        token's key, 2 x heads x dim, and the heads' ReLU scores weighted and summed, 2 x heads."""
        if not self.sparse_attention_topk:
            return 0
        return 2 * self.indexer_heads * self.indexer_head_dim + 2 * self.indexer_heads

    @property
    def mla_dims(self) -> tuple[int, int, int, int]:
        """(kv_lora_rank, qk_nope_head_dim, qk_rope_head_dim, v_head_dim) of an MLA model, which has them all
        (``_consistent``)."""
        kv_rank, nope, rope, v_dim = self.kv_lora_rank, self.qk_nope_head_dim, self.qk_rope_head_dim, self.v_head_dim
        assert kv_rank is not None and nope is not None and rope is not None and v_dim is not None, "not MLA"
        return kv_rank, nope, rope, v_dim

    @property
    def dense_ffn_params_per_layer(self) -> int:
        return 3 * self.hidden_size * self.intermediate_size  # gated (SwiGLU): gate, up, down

    @property
    def expert_params(self) -> int:
        """One routed expert (gated FFN of moe_intermediate_size)."""
        return 3 * self.hidden_size * self.moe_intermediate_size

    @property
    def shared_params_per_moe_layer(self) -> int:
        """Shared experts plus the router, read for every token of an MoE layer."""
        return self.shared_experts * self.expert_params + self.hidden_size * self.experts

    @property
    def embedding_params(self) -> int:
        return self.vocab_size * self.hidden_size * (1 if self.tie_word_embeddings else 2)

    @property
    def lm_head_params(self) -> int:
        return self.vocab_size * self.hidden_size

    @property
    def non_expert_params(self) -> int:
        """Weights every token reads: attention, dense FFNs, shared experts, router, embeddings."""
        return (
            self.attention_params
            + self.n_dense_layers * self.dense_ffn_params_per_layer
            + self.n_moe_layers * self.shared_params_per_moe_layer
            + self.embedding_params
        )

    @property
    def total_params(self) -> int:
        return self.non_expert_params + self.n_moe_layers * self.experts * self.expert_params

    @property
    def active_params(self) -> int:
        """Parameters a single token touches (the embedding table counts once, as the LM head)."""
        return (
            self.non_expert_params
            - (self.embedding_params - self.lm_head_params)
            + self.n_moe_layers * self.experts_per_token * self.expert_params
        )

    @property
    def kv_elements_per_token_per_layer(self) -> int:
        if self.attention == "mla":
            kv_rank, _, rope, _ = self.mla_dims
            return kv_rank + rope
        return 2 * self.kv_heads * self.head_dim

    def kv_bytes_per_token(self, precision: str, context_tokens: int | None = None) -> float:
        """KV bytes one token adds over all layers; sliding-window layers stop growing past their window (no
        context: every layer in full), linear-attention layers hold none (their state is ``state_bytes_per_sequence``
        per sequence), a sparse-attention layer its indexer's key beside its cache. The performance kernel's own
        figure (``solvers.perf.kernels``)."""
        from planner.perf.pack import model_vector
        from solvers.perf.kernels import kv_bytes_per_token

        context = float(context_tokens) if context_tokens else float(max(self.sliding_window_tokens or 1, 1))
        return float(kv_bytes_per_token(model_vector(self), KV_BYTES[precision], float(self.layers), context))

    @property
    def attention_flops_per_token_per_context(self) -> int:
        """FLOPs per layer for one query token against one cached token (QK^T and AV, 2 FLOPs per MAC).

        GQA: 2 * heads * (head_dim + head_dim). MLA with absorbed projections attends in the latent space:
        2 * heads * ((kv_lora_rank + rope) + kv_lora_rank).
        """
        if self.attention == "mla":
            kv_rank, _, rope, _ = self.mla_dims
            return 2 * self.heads * (2 * kv_rank + rope)
        return 2 * self.heads * 2 * self.head_dim

    @property
    def attention_kernels_per_layer(self) -> int:
        """Dependent kernels of one layer's attention (data/kernels.yaml, MODEL.md 2.8)."""
        return int(kernel_counts()["attention"][self.attention]["kernels"])

    @property
    def dense_ffn_kernels_per_layer(self) -> int:
        return int(kernel_counts()["dense_ffn"]["kernels"])

    @property
    def moe_kernels_per_layer(self) -> int:
        """The routed block's kernels, and the shared experts' where the model has them."""
        table = kernel_counts()
        shared = table["shared_experts"]["kernels"] if self.shared_experts > 0 else 0
        return int(table["moe"]["kernels"] + shared)

    @property
    def prefill_attention_flops_per_token_per_context(self) -> int:
        """As above for prefill, where MLA runs un-absorbed (vLLM, SGLang): 2 * heads * (qk_dim + v_head_dim)."""
        if self.attention == "mla":
            _, nope, rope, v_dim = self.mla_dims
            return 2 * self.heads * (nope + rope + v_dim)
        return self.attention_flops_per_token_per_context


# ---- loading --------------------------------------------------------------------------------------------------
class CatalogError(ValueError):
    """A catalog file is missing or invalid."""



def runnable_precisions(hw: "Hardware", model: "Model") -> list[str]:
    """The precisions ``hw`` serves ``model`` at: the system's own, and weight-only 4-bit (w4a16) where the model's
    checkpoint is 4-bit (gpt-oss's MXFP4, an INT4 release) and the chip multiplies in 16 bits: engines run such
    weights dequantized into 16-bit matmuls on chips without 4-bit arithmetic (MODEL.md 2.2). Weight-only 4-bit
    is not offered for a wider checkpoint unless a workload asks for it (its ``precision``): its accuracy is the
    quantization's, which nothing here measures."""
    out: list[str] = list(hw.precisions)
    if model.native_precision in FOUR_BIT and weight_only_runs(hw) and "w4a16" not in out:
        out.append("w4a16")
    return out


def runs_precision(hw: "Hardware", model: "Model", precision: str) -> bool:
    """Whether ``hw`` can serve ``model`` at ``precision``: one of ``runnable_precisions``, or weight-only 4-bit
    asked for by name on a chip that multiplies in 16 bits (a user's own 4-bit quantization of a wider model)."""
    return precision in runnable_precisions(hw, model) or (precision == "w4a16" and weight_only_runs(hw))


def weight_only_runs(hw: "Hardware") -> bool:
    """Whether a chip can run weight-only 4-bit: it multiplies in 16 bits."""
    return "bf16" in hw.chip.peak_flops_per_s

def _read_yaml(path: Path) -> dict:
    # the project's YAML rules on libyaml's parser when PyYAML was built with it (about 10x faster)
    data = yaml_io.load_trusted(path)
    if not isinstance(data, dict):
        raise CatalogError(f"{path}: expected a mapping at the top level")
    return data


_Entry = TypeVar("_Entry", Hardware, Model)  # the model of a catalog directory's files


def _load_dir(sub: str, cls: type[_Entry]) -> dict[str, _Entry]:
    out: dict[str, _Entry] = {}
    for path in sorted((DATA_DIR / sub).glob("*.yaml")):
        try:
            item = cls.model_validate(_read_yaml(path))
        except Exception as exc:  # pydantic.ValidationError or YAML error: name the file
            raise CatalogError(f"{path}: {exc}") from exc
        if item.id != path.stem:
            raise CatalogError(f"{path}: id {item.id!r} must equal the file name {path.stem!r}")
        out[item.id] = item
    return out


@functools.lru_cache(maxsize=None)
def hardware_catalog() -> dict[str, Hardware]:
    return _load_dir("hardware", Hardware)


@functools.lru_cache(maxsize=None)
def model_catalog() -> dict[str, Model]:
    return _load_dir("models", Model)


@functools.lru_cache(maxsize=None)
def kernel_counts() -> dict[str, dict]:
    """Dependent kernels per layer part (data/kernels.yaml)."""
    return _read_yaml(DATA_DIR / "kernels.yaml")


@functools.lru_cache(maxsize=None)
def sources() -> dict[str, dict]:
    return _read_yaml(DATA_DIR / "sources.yaml")


class Engine(Strict):
    """A public serving engine and the replica layouts it runs (data/engines.yaml, MODEL.md 2.9)."""

    name: str
    families: list[str] = Field(description="hardware families it serves")
    attention_dp_expert_parallel: bool = False
    attention_dp_pipeline: bool = False
    no_pipeline_models: list[str] = Field(default_factory=list)
    any_layout: bool = Field(False, description="a vendor's own stack that places the model itself")
    pairs: list[tuple[str, str]] = Field(default_factory=list, description="(attention family, FFN family) of the "
                                         "attention/FFN pairs it runs")
    wide_ep_families: list[str] = Field(default_factory=list, description="families on which it runs an "
                                        "expert-parallel group wider than one scale-up domain (wide EP)")
    sources: list[str] = Field(min_length=1)
    note: str | None = None

    def runs(self, family: str, model: Model, tp, pp, ep, domain: float | None = None):
        """Whether it runs each (tp, pp, ep) layout (numpy arrays or scalars) of ``model`` on ``family``; with the
        family's scale-up ``domain`` given, a group wider than it only as wide expert parallelism, one stage, where
        the engine runs that on the family (``wide_ep_families``)."""
        tp, pp, ep = (np.asarray(x, dtype=np.int64) for x in (tp, pp, ep))
        if family not in self.families:
            return np.zeros(np.broadcast(tp, pp, ep).shape, dtype=bool)
        if self.any_layout:
            ok = np.ones(np.broadcast(tp, pp, ep).shape, dtype=bool)
        else:
            split = (model.heads % tp == 0) & ((model.kv_heads % tp == 0) | (tp % model.kv_heads == 0))
            dp_ep = bool(model.experts and self.attention_dp_expert_parallel) & (model.experts >= tp) & (tp > 1)
            staged = (pp == 1) | ((model.id not in self.no_pipeline_models)
                                  & ((ep == 0) | self.attention_dp_pipeline))
            ok = np.where(ep > 0, dp_ep, split) & staged
        if domain is None:
            return ok
        wide_ok = (ep > 0) & (pp == 1) & (family in self.wide_ep_families)
        return ok & ((tp <= domain) | wide_ok)


@functools.lru_cache(maxsize=None)
def serving_engines() -> dict[str, Engine]:
    """The public serving engines by key (data/engines.yaml)."""
    path = DATA_DIR / "engines.yaml"
    try:
        return {k: Engine.model_validate(v) for k, v in _read_yaml(path).items()}
    except Exception as exc:  # pydantic.ValidationError or YAML error: name the file
        raise CatalogError(f"{path}: {exc}") from exc


CLOSE_RATIO = 0.8  # difflib's similarity from which a name is a likely typo of another (issue 45)


def did_you_mean(name: str, choices) -> str:
    """`` (did you mean 'X'?)`` for the known name closest to ``name`` where it is close enough to be a typo of it,
    else nothing: another name of the same family (qwen3-32b for qwen3-coder-480b) is no suggestion."""
    import difflib

    close = [c for c in difflib.get_close_matches(name, list(choices), n=5, cutoff=0.5) if is_close(name, c)]
    close.sort(key=lambda c: not c.lower().startswith(name.lower()))  # a cut-short id first, else by likeness
    return f" (did you mean {close[0]!r}?)" if close else ""


def is_close(name: str, known: str) -> bool:
    """Whether ``known`` is likely what ``name`` meant: the whole strings CLOSE_RATIO alike (case aside), ``name``
    some of its words in a row (split at '-', '_', '.', '/': ``capex`` for ``capex_usd``, ``h100`` for
    ``hgx-h100``), or the same words but one, that one at least half alike (a typo in one word)."""
    import difflib
    import re

    a, b = name.lower(), known.lower()
    if difflib.SequenceMatcher(None, a, b).ratio() >= CLOSE_RATIO:
        return True
    wa, wb = re.split(r"[-_./]", a), re.split(r"[-_./]", b)
    if len(wa) < len(wb) and any(wb[i:i + len(wa)] == wa for i in range(len(wb) - len(wa) + 1)):
        return True
    differ = [(x, y) for x, y in zip(wa, wb) if x != y]
    return (len(wa) == len(wb) and len(differ) == 1
            and difflib.SequenceMatcher(None, *differ[0]).ratio() >= 0.5)


# How a model the catalog lacks can be planned (issue 45): said wherever an unknown model id is refused.
ADD_A_MODEL = ("to plan a model the catalog lacks, derive its entry from its Hugging Face config.json: "
               "planner models add CONFIG.json, or in a scenario models: [{from: PATH/config.json, id: ID}]")


def get_hardware(hw_id: str) -> Hardware:
    cat = hardware_catalog()
    if hw_id not in cat:
        raise CatalogError(f"unknown hardware {hw_id!r}{did_you_mean(hw_id, cat)}; known: {', '.join(sorted(cat))}")
    return cat[hw_id]


def get_model(model_id: str) -> Model:
    cat = model_catalog()
    if model_id not in cat:
        raise CatalogError(
            f"unknown model {model_id!r}{did_you_mean(model_id, cat)}; known: {', '.join(sorted(cat))}; "
            f"{ADD_A_MODEL}"
        )
    return cat[model_id]
