"""Turning result rows into terminal tables, JSON and CSV. Rows are lists of flat dicts; Polars does CSV."""

from __future__ import annotations

import json
import math
import sys
from typing import Iterable


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


def table(rows: list[dict], title: str | None = None, columns: Iterable[str] | None = None,
          file=None, labels: dict[str, str] | None = None) -> None:
    """Print rows as a rich table (plain text when not a terminal); ``labels`` are shorter headers for columns."""
    from rich.console import Console
    from rich.table import Table

    import shutil

    cols = list(columns) if columns else (list(rows[0].keys()) if rows else [])
    t = Table(title=title, show_lines=False, header_style="bold")
    for c in cols:  # fold, never crop: an id or a number cut short is worse than a taller row
        t.add_column((labels or {}).get(c, c),
                     justify="right" if rows and isinstance(rows[0].get(c), (int, float)) else "left",
                     overflow="fold")
    for r in rows:
        t.add_row(*(fmt(r.get(c)) for c in cols))
    # COLUMNS where set, the terminal's width, else 120 when piped
    width = shutil.get_terminal_size(fallback=(120, 24)).columns
    Console(file=file or sys.stdout, width=width).print(t)


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
