"""The model catalog against published figures.

Parameter counts in ``planner/data/models/*.yaml`` are derived by ``planner.catalog.Model`` from config fields,
never typed in. These tests hold the derivation to the figures the model makers publish (within 3%), and check the
KV cache sizes against values worked by hand.

Conventions of the derivation, which the published figures below are compared under:

* ``active_params`` counts the embedding table once (as the LM head): the input embedding is a row lookup, not a
  matmul. OpenAI's gpt-oss active counts use the same convention. For dense models no maker publishes an "active"
  figure, so the test checks the convention itself: active = total - vocab * hidden.
* Norm weights, attention sinks, router/expert biases are not counted; they are well under 0.1% of any model here.
* DeepSeek's multi-token-prediction (MTP) layer is not counted (serving without speculative decoding does not run
  it): the published 671B is the main model; the 685B checkpoint size includes the 14B MTP module.
* Where a maker rounds its figure coarser than 3% (Qwen's "A3B", "A17B"), the entry's ``active_tolerance`` says how
  far; where it counts the input embedding in its active figure (Meta's Llama 4), ``active_counts_embedding``.
"""

from __future__ import annotations

import pytest

from planner.catalog import CatalogError, get_model, model_catalog

TOLERANCE = 0.03

# id -> published figures. total / active in parameters; active None where the maker publishes none (dense models).
PUBLISHED: dict[str, dict] = {
    "llama-3.1-8b": dict(
        total=8.03e9,
        active=None,
        source="https://huggingface.co/meta-llama/Llama-3.1-8B",
        note="model page, safetensors parameter count 8.03B",
    ),
    "llama-3.1-70b": dict(
        total=70.6e9,
        active=None,
        source="https://huggingface.co/meta-llama/Llama-3.1-70B",
        note="model page, safetensors parameter count 70.6B",
    ),
    "llama-3.1-405b": dict(
        total=405.9e9,
        active=None,
        source="https://huggingface.co/meta-llama/Llama-3.1-405B",
        note="model page rounds the safetensors count to 406B; the Llama 3 paper (arXiv 2407.21783) says 405B",
    ),
    "llama-2-70b": dict(
        total=69e9,
        active=None,
        source="https://huggingface.co/meta-llama/Llama-2-70b-hf",
        note="model page, safetensors parameter count 69B",
    ),
    "llama-2-7b": dict(
        total=6.74e9,
        active=None,
        source="https://huggingface.co/meta-llama/Llama-2-7b-hf",
        note="model page, safetensors parameter count 6.74B",
    ),
    "qwen3-32b": dict(
        total=32.8e9,
        active=None,
        source="https://huggingface.co/Qwen/Qwen3-32B",
        note="model card: 32.8B parameters, 31.2B non-embedding",
    ),
    "qwen3-235b-a22b": dict(
        total=235e9,
        active=22e9,
        source="https://huggingface.co/Qwen/Qwen3-235B-A22B",
        note="model card: 235B in total and 22B activated",
    ),
    "deepseek-r1": dict(
        total=671e9,
        active=37e9,
        source="https://huggingface.co/deepseek-ai/DeepSeek-R1",
        note="model card: 671B total, 37B activated; excludes the MTP layer, as the derivation does",
    ),
    "deepseek-v3": dict(
        total=671e9,
        active=37e9,
        source="https://huggingface.co/deepseek-ai/DeepSeek-V3",
        note="model card: 685B on Hugging Face = 671B main model + 14B MTP module; 37B activated",
    ),
    "kimi-k2": dict(
        total=1.04e12,
        active=32e9,
        source="https://huggingface.co/moonshotai/Kimi-K2-Instruct",
        note="model card: 1T total, 32B activated; tech report (arXiv 2507.20534): 1.04T total, 32.6B activated",
    ),
    "gpt-oss-120b": dict(
        total=116.83e9,
        active=5.13e9,
        source="https://arxiv.org/abs/2508.10925",
        note="gpt-oss model card, table 1: 116.83B total, 5.13B active (unembedding counted, embedding not)",
    ),
    "gpt-oss-20b": dict(
        total=20.91e9,
        active=3.61e9,
        source="https://arxiv.org/abs/2508.10925",
        note="gpt-oss model card, table 1: 20.91B total, 3.61B active",
    ),
    # ---- the 2026 models (issue 45), derived by planner models add from their configs ----
    "deepseek-v3.2": dict(
        total=671e9,
        active=37e9,
        source="https://huggingface.co/deepseek-ai/DeepSeek-V3.2",
        note="V3's architecture with DeepSeek sparse attention: 671B main model + 14B MTP (the page's 685B), 37B "
             "activated; the indexer's 0.85B puts the derivation at 671.9B",
    ),
    "qwen3-next-80b-a3b": dict(
        total=80e9,
        active=3e9,
        active_tolerance=0.2,
        source="https://huggingface.co/Qwen/Qwen3-Next-80B-A3B-Thinking",
        note="model card: 80B in total and 3B activated; Qwen rounds its A-figures down to whole billions "
             "(Qwen3-30B-A3B's card: 3.3B activated); the derivation's 3.56B counts the 0.31B LM head and the 48 "
             "layers' 1.54B of attention (3.25B without the LM head)",
    ),
    "qwen3.5-397b-a17b": dict(
        total=397e9,
        active=17e9,
        active_tolerance=0.05,
        source="https://huggingface.co/Qwen/Qwen3.5-397B-A17B",
        note="model card: 397B total, 17B activated (whole billions; the total includes the vision encoder, which "
             "the derivation leaves out)",
    ),
    "qwen3-coder-480b": dict(
        total=480e9,
        active=35e9,
        source="https://huggingface.co/Qwen/Qwen3-Coder-480B-A35B-Instruct",
        note="model card: 480B total, 35B activated",
    ),
    "kimi-k2.5": dict(
        total=1.04e12,
        active=32e9,
        source="https://huggingface.co/moonshotai/Kimi-K2.5",
        note="K2's language model: tech report (arXiv 2507.20534) 1.04T total, 32.6B activated",
    ),
    "glm-4.7": dict(
        total=355e9,
        active=32e9,
        source="https://huggingface.co/zai-org/GLM-4.7",
        note="GLM-4.5's architecture: 355B total, 32B active (GLM-4.5 model card and arXiv 2508.06471)",
    ),
    "minimax-m2.5": dict(
        total=230e9,
        active=10e9,
        active_tolerance=0.05,
        source="https://huggingface.co/MiniMaxAI/MiniMax-M2.5",
        note="model card: 230B total, 10B activated (whole billions)",
    ),
    "llama-4-maverick": dict(
        total=400e9,
        active=17e9,
        active_counts_embedding=True,
        source="https://huggingface.co/meta-llama/Llama-4-Maverick-17B-128E-Instruct",
        note="model card: 400B total, 17B activated, Meta counting the input embedding (1.03B) too",
    ),
}


def published_active(model_id: str) -> tuple[float, float]:
    """(the catalog model's active parameters under the maker's convention, the tolerance its figure allows)."""
    m, pub = get_model(model_id), PUBLISHED[model_id]
    active = m.active_params + (m.vocab_size * m.hidden_size if pub.get("active_counts_embedding") else 0)
    return active, pub.get("active_tolerance", TOLERANCE)


def _off(derived: float, published: float) -> float:
    return derived / published - 1.0


def test_catalog_has_exactly_the_listed_models():
    assert set(model_catalog()) == set(PUBLISHED)


@pytest.mark.parametrize("model_id", sorted(PUBLISHED))
def test_source_is_the_public_config(model_id):
    src = get_model(model_id).source
    assert src.startswith("https://huggingface.co/") and src.endswith("/config.json"), src


@pytest.mark.parametrize("model_id", sorted(PUBLISHED))
def test_total_params_match_published(model_id):
    m, pub = get_model(model_id), PUBLISHED[model_id]
    off = _off(m.total_params, pub["total"])
    assert abs(off) <= TOLERANCE, (
        f"{model_id}: derived total {m.total_params / 1e9:.2f}B vs published {pub['total'] / 1e9:.2f}B "
        f"({off:+.1%}); {pub['source']}"
    )


@pytest.mark.parametrize("model_id", sorted(k for k, v in PUBLISHED.items() if v["active"] is not None))
def test_active_params_match_published(model_id):
    pub = PUBLISHED[model_id]
    active, tolerance = published_active(model_id)
    off = _off(active, pub["active"])
    assert abs(off) <= tolerance, (
        f"{model_id}: derived active {active / 1e9:.2f}B vs published {pub['active'] / 1e9:.2f}B "
        f"({off:+.1%}); {pub['source']}"
    )


@pytest.mark.parametrize("model_id", sorted(k for k, v in PUBLISHED.items() if v["active"] is None))
def test_dense_active_is_total_less_the_input_embedding(model_id):
    m = get_model(model_id)
    assert not m.is_moe
    assert not m.tie_word_embeddings
    assert m.active_params == m.total_params - m.vocab_size * m.hidden_size


def test_moe_active_is_a_small_share_of_total():
    for model_id in ("deepseek-r1", "kimi-k2", "qwen3-235b-a22b", "gpt-oss-120b", "gpt-oss-20b"):
        m = get_model(model_id)
        assert m.is_moe and m.active_params < 0.2 * m.total_params, model_id


def test_deepseek_r1_and_v3_share_an_architecture():
    r1, v3 = get_model("deepseek-r1"), get_model("deepseek-v3")
    assert r1.total_params == v3.total_params and r1.active_params == v3.active_params
    assert r1.kv_bytes_per_token("bf16") == v3.kv_bytes_per_token("bf16")


# ---- KV cache, worked by hand ----------------------------------------------------------------------------
def test_kv_llama_31_70b_bf16():
    # K and V (2) x 8 KV heads x head_dim 128 x 80 layers x 2 bytes (bf16)
    assert 2 * 8 * 128 * 80 * 2 == 327_680
    assert get_model("llama-3.1-70b").kv_bytes_per_token("bf16") == 327_680
    assert get_model("llama-3.1-70b").kv_bytes_per_token("fp8") == 163_840


def test_kv_deepseek_r1_mla_bf16():
    # MLA caches one latent per token per layer: kv_lora_rank 512 + decoupled RoPE key 64, x 61 layers x 2 bytes
    assert (512 + 64) * 61 * 2 == 70_272
    m = get_model("deepseek-r1")
    assert m.kv_bytes_per_token("bf16") == 70_272
    assert m.kv_bytes_per_token("bf16", context_tokens=100_000) == 70_272  # no sliding window


# gpt-oss-120b: per layer per token 2 (K,V) x 8 KV heads x 64 head_dim x 2 bytes = 2,048 B;
# 18 full-attention layers and 18 sliding-window layers (window 128).
GPT_OSS_120B_PER_LAYER = 2 * 8 * 64 * 2


def test_kv_gpt_oss_120b_below_window():
    # At 100 tokens of context (under the 128 window) every layer still keeps every token: 36 x 2,048.
    assert GPT_OSS_120B_PER_LAYER == 2_048
    assert 36 * 2_048 == 73_728
    m = get_model("gpt-oss-120b")
    assert m.kv_bytes_per_token("bf16", context_tokens=100) == 73_728
    assert m.kv_bytes_per_token("bf16", context_tokens=128) == 73_728
    assert m.kv_bytes_per_token("bf16") == 73_728  # no context given: every layer counted in full


def test_kv_gpt_oss_120b_above_window():
    # At 8,192 tokens of context the 18 sliding layers hold only 128 tokens each, i.e. 128/8192 per token averaged
    # over the context: 18 x 2,048 + 18 x 2,048 x 128 / 8,192 = 36,864 + 576 = 37,440 B per token.
    assert 18 * 2_048 + 18 * 2_048 * 128 / 8_192 == 37_440
    m = get_model("gpt-oss-120b")
    assert m.kv_bytes_per_token("bf16", context_tokens=8_192) == pytest.approx(37_440)
    # At 128k it approaches the 18 full layers alone (36,864 B).
    assert m.kv_bytes_per_token("bf16", context_tokens=131_072) == pytest.approx(36_864 + 18 * 2_048 / 1_024)


def test_unknown_model_suggests_a_close_id():
    with pytest.raises(CatalogError, match="did you mean 'kimi-k2'"):
        get_model("kimi-k3")
