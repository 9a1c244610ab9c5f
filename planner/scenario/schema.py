"""The scenario's schema: the pydantic models of the file (``Scenario`` and its sections ``Finance``, ``Site``,
``HardwareChoice``, ``Installed``, ``SolverSettings``, ``Workload``, ``Speculative``, ``ApiOffer``,
``DemandScenario``), the number types they use, and what a validated scenario resolves to (its hardware, models,
periods, installed fleet) and its what-ifs (``with_``, ``fleet_only``, ``with_solver``). Cross-field problems are
in ``checks``, hardware overrides in ``overrides``, the wording of errors in ``messages``."""

from __future__ import annotations

import datetime as _dt
import math
from typing import Annotated, Any, Literal, get_args

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

from planner.catalog import Hardware, Model, Precision, hardware_catalog, model_catalog
from planner.errors import InputError
from planner.lengths import JSON_SCHEMA as LENGTHS_JSON_SCHEMA
from planner.lengths import Lengths, MeanTokens, lengths_of, mean_tokens, spec_or_number
from planner.measurements import physics
from planner.measurements.table import Measurement
from planner.perf.grid import Layouts
from planner.perf.pack import efficiency_key, family_efficiency
from planner.perf.speculative import speculation
from planner.scenario.checks import _carbon_problems, _period_problems, _reference_problems, _site_problems
from planner.scenario.messages import _describe, _problem, _validation_error
from planner.scenario.overrides import _apply_overrides
from planner.scenario.settings import apply_setting, parse_setting
from planner.vocabulary import (
    ACQUISITIONS,
    AUTO_SPECULATIVE,
    CURTAILMENT_ORDERS,
    DEFAULT_ACQUISITION,
    DEFAULT_CURTAILMENT_ORDER,
    DEFAULT_OBJECTIVE,
    DEFAULT_SOLVER,
    LAYOUT_POLICIES,
    OBJECTIVES,
    ONE_SITE,
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
Redundancy = Literal["none", "n+1", "rack"]
Acquisition = Literal["merchant", "cloud", "select"]
assert get_args(CurtailmentOrder) == CURTAILMENT_ORDERS and get_args(Acquisition) == ACQUISITIONS


def _default_acquisition() -> list[Acquisition]:
    """hardware.acquisition's default: the vocabulary's, a list of its own for each scenario."""
    return list(DEFAULT_ACQUISITION)


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
    redundancy: Redundancy = Field(
        "none", description="spare replicas every pool holds beyond what its load needs (docs/OPTIMIZER.md 19): "
        "none (the default), n+1 (one spare replica a pool, a fractional pool a spare of its own size), rack (as many "
        "as one rack holds of the pool's replicas, so that the loss of any one rack leaves the load served); a "
        "workload's spare_replicas takes its place")
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


class SiteEntry(_Section):
    """One site of several (docs/OPTIMIZER.md 21): its limits, its energy and the systems it may hold. A figure left
    out is the scenario's (finance.pue, finance.electricity_usd_per_mwh) or no limit."""

    name: Name = Field(description="the site's name, unique (plans name its racks system@name)")
    power_budget_mw: PosNumber | list[PosNumber] | None = Field(
        None, description="facility power budget in MW (rack power x the site's PUE), or one per period; default: "
        "no limit")
    pue: Annotated[Number, Ge(1), Le(3)] | None = Field(None, description="the site's PUE; default finance.pue")
    electricity_usd_per_mwh: NonNegNumber | None = Field(
        None, description="the site's electricity price, USD per MWh of facility energy; default the finance's")
    max_racks: PosCount | list[PosCount] | None = Field(
        None, description="most racks the site can hold, all types, or one per period; default: no limit")
    grid_kg_co2_per_mwh: NonNegNumber | None = Field(
        None, description="emissions of the site's grid, kg CO2e per MWh of facility energy (as site's)")
    installed: list[Installed] = Field(
        default_factory=list, description="racks already on this site's floor: [{hardware, racks, bought, capex_usd}]")
    allow: list[Name] | None = Field(
        None, description="hardware ids this site may hold; default: every system the scenario may use")


class HardwareChoice(_Section):
    allow: list[Name] | None = Field(
        None,
        description="hardware ids a plan may use (catalog or custom), whatever their acquisition; default: every "
        "catalog and custom system available by start_date that hardware.acquisition admits",
    )
    acquisition: list[Acquisition] = Field(
        default_factory=_default_acquisition, min_length=1,
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
    ttft_s: PosNumber | None = Field(
        None, description="time to first token its users see at the workload's TTFT percentile, measured at the "
        "client (network, gateway and queue included): it serves the workload only at or under its ttft_s; "
        "unstated, it is taken to meet it (said in the plan's assumptions)")


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
        None, description="serving precision fp4|fp8|bf16|w4a16 (weight-only 4-bit); default: every precision each "
                          "hardware runs the model at"
    )
    prefix_cache_hit: Share = Field(
        0.0, description="share of input tokens served from a prefix cache, in [0, 1) (default 0)"
    )
    capacity_headroom: Annotated[Number, Ge(0), Le(10)] | None = Field(
        None, description="share of this workload's capacity held above its peak, as site.capacity_headroom but "
        "for this workload alone (planner solve --verify raises it where a simulated target fails); default: the "
        "site's")
    spare_replicas: Annotated[Count, Le(10000)] | None = Field(
        None, description="spare replicas each of this workload's pools holds beyond what its load needs (N+k, "
        "docs/OPTIMIZER.md 19), in place of site.redundancy; 0: none; default: the site's")
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
    sites: list[Name] | None = Field(
        None, min_length=1, description="with several sites: the sites that may serve this workload (its region); "
        "default: all")
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
        peaks = peak if isinstance(peak, list) else [peak]
        if not all(_positive_number(p) for p in peaks) or not peaks:
            # the peak's own check names it (issue 43: the mean derived from a bad peak was reported as
            # requests_per_s, a field the user did not write); the stand-in mean is never used
            return {**data, "requests_per_s": [1.0] * len(peaks) if isinstance(peak, list) and peaks else 1.0}
        if _positive_number(ratio):
            data = {**data, "requests_per_s": [float(p) / ratio for p in peaks] if isinstance(peak, list)
                    else float(peak) / ratio}
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
        if self.min_tps_per_user is not None:
            return self.min_tps_per_user
        assert self.tier is not None  # the workload's validator asks for one of the two
        return TIERS[self.tier]

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
        rate = self.requests_per_s
        assert not isinstance(rate, list), "a rate per period: take the scenario at_period first"
        return rate * self.turns

    @property
    def peak_calls_per_s(self) -> float:
        return self.calls_per_s * self.peak_to_mean

    @property
    def generated_tokens_per_call(self) -> float:
        """Tokens decoded per call: visible output plus reasoning."""
        return self.output_tokens + self.reasoning_tokens

    def turn_input_tokens(self, turn: float) -> float:
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
    sites: list[SiteEntry] | None = Field(
        None, min_length=1, description="several sites in one plan, in place of site's limits and installed: "
        "[{name, power_budget_mw, pue, electricity_usd_per_mwh, max_racks, grid_kg_co2_per_mwh, installed, allow}] "
        "(docs/OPTIMIZER.md 21); site then keeps only what holds plan-wide (capacity_headroom, redundancy, "
        "curtailment_order)")
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
        for loc, message in _site_problems(self):
            raise _problem(message, *loc)
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
        for entry in data.get("sites") or ():  # several sites: each its period's limits
            for key in ("power_budget_mw", "max_racks"):
                if isinstance(entry.get(key), list):
                    entry[key] = entry[key][t]
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
            raise _validation_error(exc, Scenario, f"scenario {self.name!r} period {t}", None) from None

    def layout_rule(self):
        """The layouts this scenario's plans may use (``planner.perf.grid.Layouts``)."""
        return Layouts(self.serving_stack, self.layouts == "any")

    def efficiencies(self, hardware) -> dict[str, dict[str, float]]:
        """``efficiency_of`` for the family of every system in ``hardware`` (id -> Hardware), and for each system
        the scenario's ``efficiency`` scopes parameters to by its id: the map the engine, the measured curves and a
        plan's inputs share (read with ``planner.perf.pack.efficiency_of``)."""
        out = {k: self.efficiency_of(k) for k in sorted({efficiency_key(hw) for hw in hardware.values()})}
        for hw_id, hw in sorted(hardware.items()):
            if hw_id in self.efficiency:
                out[hw_id] = {**out[efficiency_key(hw)], **self.efficiency[hw_id]}
        return out

    def efficiency_of(self, key: str) -> dict[str, float]:
        """The efficiency parameters of an entry (a family, or ``family/generation``): the calibrated ones, with the
        scenario's ``efficiency`` of the family and then of the entry itself over them."""
        family = key.split("/", 1)[0]
        return {**family_efficiency(key, self.serving_stack), **self.efficiency.get(family, {}),
                **(self.efficiency.get(key, {}) if key != family else {})}

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
        return {i: _apply_overrides(h, self.hardware.overrides.get(i, {}), Scenario) for i, h in known.items()}

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
        if any(e.hardware == hw_id and self.retirement_of(e) > self.start_date for e in self.all_installed()):
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

    # ---- several sites (docs/OPTIMIZER.md 21) ---------------------------------------------------------------------
    def site_names(self) -> list[str]:
        """The sites' names: the entries of ``sites``, or the one site named ``site``."""
        return [e.name for e in self.sites] if self.sites else [ONE_SITE]

    def all_installed(self) -> list[Installed]:
        """Every installed rack entry: the scenario's and every site's."""
        return [*self.installed, *(e for entry in self.sites or () for e in entry.installed)]

    def serves_at(self, workload: Workload, site: str) -> bool:
        """Whether ``workload`` may be served at ``site`` (its ``sites``, default all)."""
        return workload.sites is None or site in workload.sites

    def at_site(self, name: str) -> Scenario:
        """The one-site scenario of site ``name``: its limits, PUE, electricity, grid and installed racks in place of
        the scenario's, its allow list within hardware.allow, every workload (those it may not serve have no option
        there: ``planner.fleet.sites``). Itself where the scenario has one site."""
        if not self.sites:
            return self
        i, entry = next((i, e) for i, e in enumerate(self.sites) if e.name == name)
        data = self.model_dump(mode="json", exclude_unset=True, by_alias=True)
        data.pop("sites")
        finance = dict(data["finance"])
        for key in ("pue", "electricity_usd_per_mwh"):
            if getattr(entry, key) is not None:
                finance[key] = getattr(entry, key)
        site = dict(data.get("site") or {})
        for key in ("power_budget_mw", "max_racks", "grid_kg_co2_per_mwh"):
            if getattr(entry, key) is not None:
                site[key] = getattr(entry, key)
        data.update(finance=finance, site=site, installed=[e.model_dump(mode="json") for e in entry.installed])
        if entry.allow is not None:
            hardware = dict(data.get("hardware") or {})
            given = hardware.get("allow")
            hardware["allow"] = [h for h in entry.allow if given is None or h in given]
            data["hardware"] = hardware
        for w in data["workloads"]:
            w.pop("sites", None)
        try:
            return type(self).model_validate(data)
        except ValidationError as exc:
            first = exc.errors()[0]
            raise InputError(f"site {name!r}: {first['msg']}", field=f"sites[{i}]") from None

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
            raise _validation_error(exc, Scenario, f"scenario {self.name!r}", None, set_paths=paths,
                                    set_by="with_") from None

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
        settings: dict[str, Any] = {"hardware.max_new_racks": 0, "objective": goal}
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
            message = _describe(err, SolverSettings, tuple(err["loc"]), Scenario)
            raise InputError(message, field=f"solver.{err['loc'][0]}") from None
        return self.model_copy(update={"solver": solver})


def _positive_number(x) -> bool:
    """A finite number above 0 (a bool is not one)."""
    return isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x) and x > 0
