"""Showing a plan: terminal tables, JSON, and files (CSV, Parquet, plan.json) written atomically."""

from __future__ import annotations

import contextlib
import os
import tempfile
from pathlib import Path

import click

from planner import render

FLEET_COLUMNS = ["hardware", "racks", "chips", "chips_used", "power_mw", "facility_power_mw", "capex_usd",
                 "annual_cost_usd", "capex_confidence"]
ALLOCATION_COLUMNS = ["workload", "role", "hardware", "replicas", "chips_per_replica", "tensor_parallel",
                      "pipeline_parallel", "expert_parallel", "batch", "precision", "draft_tokens", "tps_per_user",
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
    if out_dir:
        write_files(plan, Path(out_dir))
    if fmt == "json":
        d = plan.to_dict()
        if reason:
            d["reason"] = reason
        click.echo(render.to_json(d))
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


def write_files(plan, out: Path) -> None:
    """Write every table as CSV and Parquet and the whole plan as plan.json into a fresh temporary directory
    beside ``out``, then swap it in with renames: a crash or Ctrl-C leaves either the old directory or the new
    one, never a mix. Files of the old directory that the plan does not write are kept."""
    import shutil

    out = out.resolve()
    if out.exists() and not out.is_dir():
        from planner.errors import InputError

        raise InputError("exists and is not a directory", field="--out", file=str(out))
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{out.name}.new.", dir=out.parent))
    try:
        for name in ("fleet", "allocation", "workloads", "alternatives", "tiers"):
            df = getattr(plan, name)
            if df is None:
                continue
            df.write_csv(tmp / f"{name}.csv")
            df.write_parquet(tmp / f"{name}.parquet")
        (tmp / "plan.json").write_text(render.to_json(plan.to_dict()) + "\n", encoding="utf-8")
        if out.exists():
            for f in out.iterdir():  # keep what the old directory had beyond the plan's own files
                if not (tmp / f.name).exists():
                    (shutil.copytree if f.is_dir() else shutil.copy2)(f, tmp / f.name)
            old = Path(tempfile.mkdtemp(prefix=f".{out.name}.old.", dir=out.parent))
            os.replace(out, old / out.name)
            os.replace(tmp, out)
            shutil.rmtree(old)
        else:
            os.replace(tmp, out)
    finally:
        if tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)
