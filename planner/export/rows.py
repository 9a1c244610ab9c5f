"""The common reader of a plan's allocation rows for ``planner export``: the plan (a path, dict or Plan), the period
of a build-out, each row with its model's catalog entry, its workload's demand and its hardware family, and the
checks every engine target shares (docs/EXPORT.md). Report layer: it reads the plan's JSON and the catalog, never
the solver."""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass, field
from pathlib import Path

from planner import catalog
from planner.errors import InputError
from planner.fleet.rows import read_rows
from planner.inputs import read_bytes_limited
from planner.vocabulary import API_KIND, API_PREFIX, SPECULATIVE_METHODS

MAX_PLAN_BYTES = 64 * 1024 * 1024  # the largest plan.json read, as planner check reads them
# A Hugging Face id in a model's source: org/name of letters, digits, '.', '_' and '-' (the Hub's own rule), so that
# nothing else from a scenario's model reaches a launch file
HF_SOURCE = re.compile(r"^https://huggingface\.co/([A-Za-z0-9][A-Za-z0-9._-]*/[A-Za-z0-9][A-Za-z0-9._-]*)(?:[/?#]|$)")
# What a workload, system or model name may hold to be written into a launch file or a manifest
SAFE_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._+:@-]{0,127}$")


@dataclass(frozen=True)
class Row:
    """One allocation row with what every target needs beside it: its position in the plan's allocation, the
    model's catalog entry, the workload's demand, and the hardware family of its chips (and FFN chips)."""

    index: int
    fields: dict
    model: catalog.Model | None
    demand: dict
    family: str | None
    ffn_family: str | None
    drafter: catalog.Model | None = None  # speculative draft_model: the workload's drafter, where the plan has it
    node_chips: int | None = None  # chips one host of the row's system holds (the plan's catalog), where it says
    domain_chips: float | None = None  # chips in one scale-up domain of the row's system (the plan's catalog)

    @property
    def nodes(self) -> int:
        """Hosts one replica spans: its chips over a host's, rounded up (1 where the plan's catalog gives no host
        size: a hand-built system is taken as one host)."""
        chips = int(self["chips_per_replica"] or 1)
        if not self.node_chips or chips <= self.node_chips:
            return 1
        return math.ceil(chips / self.node_chips)

    @property
    def chips_per_node(self) -> int:
        """The chips of one replica on each of its hosts (checked to divide evenly by ``check_common``)."""
        return int(self["chips_per_replica"] or 1) // self.nodes

    def __getitem__(self, key):
        return self.fields.get(key)

    @property
    def name(self) -> str:
        """How errors and files name the row: its position and what it serves where."""
        return f"row {self.index} ({self['workload']} {self['role']} on {self['hardware']})"

    @property
    def slug(self) -> str:
        """A file-name stem for the row: position, workload, role, hardware."""
        raw = f"{self.index:02d}-{self['workload']}-{self['role']}-{self['hardware']}"
        return re.sub(r"[^A-Za-z0-9._-]+", "-", raw)


@dataclass
class PlanRows:
    """The rows of one plan (or one period of a build-out) and where they came from."""

    scenario: str
    period: str | None
    demand_scenario: str | None
    rows: list[Row]
    catalog_version: str | None = None
    periods: list[str] = field(default_factory=list)


class Refusal(InputError):
    """A setting of a row that the target cannot express: exit 2 naming the row and the field."""

    def __init__(self, row: Row, setting: str, reason: str, target: str):
        super().__init__(f"{row.name}, {setting}: {reason}; {target} cannot express it")
        self.field = setting  # the row's field at fault, as InputError names one
        self.row, self.setting, self.reason, self.target = row, setting, reason, target


# ---- reading the plan ------------------------------------------------------------------------------------------

def plan_dict_of(plan) -> dict:
    """A plan as the interface's JSON: a Plan (``to_dict``), a dict, or a path to plan.json."""
    if hasattr(plan, "to_dict"):
        return json.loads(json.dumps(plan.to_dict()))
    if isinstance(plan, dict):
        return plan
    if isinstance(plan, (str, Path)):
        raw = read_bytes_limited(Path(plan), MAX_PLAN_BYTES, "a plan.json written by planner solve")
        try:
            data = json.loads(raw.decode("utf-8"))
        except (UnicodeDecodeError, json.JSONDecodeError) as exc:
            raise InputError(f"not JSON: {exc}", file=str(plan)) from None
        if not isinstance(data, dict):
            raise InputError("not a plan: expected a JSON object", file=str(plan))
        return data
    raise InputError(f"expected a plan (Plan, dict or path to plan.json), got {type(plan).__name__}")


def plan_rows(plan, period: str | None = None, demand_scenario: str | None = None) -> PlanRows:
    """The allocation rows to export: a single-period plan's, or one period of a build-out's (``period``, a start
    date; default the last) in one demand scenario (``demand_scenario``; default the most probable, the first of
    equals)."""
    d = plan_dict_of(plan)
    if d.get("status") not in ("optimal", "feasible", "time_limit"):
        raise InputError(f"the plan's status is {d.get('status')!r}: there is no fleet to export")
    inputs = d.get("inputs") or {}
    if "first_period_order" in d:
        return buildout_rows(d, inputs, period, demand_scenario)
    if period is not None or demand_scenario is not None:
        raise InputError("--period and --demand-scenario pick periods of a build-out's plan; this plan has one period",
                         field="--period" if period is not None else "--demand-scenario")
    if not isinstance(d.get("allocation"), list):
        raise InputError("not a plan: missing allocation (written by planner solve --out or --format json)")
    return PlanRows(scenario_name(d), None, None, rows_of(d["allocation"], inputs, inputs.get("demands") or []),
                    inputs.get("catalog_version"))


def scenario_name(d: dict) -> str:
    return str(d.get("scenario") or (d.get("inputs") or {}).get("scenario", {}).get("name") or "plan")


def buildout_rows(d: dict, inputs: dict, period: str | None, demand_scenario: str | None) -> PlanRows:
    """One period of one demand scenario of a build-out's plan, as planner simulate picks them."""
    scenarios = d.get("scenarios") or [{"name": None, "probability": 1.0, "periods": d.get("periods") or []}]
    if "period_demands" not in inputs or any("allocation" not in p for s in scenarios for p in s["periods"]):
        raise InputError("this build-out's plan has no allocation per period (it was written before periods carried "
                         "their allocation): solve the scenario again")
    names = [s["name"] for s in scenarios]
    if demand_scenario is None:
        s = max(range(len(scenarios)), key=lambda k: (float(scenarios[k].get("probability") or 0.0), -k))
    elif demand_scenario in names:
        s = names.index(demand_scenario)
    else:
        known = ", ".join(n for n in names if n)
        raise InputError(f"{demand_scenario!r} is not one of the plan's demand scenarios "
                         + (f"({known})" if known else "(it has none)"), field="--demand-scenario")
    dates = [p["start_date"] for p in scenarios[s]["periods"]]
    if period is None:
        t = len(dates) - 1
    elif period in dates:
        t = dates.index(period)
    else:
        raise InputError(f"{period!r} is not a period of the plan; its periods start on {', '.join(dates)}",
                         field="--period")
    plan_inputs = inputs.get("plan") or {}
    rows = rows_of(scenarios[s]["periods"][t]["allocation"], plan_inputs, inputs["period_demands"][s][t])
    return PlanRows(scenario_name(d), dates[t], names[s], rows, plan_inputs.get("catalog_version"), dates)


def rows_of(allocation: list, inputs: dict, demands: list) -> list[Row]:
    """Each allocation row with its model, demand and hardware families, read from the plan's own inputs (the
    catalog as it was solved), never from today's catalog; each row first through the plan's one reader
    (planner.fleet.rows: a tampered number is exit 2 naming the field, not a traceback)."""
    read_rows(allocation)
    by_name = {dm["name"]: dm for dm in demands}
    models = inputs.get("models") or {}
    hardware = inputs.get("hardware") or {}
    out = []
    for i, r in enumerate(allocation):
        demand = by_name.get(r.get("workload"), {})
        out.append(Row(i, dict(r), model_of(models.get(demand.get("model"))), demand,
                       family_of(hardware, r.get("hardware")), family_of(hardware, r.get("ffn_hardware")),
                       model_of(models.get(demand.get("draft_model"))), node_chips_of(hardware, r.get("hardware")),
                       domain_chips_of(hardware, r.get("hardware"))))
    return out


def model_of(entry: dict | None) -> catalog.Model | None:
    """The plan's model entry as a catalog Model (None where the plan has none)."""
    if not isinstance(entry, dict):
        return None
    try:
        return catalog.Model.model_validate(entry)
    except Exception:  # noqa: BLE001 - a model the catalog cannot read: the rows that need it are refused
        return None


def family_of(hardware: dict, hw_id: str | None) -> str | None:
    entry = hardware.get(hw_id) if hw_id else None
    return entry.get("family") if isinstance(entry, dict) else None


def catalog_figure(hardware: dict, hw_id: str | None, *path: str) -> float | None:
    """A figure of the system's entry in the plan's catalog (``path`` to its ``{value}``), where it has one of at
    least 1."""
    node: object = hardware.get(hw_id) if hw_id else None
    for key in (*path, "value"):
        node = node.get(key) if isinstance(node, dict) else None
    return float(node) if isinstance(node, (int, float)) and node >= 1 else None


def node_chips_of(hardware: dict, hw_id: str | None) -> int | None:
    """Chips one host of the system holds, from the plan's catalog entry (rack.node_chips), where it has one."""
    value = catalog_figure(hardware, hw_id, "rack", "node_chips")
    return int(value) if value is not None else None


def domain_chips_of(hardware: dict, hw_id: str | None) -> float | None:
    """Chips in one scale-up domain of the system, from the plan's catalog entry (chip.scale_up.domain_chips),
    where it has one."""
    return catalog_figure(hardware, hw_id, "chip", "scale_up", "domain_chips")


# ---- what every target shares ----------------------------------------------------------------------------------

def is_api(row: Row) -> bool:
    return row["role"] == API_KIND or row["acquisition"] == API_KIND or str(row["hardware"]).startswith(API_PREFIX)


def whole_replicas(row: Row) -> int:
    """Replicas to launch: the plan's, rounded up (a fractional replica is a share of one replica's capacity, and
    an engine runs whole replicas)."""
    return max(1, math.ceil(float(row["replicas"]) - 1e-9))


def check_names(row: Row, target: str) -> None:
    """Refuse (exit 2) a row whose workload, system or model name holds what a launch file would not hold as
    text: a shell's ``$(...)``, backticks, quotes, spaces, a newline (SAFE_NAME: letters, digits and ``._+:@-``).
    Every value is quoted besides; a name that needs quoting is refused, not rewritten, so that files, manifests
    and the plan name the same thing."""
    named = [("workload", row["workload"]), ("hardware", row["hardware"]), ("ffn_hardware", row["ffn_hardware"]),
             ("model", row.demand.get("model")), ("model", row.model.id if row.model is not None else None)]
    for field_name, value in named:
        if value is not None and not SAFE_NAME.match(str(value)):
            raise Refusal(row, field_name, f"{field_name} {str(value)!r} holds characters a launch file would not "
                                           "hold as text (names are letters, digits and . _ + : @ -)", target)


def hf_model_id(row: Row, target: str) -> str:
    """The model's Hugging Face id (org/name), read from the catalog entry's source URL."""
    if row.model is None:
        raise Refusal(row, "workload", f"the plan holds no catalog entry for the model of {row['workload']!r}", target)
    found = hf_id_of(row.model)
    if found is None:
        raise Refusal(row, "model", f"model {row.model.id!r} has no Hugging Face source ({row.model.source})", target)
    return found


def hf_id_of(model: catalog.Model | None) -> str | None:
    match = HF_SOURCE.match(model.source) if model is not None else None
    return match.group(1) if match else None


def kv_cache_dtype(row: Row) -> str:
    """The KV cache's element type as the plan costs it (catalog.KV_BYTES): one byte is fp8, two the model's own."""
    return "fp8" if catalog.KV_BYTES[row["precision"]] == 1.0 else "auto"


def draft_tokens(row: Row) -> int:
    return int(row["draft_tokens"] or 0)


def tokens_per_step(row: Row) -> int:
    """Tokens one engine step runs: each decode stream verifies its draft tokens and one more; a prefill replica
    runs its batch of prompts (the workload's mean uncached prompt); a colocated one both."""
    decode = int(row["batch"]) * (draft_tokens(row) + 1)
    prefill = int(row["batch"]) * math.ceil(float(row.demand.get("prefill_tokens") or 0.0))
    return {"decode": decode, "prefill": prefill}.get(row["role"], decode + math.ceil(
        float(row.demand.get("prefill_tokens") or 0.0)))


def disaggregated(row: Row) -> bool:
    """Prefill and decode rows run as the two halves of prefill/decode disaggregation; colocated rows do both."""
    return row["role"] in ("prefill", "decode")


def check_common(row: Row, engine_key: str, target: str, precisions: tuple[str, ...],
                 methods: dict[str, object]) -> None:
    """Refuse (exit 2) what no launch of this engine can express on a row it runs: the role, the layout, the
    precision, the speculative method. ``methods``: the engine's drafter for each planner method it has."""
    if row["role"] not in ("prefill", "decode", "colocated"):
        raise Refusal(row, "role", f"role {row['role']!r}: the engine has no documented setting for attention/FFN "
                                   "disaggregation (docs/EXPORT.md)", target)
    if row.model is None:
        raise Refusal(row, "workload", f"the plan holds no catalog entry for the model of {row['workload']!r}", target)
    tp, pp, ep = int(row["tensor_parallel"]), int(row["pipeline_parallel"]), bool(row["expert_parallel"])
    if tp < 1 or pp < 1 or tp * pp != int(row["chips_per_replica"]):
        raise Refusal(row, "chips_per_replica", f"{row['chips_per_replica']} chips per replica is not tensor_parallel "
                                                f"{tp} x pipeline_parallel {pp}", target)
    if int(row["chips_per_replica"]) % row.nodes:
        raise Refusal(row, "chips_per_replica", f"{row['chips_per_replica']} chips per replica do not split evenly "
                                                f"over the {row.nodes} hosts of {row.node_chips} chips it spans",
                      target)
    check_layout(row, engine_key, target, tp, pp, ep)
    if row["precision"] not in precisions:
        raise Refusal(row, "precision", f"precision {row['precision']!r}: the engine serves "
                                        f"{', '.join(precisions)}", target)
    method = row["speculative"] or "none"
    if method not in SPECULATIVE_METHODS or method not in methods:
        raise Refusal(row, "speculative", f"speculative method {method!r}: the engine has "
                                          f"{', '.join(m for m in methods if m != 'none')}", target)
    if method != "none" and draft_tokens(row) < 1:
        raise Refusal(row, "draft_tokens", f"speculative {method!r} with {draft_tokens(row)} draft tokens", target)
    if method == "mtp" and not row.model.mtp_layers:
        raise Refusal(row, "speculative", f"speculative 'mtp': model {row.model.id!r} ships no multi-token-prediction "
                                          "layers", target)
    if int(row["batch"]) < 1:
        raise Refusal(row, "batch", f"batch {row['batch']}: an engine needs at least one stream", target)


def check_layout(row: Row, engine_key: str, target: str, tp: int, pp: int, ep: bool) -> None:
    """The engine's own layout rules (data/engines.yaml, docs/MODEL.md 2.9), each refusal saying which."""
    engine = catalog.serving_engines()[engine_key]
    if ep and not row.model.is_moe:
        raise Refusal(row, "expert_parallel", f"expert parallel on {row.model.id!r}, which has no experts", target)
    if ep and pp > 1 and not engine.attention_dp_pipeline:
        raise Refusal(row, "pipeline_parallel", f"expert parallel (data-parallel attention) with pipeline_parallel "
                                                f"{pp}: {engine.name} does not run them together", target)
    if pp > 1 and row.model.id in engine.no_pipeline_models:
        raise Refusal(row, "pipeline_parallel", f"pipeline_parallel {pp}: {engine.name} runs {row.model.id!r} "
                                                "without pipeline stages only", target)
    if not bool(engine.runs(row.family, row.model, tp, pp, int(ep), row.domain_chips)):
        raise Refusal(row, "tensor_parallel", f"layout tensor_parallel {tp}, pipeline_parallel {pp}, expert_parallel "
                                              f"{ep}: {engine.name} does not split {row.model.id!r} so "
                                              "(data/engines.yaml)", target)


def multinode_skip(row: Row, how: str) -> str | None:
    """Why a target that writes no multi-host launch skips a replica spanning hosts (``how``: what such a replica
    needs there), or None where it fits one host."""
    if row.nodes <= 1:
        return None
    return (f"a replica over {row.nodes} hosts of {row.node_chips} chips ({row['chips_per_replica']} chips): "
            f"{how}, which the export does not write")


def family_skip(row: Row, families: tuple[str, ...] | list[str], what: str) -> str | None:
    """Why a target does not run a row at all (listed as skipped, not refused): a hosted API, or chips of a family
    the target does not serve (dataflow, wafer-scale and single-model machines are served by their makers'
    stacks)."""
    if is_api(row):
        return "a hosted API offer: no hardware to launch"
    if row.family not in families:
        return f"hardware {row['hardware']} ({row.family or 'unknown family'}): {what} runs on {', '.join(families)}"
    if row["ffn_hardware"] and row.ffn_family not in families:
        return (f"FFN hardware {row['ffn_hardware']} ({row.ffn_family or 'unknown family'}): {what} runs on "
                f"{', '.join(families)}")
    return None
