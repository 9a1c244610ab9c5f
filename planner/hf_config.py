"""Catalog model entries from Hugging Face ``config.json`` files (``planner models add``, a scenario's
``models: [{from: PATH}]``; docs/INTERFACE.md 2.4.1, docs/MODEL.md 2.10).

A config names its architecture by ``model_type``; each kind the performance model can price maps its fields onto
the catalog schema (``planner.catalog.Model``), which derives the parameter counts and KV bytes as it does for the
shipped entries. Hybrid linear attention (Qwen3-Next's and Qwen3.5's gated DeltaNet, MiniMax-01's lightning
attention) maps onto the catalog's linear-attention fields, DeepSeek sparse attention (V3.2) onto its top-k and
indexer fields (docs/MODEL.md 2.10). What the performance model cannot price is refused naming the config field that
says so, never guessed: a Mamba layer's state, a linear attention of a kind it has no state formula for, a sparse
attention whose indexer is shared between layers, layers of different shapes within one model. The mapping goes by
architecture, never by model.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

from pydantic import ValidationError

from planner.catalog import Model
from planner.errors import InputError
from planner.inputs import read_bytes_limited

MAX_CONFIG_BYTES = 4 * 1024 * 1024  # a config.json is a few kB; a vision model's with its processor under 100 kB

# model_type -> (attention kind, FFN kind). Attention: gqa (grouped-query, multi-head and multi-query included),
# mla (DeepSeek's multi-head latent attention). FFN: the field layout of its experts (``_ffn``).
KINDS: dict[str, tuple[str, str]] = {
    "llama": ("gqa", "dense"), "mistral": ("gqa", "dense"), "qwen2": ("gqa", "dense"), "qwen3": ("gqa", "dense"),
    "gemma": ("gqa", "dense"), "gemma2": ("gqa", "dense"), "gemma3_text": ("gqa", "dense"),
    "mixtral": ("gqa", "local_experts"), "gpt_oss": ("gqa", "local_experts"), "minimax_m2": ("gqa", "local_experts"),
    "qwen2_moe": ("gqa", "qwen_moe"), "qwen3_moe": ("gqa", "qwen_moe"),
    "glm4_moe": ("gqa", "deepseek_moe"), "llama4_text": ("gqa", "llama4_moe"),
    "deepseek_v2": ("mla", "deepseek_moe"), "deepseek_v3": ("mla", "deepseek_moe"), "kimi_k2": ("mla", "deepseek_moe"),
    "qwen3_next": ("gqa", "qwen_moe"), "qwen3_5_text": ("gqa", "dense"), "qwen3_5_moe_text": ("gqa", "qwen_moe"),
    "minimax": ("gqa", "local_experts"), "minimax_text_01": ("gqa", "local_experts"),
    "deepseek_v32": ("mla", "deepseek_moe"),
}
# Kinds with linear-attention layers, and the catalog's kind of them (planner.catalog.Model.linear_attention): gated
# DeltaNet (linear_num_key_heads ...) or MiniMax-01's lightning attention (the softmax layers' heads and head_dim).
LINEAR_KINDS = {"qwen3_next": "gated_deltanet", "qwen3_5_text": "gated_deltanet",
                "qwen3_5_moe_text": "gated_deltanet", "minimax": "lightning", "minimax_text_01": "lightning"}
# Kinds with DeepSeek sparse attention (index_topk, index_n_heads, index_head_dim), one indexer per layer.
SPARSE_KINDS = {"deepseek_v32"}
# Kinds whose full-attention layers gate their output (q_proj twice as wide): always, or where attn_output_gate
# (default true) says so.
GATED_ALWAYS, GATED_BY_FIELD = {"qwen3_next"}, {"qwen3_5_text", "qwen3_5_moe_text"}
# The recurrent state's dtype (mamba_ssm_dtype) -> the catalog's linear_state_dtype; MiniMax-01's lightning state is
# float32 in vLLM (MiniMaxText01LinearAttention's kv cache).
STATE_DTYPES = {"float32": "fp32", "bfloat16": "bf16", "float16": "bf16"}
# Kinds whose q, k and v projections always carry biases (Qwen2's have no config field for it).
QKV_BIAS = {"qwen2", "qwen2_moe"}
# Kinds that tie the LM head to the embedding unless the config says otherwise (their transformers default).
TIED_BY_DEFAULT = {"gemma", "gemma2", "gemma3_text"}
# Layer kinds of ``layer_types`` the performance model prices: full attention, and a window over the last W tokens
# (a chunk of W tokens, Llama 4's, holds and reads at most as much: priced as the window, an upper bound).
WINDOW_LAYERS = {"sliding_attention", "chunked_attention"}
LINEAR_LAYERS = {"linear_attention"}  # priced for the kinds of LINEAR_KINDS
PRICED_LAYERS = {"full_attention"} | WINDOW_LAYERS | LINEAR_LAYERS
# What the performance model prices attention as (solvers/perf/kernels.py context_layers, kv_bytes_per_token).
PRICED_AS = ("the performance model prices attention as a KV cache that grows by one entry per token of context "
             "(or of a sliding window), and the fixed state of gated DeltaNet and lightning attention layers")


class Config:
    """A config's fields with the path each is named by in errors (``text_config.`` for a multimodal model's
    language model)."""

    def __init__(self, data: dict, file: str, prefix: str = ""):
        self.data, self.file, self.prefix = data, file, prefix

    BARE = object()  # refuse()'s value where the reason names what the field holds

    def refuse(self, key: str, value, why: str) -> InputError:
        """The error that names the config field: ``config.json: model_type 'mamba': why``."""
        shown = "" if value is Config.BARE else f" {_show(value)}"
        exc = InputError(f"{self.prefix}{key}{shown}: {why}", file=self.file)
        exc.field = f"{self.prefix}{key}"
        return exc

    def has(self, key: str) -> bool:
        return self.data.get(key) is not None

    def get(self, key: str, default=None):
        value = self.data.get(key)
        return default if value is None else value

    def whole(self, key: str, default: int | None = None, minimum: int = 1) -> int:
        """A whole number >= ``minimum`` (required where no default is given)."""
        value = self.data.get(key)
        if value is None:
            if default is None:
                raise self.missing(key)
            return default
        if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
            raise self.refuse(key, value, f"expected a whole number >= {minimum}")
        return value

    def flag(self, key: str, default: bool) -> bool:
        value = self.data.get(key)
        if value is None:
            return default
        if not isinstance(value, bool):
            raise self.refuse(key, value, "expected true or false")
        return value

    def missing(self, key: str) -> InputError:
        exc = InputError(f"{self.prefix}{key}: required field is missing (a decoder's config.json has it)",
                         file=self.file)
        exc.field = f"{self.prefix}{key}"
        return exc


def _show(value) -> str:
    text = repr(value) if not isinstance(value, (list, dict)) else json.dumps(value)
    return text if len(text) <= 60 else text[:57] + "..."


# ---- reading ----------------------------------------------------------------------------------------------------
def read_config(path: str | Path) -> dict:
    """The JSON object of a config file, or InputError naming the file."""
    name = str(path)
    raw = read_bytes_limited(Path(path), MAX_CONFIG_BYTES, "a Hugging Face config.json")
    try:
        data = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise InputError(f"is not JSON ({exc}); expected a Hugging Face config.json", file=name) from None
    if not isinstance(data, dict):
        raise InputError("expected a JSON object of config fields (a Hugging Face config.json)", file=name)
    return data


def default_id(path: str | Path) -> str:
    """A catalog id for a config file: its folder's name for ``.../NAME/config.json`` (a downloaded repository),
    else the file's stem; lower-case, with anything but letters, digits, '.', '_' and '-' made '-'."""
    p = Path(path)
    stem = p.parent.name if p.stem == "config" and p.parent.name else p.stem
    stem = re.sub(r"_config$", "", stem)
    return re.sub(r"[^a-z0-9._-]+", "-", stem.lower()).strip("-._") or "model"


def model_from_config(path: str | Path, model_id: str | None = None, **fields) -> Model:
    """The catalog entry of the model a Hugging Face ``config.json`` describes; ``fields`` (catalog fields: name,
    source, native_precision ...) replace the derived ones. Raises InputError naming the file and the config field
    where the architecture cannot be priced."""
    data = read_config(path)
    entry = entry_from_config(data, str(path), model_id or default_id(path))
    entry.update(fields)
    try:
        return Model.model_validate(entry)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"]) or "config"
        raise InputError(f"the derived entry is not a valid model ({where}: {first['msg']})", file=str(path)) from None


def entry_from_config(data: dict, file: str, model_id: str) -> dict:
    """The catalog fields (``planner.catalog.Model``) of a config's JSON object, as a dict."""
    c = language_model(Config(data, file))
    refuse_unpriced(c)
    kind = c.get("model_type")
    if kind not in KINDS:
        raise c.refuse("model_type", kind, f"not an architecture the planner can price; it prices decoder "
                       f"transformers of model_type {', '.join(sorted(KINDS))} (a model of one of these kinds under "
                       f"another model_type: write its entry in the catalog schema, docs/INTERFACE.md 7.8)")
    attention, ffn = KINDS[kind]
    layers = c.whole("num_hidden_layers")
    entry: dict = {
        "id": model_id,
        "name": str(c.get("_name_or_path") or model_id),
        "source": file,
        "layers": layers,
        "hidden_size": c.whole("hidden_size"),
        "vocab_size": c.whole("vocab_size"),
        "tie_word_embeddings": tied(c, data, kind),
        "attention": attention,
        **(mla_fields(c) if attention == "mla" else gqa_fields(c, kind)),
        **window_fields(c, kind, layers),
        **linear_fields(c, kind, layers),
        **sparse_fields(c, kind),
        **ffn_fields(c, ffn, layers),
        "native_precision": native_precision(c, data),
        "mtp_layers": mtp_layers(c),
    }
    entry["notes"] = notes(c, kind, entry)
    return entry


def language_model(c: Config) -> Config:
    """The language model's fields: a multimodal config (Llama 4, Gemma 3, Qwen3.5, Kimi K2.5) nests them under
    ``text_config``; its vision tower is not priced (the planner plans text tokens)."""
    text = c.data.get("text_config")
    if isinstance(text, dict) and c.get("model_type") not in KINDS:
        return Config(text, c.file, "text_config.")
    return c


def refuse_unpriced(c: Config) -> None:
    """Raise for a config field that says the attention is neither a growing KV cache nor a state the performance
    model has a formula for (PRICED_AS): the kernels have no term for it, so no mapping onto the catalog's fields
    would be honest."""
    kind = c.get("model_type")
    types = c.get("layer_types")
    if isinstance(types, list):
        other = [t for t in types if t not in PRICED_LAYERS or (t in LINEAR_LAYERS and kind not in LINEAR_KINDS)]
        if other:
            kinds = sorted(set(map(str, other)))
            raise c.refuse("layer_types", Config.BARE, _unpriced_layers(kinds, len(other), len(types)))
    if kind not in LINEAR_KINDS and (c.has("full_attention_interval") or c.has("linear_num_value_heads")):
        key = "full_attention_interval" if c.has("full_attention_interval") else "linear_num_value_heads"
        raise c.refuse(key, c.get(key), f"the layers between the full-attention ones are linear attention, of a "
                       f"model_type ({kind}) whose state the planner has no formula for (it has gated DeltaNet's, of "
                       f"model_type {', '.join(k for k, v in LINEAR_KINDS.items() if v == 'gated_deltanet')}); "
                       + PRICED_AS)
    attn_types = c.get("attn_type_list")
    if kind not in LINEAR_KINDS and isinstance(attn_types, list) and any(t == 0 for t in attn_types):
        linear = sum(1 for t in attn_types if t == 0)
        raise c.refuse("attn_type_list", f"{linear} of {len(attn_types)} layers 0",
                       "type-0 layers are lightning (linear) attention: a fixed-size state per stream, not a KV "
                       "cache; " + PRICED_AS + ", so it cannot price them")
    pattern = c.get("hybrid_override_pattern")
    if isinstance(pattern, str) and "M" in pattern:
        raise c.refuse("hybrid_override_pattern", pattern, f"{pattern.count('M')} Mamba layers keep a fixed-size "
                       "state per stream, not a KV cache; " + PRICED_AS + ", so it cannot price them")
    for key in ("index_topk_freq", "indexer_types"):  # GLM-5's IndexShare: one indexer for several layers
        if c.has(key):
            raise c.refuse(key, c.get(key), "an indexer shared between layers: the performance model prices "
                           "DeepSeek sparse attention with one indexer in every full-attention layer (DeepSeek-V3.2)")
    if c.has("index_topk") and kind not in SPARSE_KINDS:
        raise c.refuse("index_topk", c.get("index_topk"), f"DeepSeek sparse attention under model_type {kind}: the "
                       f"planner maps it for model_type {', '.join(sorted(SPARSE_KINDS))} (one indexer per layer)")


def _unpriced_layers(kinds: list[str], count: int, layers: int) -> str:
    what = f"{', '.join(kinds)} layers ({count} of {layers})"
    if any("linear" in k or "mamba" in k for k in kinds):
        return (f"{what} keep a fixed-size recurrent state per stream, not a KV cache; {PRICED_AS}, so it cannot "
                f"price them")
    return f"{what} are of a kind the performance model does not price (it prices {', '.join(sorted(PRICED_LAYERS))})"


# ---- fields -------------------------------------------------------------------------------------------------------
def tied(c: Config, data: dict, kind: str) -> bool:
    """Whether the LM head is the embedding table: the language model's own field, else the whole config's, else
    the kind's default."""
    if c.has("tie_word_embeddings"):
        return c.flag("tie_word_embeddings", False)
    top = data.get("tie_word_embeddings")
    return top if isinstance(top, bool) else kind in TIED_BY_DEFAULT


def gqa_fields(c: Config, kind: str) -> dict:
    heads = c.whole("num_attention_heads")
    kv_heads = c.whole("num_key_value_heads", heads)
    if heads % kv_heads:
        raise c.refuse("num_key_value_heads", kv_heads, f"expected a divisor of num_attention_heads ({heads})")
    for key in ("global_head_dim", "num_global_key_value_heads", "swa_head_dim", "swa_num_key_value_heads"):
        if c.has(key):  # one KV shape for every layer: the model vector has one KV size per layer
            raise c.refuse(key, c.get(key), "layers of two attention shapes (one KV size for the full-attention "
                           "layers, another for the window ones); the performance model takes one KV shape per "
                           "model")
    if c.has("head_dim"):
        head_dim = c.whole("head_dim")
    else:
        hidden = c.whole("hidden_size")
        if hidden % heads:
            raise c.missing("head_dim")
        head_dim = hidden // heads
    bias = kind in QKV_BIAS or c.flag("attention_bias", False) or c.flag("qkv_bias", False)
    gate = kind in GATED_ALWAYS or (kind in GATED_BY_FIELD and c.flag("attn_output_gate", True))
    return {"heads": heads, "kv_heads": kv_heads, "head_dim": head_dim, "attention_bias": bias,
            "attention_output_gate": gate}


def mla_fields(c: Config) -> dict:
    """Multi-head latent attention: one shared latent of kv_lora_rank + qk_rope_head_dim per token and layer."""
    nope, rope = c.whole("qk_nope_head_dim"), c.whole("qk_rope_head_dim")
    return {
        "heads": c.whole("num_attention_heads"),
        "kv_heads": 1,
        "head_dim": nope + rope,
        "q_lora_rank": c.whole("q_lora_rank") if c.has("q_lora_rank") else None,
        "kv_lora_rank": c.whole("kv_lora_rank"),
        "qk_nope_head_dim": nope,
        "qk_rope_head_dim": rope,
        "v_head_dim": c.whole("v_head_dim"),
        "attention_bias": c.flag("attention_bias", False),
    }


def window_layers(c: Config, kind: str, layers: int) -> tuple[int, str | None]:
    """(layers that attend over a window, the field that sets the window): ``layer_types`` where the config lists
    them, else the kind's own rule (transformers' defaults)."""
    types = c.get("layer_types")
    if isinstance(types, list):
        if len(types) != layers:
            raise c.refuse("layer_types", f"{len(types)} entries", f"expected one per layer ({layers})")
        window = sum(1 for t in types if t in WINDOW_LAYERS)
        return window, ("attention_chunk_size" if "chunked_attention" in types else "sliding_window")
    if kind == "llama4_text" and c.has("attention_chunk_size"):
        rope_layers = c.get("no_rope_layers")  # 1: a RoPE layer, which attends within its chunk; 0: global
        if isinstance(rope_layers, list) and len(rope_layers) == layers:
            return sum(1 for r in rope_layers if r), "attention_chunk_size"
        interval = c.whole("no_rope_layer_interval", 4)
        return sum(1 for i in range(layers) if (i + 1) % interval), "attention_chunk_size"
    if not c.has("sliding_window"):
        return 0, None
    if kind in ("mistral", "mixtral"):
        return layers, "sliding_window"
    if kind == "gemma2":  # even layers slide, odd ones attend globally
        return (layers + 1) // 2, "sliding_window"
    if kind == "gemma3_text":
        every = c.whole("sliding_window_pattern", 6)  # every N-th layer global, the rest local
        return sum(1 for i in range(layers) if (i + 1) % every), "sliding_window"
    if kind.startswith("qwen") and c.flag("use_sliding_window", False):
        first = c.whole("max_window_layers", layers, minimum=0)  # layers from this index on slide
        return max(0, layers - first), "sliding_window"
    return 0, None


def window_fields(c: Config, kind: str, layers: int) -> dict:
    count, key = window_layers(c, kind, layers)
    if not count:
        return {}
    assert key is not None
    if not c.has(key):
        raise c.missing(key)
    return {"sliding_window_tokens": c.whole(key), "sliding_window_layers": count}


def linear_layer_count(c: Config, layers: int) -> int:
    """Linear-attention layers: ``layer_types``' linear_attention entries, else ``attn_type_list``'s 0s (MiniMax-01),
    else all but every ``full_attention_interval``-th layer (Qwen3-Next: layers 4, 8, ... attend in full)."""
    types = c.get("layer_types")
    if isinstance(types, list):
        return sum(1 for t in types if t in LINEAR_LAYERS)
    attn_types = c.get("attn_type_list")
    if isinstance(attn_types, list):
        if len(attn_types) != layers:
            raise c.refuse("attn_type_list", f"{len(attn_types)} entries", f"expected one per layer ({layers})")
        return sum(1 for t in attn_types if t == 0)
    if c.has("full_attention_interval"):
        interval = c.whole("full_attention_interval")
        return sum(1 for i in range(layers) if (i + 1) % interval)
    return 0


def linear_fields(c: Config, kind: str, layers: int) -> dict:
    """The linear-attention layers and the shape of their state (planner.catalog.Model, MODEL.md 2.10)."""
    linear = LINEAR_KINDS.get(kind)
    count = linear_layer_count(c, layers) if linear else 0
    if not count:
        return {}
    out: dict = {"linear_attention": linear, "linear_attention_layers": count}
    if linear == "lightning":  # per head a head_dim x head_dim state, the softmax layers' heads and head_dim
        heads = c.whole("num_attention_heads")
        dim = c.whole("head_dim") if c.has("head_dim") else c.whole("hidden_size") // heads
        return {**out, "linear_key_heads": heads, "linear_key_head_dim": dim, "linear_value_heads": heads,
                "linear_value_head_dim": dim, "linear_state_dtype": "fp32"}
    dtype = str(c.get("mamba_ssm_dtype", "bfloat16"))
    if dtype not in STATE_DTYPES:
        raise c.refuse("mamba_ssm_dtype", dtype, f"expected one of {', '.join(STATE_DTYPES)}")
    return {**out, "linear_key_heads": c.whole("linear_num_key_heads"),
            "linear_key_head_dim": c.whole("linear_key_head_dim"),
            "linear_value_heads": c.whole("linear_num_value_heads"),
            "linear_value_head_dim": c.whole("linear_value_head_dim"),
            "linear_conv_kernel": c.whole("linear_conv_kernel_dim", 4), "linear_state_dtype": STATE_DTYPES[dtype]}


def sparse_fields(c: Config, kind: str) -> dict:
    """DeepSeek sparse attention: each query reads the top ``index_topk`` tokens the lightning indexer of
    ``index_n_heads`` heads of ``index_head_dim`` picks (MODEL.md 2.10)."""
    if kind not in SPARSE_KINDS or not c.has("index_topk"):
        return {}
    return {"sparse_attention_topk": c.whole("index_topk"), "indexer_heads": c.whole("index_n_heads"),
            "indexer_head_dim": c.whole("index_head_dim")}


def ffn_fields(c: Config, ffn: str, layers: int) -> dict:
    """The FFN fields by the kind's layout: dense, or routed experts (with shared experts and dense layers where
    the kind has them)."""
    if ffn == "dense":
        return {"intermediate_size": c.whole("intermediate_size")}
    if ffn == "local_experts":  # Mixtral, gpt-oss, MiniMax-M2: intermediate_size is one expert's width
        width = c.whole("intermediate_size")
        out = {"intermediate_size": 0, "dense_layers": 0, "experts": c.whole("num_local_experts"),
               "experts_per_token": c.whole("num_experts_per_tok", c.get("experts_per_token")),
               "moe_intermediate_size": width}
        return {**out, "shared_experts": shared_count(c, "shared_intermediate_size", width)}
    if ffn == "qwen_moe":
        width = c.whole("moe_intermediate_size")
        experts = c.whole("num_experts")
        dense_only = set(c.get("mlp_only_layers", []))
        step = c.whole("decoder_sparse_step", 1)
        sparse = sum(1 for i in range(layers) if i not in dense_only and (i + 1) % step == 0)
        out = {"intermediate_size": c.whole("intermediate_size", 0, minimum=0), "dense_layers": layers - sparse,
               "experts": experts, "experts_per_token": c.whole("num_experts_per_tok"),
               "moe_intermediate_size": width}
        return {**out, "shared_experts": shared_count(c, "shared_expert_intermediate_size", width)}
    if ffn == "llama4_moe":  # MoE every interleave_moe_layer_step-th layer, each with one shared expert
        step = c.whole("interleave_moe_layer_step", 1)
        moe = c.get("moe_layers")
        moe_count = len(moe) if isinstance(moe, list) else len(range(step - 1, layers, step))
        return {"intermediate_size": c.whole("intermediate_size_mlp"), "dense_layers": layers - moe_count,
                "experts": c.whole("num_local_experts"), "experts_per_token": c.whole("num_experts_per_tok"),
                "shared_experts": 1, "moe_intermediate_size": c.whole("intermediate_size")}
    # deepseek_moe: DeepSeek V2/V3, Kimi K2, GLM-4.5: the first first_k_dense_replace layers dense, then MoE
    if not c.has("n_routed_experts"):
        return {"intermediate_size": c.whole("intermediate_size")}
    freq = c.whole("moe_layer_freq", 1)
    if freq != 1:
        raise c.refuse("moe_layer_freq", freq, "expected 1 (every layer after first_k_dense_replace is MoE): the "
                       "catalog counts dense and MoE layers, not their interleaving")
    return {"intermediate_size": c.whole("intermediate_size"),
            "dense_layers": min(layers, c.whole("first_k_dense_replace", 0, minimum=0)),
            "experts": c.whole("n_routed_experts"), "experts_per_token": c.whole("num_experts_per_tok"),
            "shared_experts": c.whole("n_shared_experts", 0, minimum=0),
            "moe_intermediate_size": c.whole("moe_intermediate_size")}


def shared_count(c: Config, key: str, width: int) -> int:
    """Shared experts as a count of routed-expert widths: a shared FFN of ``key`` width (Qwen's
    shared_expert_intermediate_size: 4 x 1408 in Qwen1.5-MoE) is that many experts read by every token."""
    shared = c.whole(key, 0, minimum=0)
    if shared % width:
        raise c.refuse(key, shared, f"expected a multiple of the routed expert's width ({width}): the catalog "
                       "counts shared experts of the routed experts' width")
    return shared // width


def native_precision(c: Config, data: dict) -> str:
    """The precision the weights are published in: the quantization_config's format, else the dtype (16- and
    32-bit checkpoints are served as bf16)."""
    q = c.get("quantization_config") or data.get("quantization_config")
    if isinstance(q, dict):
        return quantized_precision(Config(q, c.file, c.prefix + "quantization_config."))
    dtype = str(c.get("torch_dtype") or c.get("dtype") or data.get("torch_dtype") or data.get("dtype") or "bfloat16")
    return "fp8" if dtype.startswith("float8") else "bf16"


def quantized_precision(q: Config) -> str:
    method = str(q.get("quant_method", ""))
    if method == "fp8":
        return "fp8"
    if method == "mxfp4":
        return "fp4"
    if method == "modelopt":
        algo = str(q.get("quant_algo", ""))
        if algo in ("NVFP4", "FP8"):
            return "fp4" if algo == "NVFP4" else "fp8"
        raise q.refuse("quant_algo", algo, "expected NVFP4 or FP8")
    if method in ("awq", "gptq") and q.get("bits") == 4:
        return "w4a16"
    if method == "compressed-tensors":
        groups = q.get("config_groups") or {}
        weights = [g.get("weights") or {} for g in groups.values() if isinstance(g, dict)]
        bits = {w.get("num_bits") for w in weights}
        kinds = {w.get("type") for w in weights}
        if bits == {4}:
            return "fp4" if kinds == {"float"} else "w4a16"
        if bits == {8} and kinds == {"float"}:
            return "fp8"
    raise q.refuse("quant_method", method, "a quantization the catalog has no precision for (it has fp8, fp4 "
                   "(NVFP4, MXFP4), w4a16 (4-bit weights, 16-bit math) and bf16): convert the unquantized "
                   "checkpoint's config and set native_precision")


def mtp_layers(c: Config) -> int:
    """Multi-token-prediction layers run per draft token (the drafter of speculative method mtp):
    ``num_nextn_predict_layers`` (DeepSeek, GLM, MiMo), ``mtp_num_hidden_layers`` (Qwen3-Next, Qwen3.5), or
    MiniMax-M2's ``mtp_transformer_layers`` per module where ``use_mtp``."""
    if c.has("num_nextn_predict_layers"):
        return c.whole("num_nextn_predict_layers", 0, minimum=0)
    if c.has("mtp_num_hidden_layers"):
        return c.whole("mtp_num_hidden_layers", 0, minimum=0)
    if c.flag("use_mtp", False):
        return c.whole("mtp_transformer_layers", 1)
    return 0


def notes(c: Config, kind: str, entry: dict) -> str:
    """Where the entry came from and what of the config it does not count."""
    parts = [f"Derived by planner models add from {c.file} (model_type {kind})."]
    if c.prefix:
        parts.append("Its language model (text_config); the vision tower is not priced.")
    if entry.get("mtp_layers"):
        parts.append(f"{entry['mtp_layers']} multi-token-prediction layer(s) per draft token, the drafter of "
                     "speculative method mtp; not counted in total_params.")
        if c.has("num_mtp_modules"):
            parts.append(f"The checkpoint ships {c.get('num_mtp_modules')} MTP modules, one per further draft token.")
    if entry.get("linear_attention_layers"):
        parts.append(f"{entry['linear_attention_layers']} of {entry['layers']} layers are linear attention "
                     f"({entry['linear_attention']}): a fixed state per sequence, no KV cache.")
    if entry.get("sparse_attention_topk"):
        parts.append(f"DeepSeek sparse attention: each query reads the top {entry['sparse_attention_topk']} cached "
                     "tokens; the indexer's keys are held and read for the whole context.")
    if c.has("attention_chunk_size") and entry.get("sliding_window_layers"):
        parts.append(f"Chunked attention ({c.get('attention_chunk_size')}-token chunks) priced as a sliding "
                     "window of that size, an upper bound on what each such layer holds and reads.")
    return " ".join(parts)
