"""What each workload asks of the fleet at its peak (docs/MODEL.md 7, 9): a scenario's workload turned into the
numbers the engine, the MILP and ``check`` use. A plan carries its demands, so it can be checked without the
scenario file."""

from __future__ import annotations

import dataclasses
import functools
import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from planner.catalog import Model
from planner.errors import InputError
from planner.fleet.spares import spare_rule
from planner.lengths import FIXED, TABLE, Lengths
from planner.perf import pack
from planner.perf.speculative import Speculation, auto_methods, published_acceptance
from planner.vocabulary import AUTO_SPECULATIVE, DEFAULT_ACCEPTANCE, SECONDS_PER_YEAR
from solvers.perf import slots as L

PREFILL_BANDS = 16  # equal-probability bands of the prompt lengths over which prefill is priced (MODEL.md 15.3)
# Equal-probability points of the output lengths over which a colocated replica's streams are held to the tier
# (short answers miss first: one prompt's prefill chunk is a larger part of their time; MODEL.md 9.2)
OUTPUT_SHARE_POINTS = 32
TURN_BANDS = 32  # bands of a session's turns over which its calls' prompts are priced (each turn alone up to 32)


@dataclass(frozen=True)
class Demand:
    """One workload at its peak."""

    name: str
    model: str
    output_tokens_per_s: float  # decode demand: peak calls/s x generated tokens per call
    prefill_tokens_per_s: float  # prompt tokens/s to prefill after prefix-cache hits
    calls_per_s: float  # peak model calls per second
    input_tokens: float  # mean prompt per call
    prefill_tokens: float  # mean prompt per call still to compute (after prefix-cache hits)
    output_tokens: float  # generated per call (output + reasoning)
    min_tps_per_user: float
    resident_s_per_token: float  # agentic: tool-call wait per generated token, during which the KV stays resident
    ttft_s: float
    ttft_quantile: float  # 0..1
    precision: str | None
    allow_hardware: tuple[str, ...] | None
    peak_to_mean: float = 1.0
    tier: str | None = None  # None for a custom min_tps_per_user
    price_usd_per_mtok: float | None = None  # the workload's price, else its tier's (max_revenue)
    speculative: str = "none"  # the drafter (planner.perf.speculative); none: plain decode
    draft_tokens: int | str = 0  # K, or "auto"
    acceptance: float = 0.0
    draft_model: str | None = None
    acceptance_by_k: tuple = ()  # published per-token acceptance at each listed draft length: ((K, a), ...)
    auto_methods: tuple = ()  # speculative auto: the drafters it considers (none first)
    headroom: float = 0.0  # site.capacity_headroom: pools sized for the peak x (1 + this)
    redundancy: str = "none"  # spare replicas a pool holds: none, n+K (K spares) or rack (planner.fleet.spares)
    api: tuple = ()  # hosted offers: ((name, usd/Mtok input, cached input, output, max tok/s per user[, ttft s]), ...)
    input_lengths: dict | None = None  # the prompt length distribution's spec (planner.lengths); None: fixed
    output_lengths: dict | None = None  # the visible output's; None: fixed
    turns: int = 1  # agentic: model calls per session (1: every call independent)
    tool_call_gap_s: float = 0.0  # agentic: seconds a session waits on a tool between its calls
    turn_growth_tokens: float = 0.0  # agentic: prompt tokens each call adds to the next (visible output + growth)

    def input_length_dist(self) -> Lengths:
        """The distribution of one call's prompt tokens, with mean ``input_tokens``: the scenario's spec (of the
        first turn's prompt) shifted by the growth of an agentic call's prompt over the first one, on the mean
        (MODEL.md 15), or fixed at ``input_tokens`` without a spec."""
        if self.input_lengths is None:
            return Lengths.fixed(self.input_tokens)
        first = Lengths.from_spec(self.input_lengths, "input_lengths")
        return first.shifted(self.input_tokens - first.mean)

    def output_length_dist(self) -> Lengths:
        """The distribution of one call's generated tokens, with mean ``output_tokens``: the visible output's spec
        shifted by the mean reasoning tokens, or fixed at ``output_tokens`` without a spec."""
        if self.output_lengths is None:
            return Lengths.fixed(self.output_tokens)
        visible = Lengths.from_spec(self.output_lengths, "output_lengths")
        return visible.shifted(self.output_tokens - visible.mean)

    def output_shares(self) -> np.ndarray:
        """Calls' output lengths over their mean at OUTPUT_SHARE_POINTS equal-weight quantile midpoints of the
        distribution, [1] for a fixed length: the requests whose speed the engine takes at the percentile on a
        colocated replica (``solvers.perf.serving.colocated_miss_share``)."""
        dist = self.output_length_dist()
        if self.output_lengths is None or dist.mean <= 0:
            return np.ones(1)
        return np.array([dist.quantile((k + 0.5) / OUTPUT_SHARE_POINTS) / dist.mean
                         for k in range(OUTPUT_SHARE_POINTS)])

    def prefill_lengths(self) -> tuple[np.ndarray, np.ndarray, float]:
        """The prompt tokens a call prefills, as the engine prices them (MODEL.md 15.3): points of the calls'
        prompt lengths with their weights, and the length at the workload's TTFT percentile. A session's calls
        differ by turn (the k-th call's prompt is the first's plus k turn_growth_tokens), so the calls' lengths are
        the first prompt's at each turn: the midpoints of PREFILL_BANDS equal-probability bands of the first
        prompt (one point if fixed, its own rows if a short table) at the midpoints of at most TURN_BANDS equal
        bands of the turns."""
        first = self.first_turn_length_dist() if self.turns > 1 else self.input_length_dist()
        share = self.prefill_tokens / self.input_tokens if self.input_tokens > 0 else 1.0
        if first.kind == FIXED:
            base, base_w = np.array([first.mean]), np.ones(1)
        elif first.kind == TABLE and len(first.tokens) <= 4 * PREFILL_BANDS:  # a short table: its own lengths
            base, base_w = np.asarray(first.tokens) + first.shift, np.asarray(first.weights)
        else:
            u = (np.arange(PREFILL_BANDS) + 0.5) / PREFILL_BANDS
            base, base_w = np.array([first.quantile(float(q)) for q in u]), np.full(PREFILL_BANDS, 1.0 / PREFILL_BANDS)
        bands = min(self.turns, TURN_BANDS)
        turns = (np.arange(bands) + 0.5) * self.turns / bands - 0.5  # mean turn index of each band, 0-based
        tokens = (base[:, None] + turns[None, :] * self.turn_growth_tokens).ravel() * share
        weights = np.outer(base_w, np.full(bands, 1.0 / bands)).ravel()
        return tokens, weights, self.prompt_quantile(first, self.ttft_quantile) * share

    @functools.cached_property
    def input_tokens_at_ttft_quantile(self) -> float:
        """The prompt (all of it, cached prefix included) at the workload's TTFT percentile: the one whose KV the
        percentile's request moves to its decode pool (MODEL.md 15.3)."""
        first = self.first_turn_length_dist() if self.turns > 1 else self.input_length_dist()
        return self.prompt_quantile(first, self.ttft_quantile)

    def prompt_quantile(self, first: Lengths, q: float) -> float:
        """The ``q``-quantile of the calls' prompt tokens: the first prompt's, or over a session's turns the
        mixture of the first prompt's at each turn, by bisection on its CDF (mean over k of F(x - k growth))."""
        if self.turns <= 1 or self.turn_growth_tokens == 0.0:
            return float(first.mean if first.kind == FIXED else first.quantile(q))
        shifts = np.arange(self.turns) * self.turn_growth_tokens
        lo = first.mean if first.kind == FIXED else first.quantile(1e-6)
        hi = (first.mean if first.kind == FIXED else first.quantile(1 - 1e-6)) + shifts[-1]
        for _ in range(60):
            mid = 0.5 * (lo + hi)
            if np.mean([first.cdf(mid - k) for k in shifts]) >= q:
                hi = mid
            else:
                lo = mid
        return float(hi)

    def first_turn_length_dist(self) -> Lengths:
        """The distribution of a session's first prompt: a call's, less the mean growth over the turns (the
        k-th call's prompt is the first's plus (k - 1) turn_growth_tokens, MODEL.md 9.6)."""
        return self.input_length_dist().shifted(-(self.turns - 1) / 2.0 * self.turn_growth_tokens)

    @property
    def prefill_scv(self) -> float:
        """Squared coefficient of variation of a prompt's prefill time: to first order prefill time is linear in
        prompt tokens (and the prefix cache takes the same share of each), so the calls' prompt lengths' (MODEL.md
        15): the first prompt's variance plus the turns' (a uniform k of 0..turns-1 times turn_growth_tokens)."""
        dist = self.input_length_dist()
        variance = dist.scv * dist.mean ** 2 + self.turn_growth_tokens ** 2 * (self.turns ** 2 - 1) / 12.0
        return variance / dist.mean ** 2 if dist.mean > 0 else 0.0

    @property
    def working_share(self) -> float:
        """Share of the year the replicas held for this workload work (OPTIMIZER.md 12): its mean rate over the
        capacity held, 1 / (peak_to_mean x (1 + headroom)); they rest the rest."""
        return 1.0 / (self.peak_to_mean * (1.0 + self.headroom))

    @property
    def sized_output_tokens_per_s(self) -> float:
        """The decode capacity the fleet holds for this workload: its peak plus the site's headroom."""
        return self.output_tokens_per_s * (1.0 + self.headroom)

    @property
    def sized_prefill_tokens_per_s(self) -> float:
        return self.prefill_tokens_per_s * (1.0 + self.headroom)

    def speculation(self) -> Speculation:
        """The performance model's speculative setting of one drafter (never ``auto``: see ``variants``)."""
        if self.speculative == AUTO_SPECULATIVE:
            raise ValueError(f"demand {self.name!r}: speculative auto is several settings; take its variants()")
        return Speculation(self.speculative, self.draft_tokens, self.acceptance, self.draft_model,
                           tuple((int(k), float(a)) for k, a in self.acceptance_by_k))

    def variants(self) -> list[Demand]:
        """One demand per drafter the workload considers: itself, or under ``speculative: auto`` each of its
        ``auto_methods`` (MODEL.md 3.4)."""
        if self.speculative != AUTO_SPECULATIVE:
            return [self]
        return [self.for_method(m) for m in self.auto_methods]

    def for_method(self, method: str) -> Demand:
        """This demand with one drafter: under ``auto``, ``method`` at its published acceptance on the model (the
        default acceptance where none is published); otherwise itself, for its own method."""
        if self.speculative != AUTO_SPECULATIVE:
            return self
        if method not in self.auto_methods:
            raise ValueError(f"demand {self.name!r}: speculative auto considers {', '.join(self.auto_methods)}, "
                             f"not {method!r}")
        drafts = method != "none"
        return dataclasses.replace(self, speculative=method, draft_tokens="auto" if drafts else 0,
                                   acceptance=DEFAULT_ACCEPTANCE if drafts else 0.0,
                                   acceptance_by_k=published_acceptance(self.model, method) if drafts else (),
                                   auto_methods=())

    def for_row(self, speculative) -> Demand:
        """The one-drafter demand an allocation row of this workload was planned under (its ``speculative``):
        under ``auto`` that method's variant (``none`` for a row that drafts nothing), else itself."""
        return self.for_method(speculative if speculative in self.auto_methods else "none")

    def drafter_of(self, draft_tokens: int | None) -> str:
        """The ``speculative`` an allocation row of this demand (one drafter) reports: its method, or none when it
        drafts 0 (or a plan's row gives no draft tokens)."""
        return self.speculative if draft_tokens else "none"

    def workload_vector(self) -> np.ndarray:
        """The engine's view of this demand (slots W_*: planner.perf.pack.workload_vector), its contexts those of the
        streams in flight: a stream stays for its output, so in flight the outputs are length-biased, E[O^2] / E[O]
        = E[O] (1 + scv) on average (issue 41: priced at the mean, a spread of answers at p99 5.7x their mean left
        a premium pool at 5 tok/s per user). A stream holds the KV of its prompt and its whole output (the
        simulator reserves it at admission): I + E[O] (1 + scv) on average; its step reads the context so far,
        I + E[O] (1 + scv) / 2. Fixed outputs (scv 0) are I + O and I + O / 2, as before."""
        v = pack.workload_vector(self.input_tokens, self.output_tokens, self.prefill_tokens,
                                 self.min_tps_per_user, self.ttft_s, self.ttft_quantile, self.resident_s_per_token)
        if self.output_lengths is not None:
            biased = self.output_tokens * (1.0 + self.output_length_dist().scv)
            v[L.W_CONTEXT_AVG] = self.input_tokens + biased / 2.0
            v[L.W_CONTEXT_MAX] = self.input_tokens + biased
        return v

    @property
    def context_max(self) -> float:
        """The longest context, whose KV cache must fit (W_CONTEXT_MAX)."""
        return float(self.workload_vector()[L.W_CONTEXT_MAX])

    @property
    def concurrent_streams(self) -> float:
        """Little's law at the peak: calls/s x seconds each call spends decoding at the tier's speed."""
        return self.calls_per_s * self.output_tokens / self.min_tps_per_user

    @property
    def resident_sessions(self) -> float:
        """Agentic sessions waiting on a tool call with their KV cache resident (Little's law on the wait)."""
        return self.calls_per_s * self.output_tokens * self.resident_s_per_token

    def to_dict(self) -> dict:
        d = dataclasses.asdict(self)
        d["allow_hardware"] = list(self.allow_hardware) if self.allow_hardware else None
        d["acceptance_by_k"] = [list(pair) for pair in self.acceptance_by_k]
        d["auto_methods"] = list(self.auto_methods)
        d["api"] = [list(o) for o in self.api]
        return d

    def api_offers(self) -> list[dict]:
        """The hosted offers that reach this workload's tier and, where they state their TTFT (``ttft_s``: None
        where not), its TTFT target, as mappings."""
        keys = ("name", "usd_per_mtok_input", "usd_per_mtok_cached_input", "usd_per_mtok_output", "max_tps_per_user")
        offers = [{**dict(zip(keys, o)), "ttft_s": o[5] if len(o) > 5 else None} for o in self.api]
        return [o for o in offers if o["max_tps_per_user"] >= self.min_tps_per_user * (1 - 1e-12)
                and (o["ttft_s"] is None or o["ttft_s"] <= self.ttft_s * (1 + 1e-12))]

    def api_cost_parts(self, offer: dict) -> dict:
        """USD a year of sending this whole workload (its mean rate) to ``offer``: prompt tokens it prefills,
        prompt tokens its prefix cache holds, output tokens."""
        mtok = self.calls_per_s / self.peak_to_mean * SECONDS_PER_YEAR / 1e6  # mega-calls a year
        return {"input": mtok * self.prefill_tokens * offer["usd_per_mtok_input"],
                "cached_input": mtok * (self.input_tokens - self.prefill_tokens) * offer["usd_per_mtok_cached_input"],
                "output": mtok * self.output_tokens * offer["usd_per_mtok_output"]}

    @classmethod
    def from_dict(cls, d: dict) -> Demand:
        """A demand as a plan's inputs hold it; a field of the wrong kind (a tampered plan) raises ValueError."""
        names = {f.name for f in dataclasses.fields(cls)}
        values = {k: v for k, v in d.items() if k in names}
        if values.get("allow_hardware"):
            values["allow_hardware"] = tuple(values["allow_hardware"])
        if "acceptance_by_k" in values:
            pairs = values["acceptance_by_k"]
            if not isinstance(pairs, (list, tuple)) or not all(
                    isinstance(p, (list, tuple)) and len(p) == 2 and all(
                        isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x) for x in p)
                    for p in pairs):
                raise ValueError(f"demand {values.get('name')!r}: acceptance_by_k is {pairs!r}, not [[K, a], ...]")
            values["acceptance_by_k"] = tuple((int(k), float(a)) for k, a in pairs)
        if "api" in values:
            offers = values["api"]
            if not isinstance(offers, (list, tuple)) or not all(
                    isinstance(o, (list, tuple)) and len(o) in (5, 6) and isinstance(o[0], str) and all(
                        isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x) and x >= 0
                        for x in o[1:]) for o in offers):
                raise ValueError(f"demand {values.get('name')!r}: api is {offers!r}, not [[name, in, cached, out, "
                                 f"tok/s(, ttft s)], ...]")
            values["api"] = tuple((str(o[0]), *(float(x) for x in o[1:])) for o in offers)
        for key in ("input_lengths", "output_lengths"):
            if values.get(key) is not None:
                try:
                    values[key] = Lengths.from_spec(values[key], key).spec
                except InputError as exc:
                    raise ValueError(f"demand {values.get('name')!r}: {exc}") from None
        if "auto_methods" in values:
            methods = values["auto_methods"]
            if not isinstance(methods, (list, tuple)) or not all(isinstance(m, str) for m in methods):
                raise ValueError(f"demand {values.get('name')!r}: auto_methods is {methods!r}, not a list of methods")
            values["auto_methods"] = tuple(methods)
        if "redundancy" in values:
            try:
                spare_rule(values["redundancy"])
            except ValueError as exc:
                raise ValueError(f"demand {values.get('name')!r}: {exc}") from None
        turns = values.get("turns", 1)
        if isinstance(turns, bool) or not isinstance(turns, (int, float)) or turns != int(turns) or not \
                1 <= turns <= 10_000:
            raise ValueError(f"demand {values.get('name')!r}: turns is {turns!r}, not a whole number 1 to 10,000")
        values["turns"] = int(turns)
        demand = cls(**values)
        numbers: dict[str, Any] = {}  # each number field by name, as a float
        for f in dataclasses.fields(cls):
            v = getattr(demand, f.name)
            if f.type in ("float", "float | None") and not (v is None and "None" in f.type):
                if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v):
                    raise ValueError(f"demand {demand.name!r}: {f.name} is {v!r}, not a finite number")
                numbers[f.name] = float(v)  # a JSON integer (10**30) would overflow the jitted kernels' int64
        return dataclasses.replace(demand, **numbers)


def demand_of(workload, model: Model, price_usd_per_mtok: float | None = None, headroom: float = 0.0,
              redundancy: str = "none") -> Demand:
    auto = workload.speculative.method == AUTO_SPECULATIVE
    spec = Speculation(AUTO_SPECULATIVE, "auto", 0.0) if auto else workload.speculation
    calls = workload.peak_calls_per_s
    generated = workload.generated_tokens_per_call
    prompt = workload.mean_input_tokens
    to_prefill = prompt * (1.0 - workload.prefix_cache_hit)
    return Demand(
        name=workload.name, model=model.id, output_tokens_per_s=calls * generated,
        prefill_tokens_per_s=calls * to_prefill, calls_per_s=calls, input_tokens=prompt,
        prefill_tokens=to_prefill, output_tokens=generated,
        min_tps_per_user=workload.resolved_min_tps_per_user,
        resident_s_per_token=workload.tool_call_gap_s / generated if workload.turns > 1 else 0.0,
        ttft_s=workload.ttft_s,
        ttft_quantile=workload.ttft_percentile / 100.0, precision=workload.precision,
        allow_hardware=tuple(workload.allow_hardware) if workload.allow_hardware else None,
        peak_to_mean=workload.peak_to_mean, tier=workload.tier, price_usd_per_mtok=price_usd_per_mtok,
        speculative=spec.method, draft_tokens=spec.draft_tokens, acceptance=spec.acceptance if spec.method != "none"
        else 0.0, draft_model=spec.draft_model, acceptance_by_k=spec.acceptance_by_k,
        auto_methods=auto_methods(model) if auto else (), headroom=float(headroom), redundancy=redundancy,
        api=tuple((a.name, float(a.usd_per_mtok_input), float(a.usd_per_mtok_input if a.usd_per_mtok_cached_input
                                                              is None else a.usd_per_mtok_cached_input),
                   float(a.usd_per_mtok_output), float(a.max_tps_per_user),
                   *(() if a.ttft_s is None else (float(a.ttft_s),))) for a in workload.api),
        input_lengths=workload.input_lengths.spec, output_lengths=workload.output_lengths.spec,
        turns=int(workload.turns), tool_call_gap_s=float(workload.tool_call_gap_s) if workload.turns > 1 else 0.0,
        turn_growth_tokens=float(workload.output_tokens + workload.context_growth_tokens_per_turn)
        if workload.turns > 1 else 0.0,
    )
