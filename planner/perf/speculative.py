"""Speculative decoding as an explicit choice (MODEL.md 3.4): which drafter, how many draft tokens, what acceptance.

A ``Speculation`` says the method (``none``, ``mtp``: the model's own multi-token-prediction layers, ``eagle``: a
one-layer draft head on the target's hidden states, ``draft_model``: a smaller catalog model on the same replica),
the draft length K (a number, or ``auto``: every K of ``AUTO_DRAFT_TOKENS``, the best kept per system) and the
per-token acceptance rate. ``draft_vector`` builds the drafter as a model vector, so that the kernels cost its K
steps like any decode step (``solvers.perf.kernels.speculative_decode_breakdown``).
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass

import numpy as np

from planner import catalog
from planner.catalog import Model
from planner.errors import InputError
from planner.perf.pack import model_vector
from planner.vocabulary import (
    AUTO_DRAFT_TOKENS,
    DEFAULT_ACCEPTANCE,
    DEFAULT_SPECULATIVE,
    MAX_DRAFT_TOKENS,
    SPECULATIVE_METHODS,
)
from solvers.perf import slots as L


@dataclass(frozen=True)
class Speculation:
    method: str = DEFAULT_SPECULATIVE
    draft_tokens: int | str = 0  # K, or "auto"
    acceptance: float = DEFAULT_ACCEPTANCE  # per draft token, where ``acceptance_by_k`` has no figure
    draft_model: str | None = None  # method draft_model: the catalog model that drafts
    acceptance_by_k: tuple[tuple[int, float], ...] = ()  # published per-token acceptance at each listed K

    def acceptance_at(self, k: int) -> float:
        """The per-token acceptance at draft length K (MODEL.md 3.4): the published figure at K; below the shortest
        listed K, the shortest's; beyond the longest, the rate that keeps the longest's accepted tokens per step
        (drafts past the published evidence are costed but earn nothing); ``acceptance`` where nothing is
        published; 0 for K = 0."""
        if k <= 0:
            return 0.0
        if not self.acceptance_by_k:
            return self.acceptance
        listed = dict(self.acceptance_by_k)
        if k in listed:
            return listed[k]
        shortest, longest = min(listed), max(listed)
        if k < shortest:
            return listed[shortest]
        if k > longest:
            accepted = (1.0 - listed[longest] ** (longest + 1)) / (1.0 - listed[longest])
            return acceptance_for(k, accepted)
        below = max(x for x in listed if x < k)  # between two listed lengths: the shorter's rate
        return listed[below]

    def settings(self) -> list[tuple[int, float]]:
        """(K, acceptance) of every setting to try: (0, 0) alone without a method."""
        if self.method == "none":
            return [(0, 0.0)]
        ks = AUTO_DRAFT_TOKENS if self.draft_tokens == "auto" else (int(self.draft_tokens),)
        return [(k, self.acceptance_at(k)) for k in ks]

    @property
    def acceptance_basis(self) -> str:
        return "published" if self.acceptance_by_k else "given"

    def to_dict(self) -> dict:
        return {"method": self.method, "draft_tokens": self.draft_tokens, "acceptance": self.acceptance,
                "draft_model": self.draft_model, "acceptance_by_k": [list(p) for p in self.acceptance_by_k]}


@functools.lru_cache(maxsize=None)
def published_acceptance_table() -> dict:
    return catalog._read_yaml(catalog.DATA_DIR / "speculative.yaml")


def published_acceptance(model_id: str | None, method: str) -> tuple[tuple[int, float], ...]:
    """Per-token acceptance at each draft length with a published figure for this model and method
    (data/speculative.yaml: accepted tokens per step, turned into the per-token rate that gives it); () where none
    is published."""
    entry = (published_acceptance_table().get(model_id) or {}).get(method) if model_id else None
    if not entry:
        return ()
    return tuple(sorted((int(k), acceptance_for(int(k), float(v)))
                        for k, v in entry["accepted_tokens_per_step"].items()))


def acceptance_for(draft_tokens: int, accepted_per_step: float) -> float:
    """The per-token acceptance a whose (1 - a^(K+1)) / (1 - a) is ``accepted_per_step`` (MODEL.md 3.4), by
    bisection: the sum rises with a from 1 at a = 0 to K + 1 at a = 1."""
    lo, hi = 0.0, 1.0 - 1e-9
    for _ in range(60):
        mid = 0.5 * (lo + hi)
        if (1.0 - mid ** (draft_tokens + 1)) / (1.0 - mid) < accepted_per_step:
            lo = mid
        else:
            hi = mid
    return round(0.5 * (lo + hi), 4)


def acceptance_words(method: str, model_id: str, acceptance: float, acceptance_by_k) -> str:
    """How a workload's drafter is assumed to do, in words: the published per-token acceptance at each listed draft
    length, or the one given (or defaulted), named as an assumption."""
    if acceptance_by_k:
        rates = ", ".join(f"{a:g} at K={k}" for k, a in acceptance_by_k)
        return f"{method} at the published acceptance for {model_id} ({rates}; data/speculative.yaml)"
    return f"{method} at acceptance {acceptance:g} per draft token (an assumption)"


def has_published_head(model_id: str, method: str) -> bool:
    """A published drafter of this method exists for the model (an EAGLE head in data/speculative.yaml)."""
    return bool(published_acceptance(model_id, method))


def auto_words(methods, model_id: str) -> str:
    """What ``speculative: auto`` weighs for a workload, in words: each drafter at its acceptance, chosen per
    option with no drafting."""
    drafters = [acceptance_words(m, model_id, DEFAULT_ACCEPTANCE, published_acceptance(model_id, m))
                for m in methods if m != "none"]
    if not drafters:
        return no_drafter_words(model_id)
    return ("the plan chooses per option between no drafting and " + "; ".join(drafters)
            + " (speculative: auto; none stays selectable)")


def no_drafter_words(model_id: str) -> str:
    """Why ``speculative: auto`` plans a model without drafting, and what a drafter would change (issue 45): its
    config has no multi-token-prediction layers and data/speculative.yaml no published head for it."""
    return (f"no drafter is known for {model_id} (its config has no multi-token-prediction layers and no EAGLE head "
            f"is published for it in data/speculative.yaml), so no speculative decoding: a drafter multiplies the "
            f"tokens/s each user sees by about its accepted tokens per step and can bring a faster tier within "
            f"reach; planner frontier --model {model_id} (or its config.json) --speculative eagle --acceptance A shows "
            f"what a head of acceptance A would reach, and a workload's speculative: {{method: eagle, acceptance: A}} "
            f"plans with one")


def auto_methods(model: Model) -> tuple[str, ...]:
    """What ``speculative: auto`` considers for ``model``: no drafting, its own multi-token-prediction layers where
    it ships them, and an EAGLE head where one is published for it (data/speculative.yaml)."""
    return (("none",) + (("mtp",) if model.mtp_layers > 0 else ())
            + (("eagle",) if has_published_head(model.id, "eagle") else ()))


NONE = Speculation()


def speculation(method: str | None = None, draft_tokens: int | str | None = None, acceptance: float | None = None,
                draft_model: str | None = None, field_prefix: str = "", model: str | None = None) -> Speculation:
    """A checked ``Speculation``; a bad value raises InputError naming the field. Without a method, draft tokens
    are 0 (a K > 0 without a method is an error: the drafter must be costed); with one, ``auto`` by default.
    Without an acceptance, the published one of the method on ``model`` (data/speculative.yaml) where there is
    one, else DEFAULT_ACCEPTANCE."""
    published = published_acceptance(model, method or DEFAULT_SPECULATIVE) if acceptance is None else ()
    method = method or DEFAULT_SPECULATIVE
    name = (lambda f: f"{field_prefix}{f}") if field_prefix else (lambda f: f.replace("_", "-"))
    if method not in SPECULATIVE_METHODS:
        raise InputError(f"expected one of {', '.join(SPECULATIVE_METHODS)}, got {method!r}", field=name("speculative")
                         if not field_prefix else name("method"))
    if draft_tokens is None:
        draft_tokens = 0 if method == "none" else "auto"
    if draft_tokens != "auto" and not (isinstance(draft_tokens, int) and not isinstance(draft_tokens, bool)
                                       and 0 <= draft_tokens <= MAX_DRAFT_TOKENS):
        raise InputError(f"expected a whole number of draft tokens from 0 to {MAX_DRAFT_TOKENS} or auto, got "
                         f"{draft_tokens!r}", field=name("draft_tokens"))
    if method == "none" and draft_tokens not in (0, "auto"):
        raise InputError(f"{draft_tokens} draft tokens need a drafter to cost: give a speculative method "
                         f"({', '.join(m for m in SPECULATIVE_METHODS if m != 'none')})",
                         field=name("draft_tokens"))
    acceptance = DEFAULT_ACCEPTANCE if acceptance is None else acceptance
    if not (isinstance(acceptance, (int, float)) and not isinstance(acceptance, bool) and math.isfinite(acceptance)
            and 0.0 <= acceptance < 1.0):
        raise InputError(f"expected an acceptance rate in [0, 1), got {acceptance!r}", field=name("acceptance"))
    if (method == "draft_model") != (draft_model is not None):
        raise InputError("method draft_model names its drafter (draft_model: a model id), and only it does",
                         field=name("draft_model"))
    return Speculation(method, 0 if method == "none" else draft_tokens, float(acceptance), draft_model, published)


def draft_vector(model: Model, spec: Speculation, models: dict[str, Model] | None = None) -> np.ndarray:
    """The drafter of ``spec`` for ``model`` as a model vector (zeros for ``none``). It reads the target's LM head
    each draft step but holds no embedding of its own (MTP and EAGLE share the target's; a draft model holds its
    own). MTP: the model's ``mtp_layers`` decoder layers of its last layer's kind, each with the 2h -> h projection
    that joins embedding and hidden state. EAGLE: one dense decoder layer of the target's width (its dense FFN, or
    8 h^2 for a model without one) with the 3h -> h fusion of three hidden states. Raises InputError where the
    method cannot apply."""
    if spec.method == "none":
        return np.zeros(L.N_MODEL)
    v = _drafter_layers(model, spec, models)
    # each draft step samples its token and feeds it to the next: a step of its own, with the engine's per-step
    # host work (MODEL.md 3.4); the measured speed-ups at batch 1 (c12) need it
    v[L.M_SAMPLES] = 1.0
    return v


def _drafter_layers(model: Model, spec: Speculation, models: dict[str, Model] | None) -> np.ndarray:
    """The drafter's layers and weights as a model vector (``draft_vector``'s cases)."""
    v = np.zeros(L.N_MODEL)
    target = model_vector(model)
    h = float(model.hidden_size)
    if spec.method == "draft_model":
        assert spec.draft_model is not None  # speculation() refuses a draft_model method without its drafter
        drafter = (models or {}).get(spec.draft_model)
        if drafter is None:
            drafter = catalog.get_model(spec.draft_model)
        if drafter.vocab_size != model.vocab_size:
            raise InputError(f"draft model {drafter.id} has a vocabulary of {drafter.vocab_size}, the target "
                             f"{model.id} {model.vocab_size}: a drafter must share the target's tokenizer",
                             field="draft_model")
        return model_vector(drafter)
    v[:] = target
    v[L.M_WINDOW_LAYERS] = 0.0
    v[L.M_WINDOW_TOKENS] = 0.0
    v[L.M_EMBED_PARAMS] = 0.0
    # a drafter's layers attend over a full cache (Qwen3-Next's and Qwen3.5's MTP layer too): no linear attention
    v[L.M_LINEAR_LAYERS] = v[L.M_STATE_BYTES] = v[L.M_STATE_HEADS] = v[L.M_LINEAR_FLOPS] = 0.0
    full_attention = float(model.attention_params_per_layer)  # one full-attention layer's weights (not a mean)
    if spec.method == "mtp":
        if model.mtp_layers <= 0:
            raise InputError(f"{model.id} ships no multi-token-prediction layers: use eagle or draft_model",
                             field="speculative")
        n = float(model.mtp_layers)
        v[L.M_LAYERS] = n
        v[L.M_MOE_LAYERS] = n if model.is_moe else 0.0
        v[L.M_DENSE_LAYERS] = 0.0 if model.is_moe else n
        v[L.M_ATTN_PARAMS] = full_attention + 2.0 * h * h  # DeepSeek-V3.2's keeps its sparse attention
        return v
    # eagle: one dense layer
    v[L.M_LAYERS] = 1.0
    v[L.M_DENSE_LAYERS] = 1.0
    v[L.M_MOE_LAYERS] = 0.0
    v[L.M_EXPERTS] = v[L.M_EXPERTS_PER_TOKEN] = v[L.M_EXPERT_PARAMS] = v[L.M_SHARED_PARAMS] = 0.0
    v[L.M_TOPK] = v[L.M_INDEX_ELEMS] = v[L.M_INDEX_FLOPS] = 0.0  # a plain dense layer, no indexer
    v[L.M_ATTN_PARAMS] = full_attention - model.indexer_params_per_layer + 3.0 * h * h
    v[L.M_DENSE_FFN_PARAMS] = target[L.M_DENSE_FFN_PARAMS] if model.intermediate_size > 0 else 8.0 * h * h
    return v
