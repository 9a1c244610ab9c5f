"""Turning result rows into terminal tables, JSON and CSV. Rows are lists of flat dicts; Polars does CSV.

Terminal tables fit the terminal (``COLUMNS``, else the terminal's width, else 120 when piped): a cell is never cut
mid-word; a table too wide for the width leaves out the columns it may drop (``drop``, named under the table)
before it folds anything; ids longer than ``ID_WIDTH`` are shortened in the middle (``short_id``), the same way in
every table and in the answer's lines."""

from __future__ import annotations

import json
import math
import sys
from typing import Iterable

ID_WIDTH = 20  # the longest id shown whole; catalog ids and the shipped scenarios' workload names fit
ID_COLUMNS = ("id", "hardware", "model", "workload", "ffn_hardware", "system")
GAP = 2  # characters between two columns of a terminal table (rich's SIMPLE_HEAD box, padding collapsed)


def short_id(text, width: int = ID_WIDTH):
    """An id of at most ``width`` characters: a longer one keeps its start and end around an ellipsis
    (``meta-llama/L…70B-Instruct``), so that ids that differ at either end stay apart. Anything else as given."""
    if not isinstance(text, str) or len(text) <= width:
        return text
    if "+" in text:  # a pair A+F: each side on its own
        return "+".join(short_id(part, width) for part in text.split("+"))
    head = width // 2
    return text[:head] + "…" + text[len(text) - (width - 1 - head):]


def shorten_ids(text: str, ids: Iterable[str], width: int = ID_WIDTH) -> str:
    """``text`` with each of ``ids`` longer than ``width`` shortened by ``short_id`` (the longest first, so that
    an id holding another is shortened whole)."""
    for i in sorted({i for i in ids if isinstance(i, str) and len(i) > width}, key=len, reverse=True):
        text = text.replace(i, short_id(i, width))
    return text


def terminal_width() -> int:
    """COLUMNS where set, the terminal's width, else 120 (piped)."""
    import shutil

    return shutil.get_terminal_size(fallback=(120, 24)).columns


def wrap(text: str, width: int | None = None, indent: str = "", first: str = "") -> list[str]:
    """``first`` + ``text`` wrapped to ``width`` at spaces, never inside a word (a word longer than the line stays
    whole on its own line); continuation lines start with ``indent``."""
    import textwrap

    width = width or terminal_width()
    return textwrap.wrap(text, width=max(width, len(indent) + 10), initial_indent=first, subsequent_indent=indent,
                         break_long_words=False, break_on_hyphens=False) or [first.rstrip()]


def fmt(value) -> str:
    """Human formatting for a table cell: 4 significant figures, thousands separators for large numbers."""
    if value is None:
        return "-"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, int):
        return f"{value:,}"
    if isinstance(value, float):
        if not math.isfinite(value):
            return str(value)
        if value == 0:
            return "0"
        mag = abs(value)
        if mag >= 1e3:
            return f"{value:,.0f}"
        if mag >= 1e-3:
            return f"{value:.4g}"
        return f"{value:.3e}"
    return str(value)


def _longest_word(text: str) -> int:
    return max((len(w) for w in text.split()), default=0)


def _longest_line(text: str) -> int:
    return max((len(line) for line in text.splitlines()), default=0)


def fit_columns(cells: dict[str, list[str]], headers: dict[str, str], width: int, drop: Iterable[str] = (),
                wraps: Iterable[str] = ()) -> tuple[list[str], list[str]]:
    """(the columns shown, those left out) so that the table is at most ``width`` wide with no cell cut inside a
    word: each column as wide as its widest cell (a column of ``wraps``: its longest word) and its header's longest
    word; columns of ``drop`` are left out in that order until it fits."""
    cols = list(cells)
    left_out = []
    for c in [c for c in drop if c in cells]:
        if table_width({k: cells[k] for k in cols}, headers, wraps) <= width:
            break
        cols.remove(c)
        left_out.append(c)
    return cols, left_out


def column_parts(cells: dict[str, list[str]], headers: dict[str, str], width: int, keys: list[str],
                 wraps: Iterable[str] = ()) -> list[list[str]]:
    """The table's columns in parts that each fit ``width`` whole, each part the ``keys`` and then the next columns
    in order while they fit (a column too wide even beside the keys alone takes a part of its own); one part, all of
    them, where they fit or no keys are given."""
    cols = list(cells)
    if not keys or table_width(cells, headers, wraps) <= width:
        return [cols]
    parts: list[list[str]] = []
    part = list(keys)
    for c in [c for c in cols if c not in keys]:
        trial = part + [c]
        if len(part) > len(keys) and table_width({k: cells[k] for k in trial}, headers, wraps) > width:
            parts.append(part)
            part = list(keys) + [c]
        else:
            part = trial
    parts.append(part)
    return parts


def column_widths(cells: dict[str, list[str]], headers: dict[str, str], width: int,
                  wraps: Iterable[str] = ()) -> dict[str, int]:
    """Each column's width in a table at most ``width`` wide that cuts no word: at least its need
    (``table_width``), then the room left to the columns of ``wraps`` (their text on fewer lines), then to the
    headers (on fewer lines), each up to its whole length. Empty when even the needs do not fit (rich folds)."""
    wraps = set(wraps)
    need = {c: max([_longest_word(headers[c]), *(_longest_word(s) if c in wraps else _longest_line(s)
                                                  for s in cells[c])]) for c in cells}
    whole = {c: max([len(headers[c]), *map(_longest_line, cells[c])]) for c in cells}
    room = width - sum(need.values()) - GAP * max(len(cells) - 1, 0)
    if room < 0:
        return {}
    out = dict(need)
    for c in sorted(cells, key=lambda c: (c not in wraps, whole[c] - need[c])):
        more = min(room, whole[c] - out[c])
        out[c] += more
        room -= more
    return out


def table_width(cells: dict[str, list[str]], headers: dict[str, str], wraps: Iterable[str] = ()) -> int:
    """The least width of a table of ``cells`` that cuts no word: each column as wide as its widest cell (a column
    of ``wraps``: its longest word) and its header's longest word, ``GAP`` between columns."""
    wraps = set(wraps)
    need = [max([_longest_word(headers[c]), *(_longest_word(s) if c in wraps else _longest_line(s) for s in cells[c])])
            for c in cells]
    return sum(need) + GAP * max(len(need) - 1, 0)


def table(rows: list[dict], title: str | None = None, columns: Iterable[str] | None = None,
          file=None, labels: dict[str, str] | None = None, drop: Iterable[str] = (), wraps: Iterable[str] = (),
          more: str | None = None, keys: Iterable[str] = ()) -> None:
    """Print rows as a rich table sized to the terminal (``terminal_width``); ``labels`` are shorter headers for
    columns. Numbers and ids never wrap; text of the columns in ``wraps`` wraps at spaces. When the table is wider
    than the terminal: with ``keys`` (the columns that name a row), it is printed in parts, each the keys and as
    many of the other columns as fit whole, titled "(part i of n)"; else the columns of ``drop`` are left out in
    that order until it fits and a line under it names them (and ``more``: where to see them); what still does not
    fit folds."""
    from rich import box
    from rich.console import Console
    from rich.table import Table

    cols = list(columns) if columns else (list(rows[0].keys()) if rows else [])
    width = terminal_width()
    cells = {c: [fmt(short_id(r.get(c)) if c in ID_COLUMNS else r.get(c)) for r in rows] for c in cols}
    headers = {c: (labels or {}).get(c, c) for c in cols}
    parts = column_parts(cells, headers, width, [k for k in keys if k in cells], wraps)
    if len(parts) > 1:
        for i, part in enumerate(parts, 1):
            table(rows, f"{title or ''} (part {i} of {len(parts)})".strip(), part, file, labels, (), wraps, more)
        return
    shown, left_out = fit_columns(cells, headers, width, drop, wraps)
    widths = column_widths({c: cells[c] for c in shown}, headers, width, wraps)
    t = Table(title=title, show_lines=False, header_style="bold", box=box.SIMPLE_HEAD, show_edge=False,
              pad_edge=False, collapse_padding=True)
    for c in shown:  # fold, never crop: an id or a number cut short is worse than a taller row
        t.add_column(headers[c], justify="right" if rows and isinstance(rows[0].get(c), (int, float)) else "left",
                     overflow="fold", width=widths.get(c))
    for k in range(len(rows)):
        t.add_row(*(cells[c][k] for c in shown))
    out = Console(file=file or sys.stdout, width=width)
    out.print(t)
    if left_out:
        note = (f"(left out at {width} columns: {', '.join(headers[c] for c in left_out)}"
                + (f"; {more}" if more else "") + ")")
        for line in wrap(note, width):
            out.print(line, highlight=False, markup=False, soft_wrap=True)


def thin_frontier(points: list[dict], most: int = 20) -> list[dict]:
    """At most ``most`` points of each system's frontier (``points`` in order, sorted by ``tps_per_user`` within
    each ``hardware``), chosen evenly along it: both ends, and between them the next point nearest each of
    ``most`` even steps of the path's length, measured in the logarithms of tokens/s per user and tokens/s per MW, each
    scaled to the system's own range (so a crowded stretch of the front gives no more points than a sparse one).
    Every point: ``most`` None."""
    if most is None:
        return list(points)
    by_hw: dict[str, list[dict]] = {}
    for p in points:
        by_hw.setdefault(p["hardware"], []).append(p)
    out = []
    for pts in by_hw.values():
        if len(pts) <= most:
            out.extend(pts)
            continue
        xy = [(math.log(max(p["tps_per_user"], 1e-12)), math.log(max(p["output_tokens_per_s_per_mw"], 1e-12)))
              for p in pts]
        spans = [max(v) - min(v) or 1.0 for v in zip(*xy)]
        along = [0.0]
        for a, b in zip(xy, xy[1:]):
            along.append(along[-1] + math.hypot((b[0] - a[0]) / spans[0], (b[1] - a[1]) / spans[1]))
        keep, k, n = [], -1, len(pts)
        for step in range(most):  # each pick after the last and leaving room for the picks still to come
            target = along[-1] * step / (most - 1)
            k, last = k + 1, n - (most - step)
            while k < last and abs(along[k + 1] - target) <= abs(along[k] - target):
                k += 1
            keep.append(k)
        out.extend(pts[i] for i in keep)
    return out


def to_json(obj) -> str:
    return json.dumps(obj, indent=2, sort_keys=False, allow_nan=False)


def to_csv(rows: list[dict]) -> str:
    import polars as pl

    return pl.DataFrame(rows).write_csv()


def to_markdown(rows: list[dict], columns: Iterable[str] | None = None) -> str:
    """A GitHub-flavoured Markdown table, cells formatted as in the terminal tables."""
    cols = list(columns) if columns else (list(rows[0].keys()) if rows else [])
    lines = ["| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
    lines += ["| " + " | ".join(fmt(r.get(c)).replace("|", "/") for c in cols) + " |" for r in rows]
    return "\n".join(lines) + "\n"
