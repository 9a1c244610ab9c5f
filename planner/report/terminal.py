"""Showing a plan on the terminal: the progress bar, the tables, or its JSON (files: ``planner.report.files``)."""

from __future__ import annotations

import contextlib
from pathlib import Path

import click

from planner.report import render

FLEET_COLUMNS = ["hardware", "racks", "chips", "chips_used", "power_mw", "facility_power_mw", "capex_usd",
                 "annual_cost_usd", "capex_confidence"]
ALLOCATION_COLUMNS = ["workload", "role", "hardware", "replicas", "chips_per_replica", "tensor_parallel",
                      "pipeline_parallel", "expert_parallel", "batch", "precision", "draft_tokens", "acceptance", "tps_per_user",
                      "ttft_s", "ttft_p50_s", "ttft_p99_s", "output_tokens_per_s", "prefill_tokens_per_s", "utilization", "prefill_share"]
WORKLOAD_COLUMNS = ["workload", "model", "min_tps_per_user", "demand_output_tokens_per_s",
                    "served_output_tokens_per_s", "tps_per_user", "ttft_s", "ttft_target_s", "ttft_percentile",
                    "cost_usd_per_mtok", "output_tokens_per_s_per_mw", "power_mw", "annual_cost_usd",
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


def emit(plan, fmt: str, out_dir: str | None, reason: str | None = None) -> None:
    from planner.report.files import plan_json, write_files

    if out_dir:
        write_files(plan, Path(out_dir), reason)
    if fmt == "json":
        click.echo(plan_json(plan, reason))
        return
    show_tables(plan, reason)


def show_tables(plan, reason: str | None = None) -> None:
    """The plan as terminal tables; the reason of an infeasible plan is printed by the CLI's error line."""
    s, t = plan.solver, plan.timings
    gap = s.get("relative_gap")
    click.echo(f"scenario {plan.scenario}: {plan.status} ({s['name']}, gap {gap if gap is not None else '-'}, "
               f"{s['candidates_scored']:,} candidates scored in {t.get('engine_s', 0):.2f} s, "
               f"{s['columns']} columns, MILP {t.get('solve_s', 0):.2f} s)")
    if not len(plan.fleet):
        return
    render.table(plan.fleet.to_dicts(), title="fleet", columns=FLEET_COLUMNS)
    render.table(plan.allocation.to_dicts(), title="allocation (per workload and role)", columns=ALLOCATION_COLUMNS)
    render.table(plan.workloads.to_dicts(), title="workloads", columns=WORKLOAD_COLUMNS)
    render.table([plan.totals], title="totals")
    if plan.tiers is not None and len(plan.tiers):
        render.table(plan.tiers.to_dicts(), title="by speed tier")
    if plan.alternatives is not None and len(plan.alternatives):
        render.table(plan.alternatives.to_dicts(),
                     title="why these systems: the cheapest option on each system per workload and role "
                           "(annual cost and IT power per 1,000 tokens/s of capacity; used = in the plan)")
