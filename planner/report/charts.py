"""Charts for reports: matplotlib figures rendered offline (Agg backend, DejaVu Sans, no network, no browser JS).

Why matplotlib: it draws on the machine that runs the planner and writes PNG and SVG files that need nothing
else to be read; its SVG can be inlined in an HTML file, so a report opens on an air-gapped laptop with no
script, style sheet or font to fetch. DejaVu Sans ships inside matplotlib, and with ``svg.fonttype = 'path'``
the text becomes outlines, so the SVG looks the same wherever it is opened. The JavaScript chart libraries
(Plotly, Vega, Bokeh) either fetch their runtime from a CDN or inline megabytes of it, and need a browser to
produce a PNG.

matplotlib is imported inside the functions, so ``planner --help`` and the solver never pay for it.
"""

from __future__ import annotations

import io
import math
import re

from planner.report.files import atomic_write
from planner.vocabulary import TIERS

# Deterministic, self-contained output: text as paths (no font needed by the viewer), fixed ids, no date.
RC = {
    "svg.fonttype": "path",
    "svg.hashsalt": "planner",
    "font.family": "DejaVu Sans",
    "font.size": 10,
    "axes.titlesize": 12,
    "axes.labelsize": 10,
    "legend.fontsize": 9,
    "figure.dpi": 100,
    "savefig.dpi": 150,
    "axes.grid": True,
    "grid.alpha": 0.3,
}
SVG_METADATA = {"Date": None, "Creator": None}
PNG_METADATA = {"Software": None}
TIER_COLOR = "#666666"


def _plt():
    import matplotlib

    matplotlib.use("Agg", force=True)
    import matplotlib.pyplot as plt

    matplotlib.rcParams.update(RC)
    return plt


def _si(x: float, _pos=None) -> str:
    """Tick labels: 1.5k, 2M, 3G (tokens and dollars read better this way than as 1e6)."""
    if x == 0 or not math.isfinite(x):
        return "0"
    for div, suffix in ((1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k")):
        if abs(x) >= div:
            return f"{x / div:.3g}{suffix}"
    return f"{x:.3g}"


def _usd(x: float, _pos=None) -> str:
    return "$" + _si(x)


def frontier_figure(points: list[dict], title: str, chosen: list[dict] | None = None):
    """Output tokens/s per MW (rack power) against tokens/s per user, log x, one line per hardware; the speed
    tiers (planner.vocabulary.TIERS) as labelled dashed verticals; ``chosen`` operating points (dicts with
    hardware, tps_per_user, output_tokens_per_s_per_mw and an optional label) as large markers."""
    from matplotlib.ticker import FuncFormatter

    plt = _plt()
    fig, ax = plt.subplots(figsize=(9, 5.5), layout="constrained")
    hardware = sorted({p["hardware"] for p in points})
    colors = {hw: plt.cm.tab10(i % 10) for i, hw in enumerate(hardware)}
    for hw in hardware:
        mine = sorted((p for p in points if p["hardware"] == hw), key=lambda p: p["tps_per_user"])
        ax.plot([p["tps_per_user"] for p in mine], [p["output_tokens_per_s_per_mw"] for p in mine],
                marker=".", markersize=4, linewidth=1.8, color=colors[hw], label=hw)
    chosen = [c for c in (chosen or []) if c.get("tps_per_user") and c.get("output_tokens_per_s_per_mw")]
    for i, c in enumerate(chosen):
        ax.plot([c["tps_per_user"]], [c["output_tokens_per_s_per_mw"]], linestyle="none", marker="*",
                markersize=14, markeredgecolor="black", markeredgewidth=0.8,
                color=colors.get(c.get("hardware"), "#d62728"),
                label="chosen operating point" if i == 0 else None)
        if c.get("label"):
            ax.annotate(c["label"], (c["tps_per_user"], c["output_tokens_per_s_per_mw"]), xytext=(8, -12),
                        textcoords="offset points", fontsize=8)
    if not points and not chosen:
        ax.text(0.5, 0.5, "no hardware serves this model", ha="center", va="center", transform=ax.transAxes)
    ax.set_xscale("log")
    xs = [p["tps_per_user"] for p in points] + [c["tps_per_user"] for c in chosen]
    lo = min([x for x in xs if x > 0] + [50.0])
    hi = max(xs + [max(TIERS.values()) * 1.2])
    ax.set_xlim(lo / 1.3, hi * 1.3)
    ax.set_ylim(bottom=0)
    for name, speed in TIERS.items():
        ax.axvline(speed, color=TIER_COLOR, linestyle="--", linewidth=1)
        ax.text(speed, 0.98, f" {name}\n ≥{speed:g}", transform=ax.get_xaxis_transform(), ha="left", va="top",
                fontsize=8, color=TIER_COLOR)
    ax.xaxis.set_major_formatter(FuncFormatter(_si))
    ax.yaxis.set_major_formatter(FuncFormatter(_si))
    ax.set_xlabel("speed per user (output tokens/s per user, log scale)")
    ax.set_ylabel("throughput per power (output tokens/s per MW of rack power)")
    ax.set_title(title)
    if hardware or chosen:
        ax.legend(loc="upper right", bbox_to_anchor=(1.0, 0.85), framealpha=0.9)
    return fig


def fleet_figure(plan):
    """Racks, rack power (MW) and capex (USD) by hardware: three bar panels."""
    from matplotlib.ticker import FuncFormatter

    plt = _plt()
    fig, axes = plt.subplots(1, 3, figsize=(10, 3.6), layout="constrained")
    rows = plan.fleet.to_dicts() if plan.fleet is not None and len(plan.fleet) else []
    names = [r["hardware"] for r in rows]
    panels = [("racks", "racks", "racks", None), ("power_mw", "rack power (MW)", "MW", None),
              ("capex_usd", "capex (USD)", "USD", FuncFormatter(_usd))]
    for ax, (key, title, unit, formatter) in zip(axes, panels):
        values = [float(r[key]) for r in rows]
        bars = ax.bar(names, values, color=[plt.cm.tab10(i % 10) for i in range(len(names))])
        ax.set_title(title)
        ax.set_ylabel(unit)
        if formatter:
            ax.yaxis.set_major_formatter(formatter)
        labels = [_usd(v) if key == "capex_usd" else _si(round(v, 2)) for v in values]
        ax.bar_label(bars, labels=labels, fontsize=8, padding=2)
        ax.margins(y=0.15)
        ax.tick_params(axis="x", labelrotation=20)
        ax.grid(axis="x", visible=False)
        if not rows:
            ax.text(0.5, 0.5, "no fleet", ha="center", va="center", transform=ax.transAxes)
    return fig


def cost_breakdown(plan) -> list[dict]:
    """Annual cost per hardware split into capex annuity, energy and maintenance (USD/year); the three add up
    to the fleet's annual_cost_usd (planner.fleet.finance.annual_rack_cost)."""
    if not plan.inputs or plan.fleet is None or not len(plan.fleet):
        return []
    rows = []
    for r in plan.fleet.iter_rows(named=True):
        parts = plan.inputs["rack_costs"][r["hardware"]]
        rows.append({
            "hardware": r["hardware"],
            "capex_annuity_usd_per_year": r["racks"] * parts["capex_annuity"],
            # the racks' floor, and what their replicas draw above it (OPTIMIZER.md 12)
            "energy_usd_per_year": r["racks"] * parts["energy"] + (r.get("energy_above_floor_usd_per_year") or 0.0),
            "maintenance_usd_per_year": r["racks"] * parts["maintenance"],
        })
    for row in rows:
        row["total_usd_per_year"] = (row["capex_annuity_usd_per_year"] + row["energy_usd_per_year"]
                                     + row["maintenance_usd_per_year"])
    return rows


COST_PARTS = [("capex_annuity_usd_per_year", "capex annuity"), ("energy_usd_per_year", "energy"),
              ("maintenance_usd_per_year", "maintenance")]


def cost_figure(plan):
    """Annual cost by hardware, stacked: capex annuity, energy, maintenance (USD/year)."""
    from matplotlib.ticker import FuncFormatter

    plt = _plt()
    rows = cost_breakdown(plan)
    fig, ax = plt.subplots(figsize=(8, 4), layout="constrained")
    names = [r["hardware"] for r in rows] + (["total"] if len(rows) > 1 else [])
    bottom = [0.0] * len(names)
    colors = ["#1f77b4", "#ff7f0e", "#2ca02c"]
    for (key, label), color in zip(COST_PARTS, colors):
        vals = [r[key] for r in rows]
        if len(rows) > 1:
            vals.append(sum(vals))
        ax.bar(names, vals, bottom=bottom, label=label, color=color)
        bottom = [b + v for b, v in zip(bottom, vals)]
    for x, total in enumerate(bottom):
        ax.text(x, total, _usd(total) + "/yr", ha="center", va="bottom", fontsize=8)
    if not rows:
        ax.text(0.5, 0.5, "no fleet", ha="center", va="center", transform=ax.transAxes)
    ax.margins(y=0.12)
    ax.yaxis.set_major_formatter(FuncFormatter(_usd))
    ax.set_ylabel("USD per year")
    ax.set_title("annual cost breakdown: capex annuity, energy, maintenance")
    ax.grid(axis="x", visible=False)
    if rows:
        ax.legend(loc="upper left")
    return fig


def curtailment_figure(rows: list[dict], title: str):
    """The curtailment table (OPTIMIZER.md 13) as horizontal bars: facility MW shed at the peak after each step
    (cumulative), step 0 (every workload kept) on top, each bar labelled with its share of the peak and the hours a
    day its shed traffic could wait."""
    plt = _plt()
    labels = ["0 every workload kept"] + [f"{r['step']} shed {r['workload']} ({r['tier']})" for r in rows[1:]]
    values = [float(r["shed_facility_power_mw"]) for r in rows]
    fig, ax = plt.subplots(figsize=(9, 0.45 * max(len(rows), 2) + 1.2), layout="constrained")
    ax.barh(labels, values, color=["#2ca02c"] + ["#d62728"] * (len(rows) - 1), height=0.6)
    for i, r in enumerate(rows):
        ax.annotate(f"{_si(round(values[i], 3))} MW, {100 * r['shed_share_of_peak']:.3g}%, "
                    f"{r['deferrable_hours_per_day']:.2g} h/day", (values[i], i), xytext=(4, 0),
                    textcoords="offset points", va="center", fontsize=8)
    ax.invert_yaxis()
    ax.margins(x=0.35)
    ax.set_xlabel("facility MW shed at the peak (cumulative)")
    ax.set_title(title)
    ax.grid(axis="y", visible=False)
    return fig


# ---- output -----------------------------------------------------------------------------------------------------
def _atomic_write(path, data: bytes) -> None:
    atomic_write(path, data)


def _close(fig) -> None:
    import matplotlib.pyplot as plt

    plt.close(fig)


def png_bytes(fig) -> bytes:
    import matplotlib

    buf = io.BytesIO()
    with matplotlib.rc_context(RC):
        fig.savefig(buf, format="png", metadata=PNG_METADATA)
    return buf.getvalue()


def svg_string(fig) -> str:
    """The figure as an SVG document (no XML prolog, no DOCTYPE), deterministic for the same figure."""
    import matplotlib

    buf = io.StringIO()
    with matplotlib.rc_context(RC):
        fig.savefig(buf, format="svg", metadata=SVG_METADATA)
    text = buf.getvalue()
    start = text.find("<svg")
    text = text[start:] if start >= 0 else text
    # The RDF metadata block names licence and vocabulary URLs; nothing in it is needed to draw the figure.
    return re.sub(r"\s*<metadata>.*?</metadata>", "", text, count=1, flags=re.S)


def save_png(fig, path) -> None:
    _atomic_write(path, png_bytes(fig))


def save_svg(fig, path) -> None:
    _atomic_write(path, ('<?xml version="1.0" encoding="utf-8" standalone="no"?>\n' + svg_string(fig)).encode())


def buildout_figure(periods: list[dict], title: str):
    """Installed racks per period, stacked by system (one demand scenario's periods of a build-out)."""
    import numpy as np

    plt = _plt()
    fig, ax = plt.subplots(figsize=(8, 3.6), layout="constrained")
    dates = [p["start_date"] for p in periods]
    systems = sorted({r["hardware"] for p in periods for r in p["fleet"]})
    bottom = np.zeros(len(periods))
    for i, hw in enumerate(systems):
        values = np.array([next((r["racks_installed"] for r in p["fleet"] if r["hardware"] == hw), 0)
                           for p in periods], dtype=float)
        ax.bar(dates, values, bottom=bottom, label=hw, color=plt.cm.tab10(i % 10))
        bottom += values
    for x, total in zip(dates, bottom):
        ax.annotate(_si(total), (x, total), ha="center", va="bottom", fontsize=8, xytext=(0, 2),
                    textcoords="offset points")
    ax.set_title(title)
    ax.set_ylabel("racks installed")
    ax.margins(y=0.15)
    ax.grid(axis="x", visible=False)
    if systems:
        ax.legend(fontsize=8, loc="upper left")
    return fig


def tornado_figure(rows: list[dict], title: str, unit_label: str = "USD/year", unit: str = "usd_per_year"):
    """A tornado: per axis (widest first, top), a bar from the mean objective of the variants in the lower half of
    its values to that of the upper half (``planner.sweep.report.sensitivity``), about their overall mean."""
    plt = _plt()
    rows = rows[:12]
    fig, ax = plt.subplots(figsize=(9, 0.45 * max(len(rows), 2) + 1.4), layout="constrained")
    names = [r["axis"] for r in rows][::-1]
    lows = [r[f"low_half_{unit}"] for r in rows][::-1]
    highs = [r[f"high_half_{unit}"] for r in rows][::-1]
    for i, (lo, hi) in enumerate(zip(lows, highs)):
        left, right = min(lo, hi), max(lo, hi)
        ax.barh(i, right - left, left=left, color="#1f77b4" if hi >= lo else "#d62728", height=0.6)
        ax.annotate(f"{_usd(lo)} \u2192 {_usd(hi)}", (right, i), xytext=(4, 0), textcoords="offset points",
                    va="center", fontsize=8)
    ax.set_yticks(range(len(names)), names)
    ax.xaxis.set_major_formatter(_usd)
    ax.set_xlabel(f"mean {unit_label}: lower half \u2192 upper half of the axis's values\n"
                  "(blue: the cost rises with the value; red: it falls)")
    ax.set_title(title)
    ax.margins(x=0.25)
    ax.grid(axis="y", visible=False)
    return fig


def share_figure(shares: dict, title: str):
    """How often each system is in the plan across the solved variants (share of variants, 0-100%)."""
    plt = _plt()
    items = sorted(shares.items(), key=lambda kv: kv[1])
    fig, ax = plt.subplots(figsize=(8, 0.4 * max(len(items), 2) + 1.0), layout="constrained")
    ax.barh([k for k, _ in items], [100 * v for _, v in items], color="#2ca02c", height=0.6)
    for i, (_, v) in enumerate(items):
        ax.annotate(f"{100 * v:.3g}%", (100 * v, i), xytext=(4, 0), textcoords="offset points", va="center",
                    fontsize=8)
    ax.set_xlim(0, 112)
    ax.set_xlabel("variants whose plan buys the system (%)")
    ax.set_title(title)
    ax.grid(axis="y", visible=False)
    return fig


def regret_figure(series: dict, title: str, unit_label: str = "USD/year"):
    """The regret distributions (one cumulative curve per plan: the share of samples whose regret is at most x)."""
    import numpy as np

    plt = _plt()
    fig, ax = plt.subplots(figsize=(8, 3.6), layout="constrained")
    colors = {"base plan": "#7f7f7f", "robust plan": "#1f77b4"}
    for i, (name, values) in enumerate(series.items()):
        v = np.sort(np.array([x for x in values if x is not None and math.isfinite(x)], dtype=float))
        if not len(v):
            continue
        share = np.arange(1, len(v) + 1) / len(v)
        ax.step(v, 100 * share, where="post", label=f"{name} (mean {_usd(float(v.mean()))})",
                color=colors.get(name, plt.cm.tab10(i % 10)), linewidth=1.8)
    ax.xaxis.set_major_formatter(_usd if unit_label.startswith("USD") else _si)
    ax.set_xlabel(f"regret: the plan's {unit_label} in a sample less that sample's optimum")
    ax.set_ylabel("samples at or below (%)")
    ax.set_ylim(0, 102)
    ax.set_title(title)
    ax.legend(fontsize=8, loc="lower right")
    return fig


# ---- simulated latencies ------------------------------------------------------------------------------------------
def _nines(percentile: float) -> float:
    """A percentile on a "nines" axis, -log10(1 - p): p50, p90, p99 and p99.9 sit evenly apart, so the tail where
    targets are set gets as much room as the median."""
    return -math.log10(1.0 - min(percentile, 99.99) / 100.0)


NINES_TICKS = (50, 90, 99, 99.9)


def _nines_axis(ax, label: str) -> None:
    ax.set_xticks([_nines(p) for p in NINES_TICKS], [f"p{p:g}" for p in NINES_TICKS])
    ax.set_xlim(0, _nines(99.9) * 1.04)
    ax.set_xlabel(label)


def _seconds(x: float, _pos=None) -> str:
    return f"{x:g}"


def _percentile_mark(ax, percentile: float) -> None:
    ax.axvline(_nines(percentile), color=TIER_COLOR, linestyle=":", linewidth=1)


def _legend_below(ax) -> None:
    """Below the axes: inside, it would cover the tail or the target, wherever the curve runs."""
    ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.2), ncol=2, fontsize=8, frameon=False)


def _no_requests(ax) -> None:
    ax.text(0.5, 0.5, "no request finished", ha="center", va="center", transform=ax.transAxes)


def _ttft_panel(ax, w: dict) -> None:
    """TTFT (s, log scale: a queue's tail can be decades above its median) against the percentile, the target as a
    dashed line and a marker at its percentile, the plan's closed-form TTFT as a marker at the same percentile."""
    from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter

    dist = [(p, s) for p, s in w.get("ttft_distribution_s") or [] if s and s > 0]
    q, target, analytic = w["ttft_percentile"], w["ttft_target_s"], w.get("analytic_ttft_s")
    if dist:
        ax.plot([_nines(p) for p, _ in dist], [s for _, s in dist], marker=".", linewidth=1.8, color="#1f77b4",
                label="simulated")
    else:
        _no_requests(ax)
    ax.axhline(target, color="#d62728", linestyle="--", linewidth=1)
    ax.plot([_nines(q)], [target], linestyle="none", marker="D", markersize=7, color="#d62728",
            label=f"target {target:g} s at p{q:g}")
    if analytic:
        ax.plot([_nines(q)], [analytic], linestyle="none", marker="*", markersize=13, color="black",
                label=f"plan's TTFT {analytic:.3g} s (closed form)")
    at = w.get("ttft_at_target_percentile_s")
    if at:
        ax.plot([_nines(q)], [at], linestyle="none", marker="o", markersize=8, markerfacecolor="none",
                markeredgecolor="#1f77b4", markeredgewidth=1.5, label=f"simulated p{q:g}: {at:.3g} s")
    _percentile_mark(ax, q)
    values = [s for _, s in dist] + [target] + ([analytic] if analytic else [])
    ax.set_yscale("log")
    ax.set_ylim(min(values) / 1.6, max(values) * 1.6)
    ax.yaxis.set_major_locator(LogLocator(base=10, subs=(1.0, 2.0, 5.0)))
    ax.yaxis.set_major_formatter(FuncFormatter(_seconds))
    ax.yaxis.set_minor_formatter(NullFormatter())
    _nines_axis(ax, "percentile of requests")
    ax.set_ylabel("time to first token (s, log scale)")
    ax.set_title("time to first token")
    _legend_below(ax)


def _speed_panel(ax, w: dict) -> None:
    """Output tokens/s per user (1 / time per output token) against the percentile of time per token, so the
    right-hand end is the slowest users; the tier as a dashed line, the workload's percentile as a dotted one."""
    from matplotlib.ticker import FuncFormatter

    dist = [(p, s) for p, s in w.get("tpot_distribution_s") or [] if s and s > 0]
    q, tier = w["ttft_percentile"], w["min_tps_per_user"]
    if dist:
        ax.plot([_nines(p) for p, _ in dist], [1.0 / s for _, s in dist], marker=".", linewidth=1.8,
                color="#2ca02c", label="simulated")
    else:
        _no_requests(ax)
    ax.axhline(tier, color="#d62728", linestyle="--", linewidth=1)
    ax.plot([_nines(q)], [tier], linestyle="none", marker="D", markersize=7, color="#d62728",
            label=f"tier ≥{tier:g} tok/s at p{q:g}")
    _percentile_mark(ax, q)
    at = w.get("tps_per_user_at_target_percentile")
    if at:
        ax.plot([_nines(q)], [at], linestyle="none", marker="o", markersize=8, markerfacecolor="none",
                markeredgecolor="#2ca02c", markeredgewidth=1.5, label=f"simulated p{q:g}: {at:.4g} tok/s")
    ax.set_ylim(0, max([1.0 / s for _, s in dist] + [tier]) * 1.25)
    ax.yaxis.set_major_formatter(FuncFormatter(_si))
    _nines_axis(ax, "percentile of requests, slowest on the right")
    ax.set_ylabel("output tokens/s per user")
    ax.set_title("speed per user (1 / time per output token)")
    _legend_below(ax)


def latency_figure(workload: dict, title: str):
    """One simulated workload (a ``workloads`` row of ``planner simulate --format json``, INTERFACE.md 4.7): its
    TTFT distribution against its target and the plan's closed-form TTFT, beside its tokens/s per user against its
    tier, both on a percentile axis that gives p90 and p99 room."""
    plt = _plt()
    fig, (left, right) = plt.subplots(1, 2, figsize=(10, 4.4), layout="constrained")
    _ttft_panel(left, workload)
    _speed_panel(right, workload)
    fig.suptitle(title)
    return fig
