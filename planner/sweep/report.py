"""A sweep's table in words and on disk: how many variants solved, the spread of the cost, how often each system is
in the plan, what moves the cost most, the base plan's regret and the robust fleet; sweep.parquet (with the sweep's
provenance as metadata), sweep.csv and robust.json."""

from __future__ import annotations

from pathlib import Path

from planner import __version__, catalog
from planner.report.files import atomic_write, spreadsheet_safe
from planner.report.render import to_json
from planner.report.summary import people
from planner.sweep.robust import distribution


RESULT_COLUMNS = ("variant", "status", "objective_usd_per_year", "power_mw", "facility_power_mw", "error",
                  "net_present_cost_usd", "myopic_net_present_cost_usd")
RESULT_PREFIXES = ("racks.", "cost_usd_per_mtok.", "served_share.", "base_plan_", "robust_plan_", "first_order.")


def cost_column(table) -> str:
    """The cost every summary ranks by: the yearly cost, or a build-out's expected net present cost."""
    return "objective_usd_per_year" if "objective_usd_per_year" in table.columns else "net_present_cost_usd"


def cost_unit(table) -> str:
    """The unit suffix of the tornado's keys: usd_per_year, or usd for a build-out's present cost."""
    return "usd_per_year" if cost_column(table) == "objective_usd_per_year" else "usd"


def cost_label(table) -> str:
    return "USD/year" if cost_column(table) == "objective_usd_per_year" else "USD of present cost"


def axis_columns(table) -> list[str]:
    """The table's axis columns: every column that is not a result."""
    return [c for c in table.columns if c not in RESULT_COLUMNS and not c.startswith(RESULT_PREFIXES)]


def system_shares(table) -> dict[str, float]:
    """Per system, the share of solved variants whose plan buys it (a build-out's: in its first order; most often
    first; never-bought ones left out)."""
    import polars as pl

    solved = table.filter(pl.col(cost_column(table)).is_not_null())
    if not len(solved):
        return {}
    prefix = "racks." if cost_column(table) == "objective_usd_per_year" else "first_order."
    share = {c.removeprefix(prefix): float((solved[c] > 0).mean()) for c in table.columns if c.startswith(prefix)}
    return {k: v for k, v in sorted(share.items(), key=lambda kv: -kv[1]) if v > 0}


def regret_unit(table) -> str | None:
    """The unit suffix of the table's regret columns (usd_per_year or w), or None without them."""
    for c in table.columns:
        if c.startswith("base_plan_regret_"):
            return c.removeprefix("base_plan_regret_")
    return None


def summary_lines(table, robust: dict | None = None) -> list[str]:
    import polars as pl

    n = len(table)
    counts = table.group_by("status").len().sort("status").to_dicts()
    lines = [f"{n:,} variants: " + ", ".join(f"{c['len']:,} {c['status']}" for c in counts)]
    column, label = cost_column(table), cost_label(table)
    solved = table.filter(pl.col(column).is_not_null())
    if len(solved):
        cost = solved[column]
        lines.append(f"{label}: min {people(cost.min(), 'USD')}, median {people(cost.median(), 'USD')}, "
                     f"max {people(cost.max(), 'USD')}")
        used = system_shares(table)
        where = "in the plan" if column == "objective_usd_per_year" else "in the first order"
        lines.append(f"{where}: " + (", ".join(f"{k} {100 * v:.3g}%" for k, v in used.items()) or "no system"))
    tornado, unit = sensitivity(table, axis_columns(table)), cost_unit(table)
    if tornado:
        lines.append(f"what moves the cost most (mean {label}, lower half of an axis's values -> upper half): "
                     + "; ".join(f"{r['axis']} {people(r['low_half_' + unit], 'USD')} -> "
                                 f"{people(r['high_half_' + unit], 'USD')}" for r in tornado[:5]))
    regret = regret_unit(table)
    if regret is not None and len(solved):
        lines.append(base_regret_line(solved, regret))
    if robust is not None:
        lines += robust_lines(robust)
    failed = table.filter(pl.col("error").is_not_null())
    if len(failed):
        lines.append(f"first not solved: variant {failed['variant'][0]}: {failed['error'][0]}")
    lines.append("(every row: --format csv|json, or --out DIR for sweep.parquet, sweep.csv, sensitivity.csv and "
                 "systems.csv)")
    return lines


def _amount(x, unit: str) -> str:
    if x is None:
        return "-"
    return people(x, "USD") + "/year" if unit == "usd_per_year" else people(x / 1e6, "MW") + " IT"


def base_regret_line(solved, unit: str) -> str:
    """The base plan in words: how often its racks serve a variant as bought, and its regret's spread."""
    serves = solved["base_plan_serves"].drop_nulls()
    regret = distribution(solved[f"base_plan_regret_{unit}"].to_list())
    text = (f"the base plan's racks serve {100 * float(serves.mean()):.3g}% of the solved variants as bought"
            if len(serves) else "the base scenario has no plan")
    if regret["samples"]:
        what = "yearly cost" if unit == "usd_per_year" else "IT power"
        text += (f"; its regret (its {what} less each variant's optimum, over {regret['samples']}"
                 f" variants): mean {_amount(regret['mean'], unit)}, p90 {_amount(regret['p90'], unit)}, "
                 f"max {_amount(regret['max'], unit)}")
    elif len(serves):
        text += "; no regret where it falls short (no late racks: set robustness.late_premium to price them)"
    return text


def robust_lines(robust: dict) -> list[str]:
    """The robust fleet in words: what it buys beside the base plan, and both plans' objective and regret."""
    unit = robust["unit"]
    late = robust["late_premium"]
    buys = ", ".join(f"{r['robust_racks']} x {r['hardware']} (base {r['base_racks']})" for r in robust["fleet"])
    s = robust["solver"]
    lines = [f"robust fleet ({robust['statistic']} over {robust['samples']} variants, "
             + ("no late racks" if late is None else f"late racks at +{100 * late:.3g}%")
             + f"): {buys}; {robust['statistic']} {_amount(robust['robust_value'], unit)}"
             + f" ({s['name']} {s['status']}, gap {100 * (s['relative_gap'] or 0):.2g}%)"]
    for name in ("base_plan", "robust_plan"):
        d = robust[name]
        if d["regret"]["samples"]:
            lines.append(f"  {name.replace('_', ' ')}: mean {_amount(d['objective']['mean'], unit)}, p90 "
                         f"{_amount(d['objective']['p90'], unit)}; regret mean {_amount(d['regret']['mean'], unit)}, "
                         f"p90 {_amount(d['regret']['p90'], unit)}, max {_amount(d['regret']['max'], unit)} "
                         f"(over {d['regret']['samples']} variants)")
    return lines


def write_sweep(table, out: Path, sweep_file, robust: dict | None = None) -> None:
    """sweep.parquet (metadata: the sweep file, planner and catalog versions) and sweep.csv, the tornado's rows
    (sensitivity.csv, where an axis splits the variants) and each system's share of the plans (systems.csv), each
    atomically; with a robust fleet, robust.json (its summary)."""
    import io

    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    buf = io.BytesIO()
    table.write_parquet(buf, metadata={"planner.sweep": str(sweep_file), "planner.version": __version__,
                                       "planner.catalog_version": catalog.CATALOG_VERSION})
    atomic_write(out / "sweep.parquet", buf.getvalue())
    atomic_write(out / "sweep.csv", spreadsheet_safe(table).write_csv().encode("utf-8"))
    import polars as pl

    tornado = sensitivity(table, axis_columns(table))
    if tornado:
        atomic_write(out / "sensitivity.csv", pl.DataFrame(tornado).write_csv().encode("utf-8"))
    shares = system_shares(table)
    atomic_write(out / "systems.csv", pl.DataFrame({"hardware": list(shares), "share_of_variants": list(
        shares.values())}, schema={"hardware": pl.Utf8, "share_of_variants": pl.Float64}).write_csv().encode("utf-8"))
    if robust is not None:
        atomic_write(out / "robust.json", (to_json(robust) + "\n").encode("utf-8"))


def sensitivity(table, axes: list[str]) -> list[dict]:
    """A tornado's rows, widest first: for each axis, the mean cost (``low_half_<unit>``, ``high_half_<unit>`` and
    ``swing_<unit>``: usd_per_year, or usd for a build-out's present cost) of the solved variants in the lower and the upper half of its values (the axis's
    main effect over the other axes' spread), and their difference."""
    import polars as pl

    column, unit = cost_column(table), cost_unit(table)
    solved = table.filter(pl.col(column).is_not_null())
    rows = []
    for axis in axes:
        if axis not in solved.columns or not len(solved) or not solved[axis].dtype.is_numeric():
            continue
        middle = solved[axis].median()
        low = solved.filter(pl.col(axis) < middle)[column]
        high = solved.filter(pl.col(axis) > middle)[column]
        if not len(low) or not len(high):
            continue
        rows.append({"axis": axis, f"low_half_{unit}": float(low.mean()), f"high_half_{unit}": float(high.mean()),
                     f"swing_{unit}": float(high.mean() - low.mean())})
    return sorted(rows, key=lambda r: -abs(r[f"swing_{unit}"]))
