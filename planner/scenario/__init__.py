"""The scenario file: what a site must serve, under which limits, and with which hardware.

A scenario is YAML (see ``scenarios/`` and the interface contract). :func:`load_scenario` reads it with a safe loader
(plain mappings, lists, strings, numbers and dates; never Python objects) and validates it with the pydantic models
below. Every failure becomes a :class:`planner.errors.InputError` whose message names the file, the line, the field
path (``workloads[1].tier``) and what was expected.

Ids are checked against the catalog (``planner/data``) plus the scenario's inline ``hardware.custom`` and ``models``.
:meth:`Scenario.resolved_hardware` is the hardware a plan may use: catalog and custom racks, with
``hardware.overrides`` applied, filtered by ``hardware.allow`` and by availability on ``start_date``.
"""

from __future__ import annotations

import datetime as _dt
import functools
import math
import re
import types
from pathlib import Path
from typing import Annotated, Any, Literal, Union, get_args, get_origin

import yaml
from annotated_types import Ge, Gt, Le, Lt
from pydantic import (
    AllowInfNan,
    BaseModel,
    ConfigDict,
    Field,
    PlainSerializer,
    PlainValidator,
    PrivateAttr,
    Strict,
    ValidationError,
    ValidationInfo,
    WithJsonSchema,
    model_validator,
)
from pydantic_core import PydanticCustomError

from planner.catalog import (
    DateFigure,
    Figure,
    Hardware,
    Model,
    Precision,
    did_you_mean,
    hardware_catalog,
    model_catalog,
)
from planner.errors import InputError
from planner.lengths import JSON_SCHEMA as LENGTHS_JSON_SCHEMA
from planner.lengths import Lengths, MeanTokens, lengths_of, mean_tokens, spec_or_number
from planner.measurements import physics
from planner.measurements.table import Measurement, resolve_measurements
from planner.perf.grid import Layouts
from planner.perf.pack import family_efficiency
from planner.perf.speculative import acceptance_words, auto_methods, auto_words, speculation
from planner.vocabulary import (
    AUTO_SPECULATIVE,
    CURTAILMENT_ORDERS,
    DEFAULT_ACQUISITION,
    DEFAULT_CURTAILMENT_ORDER,
    DEFAULT_OBJECTIVE,
    DEFAULT_SOLVER,
    LAYOUT_POLICIES,
    OBJECTIVES,
    SERVING_STACKS,
    SOLVERS,
    TIERS,
)
from solvers.objectives import objective as objective_named

Tier = Literal["standard", "high", "premium", "ultra"]
Objective = Literal["min_cost", "min_power", "max_revenue", "max_served", "min_carbon"]
SolverName = Literal["scip", "highs", "cp-sat"]
# The Literals pydantic needs, held to the vocabulary's one definition of each word.
assert get_args(Tier) == tuple(TIERS) and get_args(Objective) == OBJECTIVES and get_args(SolverName) == SOLVERS
CurtailmentOrder = Literal["tier", "revenue"]
assert get_args(CurtailmentOrder) == CURTAILMENT_ORDERS
MAX_FILE_BYTES = 4 * 1024 * 1024
MAX_NODES = 200_000  # YAML nodes after alias expansion: stops "billion laughs" files

# Numbers: real numbers only (no booleans, no strings), finite (no .nan / .inf).
Number = Annotated[float, Strict(), AllowInfNan(False)]
PosNumber = Annotated[float, Strict(), AllowInfNan(False), Gt(0)]
# A rate of requests (or sessions) a second: at least one a week and a half (below 1e-12 the MILP's demand rows span
# more decades than HiGHS takes, and no planner buys racks for less), at most 1e12
Rate = Annotated[float, Strict(), AllowInfNan(False), Ge(1e-6), Le(1e12)]
NonNegNumber = Annotated[float, Strict(), AllowInfNan(False), Ge(0)]
Share = Annotated[float, Strict(), AllowInfNan(False), Ge(0), Lt(1)]
Count = Annotated[int, Strict(), Ge(0)]
PosCount = Annotated[int, Strict(), Ge(1)]
Name = Annotated[str, Strict(), Field(min_length=1)]


class _Section(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


def _problem(message: str, *loc: str | int) -> PydanticCustomError:
    """A validation error at ``loc`` (relative to the model that raises it); load_scenario maps it to a line."""
    return PydanticCustomError("scenario", "{message}", {"message": message, "loc": loc})


def _token_lengths(value) -> MeanTokens:
    """A token count of any shape ``planner.lengths.Lengths.from_spec`` reads, as its mean (carrying its spec)."""
    try:
        return mean_tokens(value)
    except InputError as exc:
        raise _problem(exc.message) from None


# A prompt or output length: a number, {mean, p99} or {table}; the model holds its mean (a float), the file its shape.
TokenLengths = Annotated[Any, PlainValidator(_token_lengths), PlainSerializer(spec_or_number),
                         WithJsonSchema(LENGTHS_JSON_SCHEMA)]


# ---- sections -------------------------------------------------------------------------------------------------
class Finance(_Section):
    wacc: Annotated[Number, Ge(0), Lt(1)] = Field(
        description="weighted average cost of capital per year, as a share (0.08 = 8%); annualizes capex"
    )
    electricity_usd_per_mwh: NonNegNumber = Field(description="electricity price, USD per MWh of facility energy")
    pue: Annotated[Number, Ge(1), Le(3)] = Field(
        description="power usage effectiveness: facility power / rack (IT) power, 1.0 to 3.0"
    )
    maintenance_share_of_capex_per_year: Share = Field(
        0.05, description="yearly support, spares and maintenance as a share of capex (default 0.05)"
    )
    average_load_share: Annotated[Number, Gt(0), Le(1)] | None = Field(
        None,
        description="bill energy at this flat share of design power and hold the budget to design power, instead "
        "of the power curves (default: the curves, docs/MODEL.md 14: the budget at the peak draw, energy at the "
        "mean draw)",
    )


class Site(_Section):
    power_budget_mw: PosNumber | list[PosNumber] | None = Field(
        None, description="facility power budget in MW (rack power x PUE), or one per period; default: no limit"
    )
    max_racks: PosCount | list[PosCount] | None = Field(
        None, description="most racks the site can hold, all types, or one per period; default: no limit")
    capacity_headroom: Annotated[Number, Ge(0), Le(10)] = Field(
        0.0, description="share of capacity held above the peak: every pool sized for peak x (1 + this), as "
        "operators keep for bursts and failures (default 0: sized for the peak at 100% of modelled throughput)")
    curtailment_order: CurtailmentOrder = Field(
        DEFAULT_CURTAILMENT_ORDER, description="the order in which the plan's curtailment table sheds workloads at "
        "the peak (docs/OPTIMIZER.md 13): tier (the slowest tier first; the default) or revenue (the least revenue "
        "lost per MW shed first)")
    grid_kg_co2_per_mwh: NonNegNumber | None = Field(
        None, description="emissions of the grid's energy, kg CO2e per MWh of facility energy (location-based; "
        "0 for energy matched hour by hour with carbon-free supply); the min_carbon objective needs it, and with it "
        "every plan reports its emissions (docs/OPTIMIZER.md 15)")


class Installed(_Section):
    """Racks already on the floor (docs/OPTIMIZER.md 9): their capex is sunk, their energy, maintenance and floor
    space count, and they retire service_life_years after they were bought."""

    hardware: Name = Field(description="hardware id (catalog or custom) of the racks")
    racks: PosCount = Field(description="how many racks of it are installed")
    bought: _dt.date = Field(description="when they were bought (on or before start_date)")
    capex_usd: PosNumber | None = Field(
        None, description="what one rack cost, for its maintenance (a share of capex a year); default the catalog's")


class HardwareChoice(_Section):
    allow: list[Name] | None = Field(
        None,
        description="hardware ids a plan may use (catalog or custom), whatever their acquisition; default: every "
        "catalog and custom system available by start_date that hardware.acquisition admits",
    )
    acquisition: list[Literal["merchant", "cloud", "select"]] = Field(
        default_factory=lambda: list(DEFAULT_ACQUISITION), min_length=1,
        description="how systems may be obtained when hardware.allow does not name them: merchant (racks anyone can "
        "buy; the default), cloud (capacity rented from one cloud: TPU, Trainium), select (sold to a few "
        "customers: Cerebras, SambaNova, Taalas)",
    )
    max_racks: dict[str, Count] = Field(
        default_factory=dict, description="supply caps: hardware id -> most racks that can be bought"
    )
    max_new_racks: Count | None = Field(
        None, description="most racks bought, all types together (0: serve with the installed fleet alone, as "
        "planner solve --fleet-only does); default: no limit")
    max_platforms: Annotated[int, Ge(1)] | None = Field(
        None, description="most hardware types a plan may buy (one operations team, one software stack each); "
        "default: any number")
    min_racks: dict[str, Count] = Field(
        default_factory=dict, description="minimum purchase: hardware id -> fewest racks bought if any is bought")
    capex_usd_by_period: dict[str, list[PosNumber]] = Field(
        default_factory=dict, description="with periods: hardware id -> the capex of one rack bought in each "
        "period (in place of the catalog's capex and price_decline_per_year)")
    price_decline_per_year: Share | dict[str, Share] = Field(
        0.0, description="with periods: yearly fall of a rack's capex, one share for every system or hardware id "
        "-> share (capex in period t = capex x (1 - decline)^years since the first period); default 0")
    overrides: dict[str, dict[str, Any]] = Field(
        default_factory=dict,
        description="hardware id -> {field: value}. A field is a catalog field name when unique (capex_usd, "
        "power_kw, available, chips, ...) or a dotted path (chip.memory.0.capacity_bytes, "
        "chip.peak_flops_per_s.fp8). A bare number replaces a figure's value and marks it as a scenario estimate.",
    )
    custom: list[Hardware] = Field(default_factory=list, description="inline rack types, in the catalog schema")


ACQUISITION_WORDS = {"merchant": "bought as racks", "cloud": "rented from one cloud only",
                     "select": "sold to a few customers only"}


class SolverSettings(_Section):
    name: SolverName = Field(DEFAULT_SOLVER, description="MILP solver (default scip)")
    time_limit_s: Annotated[PosNumber, Le(1e6)] = Field(
        60.0, description="wall-clock limit for one solve in seconds, at most 1e6 (default 60)")
    relative_gap: Share = Field(0.001, description="stop when within this relative gap of the bound (default 0.001)")
    fewest_platforms: bool = Field(
        True, description="then, among plans no worse than the first found, take the one on the fewest hardware "
        "types (OPTIMIZER.md 3; default true)")


class Speculative(_Section):
    """Speculative decoding for one workload (MODEL.md 3.4): a drafter proposes ``draft_tokens`` tokens, the target
    verifies them in one step and keeps each with probability ``acceptance`` until the first rejection."""

    method: Literal["auto", "none", "mtp", "eagle", "draft_model"] = Field(
        "auto", description="auto: no drafting and each drafter the model has (its mtp layers, a published EAGLE "
        "head), each at its published acceptance, the best kept per option; none; mtp: the model's own "
        "multi-token-prediction layers (models that ship them); eagle: a one-layer draft head; draft_model: a "
        "smaller model (draft_model) on the same replicas (default auto)")
    draft_tokens: PosCount | Literal["auto"] = Field(
        "auto", description="tokens drafted per step, 1 to 16, or auto: every length from 0 to 6, the best kept per "
        "system (default auto)")
    acceptance: Share | None = Field(None, description="probability that each draft token is accepted, in [0, 1) "
                                     "(default: the method's published acceptance on the model at each draft "
                                     "length, data/speculative.yaml, else 0.7)")
    draft_model: Name | None = Field(None, description="method draft_model: the model id that drafts")

    @model_validator(mode="after")
    def _consistent(self) -> Speculative:
        if (self.method == "draft_model") != (self.draft_model is not None):
            raise _problem("method draft_model names its drafter in draft_model, and only it does", "draft_model")
        if isinstance(self.draft_tokens, int) and self.draft_tokens > 16:
            raise _problem(f"expected at most 16 draft tokens, got {self.draft_tokens}", "draft_tokens")
        if self.method == AUTO_SPECULATIVE:
            for field, default in (("draft_tokens", "auto"), ("acceptance", None)):
                if getattr(self, field) != default:
                    raise _problem(f"method auto takes each drafter's published {field.replace('_', ' ')}: name a "
                                   f"method (mtp, eagle, draft_model) to set {field}", field)
        return self


class DemandScenario(_Section):
    """One demand forecast of a build-out (two-stage plan: the first period's order is shared by all)."""

    name: Name = Field(description="scenario name")
    probability: Annotated[Number, Gt(0), Le(1)] = Field(description="its probability; all sum to 1")
    multiplier: Annotated[Number, Gt(0), Le(1000)] | dict[Name, Annotated[Number, Gt(0), Le(1000)]] = Field(
        description="the rate of every workload (a number) or of named workloads (the rest 1) in every period "
        "after the first, times this")


class ApiOffer(_Section):
    """A hosted API that can serve a workload (capacity without racks, priced per token)."""

    name: Name = Field(description="the offer's name (provider and model), unique within the workload")
    usd_per_mtok_input: NonNegNumber = Field(description="USD per million prompt tokens")
    usd_per_mtok_cached_input: NonNegNumber | None = Field(
        None, description="USD per million prompt tokens its prefix cache holds (the workload's prefix_cache_hit "
        "share); default the input price")
    usd_per_mtok_output: NonNegNumber = Field(description="USD per million output tokens (reasoning included)")
    max_tps_per_user: PosNumber = Field(
        description="output tokens/s per user it reaches: it serves the workload only at or above its tier")


class Workload(_Section):
    """One stream of requests (chat) or of sessions of several model calls (agentic)."""

    name: Name = Field(description="unique name of the workload")
    model: Name = Field(description="model id: catalog or an id from the scenario's models")
    kind: Literal["chat", "agentic"] = Field(
        "chat", description="chat: one model call per request; agentic: sessions of `turns` calls (default chat)"
    )
    requests_per_s: Rate | list[Rate] = Field(
        description="mean arrival rate: requests (chat) or sessions (agentic) per s, 1e-6 to 1e12; with periods, "
        "one per period (or give peak_requests_per_s)")
    peak_requests_per_s: Rate | list[Rate] | None = Field(
        None, exclude=True, description="the peak arrival rate instead of requests_per_s: the mean is it / "
        "peak_to_mean (default 1: the fleet sized for this rate, energy and revenue on it too)")
    growth_per_year: Annotated[Number, Gt(0), Le(100)] | None = Field(
        None, description="with periods and one requests_per_s: the rate multiplies by this each year (3 = three "
        "times a year)")
    peak_to_mean: Annotated[Number, Ge(1), Le(1000)] = Field(
        1.0, description="peak / mean rate, 1 to 1,000; the fleet is sized for the peak")
    input_tokens: TokenLengths = Field(
        description="prompt tokens per request (agentic: of the first turn): a number (every prompt that long, at "
        "most 1e8), {mean: M, p99: P} (lognormal, M < P <= 14.97 M) or {table: [[tokens, weight], ...]}; plans "
        "use the mean, the TTFT queue the spread (docs/MODEL.md 15)")
    output_tokens: TokenLengths = Field(
        description="visible output tokens per request (agentic: per turn): a number (at most 1e8), {mean: M, p99: "
        "P} or {table: [[tokens, weight], ...]}; plans use the mean")
    reasoning_tokens: Annotated[NonNegNumber, Le(1e8)] = Field(
        0.0,
        description="mean hidden reasoning tokens per call, generated at the same speed before the output; "
        "not carried into the next turn's context (default 0)",
    )
    tier: Tier | None = Field(
        None, description="latency tier: standard 100, high 200, premium 400, ultra 1000 output tok/s per user"
    )
    price_usd_per_mtok: NonNegNumber | None = Field(
        None, description="price of a million output tokens of this workload; default: the scenario's price for "
        "its tier (max_revenue only)"
    )
    min_tps_per_user: PosNumber | None = Field(
        None, description="output tokens/s each user must see; give this or tier, not both"
    )
    ttft_s: PosNumber = Field(2.0, description="time-to-first-token target in seconds (default 2.0)")
    ttft_percentile: Annotated[Number, Gt(0), Lt(100)] = Field(
        90.0, description="percentile of requests that must meet ttft_s, in (0, 100): 50, 90, 99... (default 90)"
    )
    precision: Precision | None = Field(
        None, description="serving precision fp4|fp8|bf16; default: the fastest each hardware supports"
    )
    prefix_cache_hit: Share = Field(
        0.0, description="share of input tokens served from a prefix cache, in [0, 1) (default 0)"
    )
    capacity_headroom: Annotated[Number, Ge(0), Le(10)] | None = Field(
        None, description="share of this workload's capacity held above its peak, as site.capacity_headroom but "
        "for this workload alone (planner solve --verify raises it where a simulated target fails); default: the "
        "site's")
    turns: Annotated[PosCount, Le(10000)] = Field(1, description="model calls per session (agentic), 1 to 10,000 (default 1)")
    tool_call_gap_s: Annotated[NonNegNumber, Le(1e6)] = Field(
        0.0, description="mean seconds between turns spent in tools, while the session's context waits (default 0)"
    )
    context_growth_tokens_per_turn: Annotated[NonNegNumber, Le(1e8)] = Field(
        0.0,
        description="new input tokens (tool results, user messages) each later turn adds to the context, on top "
        "of the previous turn's prompt and output (default 0)",
    )
    allow_hardware: list[Name] | None = Field(
        None, description="hardware ids this workload may run on; default: any resolved hardware"
    )
    api: list[ApiOffer] = Field(
        default_factory=list, description="hosted API offers that may serve this workload beside the fleet: "
        "[{name, usd_per_mtok_input, usd_per_mtok_cached_input, usd_per_mtok_output, max_tps_per_user}] "
        "(docs/OPTIMIZER.md 10)")
    speculative: Speculative = Field(
        default_factory=Speculative, description="speculative decoding: {method: auto|none|mtp|eagle|draft_model, "
        "draft_tokens: K|auto, acceptance: A, draft_model: id} (default method auto: none or the model's own "
        "drafters, chosen per option)")

    @model_validator(mode="before")
    @classmethod
    def _mean_from_peak(cls, data):
        """peak_requests_per_s in place of requests_per_s: the mean rate is the peak / peak_to_mean."""
        if not isinstance(data, dict) or data.get("peak_requests_per_s") is None:
            return data
        if data.get("requests_per_s") is not None:
            raise _problem("give requests_per_s (the mean rate) or peak_requests_per_s, not both",
                           "peak_requests_per_s")
        peak, ratio = data["peak_requests_per_s"], data.get("peak_to_mean", 1.0)
        if isinstance(ratio, (int, float)) and not isinstance(ratio, bool) and ratio > 0:
            mean = ([p / ratio if isinstance(p, (int, float)) and not isinstance(p, bool) else p for p in peak]
                    if isinstance(peak, list) else peak / ratio if isinstance(peak, (int, float))
                    and not isinstance(peak, bool) else peak)
            data = {**data, "requests_per_s": [float(x) for x in mean] if isinstance(mean, list)
                    and all(isinstance(x, (int, float)) for x in mean) else
                    float(mean) if isinstance(mean, (int, float)) else mean}
        return data

    @model_validator(mode="after")
    def _consistent(self) -> Workload:
        if self.tier is not None and self.min_tps_per_user is not None:
            raise _problem("give tier or min_tps_per_user, not both", "min_tps_per_user")
        if self.tier is None and self.min_tps_per_user is None:
            raise _problem(f"expected a latency tier ({' | '.join(TIERS)}) or min_tps_per_user", "tier")
        for field in ("tool_call_gap_s", "context_growth_tokens_per_turn"):
            if getattr(self, field) > 0 and self.turns == 1:
                raise _problem(f"{field} needs turns > 1 (a session of several model calls)", field)
        if self.turns > 1 and self.kind != "agentic":
            raise _problem("turns > 1 describes sessions of several model calls: give kind: agentic", "turns")
        names = [a.name for a in self.api]
        if len(set(names)) != len(names):
            raise _problem(f"api offer names must be unique within a workload, got {names}", "api")
        if self.allow_hardware is not None and not self.allow_hardware:
            raise _problem("an empty list allows no hardware; leave allow_hardware out to allow any", "allow_hardware")
        return self

    # ---- derived quantities ----------------------------------------------------------------------------------
    @property
    def speculation(self):
        """The workload's speculative setting as the performance model takes it (planner.perf.speculative), for
        one named method (``auto`` is several: ``planner.fleet.demand.Demand.variants``)."""
        s = self.speculative
        return speculation(s.method, s.draft_tokens if s.method != "none" else 0, s.acceptance, s.draft_model,
                           model=self.model)

    @property
    def resolved_min_tps_per_user(self) -> float:
        """Output tokens/s each user must see: min_tps_per_user, or the tier's figure."""
        return self.min_tps_per_user if self.min_tps_per_user is not None else TIERS[self.tier]

    @property
    def input_lengths(self) -> Lengths:
        """The distribution of prompt tokens (agentic: of the first turn's prompt); ``input_tokens`` is its mean."""
        return lengths_of(self.input_tokens, "input_tokens")

    @property
    def output_lengths(self) -> Lengths:
        """The distribution of visible output tokens; ``output_tokens`` is its mean."""
        return lengths_of(self.output_tokens, "output_tokens")

    @property
    def calls_per_s(self) -> float:
        """Mean model calls per second (requests x turns)."""
        return self.requests_per_s * self.turns

    @property
    def peak_calls_per_s(self) -> float:
        return self.calls_per_s * self.peak_to_mean

    @property
    def generated_tokens_per_call(self) -> float:
        """Tokens decoded per call: visible output plus reasoning."""
        return self.output_tokens + self.reasoning_tokens

    def turn_input_tokens(self, turn: int) -> float:
        """Prompt tokens of turn ``turn`` (1-based): the first prompt plus each earlier turn's output and growth."""
        return self.input_tokens + (turn - 1) * (self.output_tokens + self.context_growth_tokens_per_turn)

    @property
    def mean_input_tokens(self) -> float:
        """Mean prompt tokens over a session's turns."""
        return self.turn_input_tokens(1 + (self.turns - 1) / 2)


# ---- the scenario -----------------------------------------------------------------------------------------------
ServingStack = Literal["vendor-best", "vllm", "sglang", "trtllm"]
assert get_args(ServingStack) == SERVING_STACKS  # the vocabulary's words
LayoutPolicy = Literal["supported", "any"]
assert get_args(LayoutPolicy) == LAYOUT_POLICIES


class Scenario(_Section):
    name: Name = Field(description="scenario name, used in reports")
    description: str | None = Field(None, description="free text")
    start_date: _dt.date = Field(description="purchase date: only hardware available by this date is used")
    horizon_years: Annotated[Number, Gt(0), Le(30)] = Field(description="years over which capex is annualized")
    finance: Finance = Field(description="cost of capital, electricity and facility overhead")
    site: Site = Field(default_factory=Site, description="limits of the site; default: none")
    hardware: HardwareChoice = Field(
        default_factory=HardwareChoice, description="which hardware may be bought, caps, overrides, custom racks"
    )
    installed: list[Installed] = Field(
        default_factory=list, description="racks already on the floor: [{hardware, racks, bought, capex_usd}]; "
        "their capex is sunk, and a plan keeps, adds to or retires them (docs/OPTIMIZER.md 9)")
    models: list[Model] = Field(default_factory=list, description="inline model specs, in the catalog schema")
    workloads: list[Workload] = Field(min_length=1, description="what the site must serve")
    objective: Objective = Field(
        DEFAULT_OBJECTIVE, description="min_cost: annual cost (capex annualized + energy + maintenance); min_power: power; "
        "max_revenue: revenue minus annual cost, serving each workload up to its demand; max_served: the most demand "
        "served (output tokens, each workload up to its demand), then the least annual cost (what a fleet can serve: "
        "planner solve --fleet-only)"
    )
    prices_usd_per_mtok: dict[Tier, NonNegNumber] = Field(
        default_factory=dict, description="price of a million output tokens per tier, e.g. {standard: 0.6, "
        "ultra: 12} (max_revenue)"
    )
    solver: SolverSettings = Field(default_factory=SolverSettings, description="solver and its limits")
    measurements: list[Measurement] = Field(
        default_factory=list, description="measured operating points (docs/INTERFACE.md 7.10): file paths (CSV, "
        "Parquet, YAML, JSON; relative to the scenario) or inline rows. A (workload, hardware, precision) and role "
        "with rows at the workload's lengths takes its options from them instead of the model")
    efficiency: dict[Name, dict[Name, Number]] = Field(
        default_factory=dict, description="the performance model's efficiency parameters per hardware family, in "
        "place of the shipped calibration: a file written by planner calibrate --measurements --out (relative to "
        "the scenario), or {family: {parameter: value}} inline; each within the calibration's bounds")
    periods: list[_dt.date] | None = Field(
        None, min_length=1, description="a build-out over time: the start date of each period (the first is "
        "start_date); per-period values of requests_per_s, power_budget_mw and max_racks follow this list")
    service_life_years: Annotated[Number, Gt(0), Le(30)] | None = Field(
        None, description="with periods or installed racks: years a rack serves before it retires; default "
        "horizon_years")
    demand_scenarios: list[DemandScenario] = Field(
        default_factory=list, description="with periods: demand forecasts, each with a probability and a multiplier "
        "of every workload's rate in every period after the first; a two-stage plan (the first order shared)")
    measurement_headroom: Share = Field(
        0.0, description="share of a measured replica's throughput held back (0: use it as measured, since a "
        "measured point already includes its queueing and batching)")
    trust_measurements: bool = Field(
        False, description="plan measurement rows beyond the physical bounds of their hardware (memory-bandwidth "
        "and compute rooflines, memory fit; docs/MODEL.md 12.4) as measured, each named by a warning in the plan's "
        "assumptions; false: such a row is an input error (planner solve --trust-measurements sets it)")
    serving_stack: ServingStack = Field(
        "vendor-best", description="the serving engine the plan assumes (docs/MODEL.md 5.3): vendor-best (the "
        "efficiencies fitted to the vendors' best published figures) or an engine's own where the published corpus "
        "has that engine's figures; the rest of its parameters are vendor-best's")
    layouts: LayoutPolicy = Field(
        "supported", description="the replica layouts the plan may use: supported (only those a public engine of "
        "the serving stack runs: data/engines.yaml, docs/MODEL.md 2.9) or any (every layout the model can cost; "
        "each allocation row's engines then says which engines run it, none where none does)")

    _resolved: dict[str, Hardware] | None = PrivateAttr(None)

    @model_validator(mode="after")
    def _references(self) -> Scenario:
        for loc, message in _period_problems(self):
            raise _problem(message, *loc)
        for loc, message in _reference_problems(self):
            raise _problem(message, *loc)
        if self.periods and any(w.api for w in self.workloads):
            i = next(k for k, w in enumerate(self.workloads) if w.api)
            raise _problem("a build-out does not take api offers yet: plan one period with them", "workloads", i,
                           "api")
        if self.periods and objective_named(self.objective).serves_most:
            raise _problem(f"a build-out does not take {self.objective}: it serves every period's demand whole",
                           "objective")
        if self.objective == "min_carbon":
            for loc, message in _carbon_problems(self):
                raise _problem(message, *loc)
        if objective_named(self.objective).needs_prices:
            unpriced = [(i, w) for i, w in enumerate(self.workloads) if self.price_of(w) is None]
            if unpriced:
                i, w = unpriced[0]
                names = ", ".join(repr(x.name) for _, x in unpriced)
                tiers = sorted({x.tier or "<tier>" for _, x in unpriced})
                raise _problem(f"max_revenue needs a price for {len(unpriced)} workload(s), {names}: set each one's "
                               f"price_usd_per_mtok or prices_usd_per_mtok.{{{', '.join(tiers)}}}", "workloads", i,
                               "price_usd_per_mtok")
        if not self.resolved_hardware():
            where = ("hardware", "allow") if self.hardware.allow is not None else ("start_date",)
            raise _problem(f"no allowed hardware is available by start_date {self.start_date}{self._earliest()}",
                           *where)
        return self

    @model_validator(mode="after")
    def _measurements_physical(self, info: ValidationInfo) -> Scenario:
        """Measurement rows within the bounds of their hardware (planner.measurements.physics), unless trusted;
        ``info.context["measurement_origins"]`` names each row's file and row where the rows came from files."""
        if not self.measurements or self.trust_measurements:
            return self
        found = physics.problems(self.measurements, self.known_hardware(), self.resolved_models())
        if found:
            i, breaches = found[0]
            origins = (info.context or {}).get("measurement_origins") if info is not None else None
            origin = origins[i] if origins and i < len(origins) else None
            raise _problem(physics.message(i, self.measurements[i], breaches, origin, len(found) - 1),
                           *(("measurements",) if origin else ("measurements", i)))
        return self

    # ---- build-outs over periods ------------------------------------------------------------------------------
    def years_of(self) -> list[float]:
        """Years from the first period's start to each period's (one period: [0])."""
        return [(d - self.start_date).days / 365.25 for d in (self.periods or [self.start_date])]

    def scenario_names(self) -> list[str]:
        return [d.name for d in self.demand_scenarios] or ["expected"]

    def at_period(self, t: int, scenario: int | None = None) -> Scenario:
        """The single-period scenario of period ``t`` (of demand scenario ``scenario`` after the first period):
        scalar rates, budget and floor space, start_date the period's, no periods."""
        years = self.years_of()
        data = self.model_dump(mode="json", exclude_unset=True, by_alias=True)
        for key in ("periods", "service_life_years", "demand_scenarios"):
            data.pop(key, None)
        data["start_date"] = (self.periods or [self.start_date])[t].isoformat()
        site = dict(data.get("site") or {})
        for key in ("power_budget_mw", "max_racks"):
            if isinstance(site.get(key), list):
                site[key] = site[key][t]
        data["site"] = site
        spec = self.demand_scenarios[scenario] if scenario is not None and self.demand_scenarios else None
        for w, raw in zip(self.workloads, data["workloads"]):
            rate = w.requests_per_s[t] if isinstance(w.requests_per_s, list) else (
                w.requests_per_s * (w.growth_per_year or 1.0) ** years[t])
            if spec is not None and t > 0:
                m = spec.multiplier
                rate *= m if not isinstance(m, dict) else m.get(w.name, 1.0)
            raw["requests_per_s"] = min(float(rate), 1e12)
            raw.pop("growth_per_year", None)
        try:
            return Scenario.model_validate(data)
        except ValidationError as exc:
            raise _validation_error(exc, f"scenario {self.name!r} period {t}", None) from None

    def layout_rule(self):
        """The layouts this scenario's plans may use (``planner.perf.grid.Layouts``)."""
        return Layouts(self.serving_stack, self.layouts == "any")

    def efficiencies(self, hardware) -> dict[str, dict[str, float]]:
        """``efficiency_of`` for the family of every system in ``hardware`` (id -> Hardware), and for each system
        the scenario's ``efficiency`` scopes parameters to by its id: the map the engine, the measured curves and a
        plan's inputs share (read with ``planner.perf.pack.efficiency_of``)."""
        out = {f: self.efficiency_of(f) for f in sorted({hw.family for hw in hardware.values()})}
        for hw_id, hw in sorted(hardware.items()):
            if hw_id in self.efficiency:
                out[hw_id] = {**out[hw.family], **self.efficiency[hw_id]}
        return out

    def efficiency_of(self, family: str) -> dict[str, float]:
        """A family's efficiency parameters: the calibrated ones, with the scenario's ``efficiency`` over them."""
        return {**family_efficiency(family, self.serving_stack), **self.efficiency.get(family, {})}

    def price_of(self, workload: Workload) -> float | None:
        """USD per million output tokens of a workload: its own price, else its tier's."""
        if workload.price_usd_per_mtok is not None:
            return workload.price_usd_per_mtok
        return self.prices_usd_per_mtok.get(workload.tier) if workload.tier else None

    def _earliest(self) -> str:
        known = self.known_hardware()
        ids = [i for i in known if self.hardware.allow is None or i in self.hardware.allow]
        first = min(ids, key=lambda i: known[i].rack.available.value, default=None)
        return f" (earliest: {first} from {known[first].rack.available.value})" if first else ""

    def known_hardware(self) -> dict[str, Hardware]:
        """Every known rack type (catalog, then custom) with overrides applied, before allow/date filtering."""
        known = {**hardware_catalog(), **{h.id: h for h in self.hardware.custom}}
        return {i: _apply_overrides(h, self.hardware.overrides.get(i, {})) for i, h in known.items()}

    def resolved_hardware(self) -> dict[str, Hardware]:
        """Hardware a plan may use: catalog + custom, overrides applied, allow-listed, available by start_date."""
        if self._resolved is None:
            known = self.known_hardware()
            self._resolved = {i: h for i, h in known.items() if self._exclusion(i, h) is None}
        return dict(self._resolved)

    def excluded_hardware(self) -> dict[str, str]:
        """Known hardware a plan may not use, with the reason (for reports)."""
        reasons = {i: self._exclusion(i, h) for i, h in self.known_hardware().items()}
        return {i: r for i, r in reasons.items() if r is not None}

    def _exclusion(self, hw_id: str, hw: Hardware) -> str | None:
        if any(e.hardware == hw_id and self.retirement_of(e) > self.start_date for e in self.installed):
            return None  # on the floor already: usable whatever may be bought
        why = self.purchase_exclusion(hw_id, hw)
        if why is not None and hw.rental and self._rentable(hw_id, hw):
            return None  # rented by the chip-hour though not bought (a cloud-only system, OPTIMIZER.md 11)
        return why

    def _rentable(self, hw_id: str, hw: Hardware) -> bool:
        """Rental offers count where the system is available by the plan's start, and hardware.allow (if given)
        names it."""
        last = self.periods[-1] if self.periods else self.start_date
        return hw.rack.available.value <= last and (self.hardware.allow is None or hw_id in self.hardware.allow)

    def purchase_exclusion(self, hw_id: str, hw: Hardware) -> str | None:
        """Why racks of ``hw_id`` may not be bought (None: they may)."""
        if self.hardware.allow is not None and hw_id not in self.hardware.allow:
            return "not in hardware.allow"
        if self.hardware.allow is None and hw.rack.acquisition not in self.hardware.acquisition:
            return (f"{ACQUISITION_WORDS[hw.rack.acquisition]} (acquisition: {hw.rack.acquisition}); add "
                    f"{hw.rack.acquisition} to hardware.acquisition or name it in hardware.allow")
        last = self.periods[-1] if self.periods else self.start_date
        if hw.rack.available.value > last:
            when = f"the last period's start {last}" if self.periods else f"start_date {self.start_date}"
            return f"available {hw.rack.available.value}, after {when}"
        return None

    # ---- the installed fleet (docs/OPTIMIZER.md 9) ---------------------------------------------------------------
    def service_life(self) -> float:
        """Years a rack serves before it retires: service_life_years, else horizon_years."""
        return float(self.service_life_years or self.horizon_years)

    def retirement_of(self, entry: Installed) -> _dt.date:
        return entry.bought + _dt.timedelta(days=round(self.service_life() * 365.25))

    def installed_in_service(self, on: _dt.date | None = None) -> dict[str, dict]:
        """hardware id -> {racks, capex_usd (per rack, the racks' mean), retire_by (the earliest retirement)} of the
        installed racks still in service on ``on`` (default start_date)."""
        on = on or self.start_date
        out: dict[str, dict] = {}
        for e in self.installed:
            if self.retirement_of(e) <= on:
                continue
            capex = e.capex_usd
            if capex is None:
                known = self.known_hardware().get(e.hardware)
                capex = known.rack.capex_usd.value if known is not None else 0.0
            d = out.setdefault(e.hardware, {"racks": 0, "capex_sum": 0.0, "retire_by": self.retirement_of(e)})
            d["racks"] += e.racks
            d["capex_sum"] += e.racks * float(capex)
            d["retire_by"] = min(d["retire_by"], self.retirement_of(e))
        return {h: {"racks": d["racks"], "capex_usd": d["capex_sum"] / d["racks"], "retire_by": d["retire_by"]}
                for h, d in out.items()}

    def installed_past_life(self) -> dict[str, int]:
        """hardware id -> installed racks already past their service life on start_date (retired before the plan)."""
        out: dict[str, int] = {}
        for e in self.installed:
            if self.retirement_of(e) <= self.start_date:
                out[e.hardware] = out.get(e.hardware, 0) + e.racks
        return out

    def new_rack_caps(self) -> dict[str, float]:
        """hardware id -> most racks that may be bought of each usable system: its supply cap, 0 for one usable only
        because it is installed (not otherwise allowed or available)."""
        caps = {}
        for i, h in self.resolved_hardware().items():
            caps[i] = 0.0 if self.purchase_exclusion(i, h) is not None else float(
                self.hardware.max_racks.get(i, math.inf))
        return caps

    def resolved_models(self) -> dict[str, Model]:
        """Every known model: the catalog plus the scenario's inline models."""
        return {**model_catalog(), **{m.id: m for m in self.models}}

    def model_for(self, workload: Workload) -> Model:
        return self.resolved_models()[workload.model]

    def with_(self, *settings, **_unused) -> Scenario:
        """A what-if: a copy with fields set by path and validated again, as ``planner solve --set`` does. Each
        argument is a ``"PATH=VALUE"`` string or a mapping of paths to values: ``sc.with_({"site.power_budget_mw":
        5, "workloads.chat.requests_per_s": 900})``. A bad value raises InputError naming the field, as a file's
        would (``model_copy(update=...)`` skips validation: use this instead)."""
        if _unused:
            raise InputError(f"with_ takes paths with dots in a mapping or as 'PATH=VALUE' strings, not keywords "
                             f"({', '.join(_unused)})", field="with_")
        data = self.model_dump(mode="json", exclude_unset=True, by_alias=True)
        paths = []
        for item in settings:
            if not isinstance(item, (str, dict)) and not hasattr(item, "items"):
                raise InputError(f"expected 'PATH=VALUE' strings or a mapping of paths to values, got "
                                 f"{type(item).__name__} {item!r:.60}", field="with_")
            pairs = [parse_setting(item)] if isinstance(item, str) else list(item.items())
            for path, value in pairs:
                data = apply_setting(data, str(path), value)
                paths.append(str(path))
        try:
            return Scenario.model_validate(data)
        except ValidationError as exc:
            raise _validation_error(exc, f"scenario {self.name!r}", None, set_paths=paths, set_by="with_") from None

    def fleet_only(self) -> Scenario:
        """What the installed fleet serves (``planner solve --fleet-only``): no new racks, and the objective
        max_served (the most demand served, then the least cost) unless the scenario sells by price
        (max_revenue, kept). InputError without installed racks in service, or for a build-out."""
        if not self.installed_in_service():
            raise InputError("--fleet-only needs installed racks in service at start_date (installed: [{hardware, "
                             "racks, bought}])", field="installed")
        if self.periods:
            raise InputError("--fleet-only plans one period: a build-out buys over time", field="periods")
        goal = self.objective if objective_named(self.objective).needs_prices else "max_served"
        # the fleet alone: nothing bought, nothing rented, nothing sent to a hosted API
        settings = {"hardware.max_new_racks": 0, "objective": goal}
        settings.update({f"hardware.overrides.{i}.rental": [] for i, h in self.known_hardware().items() if h.rental})
        settings.update({f"workloads.{w.name}.api": [] for w in self.workloads if w.api})
        return self.with_(settings)

    def with_solver(self, name: str | None = None, time_limit_s: float | None = None) -> Scenario:
        """A copy with command-line solver settings applied; a bad value raises InputError."""
        update = {k: v for k, v in (("name", name), ("time_limit_s", time_limit_s)) if v is not None}
        try:
            solver = SolverSettings.model_validate({**self.solver.model_dump(), **update})
        except ValidationError as exc:
            err = exc.errors()[0]
            message = _describe(err, SolverSettings, tuple(err["loc"]))
            raise InputError(message, field=f"solver.{err['loc'][0]}") from None
        return self.model_copy(update={"solver": solver})


# ---- cross-references -------------------------------------------------------------------------------------------
def _unknown(kind: str, name: str, known, where: str) -> str:
    return f"unknown {kind} id {name!r}{did_you_mean(name, known)}; expected a catalog id or an id from {where}"


def _custom_id_problems(items, catalog, loc):
    from planner.perf.pack import efficiency_table

    seen: set[str] = set()
    families = efficiency_table()
    for i, item in enumerate(items):
        if not re.fullmatch(r"[a-z0-9][a-z0-9._-]*", item.id):
            yield (*loc, i, "id"), (f"expected an id of lower-case letters, digits, '.', '_' and '-' (no '+', "
                                    f"'/' or spaces), got {item.id!r}")
        if getattr(item, "family", None) is not None and item.family not in families:
            yield (*loc, i, "family"), (f"unknown efficiency family {item.family!r}"
                                        f"{did_you_mean(item.family, families)}; known: {', '.join(families)}")
        if item.id in catalog:
            yield (*loc, i, "id"), f"{item.id!r} is already a catalog id; choose a new id (or use overrides)"
        elif item.id in seen:
            yield (*loc, i, "id"), f"duplicate id {item.id!r}"
        seen.add(item.id)


def _reference_problems(s: Scenario):
    """(loc, message) for every id that names nothing, duplicate, or invalid override."""
    hw, models = s.hardware, s.resolved_models()
    known_hw = {**hardware_catalog(), **{h.id: h for h in hw.custom}}
    yield from _custom_id_problems(hw.custom, hardware_catalog(), ("hardware", "custom"))
    yield from _custom_id_problems(s.models, model_catalog(), ("models",))
    for i, h in enumerate(hw.custom):
        if h.model_lock is not None and h.model_lock not in models:
            yield ("hardware", "custom", i, "model_lock"), _unknown("model", h.model_lock, models, "models")
    for i, hw_id in enumerate(hw.allow or []):
        if hw_id not in known_hw:
            yield ("hardware", "allow", i), _unknown("hardware", hw_id, known_hw, "hardware.custom")
    declines = hw.price_decline_per_year if isinstance(hw.price_decline_per_year, dict) else {}
    for field, ids in (("max_racks", hw.max_racks), ("min_racks", hw.min_racks), ("overrides", hw.overrides),
                       ("price_decline_per_year", declines), ("capex_usd_by_period", hw.capex_usd_by_period)):
        for hw_id in ids:
            if hw_id not in known_hw:
                yield ("hardware", field, hw_id), _unknown("hardware", hw_id, known_hw, "hardware.custom")
    for hw_id, fields in hw.overrides.items():
        if hw_id in known_hw:
            try:
                _apply_overrides(known_hw[hw_id], fields)
            except _OverrideError as exc:
                yield ("hardware", "overrides", hw_id, exc.key), exc.message
    for i, e in enumerate(s.installed):
        if e.hardware not in known_hw:
            yield ("installed", i, "hardware"), _unknown("hardware", e.hardware, known_hw, "hardware.custom")
        if e.bought > s.start_date:
            yield ("installed", i, "bought"), (f"installed racks are bought on or before start_date "
                                               f"({s.start_date}), got {e.bought}")
    yield from _workload_problems(s.workloads, models, known_hw)
    yield from _efficiency_problems(s.efficiency, known_hw)
    for i, m in enumerate(s.measurements):
        if m.hardware not in known_hw:
            yield ("measurements", i, "hardware"), _unknown("hardware", m.hardware, known_hw, "hardware.custom")
        if m.model not in models:
            yield ("measurements", i, "model"), _unknown("model", m.model, models, "models")


def _period_problems(s: Scenario):
    """(loc, message) for per-period values without periods, lists of the wrong length, and bad periods."""
    lists = [(("workloads", i, "requests_per_s"), w.requests_per_s) for i, w in enumerate(s.workloads)]
    lists += [(("site", k), getattr(s.site, k)) for k in ("power_budget_mw", "max_racks")]
    if s.periods is None:
        for loc, value in lists:
            if isinstance(value, list):
                yield loc, "a list gives one value per period: set periods, or give one number"
        for i, w in enumerate(s.workloads):
            if w.growth_per_year is not None:
                yield ("workloads", i, "growth_per_year"), "growth_per_year needs periods"
        if s.service_life_years and not s.installed:
            yield ("service_life_years",), "service_life_years needs periods or installed racks"
        if s.demand_scenarios:
            yield ("demand_scenarios",), "demand_scenarios needs periods"
        if s.hardware.capex_usd_by_period:
            yield ("hardware", "capex_usd_by_period"), "capex_usd_by_period needs periods"
        return
    if s.periods[0] != s.start_date:
        yield ("periods", 0), f"the first period starts on start_date ({s.start_date}), got {s.periods[0]}"
    for k in range(1, len(s.periods)):
        if s.periods[k] <= s.periods[k - 1]:
            yield ("periods", k), f"periods must increase: {s.periods[k]} is not after {s.periods[k - 1]}"
    span = (s.periods[-1] - s.start_date).days / 365.25
    if s.horizon_years <= span:
        yield ("horizon_years",), (f"the horizon ({s.horizon_years:g} years from start_date) must reach past the "
                                   f"last period's start ({span:.3g} years in)")
    lists += [(("hardware", "capex_usd_by_period", k), v) for k, v in s.hardware.capex_usd_by_period.items()]
    for loc, value in lists:
        if isinstance(value, list) and len(value) != len(s.periods):
            yield loc, f"expected one value per period ({len(s.periods)}), got {len(value)}"
    for i, w in enumerate(s.workloads):
        if w.growth_per_year is not None and isinstance(w.requests_per_s, list):
            yield ("workloads", i, "growth_per_year"), "give requests_per_s per period or growth_per_year, not both"
    if s.demand_scenarios:
        total = sum(d.probability for d in s.demand_scenarios)
        if not math.isclose(total, 1.0, rel_tol=1e-6):
            yield ("demand_scenarios",), f"the probabilities sum to {total:g}, expected 1"
        names = [d.name for d in s.demand_scenarios]
        for i, name in enumerate(names):
            if names.index(name) != i:
                yield ("demand_scenarios", i, "name"), f"duplicate demand scenario name {name!r}"
        known = {w.name for w in s.workloads}
        for i, d in enumerate(s.demand_scenarios):
            for name in (d.multiplier if isinstance(d.multiplier, dict) else {}):
                if name not in known:
                    yield ("demand_scenarios", i, "multiplier", name), f"no workload named {name!r}"


def _carbon_problems(sc: Scenario):
    """What min_carbon cannot price (docs/OPTIMIZER.md 15): no grid intensity, a build-out (not yet), an API offer
    (no emissions figure of its own), a system without its making's emissions."""
    if sc.site.grid_kg_co2_per_mwh is None:
        yield ("site", "grid_kg_co2_per_mwh"), ("min_carbon needs the grid's emissions: set site.grid_kg_co2_per_mwh "
                                                "(kg CO2e per MWh; e.g. about 370 for the US average in 2024)")
        return
    if sc.periods:
        yield ("objective",), "a build-out does not take min_carbon yet: plan one period with it"
    for i, w in enumerate(sc.workloads):
        if w.api:
            yield ("workloads", i, "api"), ("min_carbon cannot price an api offer (no emissions figure of its own): "
                                            "drop the offer or use another objective")
    for hw_id, hw in sc.resolved_hardware().items():
        if hw.rack.embodied_kg_co2e is None:
            yield ("hardware",), (f"min_carbon needs {hw_id}'s rack.embodied_kg_co2e (the emissions of making one "
                                  f"rack): give it in hardware.overrides.{hw_id} or leave {hw_id} out of "
                                  f"hardware.allow")


def _efficiency_problems(efficiency: dict, known_hw: dict):
    from planner.perf.calibration import calibration_data
    from planner.perf.pack import EFFICIENCY_PARAMS, efficiency_table

    bounds = calibration_data()["bounds"]
    for family, params in efficiency.items():
        if family not in efficiency_table() and family not in known_hw:
            yield ("efficiency", family), (f"unknown hardware family or system {family!r}; expected a family ("
                                           f"{', '.join(sorted(efficiency_table()))}) or a hardware id")
            continue
        for name, value in params.items():
            if name not in EFFICIENCY_PARAMS:
                yield ("efficiency", family, name), (f"unknown parameter {name!r}; expected one of "
                                                     f"{', '.join(EFFICIENCY_PARAMS)}")
            elif not bounds[name][0] <= value <= bounds[name][1]:
                yield ("efficiency", family, name), (f"{value:g} is outside the calibration's bounds "
                                                     f"[{bounds[name][0]:g}, {bounds[name][1]:g}]")


def _workload_problems(workloads: list[Workload], models, known_hw):
    first: dict[str, int] = {}
    for j, w in enumerate(workloads):
        if w.name in first:
            yield ("workloads", j, "name"), f"duplicate workload name {w.name!r} (also workloads[{first[w.name]}])"
        first.setdefault(w.name, j)
        if w.model not in models:
            yield ("workloads", j, "model"), _unknown("model", w.model, models, "models")
        spec = w.speculative
        if spec.method == "mtp" and w.model in models and models[w.model].mtp_layers == 0:
            yield (("workloads", j, "speculative", "method"),
                   f"{w.model} ships no multi-token-prediction layers (mtp_layers 0): use eagle or draft_model")
        if spec.draft_model is not None:
            if spec.draft_model not in models:
                yield (("workloads", j, "speculative", "draft_model"),
                       _unknown("model", spec.draft_model, models, "models"))
            elif w.model in models and models[spec.draft_model].vocab_size != models[w.model].vocab_size:
                yield (("workloads", j, "speculative", "draft_model"),
                       f"{spec.draft_model} has another vocabulary than {w.model} ({models[spec.draft_model].vocab_size}"
                       f" vs {models[w.model].vocab_size}): a drafter must share the target's tokenizer")
        for k, hw_id in enumerate(w.allow_hardware or []):
            if hw_id not in known_hw:
                yield ("workloads", j, "allow_hardware", k), _unknown("hardware", hw_id, known_hw, "hardware.custom")


# ---- hardware overrides -------------------------------------------------------------------------------------------
class _OverrideError(ValueError):
    def __init__(self, key: str, message: str):
        super().__init__(message)
        self.key, self.message = key, message


_OVERRIDE_PROVENANCE = {"source": "scenario", "confidence": "estimate", "basis": "scenario override", "note": None}


def _strip(tp):
    """The type inside Optional[...] / Annotated[...]."""
    if get_origin(tp) is Annotated:
        return _strip(get_args(tp)[0])
    if get_origin(tp) in (Union, types.UnionType):
        args = [a for a in get_args(tp) if a is not type(None)]
        return _strip(args[0]) if len(args) == 1 else tp
    return tp


def _is_model(tp) -> bool:
    return isinstance(tp, type) and issubclass(tp, BaseModel)


def _child_type(tp, seg):
    """The declared type of ``seg`` inside type ``tp`` (a model field, a list item, a dict value); KeyError if none."""
    tp = _strip(tp)
    if _is_model(tp) and isinstance(seg, str) and seg in tp.model_fields:
        return tp.model_fields[seg].annotation
    if get_origin(tp) is list and isinstance(seg, int):
        return get_args(tp)[0]
    if get_origin(tp) is dict and isinstance(seg, str):
        return get_args(tp)[1]
    raise KeyError(seg)


@functools.lru_cache(maxsize=None)
def _hardware_field_paths() -> dict[str, tuple[tuple[str, ...], ...]]:
    """Short field name -> the Hardware paths that end in it (figures are leaves)."""
    names: dict[str, list[tuple[str, ...]]] = {}

    def walk(cls, prefix):
        for name, field in cls.model_fields.items():
            names.setdefault(name, []).append((*prefix, name))
            sub = _strip(field.annotation)
            if _is_model(sub) and sub not in (Figure, DateFigure):
                walk(sub, (*prefix, name))

    walk(Hardware, ())
    return {k: tuple(v) for k, v in names.items()}


def _override_path(key: str) -> tuple:
    """The Hardware path an override key names: a dotted path, or a field name whose shallowest match is unique."""
    if "." in key:
        path = tuple(int(p) if p.isdigit() else p for p in key.split("."))
    else:
        paths = _hardware_field_paths().get(key)
        if not paths:
            names = _hardware_field_paths()
            raise _OverrideError(key, f"unknown hardware field{did_you_mean(key, names)}; expected one of: "
                                 f"{', '.join(sorted(names))} or a dotted path")
        shallow = [p for p in paths if len(p) == min(map(len, paths))]
        if len(shallow) > 1:
            raise _OverrideError(key, f"ambiguous field; use a dotted path: {', '.join('.'.join(p) for p in shallow)}")
        path = shallow[0]
    if path[0] == "id":
        raise _OverrideError(key, "the id cannot be overridden; add a hardware.custom entry instead")
    tp = Hardware
    for i, seg in enumerate(path):
        try:
            tp = _child_type(tp, seg)
        except KeyError:
            where = ".".join(map(str, path[:i])) or "hardware"
            raise _OverrideError(key, f"{where} has no field {seg!r}") from None
    return path


def _set_path(data: dict, path: tuple, value, key: str) -> None:
    node, tp = data, Hardware
    for seg in path[:-1]:
        tp = _child_type(tp, seg)
        try:
            node = node[seg]
        except (KeyError, IndexError, TypeError):
            raise _OverrideError(key, f"{'.'.join(map(str, path))} is not set in this hardware; "
                                      "override the enclosing field whole") from None
    tp = _strip(_child_type(tp, path[-1]))
    if tp in (Figure, DateFigure):
        value = {**_OVERRIDE_PROVENANCE, **(value if isinstance(value, dict) else {"value": value})}
    if tp is Figure and not _positive_number(value.get("value")):
        raise _OverrideError(key, f"expected a positive finite number, got {_short(value.get('value'))}")
    if isinstance(node, list) and not (0 <= path[-1] < len(node)):
        raise _OverrideError(key, f"index {path[-1]} is out of range (the list has {len(node)} items)")
    node[path[-1]] = value


def _positive_number(v) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) and v > 0


def _apply_overrides(hw: Hardware, fields: dict[str, Any]) -> Hardware:
    """``hw`` with ``fields`` applied one at a time, each re-validated so that an error names its key."""
    for key, value in fields.items():
        data = hw.model_dump()
        _set_path(data, _override_path(key), value, key)
        try:
            hw = Hardware.model_validate(data)
        except ValidationError as exc:
            err = exc.errors()[0]
            raise _OverrideError(key, f"the override makes {_fmt_loc(err['loc']) or 'the hardware'} invalid: "
                                      f"{_describe(err, Hardware, tuple(err['loc']))}") from None
    return hw


# ---- reading YAML ------------------------------------------------------------------------------------------------
class _Loader(yaml.SafeLoader):
    """SafeLoader that reads 1e6 and 9.0e6 as numbers (YAML 1.2 style; PyYAML's YAML 1.1 wants 9.0e+6) and leaves
    impossible dates (2027-02-30) as strings, so that validation reports them with a line."""


_Loader.add_implicit_resolver(
    "tag:yaml.org,2002:float",
    re.compile(r"^[-+]?(?:[0-9][0-9_]*(?:\.[0-9_]*)?|\.[0-9][0-9_]*)[eE][-+]?[0-9]+$"),
    list("-+0123456789."),
)


def _lenient(construct):
    """A constructor that leaves a scalar it cannot convert (an impossible date, ``!!timestamp soon``,
    ``!!bool maybe``) as its string, so that validation reports it against the field, with its line."""

    def build(loader: yaml.SafeLoader, node: yaml.Node):
        try:
            return construct(loader, node)
        except (ValueError, KeyError, AttributeError, TypeError):
            return loader.construct_scalar(node)

    return build


for _tag, _construct in (("timestamp", yaml.SafeLoader.construct_yaml_timestamp),
                         ("bool", yaml.SafeLoader.construct_yaml_bool),
                         ("int", yaml.SafeLoader.construct_yaml_int),
                         ("float", yaml.SafeLoader.construct_yaml_float)):
    _Loader.add_constructor(f"tag:yaml.org,2002:{_tag}", _lenient(_construct))


def _read_text(path: Path) -> str:
    from planner.inputs import read_bytes_limited

    raw = read_bytes_limited(path, MAX_FILE_BYTES, "a scenario YAML file")
    if b"\0" in raw:
        raise InputError("is a binary file; expected a UTF-8 YAML text file", file=str(path))
    try:
        return raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = raw[: exc.start].count(b"\n") + 1
        raise InputError("is not UTF-8 text; expected a UTF-8 YAML file", file=str(path), line=line) from None


def _walk_nodes(root: yaml.Node):
    """(path, key_node, value_node) for every node, each shared (aliased) node once."""
    stack, seen = [((), None, root)], set()
    while stack:
        path, key, node = stack.pop()
        yield path, key, node
        if id(node) in seen:
            continue
        seen.add(id(node))
        if isinstance(node, yaml.MappingNode):
            stack.extend(((*path, k.value), k, v) for k, v in reversed(node.value) if isinstance(k, yaml.ScalarNode))
        elif isinstance(node, yaml.SequenceNode):
            stack.extend(((*path, i), None, v) for i, v in reversed(list(enumerate(node.value))))


def _expanded_size(node: yaml.Node, memo: dict) -> int:
    if id(node) not in memo:
        memo[id(node)] = 1
        children = node.value if isinstance(node, yaml.SequenceNode) else []
        if isinstance(node, yaml.MappingNode):
            children = [n for kv in node.value for n in kv]
        memo[id(node)] = 1 + sum(_expanded_size(c, memo) for c in children)
    return memo[id(node)]


def _check_nodes(root: yaml.Node, file: str) -> None:
    if _expanded_size(root, {}) > MAX_NODES:
        raise InputError(f"has more than {MAX_NODES} YAML nodes after expanding aliases", file=file)
    for path, _, node in _walk_nodes(root):
        if not isinstance(node, yaml.MappingNode):
            continue
        lines: dict[str, int] = {}
        for k, _v in node.value:
            if isinstance(k, yaml.ScalarNode) and k.tag != "tag:yaml.org,2002:merge":
                if k.value in lines:
                    raise InputError(f"duplicate key {k.value!r} (first at line {lines[k.value]})", file=file,
                                     line=k.start_mark.line + 1, field=_fmt_loc((*path, k.value)))
                lines[k.value] = k.start_mark.line + 1


def _yaml_error(exc: yaml.YAMLError, file: str, root: yaml.Node | None) -> InputError:
    mark = getattr(exc, "problem_mark", None) or getattr(exc, "context_mark", None)
    problem = getattr(exc, "problem", None) or str(exc)
    context = getattr(exc, "context", None)
    if isinstance(exc, yaml.constructor.ConstructorError):
        message = f"{problem}; a scenario holds only plain YAML (mappings, lists, strings, numbers, dates)"
    else:
        message = f"YAML syntax error: {problem}" + (f" ({context})" if context else "")
    field = None
    if root is not None and mark is not None:
        field = next((_fmt_loc(p) for p, _, n in _walk_nodes(root) if n.start_mark.index == mark.index and p), None)
    return InputError(message, file=file, line=mark.line + 1 if mark else None, field=field)


def _parse_yaml(text: str, file: str) -> tuple[Any, yaml.Node | None]:
    loader, root = None, None
    try:
        loader = _Loader(text)  # the reader rejects control characters already here
        root = loader.get_single_node()
        if root is None:
            return None, None
        _check_nodes(root, file)
        return loader.construct_document(root), root
    except yaml.YAMLError as exc:
        raise _yaml_error(exc, file, root) from None
    except RecursionError:
        raise InputError("is nested too deeply", file=file) from None
    except (ValueError, KeyError, AttributeError, TypeError) as exc:  # a value PyYAML resolved but cannot convert
        raise InputError(f"cannot read a value ({type(exc).__name__}: {exc})", file=file) from None
    finally:
        if loader is not None:
            loader.dispose()


# ---- validation errors -> messages ---------------------------------------------------------------------------------
_BOUNDS = {"greater_than": ">", "greater_than_equal": ">=", "less_than": "<", "less_than_equal": "<="}


def _fmt_loc(loc) -> str:
    out = ""
    for seg in loc:
        out += f"[{seg}]" if isinstance(seg, int) else (f".{seg}" if out else str(seg))
    return out


UNION_TAGS = {"constrained-float", "constrained-int", "float", "int", "list", "dict", "str", "bool", "date",
              "none"}  # the member tags pydantic puts in a union's error locations


def _clean_loc(loc) -> tuple:
    """Drop pydantic's internal location parts ('[key]', union member tags such as 'function-after[...]' or
    'constrained-float')."""
    return tuple(s for s in loc if isinstance(s, int) or ("[" not in s and not s.startswith("function-")
                                                          and s not in UNION_TAGS))


def _type_at(root_type, loc):
    tp = root_type
    for seg in loc:
        tp = _child_type(tp, seg)
    return _strip(tp)


def _short(value) -> str:
    if isinstance(value, dict):
        return "a mapping"
    if isinstance(value, list):
        return "a list"
    text = repr(value) if isinstance(value, str) else str(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _section_of(name: str, here: tuple) -> str | None:
    """The top-level section of the scenario that has a field ``name``, if it is not where it was written
    (``site.pue`` -> ``finance``)."""
    for section, info in Scenario.model_fields.items():
        tp = _strip(info.annotation)
        fields = getattr(tp, "model_fields", None)
        if fields and name in fields and tuple(here) != (section,):
            return section
    return None


def _describe(err: dict, root_type, loc: tuple) -> str:
    """What was wrong and what was expected, in words."""
    kind, ctx = err["type"], err.get("ctx") or {}
    if kind == "scenario":
        return ctx["message"]
    if kind == "missing":
        try:
            tp = _type_at(root_type, loc[:-1])
            desc = tp.model_fields[loc[-1]].description
        except (KeyError, AttributeError):
            desc = None
        return "required field is missing" + (f" ({desc})" if desc else "")
    if kind == "extra_forbidden":
        try:
            allowed = list(_type_at(root_type, loc[:-1]).model_fields)
        except (KeyError, AttributeError):
            allowed = []
        elsewhere = _section_of(str(loc[-1]), loc[:-1])
        hint = f" ({loc[-1]} belongs under {elsewhere})" if elsewhere else ""
        return (f"unknown field{did_you_mean(str(loc[-1]), allowed)}; expected one of: {', '.join(allowed)}"
                f"{hint}")
    if kind in _BOUNDS:
        bound = next(iter(ctx.values()))
        return f"expected a number {_BOUNDS[kind]} {bound:g}, got {_short(err['input'])}"
    if kind in ("model_type", "model_attributes_type", "dict_type"):
        return f"expected a mapping, got {_short(err['input'])}"
    if kind == "too_short":
        return f"expected at least {ctx.get('min_length')} item(s), got {ctx.get('actual_length')}"
    msg = err["msg"].removeprefix("Value error, ")
    if msg.startswith("Input should be "):
        msg = "expected " + msg.removeprefix("Input should be ")
    return f"{msg}, got {_short(err['input'])}"


def _line_of(root: yaml.Node | None, loc: tuple) -> int | None:
    """Line of the YAML key (or list item) at ``loc``, or of the nearest enclosing one that exists."""
    if root is None:
        return None
    node = target = root
    for seg in loc:
        if isinstance(node, yaml.MappingNode):
            # the last match: after merge keys (<<) are flattened, later keys win
            pairs = ((k, v) for k, v in reversed(node.value) if isinstance(k, yaml.ScalarNode) and k.value == str(seg))
            match = next(pairs, None)
            if match is None:
                break
            target, node = match
        elif isinstance(node, yaml.SequenceNode) and isinstance(seg, int) and seg < len(node.value):
            target = node = node.value[seg]
        else:
            break
    return target.start_mark.line + 1


_TEXT_TAG = "tag:yaml.org,2002:str"


def _check_keys_are_text(node: yaml.Node | None, file: str, path: str = "") -> None:
    """Every mapping key is text: YAML reads ``~:`` as null, ``2026-01-01:`` as a date and ``5:`` as a number,
    which no field is named. Raises InputError at the key's own line, naming where it is."""
    if isinstance(node, yaml.SequenceNode):
        for i, item in enumerate(node.value):
            _check_keys_are_text(item, file, f"{path}[{i}]")
    if not isinstance(node, yaml.MappingNode):
        return
    for key, value in node.value:
        if isinstance(key, yaml.ScalarNode) and key.tag not in (_TEXT_TAG, "tag:yaml.org,2002:merge"):
            kind = key.tag.rsplit(":", 1)[-1].replace("timestamp", "date")
            article = "an" if kind[0] in "aeiou" else "a"
            raise InputError(f"key {key.value!r} is read as {article} {kind}, not a field name; field names are text "
                             f"(quote it if it is meant as one)", file=file, line=key.start_mark.line + 1,
                             field=path or None)
        name = key.value if isinstance(key, yaml.ScalarNode) else "?"
        _check_keys_are_text(value, file, f"{path}.{name}" if path else str(name))


def _validation_error(exc: ValidationError, file: str, root: yaml.Node | None, set_paths=(),
                      set_by: str = "--set") -> InputError:
    problems, seen = [], set()
    for err in exc.errors():
        loc = _clean_loc(tuple(err["loc"]) + tuple((err.get("ctx") or {}).get("loc", ())))
        if loc in seen:  # a union's other members fail at the same place: the first says it
            continue
        seen.add(loc)
        message = _describe(err, Scenario, loc)
        touched = [p for p in set_paths if loc and p.split(".", 1)[0] == str(loc[0])]
        if touched:
            message += f" (after {set_by} {', '.join(touched)})"
        problems.append((_line_of(root, loc), _fmt_loc(loc), message))
    line, field, message = problems[0]
    for other_line, other_field, other_message in problems[1:10]:
        at = f"line {other_line}: " if other_line else ""
        message += f"\n  also {at}{other_field or 'scenario'}: {other_message}"
    if len(problems) > 10:
        message += f"\n  and {len(problems) - 10} more"
    return InputError(message, file=file, line=line, field=field or None)


# ---- what a scenario resolves to (validate --format json) -------------------------------------------------------
def resolved_summary(sc: Scenario) -> dict:
    """The hardware a plan may use and why the rest may not, each workload's demand at its peak, and the
    assumptions a reader should know about (warnings), for ``planner validate``."""
    from planner.fleet.problem import demands_of

    warnings = []
    for w in sc.workloads:
        if "peak_to_mean" not in w.model_fields_set:
            warnings.append(f"workload {w.name}: peak_to_mean not given, so the fleet is sized for the mean rate "
                            f"(1.0)")
        if w.kind == "agentic" and "prefix_cache_hit" not in w.model_fields_set:
            warnings.append(f"workload {w.name}: agentic without prefix_cache_hit, so every call prefills its whole "
                            f"prompt (0.0); a session's calls share most of theirs (set the share its cache holds)")
        if w.speculative.method == AUTO_SPECULATIVE:
            methods = auto_methods(sc.resolved_models()[w.model])
            if len(methods) > 1:
                warnings.append(f"workload {w.name}: speculative auto: {auto_words(methods, w.model)} "
                                f"(docs/MODEL.md 3.4)")
            continue
        spec = w.speculation
        if spec.method == "none":
            continue
        warnings.append(f"workload {w.name}: speculative decoding "
                        f"{acceptance_words(spec.method, w.model, spec.acceptance, spec.acceptance_by_k)} "
                        f"(docs/MODEL.md 3.4)")
    if sc.site.power_budget_mw is None:
        warnings.append("site.power_budget_mw not given: power does not limit the plan")
    warnings.extend(_measurement_notes(sc))
    for hw_id, n in sorted(sc.installed_past_life().items()):
        warnings.append(f"installed {hw_id}: {n} racks past their service life ({sc.service_life():g} years) at "
                        f"start_date, left out")
    return {
        "hardware": {"allowed": sorted(sc.resolved_hardware()), "excluded": sc.excluded_hardware()},
        "installed": {h: {"racks": d["racks"], "retire_by": d["retire_by"].isoformat()}
                      for h, d in sc.installed_in_service().items()},
        "demands": [d.to_dict() for d in demands_of(sc)],
        "warnings": warnings,
    }


def _measurement_notes(sc: Scenario) -> list[str]:
    """What the measurements will do: each measured (workload, system, precision, role, chips) and the
    operating point it gives, or that it misses the tier; rows no workload uses."""
    from planner.fleet.problem import demands_of
    from planner.measurements.curves import curves_for, operating_point

    if not sc.measurements:
        return []
    notes, used = [], set()
    allowed, models = sc.resolved_hardware(), sc.resolved_models()
    efficiency = sc.efficiencies(allowed)
    for d in demands_of(sc):
        for hw in allowed.values():
            for c in curves_for(d, models[d.model], hw, sc.measurements, None, efficiency):
                used.add((hw.id, d.model))
                point = operating_point(c, d.min_tps_per_user, d.ttft_s)
                read = (f"read at concurrency {point.concurrency:g}: {point.tps_per_user:.4g} tok/s/user"
                        if point else "misses the tier or TTFT at every point: no option there")
                notes.append(f"workload {d.name}: {hw.id} {c.precision} {c.role} on {c.chips} chips from "
                             f"measurements ({c.describe()}), {read}; no option from the model there")
    idle = sorted({f"{m.hardware}/{m.model}" for m in sc.measurements if (m.hardware, m.model) not in used})
    if idle:
        notes.append(f"measurements not used by any workload (system not allowed, another model or speculative "
                     f"method): {', '.join(idle)}")
    return notes


# ---- what-ifs: PATH=VALUE settings ------------------------------------------------------------------------------
def parse_setting(text: str) -> tuple[str, Any]:
    """``PATH=VALUE`` from ``--set``: the value read as YAML (5, 9e6, fp8, [a, b], {k: v}, null)."""
    if not isinstance(text, str) or "=" not in text:
        raise InputError(f"expected PATH=VALUE (e.g. site.power_budget_mw=5), got {text!r}", field="--set")
    path, _, raw = text.partition("=")
    path = path.strip()
    if not path:
        raise InputError(f"expected PATH=VALUE, got {text!r}: the path is empty", field="--set")
    try:
        value = yaml.load(raw, Loader=yaml.SafeLoader) if raw.strip() else ""
    except yaml.YAMLError as exc:
        raise InputError(f"{path}: the value {raw!r} is not YAML ({exc.problem or exc})", field="--set") from None
    return path, value


def _item_named(items: list, name: str):
    """A list item by its ``name`` or ``id``, or by its index."""
    for i, item in enumerate(items):
        if isinstance(item, dict) and name in (item.get("name"), item.get("id")):
            return i
    if re.fullmatch(r"\d+", name) and int(name) < len(items):
        return int(name)
    return None


def apply_setting(data: dict, path: str, value) -> dict:
    """``data`` (scenario fields as parsed) with the field at ``path`` set to ``value``. The path is dotted; list
    items are named by their ``name`` (workloads) or ``id`` (custom hardware, inline models) or index; a segment may
    itself hold dots where it names an existing key or item (``workloads.llama-3.1-8b-chat.tier``). Missing
    mappings on the way are created; validation then judges the result like a field of the file."""
    import copy

    data = copy.deepcopy(data)
    node, rest, walked = data, path, []
    while True:
        if isinstance(node, list):
            names = [str(x.get("name") or x.get("id")) for x in node if isinstance(x, dict)]
            keys = names + [str(i) for i in range(len(node))]
        elif isinstance(node, dict):
            keys = [str(k) for k in node]
        else:
            raise InputError(f"{path}: {'.'.join(walked) or 'the scenario'} is a value, not a mapping or list",
                             field="--set")
        # the longest existing key that the rest of the path starts with, else the next dotted segment
        match = next((k for k in sorted(keys, key=len, reverse=True) if rest == k or rest.startswith(k + ".")), None)
        head = match if match is not None else rest.split(".", 1)[0]
        rest = rest[len(head) + 1:] if len(rest) > len(head) else ""
        walked.append(head)
        if isinstance(node, list):
            i = _item_named(node, head)
            if i is None:
                raise InputError(f"{path}: no item named {head!r} in {'.'.join(walked[:-1])}"
                                 f"{did_you_mean(head, names)}", field="--set")
            if not rest:
                node[i] = value
                return data
            node = node[i]
            continue
        if not rest:
            node[head] = value
            return data
        if head not in node or node[head] is None:
            node[head] = {}
        node = node[head]


def with_settings(data: dict, settings) -> dict:
    """``data`` with every ``PATH=VALUE`` of ``settings`` applied in order."""
    for text in settings or ():
        path, value = parse_setting(text)
        data = apply_setting(data, path, value)
    return data


# ---- public API ------------------------------------------------------------------------------------------------------
def scenario_from_yaml(text: str, file: str = "<scenario>", settings=()) -> Scenario:
    """Parse and validate scenario YAML text, with ``settings`` (``PATH=VALUE``, as ``--set``) applied first;
    ``file`` names it in error messages."""
    hardware_catalog(), model_catalog()  # a broken catalog is the planner's fault (exit 1), not the scenario's
    data, root = _parse_yaml(text, file)
    if data is None:
        raise InputError("is empty; expected a scenario mapping (name, start_date, finance, workloads, ...)", file=file)
    if not isinstance(data, dict):
        raise InputError(f"expected a mapping of scenario fields at the top level, got {_short(data)}", file=file,
                         line=root.start_mark.line + 1)
    _check_keys_are_text(root, file)
    try:
        data = with_settings(data, settings)
    except InputError as exc:
        raise exc.in_file(file) from None
    base = Path(file).parent if Path(file).is_file() else None
    if isinstance(data.get("efficiency"), str):  # a fitted file, read relative to the scenario
        from planner.measurements.fit import read_efficiency

        path = Path(data["efficiency"])
        try:
            data["efficiency"] = read_efficiency(path if path.is_absolute() or base is None else base / path)
        except InputError as exc:
            raise exc.in_file(file) from None
    origins = None  # each row's file and row, for the errors that name a row (a row inline: None)
    if isinstance(data.get("measurements"), list):  # files become their rows, read relative to the scenario
        try:
            rows, origins = [], []
            for e in data["measurements"]:
                found = resolve_measurements([e], base) if isinstance(e, str) else [e]
                rows.extend(found)
                first = 2 if isinstance(e, str) and e.lower().endswith(".csv") else 1  # CSV: the header is line 1
                origins.extend(f"{e} {'line' if first == 2 else 'row'} {k + first}" if isinstance(e, str) else None
                               for k in range(len(found)))
            data["measurements"] = rows
        except InputError as exc:
            raise exc.in_file(file) from None
    try:
        return Scenario.model_validate(data, context={"measurement_origins": origins})
    except ValidationError as exc:
        raise _validation_error(exc, file, root, set_paths=[parse_setting(t)[0] for t in settings or ()]) from None


def load_scenario(path: str | Path, settings=()) -> Scenario:
    """Read and validate a scenario file, with ``settings`` (``PATH=VALUE`` strings, as ``planner solve --set``)
    applied before validation; any problem raises InputError (file, line, field path, expectation)."""
    if not (isinstance(path, (str, Path)) or hasattr(path, "__fspath__")):  # planner.solve(None) comes here too
        raise InputError(f"expected a Scenario or the path of a scenario file, got {type(path).__name__}",
                         field="scenario")
    path = Path(path)
    return scenario_from_yaml(_read_text(path), str(path), settings)


def scenario_json_schema() -> dict:
    """JSON Schema (draft 2020-12) of the scenario file."""
    schema = Scenario.model_json_schema()
    return {"$schema": "https://json-schema.org/draft/2020-12/schema", **schema}
