"""The sweep file (docs/INTERFACE.md 2.9): a base scenario, axes that name scenario fields or uncertain figures,
and how to sample them; validated with errors that name the file, the line where known and the field.

An axis names one of:

* ``path``: any scenario field, in the syntax of ``solve --set`` (``site.power_budget_mw``,
  ``workloads.chat.requests_per_s``, ``hardware.overrides.vr-nvl72.capex_usd``, ``efficiency.nvidia-gpu.
  bandwidth_efficiency``);
* ``uncertain``: an uncertain figure of the performance model by its band name (``planner estimate``'s
  ``band.parameters``): ``HARDWARE.FIELD`` (an estimated catalog figure, e.g. ``groq3-lpx.scale_up.latency_s``) or
  ``FAMILY.PARAMETER`` (an efficiency, e.g. ``groq3-lpu.kernel_latency_s``); its range is the band's low-high
  unless the axis gives its own.

Its values are a list (``values``), a range (``range: [LO, HI]``, ``steps`` points on a grid), or a distribution
(``distribution: {uniform: [LO, HI]}`` or ``{normal: [MEAN, SD]}``).
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any, Literal

from annotated_types import Ge, Gt, Le
from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from planner import yaml_io
from planner.errors import InputError
from planner.inputs import read_bytes_limited


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Distribution(_Strict):
    uniform: tuple[float, float] | None = Field(None, description="[LO, HI]")
    normal: tuple[float, float] | None = Field(None, description="[MEAN, SD]")

    @model_validator(mode="after")
    def _one(self) -> Distribution:
        if (self.uniform is None) == (self.normal is None):
            raise ValueError("give exactly one of uniform: [LO, HI] and normal: [MEAN, SD]")
        if self.uniform is not None and not self.uniform[0] < self.uniform[1]:
            raise ValueError(f"uniform: expected LO < HI, got {list(self.uniform)}")
        if self.normal is not None and not self.normal[1] > 0:
            raise ValueError(f"normal: expected SD > 0, got {self.normal[1]}")
        return self


class Axis(_Strict):
    path: str | None = Field(None, description="a scenario field, as solve --set names it")
    uncertain: str | None = Field(None, description="an uncertain figure: HARDWARE.FIELD or FAMILY.PARAMETER")
    values: list[Any] | None = Field(None, min_length=1, description="the values to take")
    range: tuple[float, float] | None = Field(None, description="[LO, HI]")
    steps: Annotated[int, Ge(2), Le(1000)] = Field(5, description="grid points of a range (default 5)")
    distribution: Distribution | None = Field(None, description="for lhs and monte_carlo sampling")

    @model_validator(mode="after")
    def _consistent(self) -> Axis:
        if (self.path is None) == (self.uncertain is None):
            raise ValueError("give exactly one of path (a scenario field) and uncertain (an uncertain figure)")
        given = [k for k in ("values", "range", "distribution") if getattr(self, k) is not None]
        if len(given) > 1:
            raise ValueError(f"give one of values, range and distribution, not {' and '.join(given)}")
        if not given and self.path is not None:
            raise ValueError("a path axis needs values, range or distribution")
        if self.range is not None and not self.range[0] < self.range[1]:
            raise ValueError(f"range: expected [LO, HI] with LO < HI, got {list(self.range)}")
        return self

    @property
    def name(self) -> str:
        return self.path or self.uncertain


class Samples(_Strict):
    method: Literal["grid", "lhs", "monte_carlo"] = Field("grid", description="full grid, Latin hypercube or "
                                                          "Monte Carlo")
    n: Annotated[int, Gt(0), Le(1_000_000)] | None = Field(None, description="samples (lhs, monte_carlo)")
    seed: Annotated[int, Ge(0)] = Field(0, description="random seed: the same seed, the same variants")

    @model_validator(mode="after")
    def _n(self) -> Samples:
        if self.method != "grid" and self.n is None:
            raise ValueError(f"method {self.method} needs n, the number of samples")
        return self


class Robustness(_Strict):
    late_premium: Annotated[float, Ge(0)] | None = Field(
        None, description="a rack bought once a variant is known costs (1 + this) x its price (e.g. 0.3 for "
        "expediting, or renting the shortfall); absent: no late racks, a fleet must serve as bought")
    solver: Literal["scip", "highs", "cp-sat"] = Field(
        "scip", description="the robust fleet's solver (its percentile rows are big-M rows, which SCIP proves "
        "where HiGHS stalls: docs/PERFORMANCE.md)")
    time_limit_s: Annotated[float, Gt(0)] | None = Field(
        None, description="the robust fleet's time limit [default: the base scenario's, at least 60 s]")
    relative_gap: Annotated[float, Ge(0), Le(1)] | None = Field(
        None, description="the robust fleet's gap [default: the base scenario's]")


class SweepSpec(_Strict):
    base: str = Field(description="the base scenario, a path relative to the sweep file")
    axes: list[Axis] = Field(min_length=1, description="what varies")
    samples: Samples = Field(default_factory=Samples, description="how the variants are drawn")
    robustness: Robustness = Field(default_factory=lambda: Robustness(),
                                   description="how regret and robust fleets are computed")

    @model_validator(mode="after")
    def _unique(self) -> SweepSpec:
        names = [a.name for a in self.axes]
        for i, n in enumerate(names):
            if names.index(n) != i:
                raise ValueError(f"axis {n!r} appears twice")
        return self


def load_sweep(path) -> tuple[SweepSpec, Path]:
    """The validated sweep file and its base scenario's path; InputError names the file, the line and the field.
    The file is read as a scenario is (``planner.yaml_io``: at most ``MAX_FILE_BYTES``, UTF-8, hostile YAML
    refused)."""
    path = Path(path)
    text = yaml_io.decode(read_bytes_limited(path, yaml_io.MAX_FILE_BYTES, "a sweep YAML file"), str(path))
    data, root = yaml_io.parse(text, str(path), "a sweep file")
    if not isinstance(data, dict):
        raise InputError("expected a mapping of base, axes and samples", file=str(path),
                         line=yaml_io.line_of(root, ()))
    yaml_io.check_keys_are_text(root, str(path))
    try:
        spec = SweepSpec.model_validate(data)
    except ValidationError as exc:
        err = exc.errors()[0]
        parts = tuple(p for p in err["loc"] if not str(p).startswith(("function-", "tuple[")))
        loc = ".".join(str(p) for p in parts)
        msg = err["msg"].removeprefix("Value error, ")
        if err["type"] == "extra_forbidden":
            msg = "unknown field"
        raise InputError(msg, file=str(path), line=yaml_io.line_of(root, parts), field=loc or None) from None
    base = Path(spec.base)
    return spec, base if base.is_absolute() else path.parent / base
