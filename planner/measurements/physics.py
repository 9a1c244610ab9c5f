"""Measurement rows held to physics (docs/MODEL.md 12, docs/RELIABILITY.md): a measured operating point cannot be
faster than the memory bandwidth of its chips allows, nor hold more than their memory, so a row beyond either is a
typo, a unit slip or a benchmark that ran elsewhere than it says, and planning it would buy a fleet that cannot
exist.

The bounds are plain rooflines from the catalog figures, each a bound no real run can beat, then given slack
(``SLACK``): a row is refused only where it is more than ``SLACK`` times past one.

* Decode (colocated and decode rows). Every step of a replica reads at least the weights one token touches
  (``Model.active_params`` at the row's precision: the non-expert weights and one token's experts) plus the KV
  cache of every stream in flight (``concurrency`` x the mean context, prompt + half the output, x the KV bytes per
  token), from at most ``chips`` x the fastest memory tier's bandwidth. So the replica's output tokens/s is at most
  concurrency x chips x bandwidth / (weights + KV) per step, and one user's tokens/s at most chips x bandwidth /
  weights. Speculative decoding can accept up to ``MAX_DRAFT_TOKENS`` + 1 tokens a step: a speculative row's bounds
  are that many times higher.
* Prefill (prefill rows, and a colocated row's prompt tokens/s where given): each prompt token costs at least 2 x
  the active parameters in FLOPs, at most chips x the precision's dense peak FLOPs.
* Memory: the weights at the row's precision (``Model.total_params``) must fit the chips' memory, every tier
  counted (a capacity tier streams what the fast ones cannot hold); the weights plus the KV of every stream at its
  mean context must fit within ``SLACK`` times it (the KV's own precision and prefix sharing can make it smaller
  than the row's precision says).

``row_problems`` names each bound a row breaks; ``check_rows`` raises InputError for the first (exit 2) unless
the rows are trusted; ``trusted_warnings`` gives the lines a plan that trusts such rows carries in its
assumptions.
"""

from __future__ import annotations

from dataclasses import dataclass

from pydantic import ValidationError

from planner.catalog import KV_BYTES, WEIGHT_BYTES, Hardware, Model
from planner.errors import InputError
from planner.measurements.table import Measurement
from planner.vocabulary import MAX_DRAFT_TOKENS

SLACK = 1.5  # a row is refused only beyond SLACK times a bound: rooflines are bounds, never estimates
TRUST_HINT = ("check the row (its hardware, chips, concurrency, precision and units), or plan it anyway with "
              "planner solve --trust-measurements (the scenario's trust_measurements: true)")


@dataclass(frozen=True)
class Breach:
    """One bound one row breaks: what was measured, the bound, and the words that say so."""

    index: int
    figure: str  # tps_per_user, output_tokens_per_s, input_tokens_per_s, memory
    measured: float
    bound: float
    text: str

    @property
    def factor(self) -> float:
        return self.measured / self.bound if self.bound > 0 else float("inf")


def _people(x: float) -> str:
    return f"{x:,.0f}" if abs(x) >= 100 else f"{x:,.3g}"


def _gb(x: float) -> str:
    return f"{x / 1e9:,.4g} GB"


def _kv_bytes_per_token(model, precision: str, context: float) -> float:
    """KV bytes a decode step reads per token of a ``context``-token context over all layers (sliding-window layers
    count min(context, window) / context of a token, sparse-attention ones min(context, k) / context and their
    indexer's keys, linear-attention ones their state once): the fewest of ``solvers.perf.kernels``' read, in plain
    Python, so that validating a scenario compiles nothing."""
    layers = float(model.layers)
    window_layers = float(model.sliding_window_layers or 0)
    full = 1.0 - window_layers / layers - float(model.linear_attention_layers) / layers  # linear layers: no cache
    share = full
    if context > 0:
        window = float(model.sliding_window_tokens or 0)
        top = float(model.sparse_attention_topk or 0)  # a sparse layer reads its top k (MODEL.md 2.10)
        share = full * (min(context, top) / context if top else 1.0)
        share += (window_layers / layers) * min(context, window) / context if window_layers else 0.0
    else:
        share += window_layers / layers
    index = float(model.indexer_head_dim if model.sparse_attention_topk else 0) * KV_BYTES[precision] * layers * full
    # the linear-attention states, read once a step, spread over the context's tokens
    state = float(model.state_bytes_per_sequence) / context if context > 0 else 0.0
    return float(model.kv_elements_per_token_per_layer) * KV_BYTES[precision] * layers * share + index + state


def row_bounds(m, hw, model) -> dict:
    """The physical bounds of one measurement row ``m`` on ``hw`` serving ``model`` (catalog objects): replica
    output tokens/s, one user's tokens/s, prompt tokens/s, and the memory its weights and KV need and have."""
    chips = float(m.chips)
    bandwidth = float(hw.chip.memory[0].bandwidth_bytes_per_s.value) * chips
    capacity = sum(float(t.capacity_bytes.value) for t in hw.chip.memory) * chips
    flops = hw.chip.peak_flops_per_s.get(m.precision)
    peak = float(flops.value if flops is not None else max(f.value for f in hw.chip.peak_flops_per_s.values()))
    weight_bytes = WEIGHT_BYTES[m.precision]
    read_weights = float(model.active_params) * weight_bytes  # the fewest weight bytes a decode step reads
    held_weights = float(model.total_params) * weight_bytes
    context = float(m.input_tokens) + float(m.output_tokens) / 2.0  # a stream's mean context while it decodes
    kv = float(m.concurrency) * context * _kv_bytes_per_token(model, m.precision, context)
    steps = 1.0 if m.speculative == "none" else float(MAX_DRAFT_TOKENS + 1)  # tokens a step can accept
    return {
        "bandwidth": bandwidth, "capacity": capacity, "read_weights": read_weights, "held_weights": held_weights,
        "kv": kv, "steps": steps,
        "output_tokens_per_s": steps * float(m.concurrency) * bandwidth / (read_weights + kv),
        "tps_per_user": steps * bandwidth / read_weights,
        "input_tokens_per_s": chips * peak / (2.0 * float(model.active_params)),
    }


def row_problems(index: int, m, hw, model) -> list[Breach]:
    """Every bound row ``m`` (number ``index``) breaks by more than SLACK, in words."""
    b = row_bounds(m, hw, model)
    on = f"{m.chips} {hw.id} chip{'s' if m.chips != 1 else ''}"
    spec = (f", x{b['steps']:g} for {m.speculative} speculative decoding (at most {MAX_DRAFT_TOKENS} draft tokens "
            f"accepted a step)" if b["steps"] > 1 else "")
    out = []

    def breach(figure: str, measured, bound: float, what: str, unit: str, why: str):
        if measured is not None and measured > SLACK * bound:
            out.append(Breach(index, figure, float(measured), bound,
                              f"{_people(float(measured))} {what} on {on} is {float(measured) / bound:,.3g}x the "
                              f"{why} ({_people(bound)} {unit})"))

    if m.role in ("colocated", "decode"):
        breach("output_tokens_per_s", m.output_tokens_per_s, b["output_tokens_per_s"], "output tok/s", "tok/s",
               f"memory-bandwidth roofline at concurrency {m.concurrency:g}: {_gb(b['bandwidth'])}/s over "
               f"{_gb(b['read_weights'])} of weights and {_gb(b['kv'])} of KV read a step{spec}")
        breach("tps_per_user", m.speed, b["tps_per_user"], "tok/s per user", "tok/s",
               f"memory-bandwidth roofline of one stream: {_gb(b['bandwidth'])}/s over "
               f"{_gb(b['read_weights'])} of weights read a step{spec}")
    breach("input_tokens_per_s", m.input_tokens_per_s, b["input_tokens_per_s"], "prompt tok/s", "tok/s",
           f"compute roofline: {m.chips} x {m.precision} peak FLOPs over 2 x {model.active_params / 1e9:,.4g} B "
           f"active parameters a token")
    need = b["held_weights"] + b["kv"]
    if b["held_weights"] > b["capacity"]:
        out.append(Breach(index, "memory", b["held_weights"], b["capacity"],
                          f"the {m.precision} weights of {m.model} ({_gb(b['held_weights'])}) do not fit the "
                          f"memory of {on} ({_gb(b['capacity'])}, every tier)"))
    elif need > SLACK * b["capacity"]:
        out.append(Breach(index, "memory", need, b["capacity"],
                          f"weights ({_gb(b['held_weights'])}) and the KV of {m.concurrency:g} streams at a mean "
                          f"context of {float(m.input_tokens) + float(m.output_tokens) / 2:,.0f} tokens "
                          f"({_gb(b['kv'])}) need {need / b['capacity']:,.3g}x the memory of {on} "
                          f"({_gb(b['capacity'])}, every tier)"))
    return out


def describe_row(index: int, m, origin: str | None = None) -> str:
    """``measurements[3] (hgx-h100 llama-3.3-70b fp8, 1 chip, colocated, concurrency 64; m.csv row 5)``."""
    where = origin or (m.source if m.source else None)
    return (f"measurements[{index}] ({m.hardware} {m.model} {m.precision}, {m.chips} chip{'s' if m.chips != 1 else ''}"
            f", {m.role}, concurrency {m.concurrency:g}" + (f"; {where}" if where else "") + ")")


def problems(rows, hardware: dict, models: dict) -> list[tuple[int, list[Breach]]]:
    """(index, breaches) of every row that breaks a bound; rows whose hardware or model is not in ``hardware``
    (id -> Hardware) or ``models`` (id -> Model) are left to the id checks."""
    out = []
    for i, m in enumerate(rows):
        hw, model = hardware.get(m.hardware), models.get(m.model)
        if hw is None or model is None:
            continue
        found = row_problems(i, m, hw, model)
        if found:
            out.append((i, found))
    return out


def message(index: int, m, breaches: list[Breach], origin: str | None = None, more: int = 0) -> str:
    """The refusal of one row: the row, every bound it breaks, what to do."""
    text = (f"{describe_row(index, m, origin)} is beyond physics: " + "; ".join(b.text for b in breaches)
            + f" (a row is refused beyond {SLACK:g}x a roofline, or where its weights alone do not fit: "
              f"docs/MODEL.md 12.4)")
    if more:
        text += f"; {more} more row{'s' if more != 1 else ''} too"
    return text + f"; {TRUST_HINT}"


def check_rows(rows, hardware: dict, models: dict, origins: list | None = None) -> None:
    """InputError (exit 2) for the first row beyond physics, naming it (``origins[i]``: its file and row, where
    known) and each bound it breaks."""
    found = problems(rows, hardware, models)
    if found:
        i, breaches = found[0]
        origin = origins[i] if origins and i < len(origins) else None
        raise InputError(message(i, rows[i], breaches, origin, len(found) - 1), field=f"measurements[{i}]")


def trusted_warnings(rows, hardware: dict, models: dict) -> list[str]:
    """The assumption lines of a plan whose rows break a bound and were trusted (--trust-measurements)."""
    found = problems(rows, hardware, models)
    return [f"warning: trusted measurement beyond physics (--trust-measurements): {describe_row(i, rows[i])}: "
            + "; ".join(b.text for b in breaches) for i, breaches in found]


def import_warnings(rows, hardware: dict, models: dict) -> list[str]:
    """What ``planner measurements import`` says of rows beyond physics (a scenario refuses them)."""
    found = problems(rows, hardware, models)
    return [f"run {i + 1} ({rows[i].hardware} {rows[i].model}) is beyond physics: "
            + "; ".join(b.text for b in breaches) + "; a scenario refuses it unless trust_measurements"
            for i, breaches in found]


def plan_warnings(inputs: dict) -> list[str]:
    """``trusted_warnings`` of a plan's ``inputs`` (its measurement rows, hardware and models, as plan.json holds
    them): the lines its assumptions carry; none where the inputs cannot be read (``check`` says why)."""
    try:
        rows = [Measurement.model_validate(r) for r in inputs.get("measurements") or []]
        if not rows:
            return []
        hardware = {k: Hardware.model_validate(v) for k, v in (inputs.get("hardware") or {}).items()}
        models = {k: Model.model_validate(v) for k, v in (inputs.get("models") or {}).items()}
    except (ValidationError, TypeError, AttributeError, ValueError):
        return []
    return trusted_warnings(rows, hardware, models)
