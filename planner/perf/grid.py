"""The search space, defined once: the batch grid and the parallel layouts (tensor x pipeline x expert) of a
replica, and the (attention chips, FFN chips) layouts of an attention/FFN pair. The engine, the frontier,
``estimate`` and calibration all search these."""

from __future__ import annotations

import functools
from dataclasses import dataclass

import numpy as np

from planner import catalog
from planner.catalog import Hardware, Model
from planner.vocabulary import DEFAULT_SERVING_STACK

# The one batch grid (concurrent streams per replica) that the engine, the frontier and calibration search:
# geometric from 1 to 8192, 160 points before rounding, then 4 points an octave to 65,536 for the replicas whose
# every chip schedules its own streams (a wide expert-parallel group of 72 GPUs ran 256 streams a GPU: 18,432).
BATCHES = np.unique(np.round(np.concatenate([np.geomspace(1, 8192, 160),
                                             np.geomspace(8192, 65536, 13)]))).astype(np.float64)


# ---- the parallelism grid -----------------------------------------------------------------------------------
def tp_options(hw: Hardware, model: Model) -> list[int]:
    """Tensor-parallel degrees: powers of two up to the scale-up domain (and the domain itself), never more
    than the model has attention heads. A degree that does not split the heads evenly (72 of 128) serves only
    as an expert-parallel group with data-parallel attention (``heads_split``)."""
    domain = int(hw.chip.scale_up.domain_chips.value)
    limit = min(domain, model.heads)
    opts = {1 << i for i in range(16) if (1 << i) <= limit}
    if domain <= model.heads:
        opts.add(domain)
    return sorted(opts)


# The widest expert-parallel group tried, in scale-up domains (DeepSeek's own decode ran EP320: 40 nodes of 8 GPUs)
MAX_EP_DOMAINS = 64


def wide_ep_options(hw: Hardware, model: Model) -> list[int]:
    """Expert-parallel group widths beyond one scale-up domain (wide EP, MODEL.md 2.7): 2 or more whole domains,
    data-parallel attention on every chip, the routed experts spread over all of them and dispatched over the
    scale-out network; at most as many chips as the model has routed experts (one at least per chip)."""
    domain = int(hw.chip.scale_up.domain_chips.value)
    if not model.is_moe:
        return []
    return [m * domain for m in range(2, MAX_EP_DOMAINS + 1) if m * domain <= model.experts]


def parallel_grid(hw: Hardware, model: Model, chips: int | None = None, stack: str = DEFAULT_SERVING_STACK,
                  any_layout: bool = False) -> np.ndarray:
    """Rows of (tp, pp, ep) a replica may use: those an engine of ``stack`` runs on the hardware
    (``stack_engines``), or every one with ``any_layout``; with ``chips`` given, only tp * pp == chips."""
    grid = _grid(tuple(tp_options(hw, model)), model.layers, model.is_moe, model.heads, model.kv_heads,
                 tuple(wide_ep_options(hw, model)))
    if chips is not None:
        grid = grid[grid[:, 0] * grid[:, 1] == chips]
    if not any_layout:
        grid = grid[supported(hw.family, model, grid, stack_engines(hw.family, stack),
                              hw.chip.scale_up.domain_chips.value)]
    return grid.copy()


# ---- which engines run a layout (data/engines.yaml, MODEL.md 2.9) --------------------------------------------
def stack_engines(family: str, stack: str) -> tuple[str, ...]:
    """The engines a plan of ``stack`` may run on ``family``: the stack's own engine where it serves the family,
    else (vendor-best, or an engine that does not serve it) every engine that does."""
    serving = tuple(k for k, e in catalog.serving_engines().items() if family in e.families)
    return (stack,) if stack in serving else serving


def supported(family: str, model: Model, grid: np.ndarray, engines: tuple[str, ...],
              domain: float | None = None) -> np.ndarray:
    """Per (tp, pp, ep) row of ``grid``: whether one of ``engines`` runs it (on scale-up domains of ``domain``
    chips, where given)."""
    ok = np.zeros(len(grid), dtype=bool)
    for k in engines:
        ok |= catalog.serving_engines()[k].runs(family, model, grid[:, 0], grid[:, 1], grid[:, 2], domain)
    return ok


def engines_running(family: str, model: Model, tp: int, pp: int, ep: bool,
                    domain: float | None = None) -> tuple[str, ...]:
    """Every public engine that runs one replica layout of ``model`` on ``family`` (on scale-up domains of
    ``domain`` chips, where given: a wider group only as wide expert parallelism)."""
    return tuple(k for k, e in catalog.serving_engines().items()
                 if bool(e.runs(family, model, tp, pp, int(ep), domain)))


def pair_engines(family_a: str, family_f: str) -> tuple[str, ...]:
    """Every public engine that runs attention on ``family_a`` with the FFN on ``family_f``."""
    return tuple(k for k, e in catalog.serving_engines().items() if (family_a, family_f) in e.pairs)


def heads_split(heads: int, kv_heads: int, tp: int) -> bool:
    """Whether tensor parallelism of degree ``tp`` splits a model's attention evenly, as engines require (vLLM,
    SGLang and TensorRT-LLM refuse a degree that does not divide the attention heads): every chip the same number
    of query heads, and of KV heads, or a whole KV head copied to ``tp / kv_heads`` chips (MLA's one latent, GQA
    past its KV heads). Data-parallel attention (``ep`` rows) splits no heads."""
    if heads % tp:
        return False
    return kv_heads % tp == 0 or tp % kv_heads == 0


@functools.lru_cache(maxsize=256)
def _grid(tps: tuple[int, ...], layers: int, moe: bool, heads: int, kv_heads: int,
          wide: tuple[int, ...] = ()) -> np.ndarray:
    rows = [(tp, pp, ep) for tp in tps for pp in range(1, layers + 1)
            for ep in ((0, 1) if (moe and tp > 1) else (0,)) if ep or heads_split(heads, kv_heads, tp)]
    rows += [(w, 1, 1) for w in wide]  # wide expert parallelism: one stage, as the engines run it
    return np.array(rows, dtype=np.float64).reshape(-1, 3)


@dataclass(frozen=True)
class Layouts:
    """Which layouts a plan may use: those an engine of ``stack`` runs, or every one with ``any_layout`` (a
    scenario's ``serving_stack`` and ``layouts``)."""

    stack: str = DEFAULT_SERVING_STACK
    any_layout: bool = False

    def grid(self, hw: Hardware, model: Model, chips: int | None = None) -> np.ndarray:
        return parallel_grid(hw, model, chips, self.stack, self.any_layout)

    def split(self, hw_a: Hardware, hw_f: Hardware, model: Model) -> np.ndarray:
        return split_grid(hw_a, hw_f, model, self.stack, self.any_layout)


# ---- attention/FFN pairs (MODEL.md 10) -----------------------------------------------------------------------
MICRO_BATCHES = 2.0  # micro-batches ping-ponging between the attention and FFN pools


# FFN pool sizes tried, in racks of the FFN system
FFN_RACKS = (0.25, 0.5, 1.0, 2.0, 3.0, 4.0, 6.0, 8.0, 12.0, 16.0)


def split_grid(hw_a: Hardware, hw_f: Hardware, model: Model, stack: str = DEFAULT_SERVING_STACK,
               any_layout: bool = False) -> np.ndarray:
    """Rows of (attention chips, FFN chips, attention mode) an attention/FFN pair may use: A's tensor-parallel
    options, 1/4 to 16 racks of F, data-parallel attention as well for MoE models. Without ``any_layout``, only
    where an engine runs the pair (``pair_engines``) and A's engines run its attention layout."""
    rows = [(ta, max(1.0, round(r * hw_f.chips_per_rack)), ep) for ta in tp_options(hw_a, model)
            for r in FFN_RACKS for ep in ((0.0, 1.0) if model.is_moe and ta > 1 else (0.0,))
            if ep or heads_split(model.heads, model.kv_heads, ta)]
    grid = np.array(rows, dtype=np.float64).reshape(-1, 3)
    if any_layout:
        return grid
    if not pair_engines(hw_a.family, hw_f.family):
        return grid[:0]
    attention = np.column_stack([grid[:, 0], np.ones(len(grid)), grid[:, 2]])
    return grid[supported(hw_a.family, model, attention, stack_engines(hw_a.family, stack))]
