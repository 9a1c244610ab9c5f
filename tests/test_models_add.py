"""Issue 45 items 1, 3, 4: catalog entries from Hugging Face config.json files (``planner models add``, a scenario's
``models: [{from: PATH}]``), the drafter words of a model without one, and the unknown-id message.

The configs in tests/data/hf_configs are the published ones (README there): each catalog model's converts to the
catalog's hand-written entry field by field, and every converted model's derived counts are held to the maker's
published figures. One small config per architecture kind is worked by hand below (numbers in the comments).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner

from planner.catalog import CatalogError, Model, did_you_mean, get_model, model_catalog
from planner.cli import main
from planner.errors import InputError
from planner.hf_config import entry_from_config, model_from_config
from planner.perf.speculative import auto_methods, auto_words
from tests.test_models import PUBLISHED, published_active

CONFIGS = Path(__file__).parent / "data" / "hf_configs"

# catalog id -> its config (the catalog's source: huggingface.co/ORG/NAME/blob/main/config.json)
CATALOG_CONFIGS = {
    "deepseek-v3": "deepseek-ai--DeepSeek-V3", "deepseek-r1": "deepseek-ai--DeepSeek-R1",
    "kimi-k2": "moonshotai--Kimi-K2-Instruct", "gpt-oss-120b": "openai--gpt-oss-120b",
    "gpt-oss-20b": "openai--gpt-oss-20b", "llama-2-7b": "meta-llama--Llama-2-7b-hf",
    "llama-2-70b": "meta-llama--Llama-2-70b-hf", "llama-3.1-8b": "meta-llama--Meta-Llama-3.1-8B",
    "llama-3.1-70b": "meta-llama--Meta-Llama-3.1-70B", "llama-3.1-405b": "meta-llama--Meta-Llama-3.1-405B",
    "qwen3-32b": "Qwen--Qwen3-32B", "qwen3-235b-a22b": "Qwen--Qwen3-235B-A22B",
    "deepseek-v3.2": "deepseek-ai--DeepSeek-V3.2", "qwen3-next-80b-a3b": "Qwen--Qwen3-Next-80B-A3B-Thinking",
    "qwen3.5-397b-a17b": "Qwen--Qwen3.5-397B-A17B", "qwen3-coder-480b": "Qwen--Qwen3-Coder-480B-A35B-Instruct",
    "kimi-k2.5": "moonshotai--Kimi-K2.5", "glm-4.7": "zai-org--GLM-4.7-FP8", "minimax-m2.5": "MiniMaxAI--MiniMax-M2.5",
    "llama-4-maverick": "meta-llama--Llama-4-Maverick-17B-128E-Instruct",
}
# What a catalog entry says beyond its stored config, where the copy (aiconfigurator's, architecture fields only)
# leaves out a field of the published config; each such entry's notes give the source.
BEYOND_CONFIG = {"qwen3-next-80b-a3b": {"mtp_layers": 1}, "glm-4.7": {"mtp_layers": 1}}
NOT_DERIVED = {"id", "name", "source", "notes"}  # what a config does not say

# Models outside the catalog: (total, active, tolerance, where the figures are published). ``active`` is the
# planner's convention (the embedding table once, as the LM head: tests/test_models.py) unless the note says
# otherwise; the tolerance is the rounding of the published figure where it is coarser than 3%.
OTHERS = {
    "Qwen--Qwen3-Coder-480B-A35B-Instruct": (480e9, 35e9, 0.03, "model card: 480B total, 35B activated"),
    "mistralai--Mixtral-8x7B-v0.1": (46.7e9, 12.9e9, 0.03, "Mistral AI, 'Mixtral of experts' (2023-12): 46.7B "
                                     "total, 12.9B per token"),
    "MiniMaxAI--MiniMax-M2.5": (230e9, 10e9, 0.05, "model card: 230B total, 10B activated (rounded: 5%)"),
    "moonshotai--Kimi-K2.5": (1.04e12, 32e9, 0.03, "Kimi K2 tech report (arXiv 2507.20534): 1.04T total, 32.6B "
                              "activated; K2.5 keeps K2's language model"),
}


def _fields(m: Model) -> dict:
    return {k: v for k, v in m.model_dump().items() if k not in NOT_DERIVED}


def _write(tmp_path: Path, config: dict, name: str = "config.json") -> Path:
    path = tmp_path / name
    path.write_text(json.dumps(config))
    return path


# ---- the published configs ------------------------------------------------------------------------------------
@pytest.mark.parametrize("model_id", sorted(CATALOG_CONFIGS))
def test_a_catalog_models_config_converts_to_its_entry(model_id):
    converted = model_from_config(CONFIGS / f"{CATALOG_CONFIGS[model_id]}.json", model_id,
                                  **BEYOND_CONFIG.get(model_id, {}))
    assert _fields(converted) == _fields(get_model(model_id))
    published = PUBLISHED[model_id]
    assert abs(converted.total_params / published["total"] - 1) <= 0.03
    if published["active"] is not None:
        active, tolerance = published_active(model_id)
        assert converted.active_params == get_model(model_id).active_params
        assert abs(active / published["active"] - 1) <= tolerance


def test_every_catalog_model_has_its_config():
    assert set(CATALOG_CONFIGS) == set(model_catalog())


@pytest.mark.parametrize("name", sorted(OTHERS))
def test_other_models_match_their_published_counts(name):
    total, active, tolerance, _ = OTHERS[name]
    m = model_from_config(CONFIGS / f"{name}.json")
    assert abs(m.total_params / total - 1) <= tolerance, m.total_params / 1e9
    assert abs(m.active_params / active - 1) <= tolerance, m.active_params / 1e9


def test_llama4_maverick_interleaved_moe_and_chunked_attention():
    """400B total, 17B active (Meta's model card; Meta counts the input embedding too): 24 dense layers of 16384,
    24 MoE layers of 128 routed experts (top-1) and a shared one, chunked attention on 3 layers of 4."""
    m = model_from_config(CONFIGS / "meta-llama--Llama-4-Maverick-17B-128E-Instruct.json")
    assert (m.n_dense_layers, m.n_moe_layers, m.experts, m.experts_per_token, m.shared_experts) == (24, 24, 128, 1, 1)
    assert (m.sliding_window_layers, m.sliding_window_tokens) == (36, 8192)
    assert abs(m.total_params / 400e9 - 1) <= 0.03
    assert abs((m.active_params + m.vocab_size * m.hidden_size) / 17e9 - 1) <= 0.03
    assert "text_config" in (m.notes or "") and "upper bound" in (m.notes or "")


def test_mtp_layers_come_from_the_config():
    assert model_from_config(CONFIGS / "deepseek-ai--DeepSeek-V3.json").mtp_layers == 1
    assert model_from_config(CONFIGS / "moonshotai--Kimi-K2-Instruct.json").mtp_layers == 0
    minimax = model_from_config(CONFIGS / "MiniMaxAI--MiniMax-M2.5.json")
    assert minimax.mtp_layers == 1 and "3 MTP modules" in (minimax.notes or "")  # one layer per draft token
    assert "mtp" in auto_methods(minimax)  # what makes speculative: mtp available under auto


def test_quantized_checkpoints_keep_their_precision():
    assert model_from_config(CONFIGS / "moonshotai--Kimi-K2.5.json").native_precision == "w4a16"  # INT4, group 32
    assert model_from_config(CONFIGS / "openai--gpt-oss-20b.json").native_precision == "fp4"  # MXFP4
    assert model_from_config(CONFIGS / "deepseek-ai--DeepSeek-V3.json").native_precision == "fp8"


# ---- one hand-computed config per architecture kind --------------------------------------------------------------
BASE = {"num_hidden_layers": 2, "hidden_size": 8, "vocab_size": 10, "tie_word_embeddings": False}


def test_dense_gqa(tmp_path):
    m = model_from_config(_write(tmp_path, {**BASE, "model_type": "llama", "num_attention_heads": 4,
                                            "num_key_value_heads": 2, "intermediate_size": 16}))
    # head_dim 8 / 4 = 2; attention q 8*4*2 + kv 2*8*2*2 + o 4*2*8 = 64 + 64 + 64 = 192; FFN 3*8*16 = 384
    # total 2 * (192 + 384) + 2 * 10 * 8 = 1312; active less the input embedding 80 = 1232
    assert (m.attention, m.head_dim, m.kv_heads) == ("gqa", 2, 2)
    assert (m.total_params, m.active_params) == (1312, 1232)
    assert m.kv_bytes_per_token("bf16") == 2 * (2 * 2 * 2) * 2.0  # layers x (k and v x kv heads x head_dim) x bytes
    assert m.native_precision == "bf16" and m.mtp_layers == 0


def test_mla_moe_with_shared_experts_and_mtp(tmp_path):
    m = model_from_config(_write(tmp_path, {
        **BASE, "model_type": "deepseek_v3", "num_attention_heads": 2, "num_key_value_heads": 2,
        "q_lora_rank": 4, "kv_lora_rank": 4, "qk_nope_head_dim": 2, "qk_rope_head_dim": 1, "v_head_dim": 2,
        "intermediate_size": 16, "first_k_dense_replace": 1, "n_routed_experts": 4, "num_experts_per_tok": 2,
        "n_shared_experts": 1, "moe_intermediate_size": 4, "num_nextn_predict_layers": 1}))
    # attention: q 8*4 + 4*2*3 = 56; kv 8*(4+1) + 4*2*(2+2) = 72; o 2*2*8 = 32: 160 a layer
    # one dense FFN 3*8*16 = 384; an expert 3*8*4 = 96; shared + router a MoE layer 96 + 8*4 = 128
    # non-expert 2*160 + 384 + 128 + 160 = 992; total 992 + 4*96 = 1376; active 992 - 80 + 2*96 = 1104
    assert (m.attention, m.kv_heads, m.head_dim, m.n_dense_layers, m.shared_experts) == ("mla", 1, 3, 1, 1)
    assert (m.total_params, m.active_params) == (1376, 1104)
    assert m.kv_bytes_per_token("bf16") == 2 * (4 + 1) * 2.0  # one latent of kv_lora_rank + rope per layer
    assert m.mtp_layers == 1


def test_qwen2_moe_shared_expert_width_and_dense_layers(tmp_path):
    m = model_from_config(_write(tmp_path, {
        **BASE, "model_type": "qwen2_moe", "num_attention_heads": 2, "head_dim": 4, "intermediate_size": 16,
        "num_experts": 4, "num_experts_per_tok": 2, "moe_intermediate_size": 4,
        "shared_expert_intermediate_size": 8, "mlp_only_layers": [0], "decoder_sparse_step": 1}))
    # q/k/v biases always: attention 8*2*4 + 2*8*2*4 + 2*4*8 + (2+4)*4 = 64 + 128 + 64 + 24 = 280
    # one dense layer 384; a shared FFN of 8 = 2 experts of 4: 2*96 + router 32 = 224
    # non-expert 2*280 + 384 + 224 + 160 = 1328; total 1328 + 4*96 = 1712; active 1328 - 80 + 2*96 = 1440
    assert (m.shared_experts, m.n_dense_layers, m.attention_bias) == (2, 1, True)
    assert (m.total_params, m.active_params) == (1712, 1440)


def test_local_experts_with_alternating_window(tmp_path):
    m = model_from_config(_write(tmp_path, {
        **BASE, "num_hidden_layers": 4, "model_type": "gpt_oss", "num_attention_heads": 4,
        "num_key_value_heads": 1, "head_dim": 2, "attention_bias": True, "num_local_experts": 4,
        "num_experts_per_tok": 1, "intermediate_size": 4, "sliding_window": 3,
        "layer_types": ["sliding_attention", "full_attention"] * 2, "quantization_config": {"quant_method": "mxfp4"}}))
    # attention 64 + 2*8*1*2 + 64 + (4+2)*2 = 172; router 8*4 = 32 a layer; expert 96
    # non-expert 4*172 + 4*32 + 160 = 976; total 976 + 4*4*96 = 2512; active 976 - 80 + 4*96 = 1280
    assert (m.intermediate_size, m.moe_intermediate_size, m.n_dense_layers) == (0, 4, 0)
    assert (m.sliding_window_layers, m.sliding_window_tokens, m.native_precision) == (2, 3, "fp4")
    assert (m.total_params, m.active_params) == (2512, 1280)
    # at a 100-token context: 2 full layers of 4 elements, 2 window layers holding 3 of the 100 tokens
    assert m.kv_bytes_per_token("bf16", 100) == pytest.approx((2 * 4 + 2 * 4 * 3 / 100) * 2.0)


@pytest.mark.parametrize("config, window_layers", [
    ({"model_type": "gemma2", "num_hidden_layers": 3}, 2),  # even layers slide
    ({"model_type": "gemma3_text", "num_hidden_layers": 12, "sliding_window_pattern": 6}, 10),  # 5 local : 1 global
    ({"model_type": "mistral", "num_hidden_layers": 3}, 3),  # Mistral 7B v0.1: every layer
    ({"model_type": "qwen2", "num_hidden_layers": 4, "use_sliding_window": True, "max_window_layers": 1}, 3),
    ({"model_type": "qwen2", "num_hidden_layers": 4, "use_sliding_window": False, "max_window_layers": 1}, 0),
])
def test_sliding_window_rules_of_each_kind(tmp_path, config, window_layers):
    m = model_from_config(_write(tmp_path, {"hidden_size": 8, "vocab_size": 10, "num_attention_heads": 2,
                                            "intermediate_size": 16, "sliding_window": 5, **config}))
    assert m.sliding_window_layers == window_layers
    assert m.sliding_window_tokens == (5 if window_layers else None)


def test_gemma_ties_its_lm_head_by_default(tmp_path):
    m = model_from_config(_write(tmp_path, {"model_type": "gemma2", "num_hidden_layers": 2, "hidden_size": 8,
                                            "vocab_size": 10, "num_attention_heads": 2, "intermediate_size": 16}))
    assert m.tie_word_embeddings and m.embedding_params == 10 * 8


def test_a_multimodal_config_is_its_text_config(tmp_path):
    text = {**BASE, "model_type": "llama", "num_attention_heads": 4, "intermediate_size": 16}
    nested = model_from_config(_write(tmp_path, {"model_type": "llava", "text_config": text,
                                                 "vision_config": {"hidden_size": 1024}}))
    flat = model_from_config(_write(tmp_path, text, "flat.json"))
    assert _fields(nested) == _fields(flat) and "vision tower is not priced" in (nested.notes or "")


# ---- linear and sparse attention (MODEL.md 2.10), worked by hand ------------------------------------------------
def test_gated_deltanet_hybrid_by_hand(tmp_path):
    """Qwen3-Next's layout: every second layer full attention (gated: q_proj twice as wide), the rest gated DeltaNet
    of 1 key head of 2 and 2 value heads of 3, a 4-wide convolution."""
    config = {**BASE, "model_type": "qwen3_next", "num_hidden_layers": 4, "full_attention_interval": 2,
              "num_attention_heads": 2, "num_key_value_heads": 1, "head_dim": 4, "linear_num_key_heads": 1,
              "linear_key_head_dim": 2, "linear_num_value_heads": 2, "linear_value_head_dim": 3,
              "linear_conv_kernel_dim": 4, "num_experts": 4, "num_experts_per_tok": 2, "moe_intermediate_size": 4}
    m = model_from_config(_write(tmp_path, config))
    assert (m.linear_attention, m.linear_attention_layers, m.full_attention_layers) == ("gated_deltanet", 2, 2)
    # full layer: q (gated) 8 x 2 x 4 x 2 = 128, k and v 2 x 8 x 1 x 4 = 64, o 2 x 4 x 8 = 64
    assert m.attention_params_per_layer == 256
    # linear layer: in_proj_qkvz 8 x (2 x 1 x 2 + 2 x 2 x 3) = 128, in_proj_ba 8 x 2 x 2 = 32, conv (2 x 2 + 2 x 3 =
    # 10 channels) x 4 = 40, A_log and dt_bias 2 x 2 = 4, norm 3, out_proj 2 x 3 x 8 = 48
    assert m.linear_attention_params_per_layer == 255
    # experts 4 layers x 4 x 3 x 8 x 4 = 1536, routers 4 x 8 x 4 = 128, embeddings 2 x 10 x 8 = 160
    assert m.total_params == 2 * 256 + 2 * 255 + 1536 + 128 + 160
    # state per layer: 2 value heads x 2 x 3 (bf16) = 24 B, convolution window 10 x 3 (bf16) = 60 B
    assert m.linear_state_bytes_per_layer == 84 and m.state_bytes_per_sequence == 168
    # only the full layers cache: 2 layers x (k and v x 1 head x 4) x 2 bytes
    assert m.kv_bytes_per_token("bf16") == 32
    # per token per linear layer: 2 value heads x 7 x 2 x 3, and the convolution 2 x 10 x 4
    assert m.linear_attention_flops_per_token == 84 + 80


def test_qwen35_state_dtype_and_gate_come_from_the_config(tmp_path):
    text = {**BASE, "model_type": "qwen3_5_text", "num_hidden_layers": 2, "num_attention_heads": 2, "head_dim": 4,
            "num_key_value_heads": 1, "intermediate_size": 16, "layer_types": ["linear_attention", "full_attention"],
            "linear_num_key_heads": 1, "linear_key_head_dim": 2, "linear_num_value_heads": 2,
            "linear_value_head_dim": 3, "linear_conv_kernel_dim": 4, "mamba_ssm_dtype": "float32",
            "attn_output_gate": False}
    m = model_from_config(_write(tmp_path, {"model_type": "qwen3_5", "text_config": text}))
    assert m.linear_state_dtype == "fp32" and not m.attention_output_gate
    assert m.linear_state_bytes_per_layer == 12 * 4 + 30 * 2  # the recurrent state in float32, the window in 16 bits


def test_lightning_attention_by_hand(tmp_path):
    """MiniMax-01's layout: type-0 layers are lightning attention, a head_dim x head_dim float32 state per head."""
    config = {**BASE, "model_type": "minimax", "attn_type_list": [0, 1], "num_attention_heads": 2,
              "num_key_value_heads": 1, "head_dim": 4, "num_local_experts": 2, "num_experts_per_tok": 1,
              "intermediate_size": 4}
    m = model_from_config(_write(tmp_path, config))
    assert (m.linear_attention, m.linear_attention_layers) == ("lightning", 1)
    # qkv 8 x 3 x 2 x 4 = 192, output gate 8 x 8 = 64, its norm 8, out_proj 8 x 8 = 64
    assert m.linear_attention_params_per_layer == 328
    assert m.state_bytes_per_sequence == 2 * 4 * 4 * 4.0  # 2 heads x 4 x 4 x float32
    assert m.linear_attention_flops_per_token == 2 * 5 * 4 * 4
    assert m.kv_bytes_per_token("bf16") == 1 * 2 * 1 * 4 * 2.0  # the one softmax layer's K and V


def test_deepseek_sparse_attention_by_hand(tmp_path):
    """DeepSeek-V3.2's layout: MLA, each layer with a lightning indexer of 2 heads of 3 reading the top 16."""
    config = {**BASE, "model_type": "deepseek_v32", "num_attention_heads": 2, "q_lora_rank": 4, "kv_lora_rank": 4,
              "qk_nope_head_dim": 2, "qk_rope_head_dim": 1, "v_head_dim": 2, "intermediate_size": 16,
              "index_topk": 16, "index_n_heads": 2, "index_head_dim": 3}
    m = model_from_config(_write(tmp_path, config))
    assert (m.sparse_attention_topk, m.indexer_heads, m.indexer_head_dim) == (16, 2, 3)
    # indexer: wq_b 4 x 2 x 3 = 24, wk 8 x 3 = 24, its LayerNorm 2 x 3 = 6, weights_proj 8 x 2 = 16
    assert m.indexer_params_per_layer == 70
    # MLA: q 8 x 4 + 4 x 2 x 3 = 56, kv 8 x (4 + 1) + 4 x 2 x (2 + 2) = 72, o 2 x 2 x 8 = 32; and the indexer
    assert m.attention_params_per_layer == 160 + 70
    # the cache holds every token: 2 layers x (latent 4 + rope 1 + indexer key 3) x 2 bytes, whatever the context
    assert m.kv_bytes_per_token("bf16") == m.kv_bytes_per_token("bf16", 100_000) == 2 * 8 * 2.0
    assert m.indexer_flops_per_token_per_context == 2 * 2 * 3 + 2 * 2


def test_hybrid_and_sparse_published_configs_match_their_counts():
    """Qwen3-Next: 36 of 48 layers gated DeltaNet, 80B total; DeepSeek-V3.2: 671B, 37B activated, its 61 layers
    each reading the top 2,048 tokens."""
    nxt = model_from_config(CONFIGS / "Qwen--Qwen3-Next-80B-A3B-Thinking.json")
    assert (nxt.linear_attention_layers, nxt.full_attention_layers, nxt.attention_output_gate) == (36, 12, True)
    assert abs(nxt.total_params / 80e9 - 1) <= 0.03
    # 12 full layers x 2 x 2 KV heads x 256 x 2 bytes; the state: 32 heads x 128 x 128 x 2 B + 8,192 channels x 3
    # x 2 B per layer, 36 layers
    assert nxt.kv_bytes_per_token("bf16") == 12 * 2 * 2 * 256 * 2
    assert nxt.state_bytes_per_sequence == 36 * (32 * 128 * 128 * 2 + 8192 * 3 * 2)
    v32 = model_from_config(CONFIGS / "deepseek-ai--DeepSeek-V3.2.json")
    assert (v32.sparse_attention_topk, v32.indexer_heads, v32.indexer_head_dim) == (2048, 64, 128)
    assert abs(v32.total_params / 671e9 - 1) <= 0.03 and abs(v32.active_params / 37e9 - 1) <= 0.03
    assert v32.kv_bytes_per_token("fp8") == 61 * (512 + 64 + 128)


# ---- refused: what the performance model cannot price, named by its field ------------------------------------------
def test_an_unknown_architecture_is_refused_naming_model_type(tmp_path):
    path = _write(tmp_path, {"model_type": "mamba", "hidden_size": 768, "num_hidden_layers": 24})
    with pytest.raises(InputError) as info:
        model_from_config(path)
    assert str(info.value).startswith(f"{path}: model_type 'mamba': not an architecture the planner can price")
    assert info.value.field == "model_type" and info.value.exit_code == 2


@pytest.mark.parametrize("name, field, words", [
    ("nvidia--Nemotron-H-56B-Base-8K", "hybrid_override_pattern", "Mamba layers keep a fixed-size state"),
])
def test_published_architectures_the_model_cannot_price_are_refused(name, field, words):
    with pytest.raises(InputError) as info:
        model_from_config(CONFIGS / f"{name}.json")
    assert info.value.field == field and f"{field}" in str(info.value) and words in str(info.value)


@pytest.mark.parametrize("extra, field", [
    ({"attn_type_list": [0, 1]}, "attn_type_list"),  # lightning attention under a model_type it is not known in
    ({"full_attention_interval": 2}, "full_attention_interval"),  # gated DeltaNet likewise
    ({"index_topk": 16}, "index_topk"),  # DeepSeek sparse attention likewise
    ({"indexer_types": ["full", "shared"]}, "indexer_types"),  # GLM-5's indexer shared between layers
    ({"layer_types": ["mamba", "full_attention"]}, "layer_types"),
    ({"layer_types": ["linear_attention", "full_attention"]}, "layer_types"),
    ({"global_head_dim": 16}, "global_head_dim"),  # full-attention layers of another KV shape (Gemma 4)
    ({"quantization_config": {"quant_method": "bitsandbytes"}}, "quantization_config.quant_method"),
    ({"num_key_value_heads": 3}, "num_key_value_heads"),
    ({"num_hidden_layers": "two"}, "num_hidden_layers"),
])
def test_fields_the_model_cannot_price_are_refused(tmp_path, extra, field):
    config = {**BASE, "model_type": "llama", "num_attention_heads": 4, "intermediate_size": 16, **extra}
    with pytest.raises(InputError) as info:
        model_from_config(_write(tmp_path, config))
    assert info.value.field == field, str(info.value)


def test_a_shared_expert_not_of_expert_width_is_refused(tmp_path):
    config = {**BASE, "model_type": "qwen2_moe", "num_attention_heads": 2, "num_experts": 4,
              "num_experts_per_tok": 2, "moe_intermediate_size": 4, "shared_expert_intermediate_size": 6}
    with pytest.raises(InputError, match="shared_expert_intermediate_size 6: expected a multiple"):
        model_from_config(_write(tmp_path, config))


@pytest.mark.parametrize("text, words", [("{not json", "is not JSON"), ("[1, 2]", "expected a JSON object")])
def test_a_file_that_is_no_config_is_refused(tmp_path, text, words):
    path = tmp_path / "config.json"
    path.write_text(text)
    with pytest.raises(InputError, match=words):
        model_from_config(path)


def test_a_missing_field_is_named(tmp_path):
    with pytest.raises(InputError, match="num_hidden_layers: required field is missing"):
        entry_from_config({"model_type": "llama", "hidden_size": 8}, "config.json", "x")


# ---- planner models add --------------------------------------------------------------------------------------
@pytest.mark.parametrize("model_id", ["deepseek-v3", "gpt-oss-20b", "llama-3.1-8b"])
def test_models_add_prints_the_entry_with_catalog_shows_derived(model_id):
    path = CONFIGS / f"{CATALOG_CONFIGS[model_id]}.json"
    res = CliRunner().invoke(main, ["models", "add", str(path), "--id", model_id])
    assert res.exit_code == 0, res.output
    printed = yaml.safe_load(res.stdout)
    shown = yaml.safe_load(CliRunner().invoke(main, ["catalog", "show", model_id]).stdout)
    assert printed["id"] == model_id and printed["derived"] == shown["derived"]
    assert {k: v for k, v in printed.items() if k not in NOT_DERIVED} == \
        {k: v for k, v in shown.items() if k not in NOT_DERIVED}


def test_models_add_json_and_out_file_load_back(tmp_path):
    path = CONFIGS / "Qwen--Qwen3-Coder-480B-A35B-Instruct.json"
    res = CliRunner().invoke(main, ["models", "add", str(path), "--format", "json"])
    assert res.exit_code == 0, res.output
    entry = json.loads(res.stdout)
    assert entry["id"] == "qwen--qwen3-coder-480b-a35b-instruct" and entry["derived"]["total_params"] > 4.7e11
    out = tmp_path / "qwen3-coder-480b.yaml"
    res = CliRunner().invoke(main, ["models", "add", str(path), "--id", "qwen3-coder-480b", "--out", str(out)])
    assert res.exit_code == 0 and "wrote model qwen3-coder-480b" in res.output
    back = Model.model_validate(yaml.safe_load(out.read_text()))  # `derived` read back is re-derived, not taken
    assert back.id == "qwen3-coder-480b" and back.total_params == entry["derived"]["total_params"]


def test_models_add_refuses_without_a_traceback(tmp_path):
    path = _write(tmp_path, {"model_type": "mamba"})
    res = CliRunner().invoke(main, ["models", "add", str(path)])
    assert res.exit_code == 2 and "Traceback" not in res.output
    assert f"error: {path}: model_type 'mamba': " in res.output
    res = CliRunner().invoke(main, ["models", "add", str(CONFIGS / "nvidia--Nemotron-H-56B-Base-8K.json")])
    assert res.exit_code == 2 and "hybrid_override_pattern" in res.output and "Mamba layers" in res.output


# ---- a scenario's models: [{from: PATH}] -----------------------------------------------------------------------------
SCENARIO = Path(__file__).resolve().parent.parent / "scenarios" / "bank-2mw.yaml"


def _scenario_with(tmp_path: Path, models: str) -> Path:
    text = SCENARIO.read_text().replace("models: []", models).replace("model: llama-3.1-70b", "model: coder")
    path = tmp_path / "scenario.yaml"
    path.write_text(text)
    return path


def test_a_scenario_model_from_a_config_relative_to_the_scenario(tmp_path):
    from planner.scenario import load_scenario

    (tmp_path / "hf").mkdir()
    (tmp_path / "hf" / "config.json").write_text((CONFIGS / "Qwen--Qwen3-Coder-480B-A35B-Instruct.json").read_text())
    sc = load_scenario(_scenario_with(tmp_path, "models: [{from: hf/config.json, id: coder, name: Qwen3 Coder}]"))
    m = sc.resolved_models()["coder"]
    assert m.name == "Qwen3 Coder" and m.source == "hf/config.json"
    assert _fields(m) == _fields(model_from_config(CONFIGS / "Qwen--Qwen3-Coder-480B-A35B-Instruct.json"))


def test_a_scenario_model_that_cannot_be_priced_names_both_fields(tmp_path):
    from planner.scenario import load_scenario

    (tmp_path / "nemotron.json").write_text((CONFIGS / "nvidia--Nemotron-H-56B-Base-8K.json").read_text())
    with pytest.raises(InputError) as info:
        load_scenario(_scenario_with(tmp_path, "models: [{from: nemotron.json, id: coder}]"))
    assert info.value.field == "models[0].from" and "hybrid_override_pattern" in str(info.value)


# ---- item 4: an unknown id ---------------------------------------------------------------------------------------------
def test_an_unknown_model_says_how_to_add_one_and_suggests_only_close_names():
    with pytest.raises(CatalogError) as info:
        get_model("mistral-large-3")
    text = str(info.value)
    assert "did you mean" not in text
    assert "planner models add CONFIG.json" in text and "models: [{from: " in text


@pytest.mark.parametrize("name, suggested", [
    ("mistral-large-3", None), ("llama-4-scout", None), ("glm-5", None),
    ("qwen3-coder-48b", "qwen3-coder-480b"), ("qwen3-next-80b", "qwen3-next-80b-a3b"),
    ("llama-3.1-70", "llama-3.1-70b"), ("qwen3-235b", "qwen3-235b-a22b"), ("Qwen3-32B", "qwen3-32b"),
    ("gpt-oss-12b", "gpt-oss-120b"), ("kimi-k3", "kimi-k2"),
])
def test_did_you_mean_suggests_only_close_names(name, suggested):
    words = did_you_mean(name, model_catalog())
    assert words == (f" (did you mean {suggested!r}?)" if suggested else "")


# ---- item 3: a model without a drafter ---------------------------------------------------------------------------------
def test_the_assumption_for_a_model_without_a_drafter_says_what_one_would_change(tmp_path):
    m = model_from_config(CONFIGS / "Qwen--Qwen3-Coder-480B-A35B-Instruct.json", "coder")
    assert auto_methods(m) == ("none",)
    words = auto_words(auto_methods(m), m.id)
    assert words.startswith("no drafter is known for coder")
    assert "planner frontier --model coder (or its config.json) --speculative eagle --acceptance A" in words


def test_the_library_call_is_the_converter(tmp_path):
    import planner

    assert planner.model_from_config is model_from_config
    with pytest.raises(planner.InputError) as info:
        planner.model_from_config(_write(tmp_path, {"model_type": "mamba"}))
    assert info.value.field == "model_type"


@pytest.mark.parametrize("name, choices, suggested", [
    ("capex", ["capex_usd", "power_kw"], "capex_usd"),  # a field's first word
    ("h100", ["hgx-h100", "hgx-h200", "gb200-nvl72"], "hgx-h100"),  # an id's last word
    ("coder-480b", ["qwen3-32b", "qwen3-235b-a22b"], None),
])
def test_did_you_mean_takes_a_cut_short_name(name, choices, suggested):
    assert did_you_mean(name, choices) == (f" (did you mean {suggested!r}?)" if suggested else "")


def test_frontier_takes_a_config_as_its_model():
    """What the no-drafter assumption points to works for a model outside the catalog too: the frontier of a
    config is the catalog model's where they are one model."""
    from planner.perf.frontier import frontier

    args = dict(hardware=["hgx-h100"], precision="fp8", speculative="eagle", acceptance=0.7)
    from_config = frontier(str(CONFIGS / "meta-llama--Meta-Llama-3.1-8B.json"), **args)
    assert from_config and from_config == frontier("llama-3.1-8b", **args)


# ---- the 2026 catalog models in a plan ------------------------------------------------------------------------------
NEW_MODELS = ("deepseek-v3.2", "qwen3-next-80b-a3b", "qwen3.5-397b-a17b", "qwen3-coder-480b", "kimi-k2.5",
              "glm-4.7", "minimax-m2.5", "llama-4-maverick")


@pytest.mark.integration
def test_a_plan_serves_every_2026_model():
    """One small workload per model added for issue 45 (tests/data/scenarios/models-2026.yaml), solved whole: each
    is served in full, the models with MTP layers by their own drafter where it pays."""
    from planner.fleet.solve import solve
    from planner.scenario import load_scenario

    scenario = load_scenario(Path(__file__).parent / "data" / "scenarios" / "models-2026.yaml")
    assert {w.model for w in scenario.workloads} == set(NEW_MODELS)
    plan = solve(scenario).to_dict()
    assert {w["workload"]: w["served_share"] for w in plan["workloads"]} == {w.name: 1.0 for w in scenario.workloads}
    rows = [r for r in plan["allocation"] if r["role"] != "prefill" and r.get("tps_per_user")]
    assert {r["workload"] for r in rows} == {w.name for w in scenario.workloads}
    drafted = {r["workload"] for r in rows if r["speculative"] == "mtp"}
    assert {"v32", "next", "q35"} <= drafted  # sparse and hybrid linear attention with their MTP layer
