"""One reader of a written plan's allocation rows (issue 43: check, export and simulate each read them their own
way, and a tampered number, a NaN, a text or a null, was a traceback in export and simulate). ``row_problems``
says what is wrong with a row, field by field, with what was expected; ``check`` reports each as a failed check,
``read_rows`` (export, simulate) raises the first as an InputError naming ``allocation[i].FIELD``. The ranges
bound the work a plan may ask of the simulator and the export (10^9 replicas hung the simulator)."""

from __future__ import annotations

import math

from planner.errors import InputError
from planner.vocabulary import API_KIND, PRECISIONS

ROLES = ("prefill", "decode", "colocated", "attention", "ffn", API_KIND)
MAX_REPLICAS = 1.0e6  # a row's replicas: a million 8-chip replicas is eight million chips, past any site
MAX_CHIPS = 100_000  # chips of one replica (the largest scale-up domains hold hundreds)
MAX_BATCH = 1_000_000  # streams one replica runs at once
MAX_DRAFT = 64  # draft tokens a step
# field -> (kind, low, high): kind "count" a whole number, "number" a finite real, "text", "flag" a bool (0/1)
FIELDS = {
    "workload": ("text", None, None), "role": ("text", None, None), "hardware": ("text", None, None),
    "replicas": ("number", 0.0, MAX_REPLICAS),
}
HARDWARE_FIELDS = {  # of a row that runs on hardware (not a hosted API)
    "chips_per_replica": ("count", 1, MAX_CHIPS), "tensor_parallel": ("count", 1, MAX_CHIPS),
    "pipeline_parallel": ("count", 1, MAX_CHIPS), "batch": ("count", 1, MAX_BATCH),
    "draft_tokens": ("count", 0, MAX_DRAFT), "expert_parallel": ("flag", None, None),
    "precision": ("text", None, None), "acceptance": ("number", 0.0, 1.0),
}


def field_problem(value, kind: str, low, high) -> str | None:
    """What is wrong with one field's value, or None."""
    if kind == "text":
        return None if isinstance(value, str) and value else f"expected a name, got {value!r}"
    if kind == "flag":
        return None if isinstance(value, bool) or value in (0, 1) else f"expected true or false, got {value!r}"
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        what = "a whole number" if kind == "count" else "a finite number"
        return f"expected {what} from {low} to {high:g}, got {value!r}"
    if kind == "count" and not float(value).is_integer():
        return f"expected a whole number from {low} to {high:g}, got {value!r}"
    if not low <= value <= high:
        return f"expected {'a whole number' if kind == 'count' else 'a number'} from {low} to {high:g}, got {value!r}"
    return None


def row_problems(row) -> list[tuple[str, str]]:
    """(field, what is wrong) for each field of an allocation row that a reader cannot take; [] for a sound row.
    A field the row lacks is a problem where every row carries it."""
    if not isinstance(row, dict):
        return [("", f"expected a row (a mapping), got {type(row).__name__}")]
    out = []
    fields = dict(FIELDS)
    if row.get("role") not in (API_KIND, "ffn"):
        fields.update(HARDWARE_FIELDS)
    for name, (kind, low, high) in fields.items():
        if name not in row:
            if name not in ("acceptance", "draft_tokens"):  # older plans: no speculation fields
                out.append((name, "missing"))
            continue
        problem = field_problem(row[name], kind, low, high)
        if problem:
            out.append((name, problem))
    if not out and row["role"] not in ROLES:
        out.append(("role", f"expected one of {', '.join(ROLES)}, got {row['role']!r}"))
    if not out and "precision" in fields and row["precision"] not in PRECISIONS:
        out.append(("precision", f"expected one of {', '.join(PRECISIONS)}, got {row['precision']!r}"))
    return out


def read_rows(rows, where: str = "allocation", hardware=None) -> list[dict]:
    """The allocation rows, each checked by ``row_problems`` (and, given ``hardware``, the plan's systems, that
    each row's system is one of them): an InputError naming ``where[i].FIELD`` and what was expected at the first
    that is not sound."""
    if not isinstance(rows, list):
        raise InputError(f"expected a list of rows, got {type(rows).__name__}", field=where)
    for i, row in enumerate(rows):
        problems = row_problems(row)
        if not problems and hardware is not None and row["role"] != API_KIND and row["hardware"] not in hardware:
            problems = [("hardware", f"expected one of the plan's systems ({', '.join(sorted(hardware))}), got "
                                     f"{row['hardware']!r}")]
        if problems:
            name, what = problems[0]
            raise InputError(what, field=f"{where}[{i}]" + (f".{name}" if name else ""))
    return rows
