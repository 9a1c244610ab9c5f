"""The ``planner`` command line: a thin shell over the library. Heavy imports happen inside the commands."""

from __future__ import annotations

import os
import sys
import time

import click

from planner import __version__
from planner.vocabulary import (
    DEFAULT_BATCH,
    DEFAULT_DRAFT_TOKENS,
    DEFAULT_INPUT_TOKENS,
    DEFAULT_OUTPUT_TOKENS,
    DEFAULT_SPECULATIVE,
    FORMATS,
    OBJECTIVES,
    PRECISIONS,
    SOLVERS,
    SPECULATIVE_METHODS,
)

FORMAT = click.Choice(FORMATS)
PRECISION = click.Choice(PRECISIONS)


def draft_tokens_value(ctx, param, value):
    """--draft-tokens: a whole number or auto."""
    if value is None or value == "auto":
        return value
    try:
        return int(value)
    except ValueError:
        raise click.BadParameter(f"expected a whole number or auto, got {value!r}") from None


def speculative_options(fn):
    """--speculative, --draft-tokens, --acceptance, --draft-model: the same in estimate and frontier."""
    for option in reversed([
        click.option("--speculative", type=click.Choice(SPECULATIVE_METHODS), default=DEFAULT_SPECULATIVE,
                     show_default=True, help="speculative decoding: the drafter (docs/MODEL.md 3.4)"),
        click.option("--draft-tokens", default=DEFAULT_DRAFT_TOKENS, callback=draft_tokens_value,
                     help="tokens drafted per step, or auto (the fastest) [default: auto with a method, else 0]"),
        click.option("--acceptance", type=float, default=None,
                     help="probability that each draft token is accepted [default: the method's published "
                          "acceptance on the model (data/speculative.yaml), else 0.7]"),
        click.option("--draft-model", default=None, help="the drafter's model id (--speculative draft_model)"),
    ]):
        fn = option(fn)
    return fn


def _fail(exc: Exception) -> None:
    """Print a planner error as one line and exit with its code; anything else propagates."""
    from planner.catalog import CatalogError
    from planner.errors import PlannerError

    if isinstance(exc, PlannerError):
        click.echo(f"error: {exc}", err=True)
        sys.exit(exc.exit_code)
    if isinstance(exc, CatalogError):
        click.echo(f"error: {exc}", err=True)
        sys.exit(2)
    from solvers.milp import SolverError

    if isinstance(exc, SolverError):
        click.echo(f"error: {exc}", err=True)
        sys.exit(1)
    from planner.errors import output_error
    from planner.report.files import silence_stdout

    line = output_error(exc)  # a full disk (ENOSPC, EFBIG) or a closed pipe: one line, exit 1, no partial file
    if line is not None:
        silence_stdout()  # what stdout still buffers must not fail again at the interpreter's exit
        try:
            click.echo(f"error: {line}", err=True)
        except OSError:
            pass
        sys.exit(1)
    raise exc


class PlannerGroup(click.Group):
    def invoke(self, ctx):
        from planner import interrupts

        interrupts.install()
        try:
            value = super().invoke(ctx)
            from planner.report.files import flush_stdout

            flush_stdout()  # `> /dev/full`, a closed pipe: said here, in one line, not at the interpreter's exit
            return value
        except KeyboardInterrupt:
            interrupts.report()  # files are written whole or not at all (--out, --html)
            interrupts.stop(130)
        except (click.exceptions.Exit, click.ClickException, click.exceptions.Abort, SystemExit):
            raise
        except Exception as exc:  # noqa: BLE001 - mapped to exit codes, re-raised if unknown
            if interrupts.state["interrupted"]:  # an interrupt swallowed inside a C callback can surface as this
                interrupts.report()
                interrupts.stop(130)
            _fail(exc)


@click.group(cls=PlannerGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="planner")
def main() -> None:
    """Fleet planner for AI inference hardware: which racks to buy, how many, and how to run them."""


@main.command()
@click.argument("scenario", type=click.Path(dir_okay=True, path_type=str))
@click.option("--format", "fmt", type=FORMAT, default="table", show_default=True)
@click.option("--out", "out_dir", type=click.Path(file_okay=False, path_type=str), default=None,
              help="write the tables as CSV and Parquet and the whole result as plan.json into this directory")
@click.option("--solver", type=click.Choice(SOLVERS), default=None,
              help="MILP solver [default: the scenario's, else scip]")
@click.option("--time-limit", type=float, default=None, help="solver time limit in seconds [default: the scenario's]")
@click.option("--quiet", "-q", is_flag=True, help="no progress display")
@click.option("--html", "html_path", type=click.Path(dir_okay=False, path_type=str), default=None,
              help="also write a self-contained HTML report (charts inline, no network needed to view it); it "
                   "re-solves the plan once per binding limit and once per hardware family alone, on the scored "
                   "options and both cores (about 1-3x the plain solve)")
@click.option("--no-whatif", "no_whatif", is_flag=True,
              help="--html: leave out the re-solves (what each binding limit costs, each family alone)")
@click.option("--set", "settings", multiple=True, metavar="PATH=VALUE",
              help="override a scenario field before validation, repeatable: site.power_budget_mw=5, "
                   "workloads.chat.requests_per_s=900, hardware.overrides.vr-nvl72.capex_usd=9e6")
@click.option("--objective", type=click.Choice(OBJECTIVES), default=None,
              help="what the plan optimises [default: the scenario's, else min_cost]")
@click.option("--detail", is_flag=True, help="every column, the totals, the tiers and why these systems")
@click.option("--fleet-only", is_flag=True,
              help="buy nothing: what the installed fleet serves (the most demand, then the least cost; max_revenue "
                   "scenarios keep their objective), and what one more rack of each system would add")
@click.option("--robust", "robust", default=None, metavar="mean|pNN",
              help="the fleet of least mean (or NN-th percentile) objective over the samples of --samples, "
                   "operated on this scenario")
@click.option("--samples", "samples_file", type=click.Path(dir_okay=False, path_type=str), default=None,
              help="--robust: a sweep file whose axes and samples vary this scenario (its base is ignored)")
@click.option("--verify", is_flag=True,
              help="the thorough verification: the plan simulated with planner simulate's windows (a build-out's: "
                   "every period) and repaired as by default (exit 4 if no plan holds)")
@click.option("--no-verify", "no_verify", is_flag=True,
              help="skip the quick simulation every plan gets by default (and its repair): the MILP's plan as it is")
@click.option("--seed", type=int, default=0, show_default=True, help="the verification's simulation seed")
@click.option("--sim-duration", "sim_duration_s", type=float, default=None,
              help="seconds of simulated arrivals for the verification [default: the quick run's; with --verify, "
                   "planner simulate's]")
@click.option("--trace", "trace_name", default=None, metavar="FILE|NAME",
              help="verify by replaying a trace's shape of traffic instead of Poisson arrivals")
@click.option("--trust-measurements", "trust_measurements", is_flag=True,
              help="plan measurement rows beyond the memory-bandwidth or compute roofline or the memory of their "
                   "hardware as measured (each named by a warning in the assumptions); without it such a row is "
                   "exit 2 (docs/MODEL.md 12.4)")
def solve(scenario, fmt, out_dir, solver, time_limit, quiet, html_path, no_whatif,  # noqa: C901 - its options
          settings, objective, detail,
          fleet_only, robust, samples_file, verify, no_verify, seed, sim_duration_s, trace_name, trust_measurements):
    """The fleet that serves a scenario best by its objective (by default the cheapest): racks per system, how
    each workload is served, cost and power; with --robust, the one fleet that holds up best over samples."""
    from planner.orchestration import answer, report_extras
    from planner.errors import InfeasibleError, InputError
    from planner.report import terminal as report
    from planner.scenario import load_scenario

    from planner.report.files import check_output_dir, check_output_file

    settings = [*settings, *([f"objective={objective}"] if objective else []),
                *(["trust_measurements=true"] if trust_measurements else [])]
    sc = load_scenario(scenario, settings).with_solver(solver, time_limit)  # validated like the file's fields
    if fleet_only:
        if robust is not None:
            raise InputError("--fleet-only and --robust do not go together", field="--fleet-only")
        sc = sc.fleet_only()
    if (robust is None) != (samples_file is None):
        raise InputError("--robust and --samples go together: --robust mean|pNN --samples SWEEP.yaml",
                         field="--samples" if samples_file is None else "--robust")
    if robust is not None:
        from planner.sweep.robust import parse_statistic

        parse_statistic(robust)
        if sc.periods:
            raise InputError("--robust is not supported for build-outs over periods yet", field="--robust")
    if verify and no_verify:
        raise InputError("--verify and --no-verify do not go together", field="--no-verify")
    if verify and robust is not None:
        raise InputError("--verify simulates the plan of one scenario: not with --robust", field="--verify")
    mode = "thorough" if verify else "off" if no_verify or robust is not None else "quick"
    for flag, given in (("--trace", trace_name is not None), ("--sim-duration", sim_duration_s is not None)):
        if given and mode == "off":
            raise InputError(f"{flag} sets the verification's simulation: not with "
                             + ("--no-verify" if no_verify else "--robust"), field=flag)
    trace = None
    if trace_name is not None:
        from planner.traces import read_trace

        trace = read_trace(trace_name)
    if html_path:
        check_output_file(html_path, "--html", inputs=[scenario])
    elif no_whatif:
        raise InputError("--no-whatif goes with --html", field="--no-whatif")
    if out_dir:
        check_output_dir(out_dir, "--out")

    def html(plan, simulated, whatifs, points, reason=None):
        if html_path:
            from planner.report import html as html_report

            if getattr(plan, "is_buildout", False):
                html_report.write_html(html_report.render_buildout_html(plan, title=sc.name, simulation=simulated),
                                       html_path)
            else:
                html_report.write_html(html_report.render_plan_html(plan, points, reason, title=sc.name,
                                                                    simulation=simulated, whatifs=whatifs),
                                       html_path)
            wrote(html_path)

    def wrote(path):
        if not quiet:
            click.echo(f"wrote {path}", err=True)  # stderr: stdout carries the plan (JSON with --format json)

    compile_first(quiet or fmt == "json")  # after every input is checked: the time limit bounds the search alone
    try:
        with report.progress_display(enabled=not quiet and fmt != "json") as progress:
            got = answer(sc, verify=mode, robust=robust, samples=samples_file, seed=seed, duration_s=sim_duration_s,
                         trace=trace, whatifs=bool(html_path) and not no_whatif, frontiers=bool(html_path),
                         progress=progress)
    except InputError as exc:
        if robust is not None and exc.file:
            raise
        raise exc.in_file(scenario) from None
    except InfeasibleError as exc:
        if html_path:  # the report still explains why, and the exit code stays 3
            html(exc.plan, None, None, report_extras(exc.plan, False, True)[1], str(exc))
        if exc.plan is not None:
            report.emit(exc.plan, fmt, out_dir, reason=str(exc), detail=detail)
            if out_dir:
                wrote(out_dir)
        raise
    plan, verified = got.plan, got.verified
    report.emit(plan, fmt, out_dir, detail=detail)
    if out_dir:
        wrote(f"{out_dir} (plan.json, and each table as CSV and Parquet)")
    html(plan, verified.simulation.to_dict() if verified is not None else None, got.whatifs, got.frontiers)
    if verified is not None:
        from planner.errors import CheckFailed
        from planner.sim.verify import round_lines

        if fmt != "json":
            for line in round_lines(verified):  # the verdict is on the first screen
                click.echo(line)
        if not verified.holds:
            raise CheckFailed(f"{scenario}: no plan holds its targets in simulation: "
                              + "; ".join(verified.simulation.failures), [])


@main.command()
@click.option("--model", "-m", required=True, help="model id (planner catalog)")
@click.option("--hardware", "-H", required=True, help="hardware id (planner catalog)")
@click.option("--chips", type=int, default=None, help="chips per replica [default: smallest that fits, in the fastest memory tier where one scale-up domain can]")
@click.option("--batch", type=int, default=DEFAULT_BATCH, show_default=True, help="concurrent streams per replica")
@click.option("--precision", type=PRECISION, default=None, help="[default: fastest the hardware runs]")
@click.option("--input-tokens", type=int, default=DEFAULT_INPUT_TOKENS, show_default=True)
@click.option("--output-tokens", type=int, default=DEFAULT_OUTPUT_TOKENS, show_default=True)
@speculative_options
@click.option("--format", "fmt", type=FORMAT, default="table", show_default=True)
def estimate(model, hardware, chips, batch, precision, input_tokens, output_tokens, speculative, draft_tokens,
             acceptance, draft_model, fmt):
    """One deployment's performance, with the breakdown that explains it."""
    from planner.perf.estimate import estimate as estimate_of
    from planner.report import render

    est = estimate_of(model, hardware, chips=chips, batch=batch, precision=precision,
                               input_tokens=input_tokens, output_tokens=output_tokens,
                      speculative=speculative, draft_tokens=draft_tokens, acceptance=acceptance,
                      draft_model=draft_model)
    d = est.to_dict()
    if fmt == "json":
        click.echo(render.to_json(d))
        return
    head = {k: v for k, v in d.items() if not isinstance(v, dict)}
    render.table([{"field": k, "value": v} for k, v in head.items()], title=f"{model} on {hardware}")
    parts = [{"phase": "decode (per token interval)", **d["decode"]}, {"phase": "prefill (TTFT)", **d["prefill"]}]
    render.table(parts, title="time breakdown (s)")
    render.table([d["memory"]], title="memory per chip (bytes)")
    if est.band:
        render.table([{"figure": key, "central": d[key], "low": b["low"], "high": b["high"], "moved most by": b["widest"]}
                      for key, b in est.band.items() if key != "parameters"],
                     title="band: each uncertain figure and efficiency at its low and high, one at a time")
    for warning in est.warnings:
        click.echo(f"warning: {warning}", err=True)


@main.command()
@click.option("--model", "-m", required=True, help="model id")
@click.option("--hardware", "-H", multiple=True, help="hardware id, repeatable [default: every system that serves it]")
@click.option("--precision", type=PRECISION, default=None, help="[default: every precision each system runs]")
@click.option("--input-tokens", type=int, default=DEFAULT_INPUT_TOKENS, show_default=True)
@click.option("--output-tokens", type=int, default=DEFAULT_OUTPUT_TOKENS, show_default=True)
@speculative_options
@click.option("--format", "fmt", type=click.Choice(["table", "json", "csv"]), default="table", show_default=True)
@click.option("--png", type=click.Path(dir_okay=False, path_type=str), default=None, help="write the chart as PNG")
@click.option("--svg", type=click.Path(dir_okay=False, path_type=str), default=None, help="write the chart as SVG")
@click.option("--html", "html_path", type=click.Path(dir_okay=False, path_type=str), default=None,
              help="write the chart and its points as a self-contained HTML page")
@click.option("--points", "most", type=click.IntRange(min=2), default=20, show_default=True,
              help="table: at most this many points a system, chosen evenly along its frontier (JSON and CSV: "
                   "every point)")
@click.option("--all", "every", is_flag=True, help="table: every point of each frontier")
def frontier(model, hardware, precision, input_tokens, output_tokens, speculative, draft_tokens, acceptance,
             draft_model, fmt, png, svg, html_path, most, every):
    """Pareto frontier of output tokens/s per MW against tokens/s per user, per hardware."""
    from planner.perf.frontier import best_at_tiers, frontier as frontier_of
    from planner.report import render
    from planner.vocabulary import TIERS

    from planner.report.files import check_output_file

    for option, path in (("--png", png), ("--svg", svg), ("--html", html_path)):
        if path:
            check_output_file(path, option)
    points = frontier_of(model, list(hardware) or None, precision, input_tokens, output_tokens, speculative,
                         draft_tokens, acceptance, draft_model)
    title = f"frontier: {model}, {input_tokens} in / {output_tokens} out"
    if png or svg:
        from planner.report import charts

        fig = charts.frontier_figure(points, title)
        if png:
            charts.save_png(fig, png)
        if svg:
            charts.save_svg(fig, svg)
    if html_path:
        from planner.report import html as html_report

        html_report.write_html(html_report.render_frontier_html(points, title), html_path)
    if fmt == "json":
        click.echo(render.to_json(points))
    elif fmt == "csv":
        click.echo(render.to_csv(points), nl=False)
    else:
        cols = ["hardware", "tier", "tps_per_user", "output_tokens_per_s_per_mw", "output_tokens_per_s_per_mw_low",
                "output_tokens_per_s_per_mw_high", "chips", "tensor_parallel", "pipeline_parallel", "expert_parallel",
                "batch", "precision", "draft_tokens", "bound"]
        labels = {"tps_per_user": "tok/s per user", "output_tokens_per_s_per_mw": "tok/s per MW",
                  "output_tokens_per_s_per_mw_low": "per MW low", "output_tokens_per_s_per_mw_high": "per MW high",
                  "tensor_parallel": "tp", "pipeline_parallel": "pp", "expert_parallel": "ep",
                  "precision": "prec", "draft_tokens": "draft", "min_tps_per_user": "tier tok/s per user"}
        drop = ["output_tokens_per_s_per_mw_low", "output_tokens_per_s_per_mw_high", "bound", "draft_tokens",
                "expert_parallel", "pipeline_parallel", "tensor_parallel", "tier"]
        shown = render.thin_frontier(points, None if every else most)
        thinned = len(shown) < len(points)
        render.table(shown, title=f"frontier: {model}, {input_tokens} in / {output_tokens} out"
                     + (f" ({len(shown)} of {len(points)} points, evenly along each frontier; every point: --all)"
                        if thinned else ""),
                     columns=cols, labels=labels, drop=drop, more="--format json or csv")
        render.table(best_at_tiers(points), labels=labels, drop=["min_tps_per_user"],
                     title="best output tokens/s per MW at each tier (tier boundaries: "
                           + ", ".join(f"{k} {v:g}" for k, v in TIERS.items()) + " tok/s/user)")


@main.group()
def measurements() -> None:
    """Measured operating points: import benchmark results, show them beside the model (docs/INTERFACE.md 7.10)."""


@measurements.command("import")
@click.argument("file", type=click.Path(dir_okay=False, path_type=str))
@click.option("--from", "tool", type=click.Choice(("vllm", "sglang", "genai-perf")), default=None,
              help="the tool that wrote FILE (default: told from its keys; one they contradict is refused)")
@click.option("--hardware", "-H", required=True, help="hardware id the benchmark ran on")
@click.option("--model", "-m", default=None,
              help="catalog model it served, or its Hugging Face id (default: the file's model_id, model or "
                   "tokenizer; one they contradict is refused)")
@click.option("--precision", type=PRECISION, required=True)
@click.option("--chips", type=click.IntRange(min=1), required=True, help="chips per replica")
@click.option("--role", type=click.Choice(("colocated", "decode", "prefill")), default="colocated",
              show_default=True)
@click.option("--replicas", type=click.IntRange(min=1), default=1, show_default=True,
              help="data-parallel replicas behind the endpoint (concurrency and throughput are divided by it)")
@click.option("--tensor-parallel", type=click.IntRange(min=1), default=None)
@click.option("--pipeline-parallel", type=click.IntRange(min=1), default=None)
@click.option("--speculative", type=click.Choice(SPECULATIVE_METHODS), default=None,
              help="the drafter, when the run used speculative decoding and the file does not say")
@click.option("--custom-ids", "custom_ids", is_flag=True,
              help="--hardware and --model are ids a scenario defines (hardware.custom, models), not catalog ids")
@click.option("--out", "out_path", type=click.Path(dir_okay=False, path_type=str), default=None,
              help="write the rows (.csv, .parquet, .yaml or .json) instead of printing them")
@click.option("--format", "fmt", type=FORMAT, default="table", show_default=True)
def measurements_import(file, tool, hardware, model, precision, chips, role, replicas, tensor_parallel,
                        pipeline_parallel, speculative, custom_ids, out_path, fmt):
    """Turn a saved benchmark result FILE into measurement rows."""
    from planner.measurements.importers import import_results
    from planner.measurements.table import write_measurements
    from planner.report import render

    if out_path:
        from planner.report.files import check_output_file

        check_output_file(out_path, "--out", inputs=[file])  # never over the result it reads
    rows = import_results(file, tool, hardware, model, precision, chips, role, replicas, tensor_parallel,
                          pipeline_parallel, speculative=speculative, custom_ids=custom_ids)
    from planner import catalog
    from planner.measurements.physics import import_warnings

    for line in import_warnings(rows, catalog.hardware_catalog(), catalog.model_catalog()):  # custom ids: unchecked
        click.echo(f"warning: {line}", err=True)
    if out_path:
        write_measurements(rows, out_path)
        click.echo(f"wrote {len(rows)} rows to {out_path}", err=True)
    elif fmt == "json":
        click.echo(render.to_json([r.to_row() for r in rows]))
    else:
        render.table([r.to_row() for r in rows], title=f"measurements from {file}", columns=MEASURED_BRIEF,
                     labels=MEASURED_LABELS, drop=MEASURED_DROP, wraps=["source"],
                     more="every field: --format json or --out FILE")


# The compact tables of measurement rows (import and show; JSON and files keep every field).
MEASURED_BRIEF = ["hardware", "model", "precision", "chips", "role", "input_tokens", "output_tokens", "concurrency",
                  "tps_per_user", "output_tokens_per_s", "ttft_s", "source"]
MEASURED_DROP = ["source", "role", "ttft_s", "chips", "precision"]
MEASURED_LABELS = {"precision": "prec", "input_tokens": "in", "output_tokens": "out", "concurrency": "conc",
                   "tps_per_user": "tok/s per user", "predicted_tps_per_user": "model tok/s per user",
                   "output_tokens_per_s": "tok/s", "predicted_output_tokens_per_s": "model tok/s",
                   "error_pct": "error %", "ttft_s": "TTFT s"}


@measurements.command("show")
@click.argument("file", type=click.Path(dir_okay=False, path_type=str))
@click.option("--format", "fmt", type=FORMAT, default="table", show_default=True)
@click.option("--detail", is_flag=True, help="table: every field of each row beside the model's figures")
def measurements_show(file, fmt, detail):
    """The rows of a measurement FILE, each beside what the model predicts for the same point."""
    from planner.measurements.curves import beside_model
    from planner.measurements.table import read_measurements
    from planner.report import render

    rows = beside_model(read_measurements(file))
    if fmt == "json":
        click.echo(render.to_json(rows))
    else:
        render.table(rows, title=f"{file}: measured beside the model (error_pct: measured / predicted - 1)",
                     columns=None if detail else
                     ["hardware", "model", "precision", "chips", "role", "input_tokens", "output_tokens",
                      "concurrency", "tps_per_user", "predicted_tps_per_user", "output_tokens_per_s",
                      "predicted_output_tokens_per_s", "error_pct"],
                     labels=MEASURED_LABELS, wraps=["source"],
                     drop=() if detail else ["role", "chips", "precision", "output_tokens", "input_tokens"],
                     more=None if detail else "--detail or --format json")


@measurements.command("schema")
def measurements_schema():
    """Print the measurement row's JSON Schema."""
    from planner.measurements.table import measurement_schema
    from planner.report import render

    click.echo(render.to_json(measurement_schema()))


@main.group(invoke_without_command=True)
@click.option("--format", "fmt", type=click.Choice(["table", "json", "csv"]), default="table", show_default=True)
@click.option("--table", "which", type=click.Choice(["hardware", "models"]), default=None,
              help="only this table (CSV holds one table: hardware unless --table models)")
@click.option("--detail", is_flag=True, help="table: every column (as JSON and CSV have them)")
@click.pass_context
def catalog(ctx, fmt, which, detail):
    """List the hardware and model catalogs (``catalog show ID`` for one entry with sources)."""
    if ctx.invoked_subcommand is not None:
        return
    from planner.report import render
    from planner.report import catalog_view as view

    if fmt == "table" and not detail:
        tables = {"hardware": (view.hardware_brief_rows, view.HARDWARE_BRIEF, view.HARDWARE_DROP),
                  "models": (view.model_rows, view.MODEL_BRIEF, view.MODEL_DROP)}
    else:
        tables = {"hardware": (view.hardware_rows, None, ()), "models": (view.model_rows, None, ())}
    if which:
        tables = {which: tables[which]}
    if fmt == "json":
        click.echo(render.to_json({name: rows() for name, (rows, _, _) in tables.items()}))
    elif fmt == "csv":
        click.echo(render.to_csv(tables[which or "hardware"][0]()), nl=False)
    else:
        titles = {"hardware": "hardware (per chip unless the column says rack)",
                  "models": "models (parameters derived from the public configs)"}
        for name, (rows, columns, drop) in tables.items():
            render.table(rows(), title=titles[name], columns=columns, labels=view.LABELS, drop=drop,
                         wraps=["vendor", "memory_per_chip", "roles"],
                         more=None if detail else "--detail or --format json")


@catalog.command("show")
@click.argument("item_id")
@click.option("--format", "fmt", type=click.Choice(["yaml", "json"]), default="yaml", show_default=True)
def catalog_show(item_id, fmt):
    """One catalog entry with every figure's source and confidence (and derived values for models)."""
    from planner.report import render
    from planner.report.catalog_view import show_entry

    entry = show_entry(item_id)
    if fmt == "json":
        click.echo(render.to_json(entry))
    else:
        import yaml

        click.echo(yaml.safe_dump(entry, sort_keys=False, allow_unicode=True), nl=False)


@main.group()
def models() -> None:
    """Models from their Hugging Face config.json (docs/INTERFACE.md 2.4.1)."""


@models.command("add")
@click.argument("config", metavar="CONFIG.json", type=click.Path(dir_okay=False, path_type=str))
@click.option("--id", "model_id", default=None,
              help="the entry's id [default: the config's folder name, or the file's name, lower-case]")
@click.option("--out", "out_path", type=click.Path(dir_okay=False, path_type=str), default=None,
              help="write the entry to FILE (for planner/data/models/ or a scenario's models:) instead of printing it")
@click.option("--format", "fmt", type=click.Choice(["yaml", "json"]), default="yaml", show_default=True)
def models_add(config, model_id, out_path, fmt):
    """The catalog entry of the decoder a Hugging Face CONFIG.json describes, with its derived parameter counts
    and KV bytes per token as catalog show gives them; an architecture the planner cannot price exits 2 naming the
    config field."""
    from planner.hf_config import model_from_config
    from planner.report import render
    from planner.report.catalog_view import model_entry

    if out_path:
        from planner.report.files import check_output_file

        check_output_file(out_path, "--out", inputs=[config])  # never over the config it reads
    entry = model_entry(model_from_config(config, model_id))
    if fmt == "json":
        text = render.to_json(entry) + "\n"
    else:
        import yaml

        text = yaml.safe_dump(entry, sort_keys=False, allow_unicode=True, width=116)
    if out_path:
        from planner.writing import atomic_write

        atomic_write(out_path, text.encode("utf-8"))
        click.echo(f"wrote model {entry['id']} to {out_path}", err=True)
    else:
        click.echo(text, nl=False)


@main.command()
@click.argument("scenario", type=click.Path(dir_okay=True, path_type=str))
@click.option("--set", "settings", multiple=True, metavar="PATH=VALUE",
              help="override a scenario field before validation, as solve --set does")
@click.option("--format", "fmt", type=FORMAT, default="table", show_default=True)
def validate(scenario, settings, fmt):
    """Check a scenario file against the schema and the catalog; say what it resolves to, and whether each workload
    has hardware that reaches its tier (exit 3 naming those that have none, as solve would)."""
    from planner.errors import InfeasibleError
    from planner.fleet.problem import unreachable_workloads
    from planner.report import render
    from planner.scenario import load_scenario, resolved_summary

    sc = load_scenario(scenario, settings)
    summary = resolved_summary(sc)
    compile_first(fmt == "json")
    unreachable = unreachable_workloads(sc)
    if fmt == "json":
        click.echo(render.to_json({"scenario": scenario, "valid": True, **summary, "unreachable": unreachable}))
    else:
        show_validation(scenario, sc, summary, unreachable)
    if unreachable:
        raise InfeasibleError(f"{scenario}: unreachable: " + "; ".join(f"{name}: {why}"
                                                                     for name, why in unreachable.items()))


def show_validation(scenario, sc, summary: dict, unreachable: dict) -> None:
    """``planner validate``'s table: the scenario resolved, a line per workload, installed racks and notes."""
    from planner.report import render
    allowed = ", ".join(summary["hardware"]["allowed"]) or "none"
    click.echo(f"{scenario}: valid: {len(sc.workloads)} workloads, {len(summary['hardware']['allowed'])} systems "
               f"allowed ({allowed}), objective {sc.objective}")
    for w in summary["demands"]:
        click.echo(f"  {w['name']}: {w['model']}, {render.fmt(w['output_tokens_per_s'])} output tok/s and "
                   f"{render.fmt(w['prefill_tokens_per_s'])} prompt tok/s at peak, >= "
                   f"{render.fmt(w['min_tps_per_user'])} tok/s/user, TTFT {w['ttft_s']:g} s at "
                   f"p{100 * w['ttft_quantile']:g}")
    for hw_id, d in summary["installed"].items():
        click.echo(f"  installed: {d['racks']:,} x {hw_id} in service (capex sunk), the first retiring {d['retire_by']}")
    for text in summary["warnings"]:
        click.echo(f"  note: {text}")
    for name, why in unreachable.items():
        click.echo(f"  unreachable: {name}: {why}")


@main.command()
@click.argument("plan_file", metavar="PLAN.json", type=click.Path(dir_okay=False, path_type=str))
@click.option("--format", "fmt", type=FORMAT, default="table", show_default=True)
def check(plan_file, fmt):
    """Re-check a written plan without the solver: exit 0 when it holds, 4 naming each violated check."""
    from planner.errors import CheckFailed
    from planner.fleet.check import check as check_plan
    from planner.report import render

    checks = check_plan(plan_file)
    failed = [c for c in checks if not c["ok"]]
    if fmt == "json":
        click.echo(render.to_json({"plan": plan_file, "ok": not failed, "checks": checks}))
    elif failed:
        render.table(failed, title=f"{plan_file}: {len(failed)} of {len(checks)} checks fail")
    else:
        click.echo(f"{plan_file}: holds ({len(checks)} checks)")
    if failed:
        raise CheckFailed(f"{plan_file}: {len(failed)} of {len(checks)} checks fail: "
                          + "; ".join(f"{c['check']} ({c['detail']})" for c in failed[:5])
                          + (" ..." if len(failed) > 5 else ""), checks)


@main.command()
def warmup():
    """Compile and cache the performance and simulation kernels (once after installing; make demo and make test
    run it), so that no solve's time limit is spent compiling."""
    from planner.warmup import COLD_ESTIMATE, kernels_cached, warmup as compile_kernels

    if kernels_cached():
        click.echo("kernels already compiled; checking them", err=True)
    else:
        click.echo(f"compiling kernels (first run only, {COLD_ESTIMATE})", err=True)
    t0 = time.perf_counter()
    compile_kernels(progress=lambda name, s: click.echo(f"  {name}: {s:.1f} s", err=True))
    click.echo(f"kernels ready ({time.perf_counter() - t0:.1f} s)", err=True)


@main.command()
@click.option("--detach", is_flag=True, help="start it in the background and return once it answers")
@click.option("--stop", is_flag=True, help="stop this checkout's server")
@click.option("--status", is_flag=True, help="say whether one runs, since when and how many commands it ran")
@click.option("--idle-minutes", type=click.FloatRange(min=0.0, min_open=True), default=60.0, show_default=True,
              help="stop after this long without a command")
def serve(detach, stop, status, idle_minutes):
    """Keep a warm planner process for this checkout: while it runs, every planner command from it runs in a
    fork of it, skipping the imports and the kernels' loading (0.6-0.9 s a command; docs/PERFORMANCE.md).
    A server whose code or data files change stops; PLANNER_NO_SERVER=1 runs a command in its own process."""
    from planner import client

    if stop or status:
        answer = client.ask(b"Q" if stop else b"S")
        if answer is None:
            click.echo("no planner server runs for this checkout", err=True)
            sys.exit(1 if status else 0)
        if stop:
            click.echo(f"stopped the planner server (pid {answer['stopped']})", err=True)
        else:
            since = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(answer["since"]))
            click.echo(f"planner server pid {answer['pid']}, since {since}, {answer['commands']} command(s) run, "
                       f"{answer.get('running', 0)} running; socket {client.socket_path()}")
        return
    if detach:
        start_detached(idle_minutes)
        return
    from planner.server import serve as run_server

    why = run_server(main, idle_s=60.0 * idle_minutes, say=lambda line: click.echo(line, err=True))
    click.echo(f"planner server stopped: {why}", err=True)


def start_detached(idle_minutes: float, wait_s: float = 600.0) -> None:
    """``planner serve`` in a session of its own, its output in a log beside the socket; returns once it answers
    (the first start may compile the kernels: about a minute)."""
    import subprocess

    from planner import client

    if client.ask(b"S") is not None:
        click.echo(f"a planner server already runs for this checkout ({client.socket_path()})", err=True)
        return
    log = client.socket_path().with_suffix(".log")
    # the folder checked before the log in it is opened, the log never through a link (issue 43); either refused is
    # client.UnsafeFolder, an InputError naming PLANNER_SERVER_DIR
    folder = client.socket_folder(client.socket_path())
    try:
        out = client.open_log(folder, log.name)
    finally:
        os.close(folder)
    try:
        proc = subprocess.Popen([sys.executable, "-m", "planner.cli", "serve", "--idle-minutes", f"{idle_minutes:g}"],
                                stdin=subprocess.DEVNULL, stdout=out, stderr=out, start_new_session=True)
    finally:
        os.close(out)
    deadline = time.monotonic() + wait_s
    while time.monotonic() < deadline:
        answer = client.ask(b"S")
        if answer is not None:
            click.echo(f"planner server started (pid {answer['pid']}; log {log})", err=True)
            return
        if proc.poll() is not None:
            click.echo(f"error: the planner server ended at start (exit {proc.returncode}); see {log}", err=True)
            sys.exit(1)
        time.sleep(0.1)
    click.echo(f"error: the planner server did not answer within {wait_s:g} s; see {log}", err=True)
    sys.exit(1)


def compile_first(quiet: bool) -> None:
    """Compile the kernels before a command whose time limit must not pay for it, saying so on a terminal."""
    from planner.kernel_cache import COLD_ESTIMATE, kernels_cached

    if kernels_cached():
        return
    from planner.warmup import warmup as compile_kernels

    if not quiet:
        click.echo(f"compiling kernels (first run only, {COLD_ESTIMATE}; `planner warmup` does it ahead)", err=True)
    compile_kernels(progress=None if quiet else lambda name, s: click.echo(f"  {name}: {s:.1f} s", err=True))


@main.command()
@click.argument("plan_file", type=click.Path(dir_okay=False, path_type=str))
@click.option("--trace", "trace_name", default=None, metavar="FILE|NAME",
              help="replay a trace's arrivals and length mix, scaled to each workload's rate and means "
                   "[default: Poisson arrivals and the workloads' length distributions]")
@click.option("--duration", "duration_s", type=float, default=None,
              help="seconds of arrivals per workload [default: each workload's pools settled (a session's time for "
                   "agents), then 240 s of statistics or longer for slow requests, shorter where it makes 3 million "
                   "calls sooner; docs/MODEL.md 16.1]")
@click.option("--seed", type=int, default=0, show_default=True)
@click.option("--period", default=None, metavar="DATE",
              help="a build-out's plan: simulate only the period starting on DATE [default: every period]")
@click.option("--demand-scenario", "demand_scenario", default=None, metavar="NAME",
              help="a build-out's plan: simulate only this demand scenario [default: every one]")
@click.option("--format", "fmt", type=FORMAT, default="table", show_default=True)
@click.option("--html", "html_path", type=click.Path(dir_okay=False, path_type=str), default=None,
              help="also write a self-contained HTML page: each workload's latency distributions beside its targets")
def simulate(plan_file, trace_name, duration_s, seed, period, demand_scenario, fmt, html_path):
    """Replay traffic through a plan's fleet (discrete-event simulation): TTFT and time per token at p50/p90/p99
    per workload against its targets, SLO attainment, the utilization of each pool; a build-out's plan period by
    period. Exit 0 when every target holds, 4 naming those that fail."""
    from planner.errors import CheckFailed
    from planner.report import render
    from planner.sim import simulate as simulate_plan

    if html_path:
        from planner.report.files import check_output_file

        check_output_file(html_path, "--html", inputs=[plan_file])
    trace = None
    if trace_name is not None:
        from planner.traces import read_trace

        trace = read_trace(trace_name)
    result = simulate_plan(plan_file, trace=trace, duration_s=duration_s, seed=seed, period=period,
                           demand_scenario=demand_scenario)
    d = result.to_dict()
    if html_path:
        from planner.report import html as html_report

        html_report.write_html(html_report.render_simulation_html(d), html_path)
        click.echo(f"wrote {html_path}", err=True)
    if fmt == "json":
        click.echo(render.to_json(d))
    else:
        runs = d["periods"] if "periods" in d else [d]
        for run in runs:
            when = f"{run['start_date']}{' ' + run['demand_scenario'] if run['demand_scenario'] else ''}: " \
                if "start_date" in run else ""
            render.table([simulated_row(w) for w in run["workloads"]],
                         title=f"{plan_file}: {when}simulated up to {run['duration_s']:g} s a workload (statistics "
                               f"after its warm-up, up to {run['warmup_s']:g} s), seed {seed}")
            render.table(run["pools"], title="pools")
        click.echo("holds: every workload meets its targets" if result.holds
                   else "fails: " + "; ".join(result.failures))
    if not result.holds:
        raise CheckFailed(f"{plan_file}: the simulation misses {len(result.failures)} target(s): "
                          + "; ".join(result.failures), [])


@main.command()
@click.argument("plan_file", metavar="PLAN.json", type=click.Path(dir_okay=False, path_type=str))
@click.option("--to", "target", required=True, metavar="TARGET",
              help="vllm, sglang, trtllm, dynamo or llm-d (docs/EXPORT.md)")
@click.option("--out", "out_dir", type=click.Path(file_okay=False, path_type=str), default=None,
              help="write the files into this directory [default: print them]")
@click.option("--period", default=None, metavar="DATE", help="a build-out's plan: the period starting on DATE "
                                                              "[default: the last]")
@click.option("--demand-scenario", "demand_scenario", default=None, metavar="NAME",
              help="a build-out's plan: this demand scenario [default: the most probable]")
@click.option("--row", "row", type=click.IntRange(min=0), default=None,
              help="export this allocation row alone (exit 2 if the target does not run it)")
@click.option("--strict", is_flag=True, help="exit 2 on a row the target does not run, instead of listing it "
                                             "as skipped")
def export(plan_file, target, out_dir, period, demand_scenario, row, strict):
    """Each allocation row of a plan as the engine's launch command or config, and for dynamo and llm-d the
    Kubernetes manifests with replica counts; rows the target does not run are listed as skipped with the reason,
    and a setting it cannot express is exit 2 naming the row and the setting."""
    from planner.export import export_plan, write_export

    if out_dir:
        from planner.report.files import check_output_dir

        check_output_dir(out_dir, "--out")
    result = export_plan(plan_file, target, period=period, demand_scenario=demand_scenario, strict=strict, row=row)
    if not out_dir:
        click.echo(result.text(), nl=False)
        return
    write_export(result, out_dir)
    click.echo(f"wrote {out_dir} ({len(result.launches)} row(s) exported, {len(result.skipped)} skipped: "
               "README.md and manifest.json say why)", err=True)


@main.group()
def trace() -> None:
    """Public traces shipped with planner, and your own: fit a workload to one."""


@trace.command("fit")
@click.argument("file", metavar="FILE|NAME")
@click.option("--window", "window_s", type=click.FloatRange(min=0, min_open=True), default=60.0, show_default=True,
              help="seconds of the busiest window that sets peak_to_mean")
@click.option("--kind", type=click.Choice(("chat", "agentic")), default="chat", show_default=True)
@click.option("--lengths", type=click.Choice(("lognormal", "table")), default="lognormal", show_default=True,
              help="the shape of the fitted input and output lengths")
@click.option("--format", "fmt", type=click.Choice(("table", "json", "yaml")), default="table", show_default=True)
def trace_fit(file, window_s, kind, lengths, fmt):
    """A workload's rate, peak_to_mean, length distributions and prefix-cache hit, fitted to a trace (a shipped
    name such as azure-code-2023, or an Azure CSV, a Mooncake JSONL or a CSV/Parquet of arrival_s, input_tokens,
    output_tokens)."""
    from planner.report import render
    from planner.traces import fit_lines, fit_summary, fit_trace, fit_yaml, read_trace

    fit = fit_trace(read_trace(file), window_s=window_s)
    if fmt == "json":
        click.echo(render.to_json(fit_summary(fit, kind, lengths)))
    elif fmt == "yaml":
        click.echo(fit_yaml(fit, kind, lengths), nl=False)
    else:
        click.echo("\n".join(fit_lines(fit)))
        click.echo(fit_yaml(fit, kind, lengths), nl=False)


def simulated_row(w: dict) -> dict:
    """A workload's simulated figures as the terminal table shows them."""
    q = f"p{w['ttft_percentile']:g}"
    return {"workload": w["workload"], "requests": w["requests"],
            "TTFT p50 s": w["ttft_p50_s"], "TTFT p99 s": w["ttft_p99_s"],
            f"TTFT {q} s": w["ttft_at_target_percentile_s"], "target s": w["ttft_target_s"],
            "plan's TTFT s": w["analytic_ttft_s"], "tok/s/user p50": w["tps_per_user_p50"],
            f"tok/s/user {q}": w["tps_per_user_at_target_percentile"], "tier": w["min_tps_per_user"],
            "SLO met": w["slo_attainment"], "holds": "yes" if w["holds"] else "no"}


@main.command()
@click.argument("sweep_file", type=click.Path(dir_okay=False, path_type=str))
@click.option("--engine", type=click.Choice(("local", "ray")), default="local", show_default=True,
              help="local: a process pool on this machine; ray: a Ray cluster (pip install 'planner[ray]')")
@click.option("--address", default=None, help="--engine ray: the cluster's address [default: a local Ray runtime]")
@click.option("--workers", type=click.IntRange(min=1), default=None,
              help="--engine local: processes [default: one per CPU]")
@click.option("--out", "out_dir", type=click.Path(file_okay=False, path_type=str), default=None,
              help="write sweep.parquet, sweep.csv, sensitivity.csv, systems.csv (and robust.json) into it")
@click.option("--format", "fmt", type=click.Choice(("table", "json", "csv")), default="table", show_default=True)
@click.option("--quiet", "-q", is_flag=True, help="no progress display")
@click.option("--robust", "robust", default=None, metavar="mean|pNN",
              help="also the one fleet of least mean (or NN-th percentile) objective over the solved variants")
@click.option("--regret/--no-regret", default=True, show_default=True,
              help="the base plan's value and regret in each variant")
@click.option("--html", "html_path", type=click.Path(dir_okay=False, path_type=str), default=None,
              help="also write a self-contained HTML report (tornado, systems, regret, robust fleet)")
def sweep(sweep_file, engine, address, workers, out_dir, fmt, quiet, robust, regret, html_path):
    """Solve every variant of a sweep file: one row per variant (its values, status, cost, racks per system,
    USD/Mtok and served share per workload, the base plan's regret), and with --robust the fleet that holds up
    best over them."""
    from pathlib import Path

    from planner.report import render
    from planner.report import terminal as report
    from planner.report.files import check_output_dir
    from planner.report.files import check_output_file
    from planner.sweep.report import summary_lines, write_sweep
    from planner.sweep.robust import parse_statistic
    from planner.sweep.run import sweep as run_sweep
    from planner.sweep.workers import sigterm_as_interrupt

    sigterm_as_interrupt()  # SIGTERM ends the sweep's pool and exits like Ctrl-C (130); its workers die with it
    if out_dir:
        check_output_dir(out_dir, "--out")
    if html_path:
        check_output_file(html_path, "--html", inputs=[sweep_file])
    if robust is not None:
        parse_statistic(robust)
    with report.progress_display(enabled=not quiet and fmt == "table") as progress:
        outcome = run_sweep(sweep_file, engine, address, workers, progress, regret=regret, robust=robust)
    table = outcome.table
    if out_dir:
        write_sweep(table, Path(out_dir), sweep_file, outcome.robust)
        if not quiet:
            click.echo(f"wrote {out_dir} (sweep.parquet, sweep.csv, sensitivity.csv, systems.csv"
                       f"{', robust.json' if outcome.robust else ''})", err=True)
    if html_path:
        from planner.report import html as html_report

        html_report.write_html(html_report.render_sweep_html(table, outcome.robust, Path(sweep_file).stem),
                               html_path)
        if not quiet:
            click.echo(f"wrote {html_path}", err=True)
    if fmt == "json":
        click.echo(render.to_json(table.to_dicts() if outcome.robust is None else
                                  {"variants": table.to_dicts(), "robust": outcome.robust}))
    elif fmt == "csv":
        click.echo(table.write_csv(), nl=False)
    else:
        for line in summary_lines(table, outcome.robust):
            click.echo(line)
    if outcome.robust_error is not None:  # the table is out (and written); the exit code says --robust failed
        raise outcome.robust_error


@main.command()
def schema():
    """Print the scenario file's JSON Schema."""
    from planner.report import render
    from planner.scenario import scenario_json_schema

    click.echo(render.to_json(scenario_json_schema()))


def _show_book(book: dict, fmt: str, groups_title: str, points_title: str, point_keys: tuple | None = None) -> None:
    """An error book (``groups`` and ``points``) as JSON, its groups as markdown, or both as tables."""
    from planner.report import render

    if fmt == "json":
        click.echo(render.to_json(book))
    elif fmt == "markdown":
        click.echo(render.to_markdown(book["groups"]), nl=False)
    else:
        render.table(book["groups"], title=groups_title)
        points = book["points"] if point_keys is None else [{k: r[k] for k in point_keys} for r in book["points"]]
        render.table(points, title=points_title)


@main.command()
@click.option("--write", is_flag=True, help="write the fitted parameters to data/efficiency.yaml")
@click.option("--measurements", "measured", type=click.Path(dir_okay=False, path_type=str), default=None,
              help="fit to these measurement rows instead (docs/INTERFACE.md 7.10)")
@click.option("--hardware", "-H", "hardware_id", default=None, help="with --measurements: the family of this system")
@click.option("--family", default=None, help="with --measurements: this hardware family")
@click.option("--out", "out_path", type=click.Path(dir_okay=False, path_type=str), default=None,
              help="with --measurements: write the fitted parameters here (a scenario's efficiency: FILE)")
@click.option("--scope", type=click.Choice(["hardware", "family"]), default=None,
              help="with --out: key the parameters by each measured system (hardware, the default) or by their "
                   "whole family")
@click.option("--ledger", "show_ledger", is_flag=True,
              help="the error per class and per vendor, fitted and held-back points apart (docs/MODEL.md 13)")
@click.option("--power", "show_power", is_flag=True,
              help="the power curves against measured chip power (docs/MODEL.md 14); with --write, refit them")
@click.option("--kernels", "show_kernels", is_flag=True,
              help="NVIDIA's measured kernel tables reduced to the model's parameters (docs/MODEL.md 5.5); with "
                   "--write, derive them again from an installed aiconfigurator-core")
@click.option("--format", "fmt", type=click.Choice(["table", "json", "markdown"]), default="table", show_default=True)
def calibrate(write, measured, hardware_id, family, out_path, scope, show_ledger, show_power, show_kernels, fmt):
    """Predicted against published figures (data/calibration.yaml); with --write, refit the efficiencies; with
    --measurements, fit them to your own measured points; with --ledger, the errors by class and vendor; with
    --kernels, the parameters measured kernel tables give."""
    from planner.errors import InputError
    from planner.perf import calibration
    from planner.report import render

    if show_kernels:
        if measured is not None or show_ledger or show_power:
            raise InputError("--kernels reads the kernel tables alone", field="--kernels")
        from planner.perf import kernel_tables

        if write:
            derived = kernel_tables.derive()
            kernel_tables.write_measured(derived)
            written = kernel_tables.write_generation_efficiencies(derived)
            click.echo(f"wrote {kernel_tables.measured_kernels_path()} and {', '.join(written)} in "
                       "data/efficiency.yaml", err=True)
        _show_book(kernel_tables.book(kernel_tables.read_measured()), fmt,
                   "kernel parameters per generation (data/efficiency.yaml takes these)",
                   "measured kernel tables: each fitted to the model's form")
        return

    if show_power:
        if measured is not None or show_ledger:
            raise InputError("--power reads data/power_points.yaml alone", field="--power")
        from planner.perf import power

        if write:
            power.write_fit()
        _show_book(power.power_ledger(), fmt, "power curve: error factor exp(|ln(predicted / measured)|)",
                   "power curve: every point")
        return
    if show_ledger:
        if measured is not None:
            raise InputError("the ledger is of the shipped corpus; it does not take --measurements", field="--ledger")
        from planner.perf import ledger

        if write:
            calibration.write_fit()
        _show_book(ledger.ledger(), fmt, "accuracy ledger: error factor exp(|ln(predicted / published)|)",
                   "accuracy ledger: every point", ("id", "class", "vendor", "split", "kind", "published",
                                                    "predicted", "error_factor", "config"))
        return
    if measured is None:
        for flag, value in (("--hardware", hardware_id), ("--family", family), ("--out", out_path),
                            ("--scope", scope)):
            if value is not None:
                raise InputError("applies only with --measurements", field=flag)
        if write:
            calibration.write_fit()
        rows = calibration.comparison()
        title = "calibration: predicted vs published"
    else:
        if write:
            raise InputError("--write refits the shipped calibration; with --measurements use --out FILE",
                             field="--write")
        if hardware_id is not None and family is not None:
            raise InputError("give --hardware or --family, not both", field="--family")
        if scope is not None and out_path is None:
            raise InputError("applies only with --out (the file it keys)", field="--scope")
        from planner.measurements.fit import fit_to_measurements, write_efficiency
        from planner.measurements.table import read_measurements
        from planner.report.files import check_output_file

        if out_path:
            check_output_file(out_path, "--out", inputs=[measured])  # never over the measurements it fits
        result = fit_to_measurements(read_measurements(measured), family, hardware_id)
        if out_path:
            write_efficiency(result, out_path, measured, scope or "hardware")
            click.echo(f"wrote {out_path} (for {result['family'] if scope == 'family' else ', '.join(result['hardware'])})",
                       err=True)
        fitted = ", ".join(f"{n} {result['before'][n]:.4g} -> {result['fitted'][n]:.4g}" for n in result["identified"])
        click.echo(f"{result['family']}: {result['summary']}" + (f"; {fitted}" if fitted else "")
                   + f"; loss {result['loss_before']:.4g} -> {result['loss_after']:.4g}"
                   + (f"; at a bound: {', '.join(result['at_bound'])}" if result["at_bound"] else ""), err=True)
        rows = result["rows"]
        title = f"{measured}: measured against the model before and after the fit"
        if fmt == "json":  # an object: the parameters and the summary beside the rows (INTERFACE.md 2.7)
            click.echo(render.to_json({k: result[k] for k in ("family", "hardware", "summary", "identified",
                                                              "parameters", "loss_before", "loss_after", "rows")}))
            return
        params = [{k: v for k, v in r.items() if k != "why"} for r in result["parameters"]]
        if fmt == "markdown":  # the parameters first: what was fitted, what stays at the prior, and why
            click.echo(render.to_markdown(params), nl=False)
        else:
            render.table(params, title=f"{result['family']}: {result['summary']}")
        click.echo("\n" * (fmt == "markdown") + "".join(f"{r['parameter']}: {r['why']}\n"
                                                      for r in result["parameters"] if r["why"]))
    if fmt == "json":
        click.echo(render.to_json(rows))
    elif fmt == "markdown":
        click.echo(render.to_markdown(rows), nl=False)
    else:
        render.table(rows, title=title)


def entry() -> None:
    """``python -m planner.cli``: a command runs in this checkout's ``planner serve`` where one runs, else here (the
    ``planner`` executable is planner.launcher's, which imports this module only for a command run here)."""
    from planner.client import exit_if_served

    exit_if_served(sys.argv[1:])
    main()


if __name__ == "__main__":
    entry()
