"""Showing a plan on the terminal: the progress bar, the tables, or its JSON (files: ``planner.report.files``)."""

from __future__ import annotations

import contextlib
import math
from pathlib import Path

import click

from planner.report import buildout, render
from planner.report.files import plan_json, write_files
from planner.report.summary import summary_lines
from planner.sweep.report import robust_lines

FLEET_COLUMNS = ["hardware", "racks", "chips", "chips_used", "power_mw", "facility_power_mw", "capex_usd",
                 "annual_cost_usd", "capex_confidence"]
ALLOCATION_COLUMNS = ["workload", "role", "hardware", "replicas", "chips_per_replica", "tensor_parallel",
                      "pipeline_parallel", "expert_parallel", "batch", "precision", "draft_tokens", "acceptance", "tps_per_user",
                      "ttft_s", "ttft_p50_s", "ttft_p99_s", "output_tokens_per_s", "prefill_tokens_per_s", "utilization", "prefill_share"]
WORKLOAD_COLUMNS = ["workload", "model", "min_tps_per_user", "demand_output_tokens_per_s",
                    "served_output_tokens_per_s", "tps_per_user", "ttft_s", "ttft_target_s", "ttft_percentile",
                    "cost_usd_per_mtok", "cost_usd_per_mtok_input", "cost_usd_per_mtok_cached_input",
                    "cost_usd_per_mtok_output", "output_tokens_per_s_per_mw", "power_mw", "annual_cost_usd",
                    "served_share", "revenue_usd_per_year"]


@contextlib.contextmanager
def progress_display(enabled: bool):
    """A rich progress bar on stderr while the engine and the MILP work, only when stderr is a terminal (never in
    pipes, CI logs or JSON output). Yields a ``progress(done, total, text)`` callback, or None."""
    import sys

    if not (enabled and sys.stderr.isatty()):
        yield None
        return
    from rich.console import Console
    from rich.progress import BarColumn, Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

    with Progress(SpinnerColumn(), TextColumn("{task.description}"), BarColumn(), TimeElapsedColumn(),
                  console=Console(stderr=True), transient=True) as bar:
        task = bar.add_task("planning", total=1)

        def update(done, total, text):
            bar.update(task, completed=done, total=total, description=text)

        yield update


# The compact tables of the one-screen answer; --detail shows every column and the supporting tables.
FLEET_BRIEF = ["hardware", "racks", "chips", "facility_power_mw", "capex_usd", "annual_cost_usd"]
FLEET_INSTALLED = ["racks_installed", "racks_new", "racks_retired"]  # shown where the scenario has installed racks
# one row per workload and system, its layouts folded into ``serving`` (brief_allocation)
ALLOCATION_BRIEF = ["workload", "hardware", "chips", "serving", "tps_per_user", "ttft_s"]
WORKLOAD_BRIEF = ["workload", "model", "tier", "tps_per_user", "ttft_s", "ttft_target_s", "cost_usd_per_mtok",
                  "power_mw", "served_share"]
# what a narrow terminal leaves out first, in order (the table names them; --detail and JSON keep every one)
WORKLOAD_DROP = ["tier", "power_mw", "ttft_target_s", "model"]
FLEET_DROP = ["chips", "capex_usd", "racks_retired", "breakeven_utilization", "rental_usd_per_year"]
ALLOCATION_DROP = ["ttft_s", "chips"]
MORE = "--detail or --format json"
# Short headers for the compact tables (the interface's names stay in JSON, CSV, Parquet and --detail).
CURTAILMENT_BRIEF = ["step", "workload", "tier", "step_power_mw", "shed_facility_power_mw", "shed_share_of_peak",
                     "racks_powered_off", "shed_output_tokens_per_s", "forgone_revenue_usd_per_hour",
                     "deferrable_hours_per_day"]
BRIEF_LABELS = {"facility_power_mw": "facility MW", "capex_usd": "capex USD", "annual_cost_usd": "USD/year",
                "tps_per_user": "tok/s per user", "ttft_target_s": "TTFT target s", "ttft_s": "TTFT s",
                "cost_usd_per_mtok": "USD/Mtok", "power_mw": "IT MW", "served_share": "served",
                "speculative": "drafter", "racks_installed": "kept", "chips": "chips",
                "racks_new": "bought", "racks_retired": "retired", "chips_rented": "rented chips",
                "rental_usd_per_year": "rent USD/year", "breakeven_utilization": "own above",
                "serving": "serving (replicas x layout, precision, batch)"}
ANSWER_INDENT = " " * 10  # the answer's lines continue under their text ("buy:      ...")


def shares_as_percent(rows: list[dict]) -> list[dict]:
    """The compact table's served share as a percentage ("100%", "62.5%"): a bare 1 read as one request."""
    return [{**r, "served_share": None if r.get("served_share") is None else f"{100 * r['served_share']:.3g}%"}
            for r in rows]


def fleet_columns(columns: list[str], rows: list[dict]) -> list[str]:
    """The fleet table's columns, with the installed, bought and retired racks after ``racks`` where any rack of
    the plan was installed, and the chips rented after ``chips`` where any is."""
    out = list(columns)
    if any(r.get("racks_installed") or r.get("racks_retired") for r in rows):
        at = out.index("racks") + 1
        out = out[:at] + FLEET_INSTALLED + out[at:]
    if any(r.get("chips_rented") for r in rows):
        at = out.index("chips") + 1
        out = out[:at] + ["chips_rented", "rental_usd_per_year", "breakeven_utilization"] + out[at:]
    return out


def layout_words(r: dict) -> str:
    """One allocation row as the folded table says it: ``decode 21 x tp4, fp8, batch 174, eagle``."""
    if r.get("acquisition") == "api" or r.get("role") == "api":  # a hosted offer: its share of the workload
        return f"api {100 * r['replicas']:.3g}% to {r.get('measurement') or r['hardware']}"
    layout = f"tp{r['tensor_parallel']}" + (f" pp{r['pipeline_parallel']}" if r["pipeline_parallel"] > 1 else "")
    layout += " ep" if r.get("expert_parallel") else ""
    if r.get("role") == "attention" and r.get("ffn_hardware"):  # an attention/FFN pair: its FFN side's row follows
        layout += f" (FFN on {render.short_id(r['ffn_hardware'])})"
    parts = [f"{r['role']} {render.fmt(r['replicas'])} x {layout}", r["precision"], f"batch {r['batch']}"]
    if r.get("speculative") not in (None, "none"):
        parts.append(r["speculative"])
    if r.get("source") not in (None, "model"):
        parts.append(r["source"])
    return ", ".join(p for p in parts if p)


def brief_allocation(rows: list[dict]) -> tuple[list[dict], list[str]]:
    """One row per (workload, system), the system's several layouts and roles for the workload folded into one
    ``serving`` cell (every row whole: ``--detail``, ``--format json/csv``): the chips it uses on the system, the
    slowest stream it serves and the longest TTFT it leaves."""
    folded: dict[tuple, dict] = {}
    for r in rows:
        hosted = r.get("role") == "api"  # a hosted offer: "api", the offer named in its serving cell
        key = (r["workload"], "api" if hosted else r["hardware"])
        f = folded.setdefault(key, {"workload": r["workload"], "hardware": key[1], "chips": 0.0,
                                    "serving": [], "tps_per_user": None, "ttft_s": None})
        if not hosted:
            f["chips"] += float(r["replicas"]) * float(r["chips_per_replica"])
        f["serving"].append(layout_words(r))
        if r.get("tps_per_user") is not None and r.get("role") not in ("prefill", "ffn"):
            f["tps_per_user"] = min(f["tps_per_user"] or math.inf, r["tps_per_user"])
        if r.get("ttft_s") is not None:
            f["ttft_s"] = max(f["ttft_s"] or 0.0, r["ttft_s"])
    out = []
    for f in folded.values():
        chips = f["chips"]
        out.append({**f, "serving": "\n".join(f["serving"]),
                    "chips": None if chips == 0 else int(round(chips)) if abs(chips - round(chips)) < 1e-9 else chips})
    return out, list(ALLOCATION_BRIEF)


def answer_ids(d: dict) -> set:
    """The ids a plan's answer names (workloads, models, systems), for ``render.shorten_ids``."""
    ids = {w.get("workload") for w in d.get("workloads", [])} | {w.get("model") for w in d.get("workloads", [])}
    ids |= {f.get("hardware") for f in d.get("fleet", [])} | {r.get("hardware") for r in d.get("allocation", [])}
    return {i for i in ids if isinstance(i, str)}


def echo_wrapped(line: str, ids=(), first: str = "", indent: str | None = None) -> None:
    """A line of the answer at the terminal's width, wrapped at spaces (never inside a word), long ids shortened
    as in the tables."""
    for part in render.wrap(render.shorten_ids(line, ids), indent=ANSWER_INDENT if indent is None else indent,
                            first=first):
        click.echo(part)


def echo_assumptions(d: dict) -> None:
    click.echo("assumptions:")
    ids = answer_ids(d)
    for line in d["assumptions"]:
        echo_wrapped(line, ids, first="  - ", indent="    ")


def emit(plan, fmt: str, out_dir: str | None, reason: str | None = None, detail: bool = False) -> None:
    if out_dir:
        write_files(plan, Path(out_dir), reason)
    if fmt == "json":
        click.echo(plan_json(plan, reason))
        return
    if getattr(plan, "is_buildout", False):
        buildout.show(plan)
        return
    show_tables(plan, reason, detail)


def show_tables(plan, reason: str | None = None, detail: bool = False) -> None:
    """The answer first (``planner.report.summary``), then compact tables that fit the terminal; with ``detail``
    every column, the totals, the tiers and why these systems. The reason of an infeasible plan is also printed
    by the CLI's error line."""
    d = plan.to_dict()
    ids = answer_ids(d)
    for k, line in enumerate(summary_lines(d, reason)):
        echo_wrapped(line, ids, indent="  " if k == 0 else None)
    if d.get("robust"):
        for line in robust_lines(d["robust"]):
            echo_wrapped(line, ids, indent="    ")
        click.echo(f"  this scenario adds {d['robust']['racks_added_for_this_scenario']} racks to the robust fleet")
    if not len(plan.fleet) and not len(plan.allocation):
        return
    if not detail:
        fleet = plan.fleet.to_dicts()
        render.table(fleet, title="what to buy", columns=fleet_columns(FLEET_BRIEF, fleet), labels=BRIEF_LABELS,
                     drop=FLEET_DROP, more=MORE)
        render.table(shares_as_percent(plan.workloads.to_dicts()), title="workloads", columns=WORKLOAD_BRIEF,
                     labels=BRIEF_LABELS, drop=WORKLOAD_DROP, more=MORE)
        rows, cols = brief_allocation(plan.allocation.to_dicts())
        render.table(rows, title="how each workload is served, one row per system (tp x pp chips per replica)",
                     columns=cols, labels=BRIEF_LABELS, drop=ALLOCATION_DROP, wraps=["serving"], more=MORE)
        echo_assumptions(d)
        echo_wrapped("(every row and column, the totals, the tiers and why these systems: --detail; all of it: "
                     "--format json)", indent="")
        return
    s, t = plan.solver, plan.timings
    echo_wrapped(f"solver: {s['candidates_scored']:,} candidates scored in {t.get('engine_s', 0):.2f} s, "
                 f"{s['columns']} columns, MILP {t.get('solve_s', 0):.2f} s", indent="  ")
    # every column, each table in parts that fit the terminal whole, each part led by the columns naming its rows
    render.table(plan.fleet.to_dicts(), title="fleet", columns=fleet_columns(FLEET_COLUMNS, plan.fleet.to_dicts()),
                 keys=["hardware"])
    render.table(plan.allocation.to_dicts(), title="allocation (per workload and role)", columns=ALLOCATION_COLUMNS,
                 keys=["workload", "role", "hardware"])
    render.table(plan.workloads.to_dicts(), title="workloads", columns=WORKLOAD_COLUMNS, keys=["workload"])
    render.table([{"total": k, "value": v} for k, v in plan.totals.items()], title="totals")
    if plan.tiers is not None and len(plan.tiers):
        render.table(plan.tiers.to_dicts(), title="by speed tier", keys=["tier"])
    if plan.curtailment is not None and len(plan.curtailment):
        render.table(plan.curtailment.to_dicts(), title="what the site can shed at its peak (cumulative; step 0 "
                                                        "keeps every workload)", columns=CURTAILMENT_BRIEF)
    if plan.alternatives is not None and len(plan.alternatives):
        render.table(plan.alternatives.to_dicts(),
                     title="why these systems: the cheapest option on each system per workload and role "
                           "(annual cost and IT power per 1,000 tokens/s of capacity; used = in the plan)",
                     keys=["workload", "role", "hardware"])
    echo_assumptions(d)
