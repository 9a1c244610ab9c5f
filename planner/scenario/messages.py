"""Validation errors in words: a pydantic error becomes "file:line: field: what was wrong, what was expected".

:func:`_problem` is the error a scenario's own validators raise (a message at a location relative to the model);
:func:`_describe` words any pydantic error; :func:`_validation_error` turns a ``ValidationError`` of the whole
scenario into one ``InputError`` at the first problem's line (``planner.yaml_io.line_of``), the next nine listed
under it. The model whose top-level sections a hint names (``pue belongs under finance``) is passed in as ``top``
(the ``Scenario`` class), so that this module sits below the schema.
"""

from __future__ import annotations

import types
from collections.abc import Mapping
from typing import Annotated, Any, Union, get_args, get_origin

import yaml
from pydantic import BaseModel, ValidationError
from pydantic_core import PydanticCustomError

from planner.catalog import did_you_mean
from planner.errors import InputError
from planner.yaml_io import fmt_loc as _fmt_loc
from planner.yaml_io import line_of as _line_of


def _problem(message: str, *loc: str | int) -> PydanticCustomError:
    """A validation error at ``loc`` (relative to the model that raises it); load_scenario maps it to a line."""
    return PydanticCustomError("scenario", "{message}", {"message": message, "loc": loc})


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


_BOUNDS = {"greater_than": ">", "greater_than_equal": ">=", "less_than": "<", "less_than_equal": "<="}


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


def _section_of(name: str, here: tuple, top: type[BaseModel]) -> str | None:
    """The top-level section of the scenario (``top``, the Scenario model) that has a field ``name``, if it is not
    where it was written (``site.pue`` -> ``finance``)."""
    for section, info in top.model_fields.items():
        tp = _strip(info.annotation)
        fields = getattr(tp, "model_fields", None)
        if fields and name in fields and tuple(here) != (section,):
            return section
    return None


def _describe(err: Mapping[str, Any], root_type, loc: tuple, top: type[BaseModel] | None = None) -> str:
    """What was wrong and what was expected, in words; ``loc`` is relative to ``root_type``. An unknown field
    that one of ``top``'s sections has says which (none without ``top``)."""
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
        elsewhere = _section_of(str(loc[-1]), loc[:-1], top) if top is not None else None
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


def _validation_error(exc: ValidationError, top: type[BaseModel], file: str, root: yaml.Node | None, set_paths=(),
                      set_by: str = "--set") -> InputError:
    """One InputError for a ValidationError of a whole scenario (``top``, the Scenario model) read from ``root``
    (None: no file, no lines); a problem under a path ``set_paths`` set says so (``after --set PATH``)."""
    problems, seen = [], set()
    for err in exc.errors():
        loc = _clean_loc(tuple(err["loc"]) + tuple((err.get("ctx") or {}).get("loc", ())))
        if loc in seen:  # a union's other members fail at the same place: the first says it
            continue
        seen.add(loc)
        message = _describe(err, top, loc, top)
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
