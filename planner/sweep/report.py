"""A sweep's table in words and on disk: how many variants solved, the spread of the cost, how often each system is
in the plan; sweep.parquet (with the sweep's provenance as metadata) and sweep.csv."""

from __future__ import annotations

from pathlib import Path

from planner.report.summary import people


def summary_lines(table) -> list[str]:
    import polars as pl

    n = len(table)
    counts = table.group_by("status").len().sort("status").to_dicts()
    lines = [f"{n:,} variants: " + ", ".join(f"{c['len']:,} {c['status']}" for c in counts)]
    solved = table.filter(pl.col("objective_usd_per_year").is_not_null())
    if len(solved):
        cost = solved["objective_usd_per_year"]
        lines.append(f"USD/year: min {people(cost.min(), 'USD')}, median {people(cost.median(), 'USD')}, "
                     f"max {people(cost.max(), 'USD')}")
        racks = [c for c in table.columns if c.startswith("racks.")]
        share = {c.removeprefix("racks."): float((solved[c] > 0).mean()) for c in racks}
        used = {k: v for k, v in sorted(share.items(), key=lambda kv: -kv[1]) if v > 0}
        lines.append("in the plan: " + (", ".join(f"{k} {100 * v:.3g}%" for k, v in used.items()) or "no system"))
    axes = [c for c in table.columns if c not in ("variant", "status", "objective_usd_per_year", "power_mw",
                                                   "facility_power_mw", "error") and "." in c
            and not c.startswith(("racks.", "cost_usd_per_mtok.", "served_share."))]
    tornado = sensitivity(table, axes)
    if tornado:
        lines.append("what moves the cost most (mean USD/year, lower half of an axis's values -> upper half): "
                     + "; ".join(f"{r['axis']} {people(r['low_half_usd_per_year'], 'USD')} -> "
                                 f"{people(r['high_half_usd_per_year'], 'USD')}" for r in tornado[:5]))
    failed = table.filter(pl.col("error").is_not_null())
    if len(failed):
        lines.append(f"first not solved: variant {failed['variant'][0]}: {failed['error'][0]}")
    lines.append("(every row: --format csv|json, or --out DIR for sweep.parquet and sweep.csv)")
    return lines


def write_sweep(table, out: Path, sweep_file) -> None:
    """sweep.parquet (metadata: the sweep file, planner and catalog versions) and sweep.csv, each atomically."""
    import io

    from planner import __version__, catalog
    from planner.report.files import atomic_write, spreadsheet_safe

    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    buf = io.BytesIO()
    table.write_parquet(buf, metadata={"planner.sweep": str(sweep_file), "planner.version": __version__,
                                       "planner.catalog_version": catalog.CATALOG_VERSION})
    atomic_write(out / "sweep.parquet", buf.getvalue())
    atomic_write(out / "sweep.csv", spreadsheet_safe(table).write_csv().encode("utf-8"))


def sensitivity(table, axes: list[str]) -> list[dict]:
    """A tornado's rows, widest first: for each axis, the mean yearly cost of the solved variants in the lower and
    the upper half of its values (the axis's main effect over the other axes' spread), and their difference."""
    import polars as pl

    solved = table.filter(pl.col("objective_usd_per_year").is_not_null())
    rows = []
    for axis in axes:
        if axis not in solved.columns or not len(solved) or not solved[axis].dtype.is_numeric():
            continue
        middle = solved[axis].median()
        low = solved.filter(pl.col(axis) < middle)["objective_usd_per_year"]
        high = solved.filter(pl.col(axis) > middle)["objective_usd_per_year"]
        if not len(low) or not len(high):
            continue
        rows.append({"axis": axis, "low_half_usd_per_year": float(low.mean()),
                     "high_half_usd_per_year": float(high.mean()),
                     "swing_usd_per_year": float(high.mean() - low.mean())})
    return sorted(rows, key=lambda r: -abs(r["swing_usd_per_year"]))
