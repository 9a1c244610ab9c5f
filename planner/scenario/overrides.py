"""Hardware overrides (``hardware.overrides``: hardware id -> {field: value}): a field is a catalog field name
where it is unique (``capex_usd``) or a dotted path (``chip.memory.0.capacity_bytes``); a bare number replaces a
figure's value and marks it a scenario estimate. Each override is applied and validated one at a time, so that an
error names its key (``_OverrideError``)."""

from __future__ import annotations

import functools
import math
from typing import Any

from pydantic import BaseModel, ValidationError

from planner.catalog import DateFigure, Figure, Hardware, did_you_mean
from planner.scenario.messages import _child_type, _describe, _fmt_loc, _is_model, _short, _strip


class _OverrideError(ValueError):
    def __init__(self, key: str, message: str):
        super().__init__(message)
        self.key, self.message = key, message


_OVERRIDE_PROVENANCE = {"source": "scenario", "confidence": "estimate", "basis": "scenario override", "note": None}


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


def _apply_overrides(hw: Hardware, fields: dict[str, Any], top: type[BaseModel] | None = None) -> Hardware:
    """``hw`` with ``fields`` applied one at a time, each re-validated so that an error names its key (``top``:
    the Scenario model, whose sections an unknown field's hint names)."""
    for key, value in fields.items():
        data = hw.model_dump()
        _set_path(data, _override_path(key), value, key)
        try:
            hw = Hardware.model_validate(data)
        except ValidationError as exc:
            err = exc.errors()[0]
            raise _OverrideError(key, f"the override makes {_fmt_loc(err['loc']) or 'the hardware'} invalid: "
                                      f"{_describe(err, Hardware, tuple(err['loc']), top)}") from None
    return hw
