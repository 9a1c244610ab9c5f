"""Reading a measurement or result file defensively (docs/RELIABILITY.md, issue 28): one reader for every file the
measurement commands take.

* Size: a file over ``MAX_FILE_BYTES`` is refused before it is read (``planner.inputs.read_bytes_limited``: only
  regular files, at most the limit plus one byte read), and a file of more than ``MAX_ROWS`` rows or runs is
  refused before any row is validated, scored or imported.
* Decoding: the bytes must be UTF-8 (a leading byte-order mark is dropped); anything else is refused naming the
  line and byte offset of the first bad byte.
* Structure: JSON nested deeper than ``MAX_DEPTH`` is refused (never a ``RecursionError``), and a document that
  must be a mapping and is a list or a scalar is refused naming the run.
* Fields: ``number`` reads one numeric field of one run: a bool, a text, a NaN or an infinity, a value of the
  wrong sign is refused naming the file, the run and the field.

Every refusal is a ``planner.errors.InputError`` (exit 2).
"""

from __future__ import annotations

import json
import math
from pathlib import Path

from planner.errors import InputError
from planner.inputs import read_bytes_limited

MAX_FILE_BYTES = 256 * 1024 * 1024  # a result file with every request's latencies stays well under this
MAX_ROWS = 10_000  # rows of a measurement table, runs of a result file: a benchmark campaign is hundreds
MAX_DEPTH = 64  # nesting of a JSON or YAML document (the tools' files nest 4 deep)


def read_text(path, expected: str, limit: int | None = None) -> str:
    """The text of ``path``: at most ``limit`` bytes (``MAX_FILE_BYTES``), strictly UTF-8 (InputError naming the
    file and the first bad byte)."""
    raw = read_bytes_limited(Path(path), limit or MAX_FILE_BYTES, expected)
    try:
        return raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = raw[:exc.start].count(b"\n") + 1
        raise InputError(f"is not UTF-8 text (byte {exc.start}: {exc.reason}); expected {expected}",
                         file=str(path), line=line) from None


def too_deep(value, limit: int = MAX_DEPTH) -> bool:
    """Whether ``value`` (parsed JSON or YAML) nests lists and mappings deeper than ``limit`` (no recursion)."""
    stack = [(value, 1)]
    seen = set()
    while stack:
        item, depth = stack.pop()
        if isinstance(item, (dict, list, tuple)):
            if depth > limit:
                return True
            if id(item) in seen:  # a YAML alias shares the node: walk it once
                continue
            seen.add(id(item))
            children = item.values() if isinstance(item, dict) else item
            stack.extend((c, depth + 1) for c in children if isinstance(c, (dict, list, tuple)))
    return False


def deep_error(path, where: str = "") -> InputError:
    return InputError(f"{where}is nested more than {MAX_DEPTH} levels deep; no benchmark result or measurement "
                      f"file is", file=str(path))


def parse_json(text: str, path, where: str = ""):
    """``json.loads`` with the depth limit: ValueError (not JSON) passes to the caller, too deep is an InputError."""
    try:
        value = json.loads(text)
    except RecursionError:
        raise deep_error(path, where) from None
    if too_deep(value):
        raise deep_error(path, where)
    return value


def kind_of(value) -> str:
    return {dict: "a mapping", list: "a list", str: "text", bool: "true/false", type(None): "null"}.get(
        type(value), "a number" if isinstance(value, (int, float)) else type(value).__name__)


def mapping(value, path, run: int, field: str | None = None) -> dict:
    """``value`` (a run, or its ``field``) as a mapping: None is empty, anything else an InputError."""
    if value is None and field is not None:
        return {}
    if not isinstance(value, dict):
        where = f"run {run}" + (f" field {field!r}" if field else "")
        raise InputError(f"{where} is {kind_of(value)}; expected a JSON object (a mapping of fields)",
                         file=str(path))
    return value


def number(value, path, run: int, field: str, *, positive: bool = False, nonnegative: bool = False) -> float:
    """One numeric field of a run as a finite float; InputError naming the file, the run and the field."""
    where = f"run {run} field {field!r}"
    if isinstance(value, bool) or not isinstance(value, (int, float, str)):
        raise InputError(f"{where} is {kind_of(value)} ({_shown(value)}); expected a number", file=str(path))
    try:
        x = float(value)
    except (ValueError, OverflowError):
        raise InputError(f"{where} is {_shown(value)}; expected a number", file=str(path)) from None
    if not math.isfinite(x):
        raise InputError(f"{where} is {_shown(value)}; expected a finite number", file=str(path))
    if positive and x <= 0:
        raise InputError(f"{where} is {_shown(value)}; expected a number above 0", file=str(path))
    if nonnegative and x < 0:
        raise InputError(f"{where} is {_shown(value)}; expected a number of 0 or more", file=str(path))
    return x


def _shown(value) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def row_cap(count: int, path, what: str = "rows") -> None:
    if count > MAX_ROWS:
        raise InputError(f"has more than {MAX_ROWS} {what}; split it (each command reads at most {MAX_ROWS})",
                         file=str(path))


def text(value) -> str | None:
    """A text field as printable text (None for anything that is not text; a lone surrogate from a JSON escape
    is replaced, so the row can be written as UTF-8)."""
    if not isinstance(value, str):
        return None
    return value.encode("utf-8", "replace").decode("utf-8")


DATE_FORMATS = ("%Y%m%d-%H%M%S", "%Y-%m-%dT%H:%M:%S", "%Y-%m-%d %H:%M:%S", "%Y-%m-%d")


def date(value, path, run: int, field: str):
    """A run's date (vllm's 20260310-143012, or ISO 8601) as a date; None when absent."""
    import datetime as _dt

    if value is None:
        return None
    if isinstance(value, str):
        try:
            return _dt.datetime.fromisoformat(value.strip().replace("Z", "+00:00")).date()
        except (ValueError, OverflowError):
            pass
        try:  # a longer ISO timestamp (nanoseconds, another zone form): its date
            return _dt.date.fromisoformat(value.strip()[:10])
        except (ValueError, OverflowError):
            pass
        for fmt in DATE_FORMATS:
            try:
                return _dt.datetime.strptime(value.strip(), fmt).date()
            except (ValueError, OverflowError):
                continue
    raise InputError(f"run {run} field {field!r} is {_shown(value)}; expected a date such as 20260310-143012 or "
                     f"2026-03-10", file=str(path))
