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
from tests.test_models import PUBLISHED

CONFIGS = Path(__file__).parent / "data" / "hf_configs"

# catalog id -> its config (the catalog's source: huggingface.co/ORG/NAME/blob/main/config.json)
CATALOG_CONFIGS = {
    "deepseek-v3": "deepseek-ai--DeepSeek-V3", "deepseek-r1": "deepseek-ai--DeepSeek-R1",
    "kimi-k2": "moonshotai--Kimi-K2-Instruct", "gpt-oss-120b": "openai--gpt-oss-120b",
    "gpt-oss-20b": "openai--gpt-oss-20b", "llama-2-7b": "meta-llama--Llama-2-7b-hf",
    "llama-2-70b": "meta-llama--Llama-2-70b-hf", "llama-3.1-8b": "meta-llama--Meta-Llama-3.1-8B",
    "llama-3.1-70b": "meta-llama--Meta-Llama-3.1-70B", "llama-3.1-405b": "meta-llama--Meta-Llama-3.1-405B",
    "qwen3-32b": "Qwen--Qwen3-32B", "qwen3-235b-a22b": "Qwen--Qwen3-235B-A22B",
}
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
    converted = model_from_config(CONFIGS / f"{CATALOG_CONFIGS[model_id]}.json", model_id)
    assert _fields(converted) == _fields(get_model(model_id))
    published = PUBLISHED[model_id]
    assert abs(converted.total_params / published["total"] - 1) <= 0.03
    if published["active"] is not None:
        assert abs(converted.active_params / published["active"] - 1) <= 0.03


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


# ---- refused: what the performance model cannot price, named by its field ------------------------------------------
def test_an_unknown_architecture_is_refused_naming_model_type(tmp_path):
    path = _write(tmp_path, {"model_type": "mamba", "hidden_size": 768, "num_hidden_layers": 24})
    with pytest.raises(InputError) as info:
        model_from_config(path)
    assert str(info.value).startswith(f"{path}: model_type 'mamba': not an architecture the planner can price")
    assert info.value.field == "model_type" and info.value.exit_code == 2


@pytest.mark.parametrize("name, field, words", [
    ("Qwen--Qwen3.5-397B-A17B", "text_config.layer_types", "linear_attention layers (45 of 60) keep a fixed-size"),
    ("Qwen--Qwen3-Next-80B-A3B-Thinking", "full_attention_interval", "linear attention (gated DeltaNet)"),
    ("deepseek-ai--DeepSeek-V3.2", "index_topk", "DeepSeek sparse attention"),
    ("nvidia--Nemotron-H-56B-Base-8K", "hybrid_override_pattern", "Mamba layers keep a fixed-size state"),
])
def test_published_architectures_the_model_cannot_price_are_refused(name, field, words):
    with pytest.raises(InputError) as info:
        model_from_config(CONFIGS / f"{name}.json")
    assert info.value.field == field and f"{field}" in str(info.value) and words in str(info.value)


@pytest.mark.parametrize("extra, field", [
    ({"attn_type_list": [0, 1]}, "attn_type_list"),  # MiniMax lightning attention
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
    res = CliRunner().invoke(main, ["models", "add", str(CONFIGS / "deepseek-ai--DeepSeek-V3.2.json")])
    assert res.exit_code == 2 and "index_topk 2048: DeepSeek sparse attention" in res.output


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

    (tmp_path / "v32.json").write_text((CONFIGS / "deepseek-ai--DeepSeek-V3.2.json").read_text())
    with pytest.raises(InputError) as info:
        load_scenario(_scenario_with(tmp_path, "models: [{from: v32.json, id: coder}]"))
    assert info.value.field == "models[0].from" and "index_topk 2048" in str(info.value)


# ---- item 4: an unknown id ---------------------------------------------------------------------------------------------
def test_an_unknown_model_says_how_to_add_one_and_suggests_only_close_names():
    with pytest.raises(CatalogError) as info:
        get_model("qwen3-coder-480b")
    text = str(info.value)
    assert "did you mean" not in text
    assert "planner models add CONFIG.json" in text and "models: [{from: " in text


@pytest.mark.parametrize("name, suggested", [
    ("qwen3-coder-480b", None), ("qwen3-next-80b", None), ("llama-4-maverick", None),
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
